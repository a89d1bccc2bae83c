package session

import (
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

func TestLeaseTopic(t *testing.T) {
	if got := (Writes{LeaseTopic: "persistent://{tenant}/locks/kop"}).topic(config.Cluster{Tenant: "t1"}); got != "persistent://t1/locks/kop" {
		t.Errorf("topic %s", got)
	}
	if got := (Writes{}).topic(config.Cluster{Tenant: "t1"}); got != "persistent://t1/kop-offsets/writer-lease" {
		t.Errorf("default topic %s", got)
	}
}
