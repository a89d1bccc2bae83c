// Package describe holds the group describers (reload.GroupDescriber) that the reload and
// repair command tests share. It is imported only by tests.
package describe

import (
	"context"

	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// Idle describes every group as KoP answers for a group without members: "Empty".
type Idle struct{}

// DescribeGroups implements reload.GroupDescriber.
func (Idle) DescribeGroups(_ context.Context, gs []string) (map[string]reload.GroupActivity, error) {
	out := map[string]reload.GroupActivity{}
	for _, g := range gs {
		out[g] = reload.GroupActivity{State: "Empty"}
	}
	return out, nil
}
