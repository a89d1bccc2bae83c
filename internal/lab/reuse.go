package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// resolveKoP decides what KoP the lab loads: the NAR brought with KOP_NAR, else the one in
// lab/run/protocols/ or from Maven (ResolveKoP).
func resolveKoP(ctx context.Context, p Paths, o Options) (KoPStatus, error) {
	if o.KoPNar != "" {
		st, err := ResolveBYO(p, o.KoP, o.KoPNar)
		if err == nil && st.Enabled {
			fmt.Fprintf(o.Log, "lab: %s\n", st.Reason)
		}
		return st, err
	}
	return ResolveKoP(ctx, p, o.KoP, o.KoPVersion, o.Log)
}

// reusable: the state describes the wanted shape, clusters and Pulsar version, all JVMs are
// alive (none stopped by StopBroker), and KoP matches the wanted mode (off wants it off;
// required wants it on; a NAR brought with KOP_NAR wants that very file, by sha256).
func reusable(st *State, o Options) bool {
	if !sameShape(st, o) {
		return false
	}
	if st.AuthMode() != o.Auth.orNone() {
		return false
	}
	for _, c := range st.Clusters {
		for _, ps := range c.Processes {
			if ps.Stopped || !IsLabJVM(ps.PID, c.Name) {
				return false
			}
		}
	}
	if o.KoP == KoPOff {
		return !st.KoP.Enabled
	}
	if o.KoPNar != "" {
		if !st.KoP.Enabled {
			return false
		}
		abs, err := filepath.Abs(o.KoPNar)
		if err != nil {
			return false
		}
		// Same path and size as the running NAR: trust its recorded sha256 rather than hash a
		// large file on every reuse; otherwise hash it.
		if fi, err := os.Stat(abs); err == nil && abs == st.KoP.Origin {
			if nfi, err := os.Stat(st.KoP.Nar); err == nil && nfi.Size() == fi.Size() && os.SameFile(fi, nfi) {
				return true
			}
		}
		sum, err := fileSHA256(abs)
		return err == nil && sum == st.KoP.SHA256
	}
	if o.KoP == KoPRequired {
		return st.KoP.Enabled
	}
	return true
}

// sameShape: the state was started for the wanted Pulsar version, shape and clusters (names,
// ports and broker counts); a lab of another shape is restarted.
func sameShape(st *State, o Options) bool {
	if st.PulsarVersion != o.PulsarVersion || len(st.Clusters) != len(o.Clusters) {
		return false
	}
	if st.Shape != ShapeOf(o.Clusters) {
		return false
	}
	for i, c := range o.Clusters {
		s := st.Clusters[i]
		if s.Name != c.Name || s.Ports != c.Ports || s.BrokerCount() != c.BrokerCount() || len(s.Processes) == 0 {
			return false
		}
	}
	return true
}
