package lease

import (
	"context"
	"sync"
)

// MemBroker is a Broker in memory: one lock topic shared by the Leases of one process.
// Tests of the writing commands use it in place of a cluster.
type MemBroker struct {
	mu sync.Mutex
	// Holder is the metadata of the current holder; nil when the lease is free.
	Holder map[string]string
	// PrepareErr and ClaimErr fail Prepare and Claim.
	PrepareErr, ClaimErr error
	// FreeAfter lets the holder go away after this many refused claims (0: never).
	FreeAfter int
	// Prepared and Claims count the calls.
	Prepared, Claims int
}

// Hold makes h the holder.
func (b *MemBroker) Hold(h Holder) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Holder = h.Properties()
}

// Prepare implements Broker.
func (b *MemBroker) Prepare(context.Context, string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Prepared++
	return b.PrepareErr
}

// Claim implements Broker.
func (b *MemBroker) Claim(_ context.Context, _ string, props map[string]string) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Claims++
	if b.ClaimErr != nil {
		return nil, b.ClaimErr
	}
	if b.Holder != nil {
		if b.FreeAfter == 0 || b.Claims <= b.FreeAfter {
			return nil, ErrBusy
		}
		b.Holder = nil
	}
	b.Holder = props
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.Holder = nil
	}, nil
}

// Holders implements Broker.
func (b *MemBroker) Holders(context.Context, string) ([]Holder, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Holder == nil {
		return nil, nil
	}
	h, _ := HolderFrom(b.Holder)
	return []Holder{h}, nil
}
