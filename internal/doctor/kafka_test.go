package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// KoP answers NOT_COORDINATOR for the probe group of offsets partition 2 of 4: only that
// partition is reported, with the answer.
func TestKgoProberPartitions(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stuck := loader.ProbeGroup(2, 4)
	c.ControlKey(int16(kmsg.OffsetFetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.OffsetFetchRequest)
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		for _, rg := range req.Groups {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			if rg.Group == stuck {
				g.ErrorCode = kerr.NotCoordinator.Code
			}
			resp.Groups = append(resp.Groups, g)
		}
		if req.Group != "" {
			if req.Group == stuck {
				resp.ErrorCode = kerr.NotCoordinator.Code
			}
		}
		return resp, nil, true
	})
	p := &KgoProber{NewClient: func(_ Cluster, extra ...kgo.Opt) (*kgo.Client, error) {
		return kgo.NewClient(append(extra, kgo.SeedBrokers(c.ListenAddrs()...))...)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	got, err := p.ProbePartitions(ctx, Cluster{Name: "scus"}, 4)
	if err != nil || len(got) != 1 || !strings.Contains(got[2], "NOT_COORDINATOR") {
		t.Fatalf("%v %v", got, err)
	}
}
