package reload

import (
	"context"
	"fmt"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// adminErr is what pulsarx returns for a failed call.
func adminErr(status int, op string) error {
	return &pulsarx.AdminError{Cluster: "scus", Op: op, Target: "public/__kafka", Status: status, Err: fmt.Errorf("status %d", status)}
}

var errUnreachable = adminErr(0, "unload bundle")

// groupIn returns a group name that KoP puts into offsets partition p of n.
func groupIn(prefix string, p, n int32) string {
	for i := 0; ; i++ {
		g := fmt.Sprintf("%s-%d", prefix, i)
		if loader.PartitionFor(g, n) == p {
			return g
		}
	}
}

// staticDescriber answers DescribeGroups from a map; err fails the whole call.
type staticDescriber struct {
	groups map[string]GroupActivity
	err    error
	asked  [][]string
	mu     sync.Mutex
}

func (d *staticDescriber) DescribeGroups(_ context.Context, groups []string) (map[string]GroupActivity, error) {
	d.mu.Lock()
	d.asked = append(d.asked, groups)
	d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	out := map[string]GroupActivity{}
	for _, g := range groups {
		if a, ok := d.groups[g]; ok {
			out[g] = a
		} else {
			out[g] = GroupActivity{State: "Dead"}
		}
	}
	return out, nil
}
