package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// stopAll stops the JVMs named in st by pid, the clusters concurrently (each in the order
// stopCluster gives).
func stopAll(ctx context.Context, st *State, log io.Writer) error {
	var wg sync.WaitGroup
	errs := make([]error, len(st.Clusters))
	for i, c := range st.Clusters {
		wg.Go(func() {
			errs[i] = stopCluster(ctx, c, log)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Down stops the JVMs named in lab/run/state.json (by pid only) and removes the state file.
// Data directories stay; the next Up reuses them (Options.Fresh wipes them).
func Down(ctx context.Context, opts Options) error {
	return exclusive(ctx, opts, func(o Options, p Paths) error { return down(ctx, p, o.Log) })
}

// exclusive resolves opts and runs fn while holding the lab lock exclusively.
func exclusive(ctx context.Context, opts Options, fn func(o Options, p Paths) error) error {
	o, err := opts.resolve()
	if err != nil {
		return err
	}
	p := Paths{Root: o.Root}
	lk, err := lock(ctx, p.LabLock(), syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer lk.unlock()
	return fn(o, p)
}

func down(ctx context.Context, p Paths, log io.Writer) error {
	st, err := ReadState(p.StateFile())
	if err != nil {
		return err
	}
	if st == nil {
		fmt.Fprintln(log, "lab: not running (no lab/run/state.json)")
		return nil
	}
	if err := stopAll(ctx, st, log); err != nil {
		return err
	}
	return os.Remove(p.StateFile())
}

// Clean stops the lab and deletes what the clusters wrote (data, logs, rendered conf, tmp) and
// config.yaml. The unpacked distribution and the KoP probe stay, so the next Up starts without
// Maven.
func Clean(ctx context.Context, opts Options) error {
	return exclusive(ctx, opts, func(o Options, p Paths) error {
		if err := down(ctx, p, o.Log); err != nil {
			return err
		}
		for _, c := range clusterBases {
			if err := os.RemoveAll(p.ClusterDir(c.name)); err != nil {
				return err
			}
		}
		if err := os.Remove(p.ConfigYAML()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	})
}
