// Package lease keeps two kop-offsets processes, on any hosts, from writing to one cluster
// at once. The lease is held in the cluster itself: an exclusive Pulsar producer on a lock
// topic (Broker), in a namespace replicated to that cluster only. The holder's identity
// travels as the producer's metadata, which topic stats show to everyone, so a process
// that cannot take the lease names the holder. The broker drops the producer when the
// holder's connection dies: a lease whose holder died expires with its connection.
package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// Namespace and topic of the lease: persistent://<tenant>/kop-offsets/writer-lease.
const (
	DefaultNamespace = "kop-offsets"
	DefaultTopicName = "writer-lease"
	// DefaultRetry is the time between two attempts while another process holds the lease.
	DefaultRetry = time.Second
)

// DefaultTopic is the lock topic of a cluster whose KoP metadata lives in tenant.
func DefaultTopic(tenant string) string {
	return "persistent://" + tenant + "/" + DefaultNamespace + "/" + DefaultTopicName
}

// ErrHeld means another process holds the lease (see HeldError).
var ErrHeld = errors.New("the writer lease is held by another process")

// ErrBusy is what a Broker answers when another producer holds the topic exclusively.
var ErrBusy = errors.New("the lock topic has an exclusive producer")

// Holder is the process that holds (or held) a lease.
type Holder struct {
	audit.Who
	Since time.Time
	// Producer is what the broker says about the producer when it carries no metadata
	// of ours (a producer of another tool): its name and address.
	Producer string
}

// Metadata keys of the producer that holds the lease.
const (
	keyHost    = "kop-offsets.host"
	keyUser    = "kop-offsets.user"
	keyPID     = "kop-offsets.pid"
	keyCommand = "kop-offsets.command"
	keySince   = "kop-offsets.since"
)

// Properties are the producer metadata that name h.
func (h Holder) Properties() map[string]string {
	return map[string]string{
		keyHost: h.Host, keyUser: h.User, keyPID: strconv.Itoa(h.PID),
		keyCommand: h.Command, keySince: output.FormatTime(h.Since),
	}
}

// HolderFrom reads a Holder from producer metadata; ok is false when the metadata is not
// ours.
func HolderFrom(m map[string]string) (h Holder, ok bool) {
	if m[keyHost] == "" {
		return Holder{}, false
	}
	h.Host, h.User, h.Command = m[keyHost], m[keyUser], m[keyCommand]
	h.PID, _ = strconv.Atoi(m[keyPID])
	h.Since, _ = time.Parse(time.RFC3339Nano, m[keySince])
	return h, true
}

func (h Holder) String() string {
	if h.Host == "" {
		return "a producer that is not kop-offsets (" + h.Producer + ")"
	}
	return fmt.Sprintf("%q (pid %d, user %s, host %s) since %s", h.Command, h.PID, h.User, h.Host, output.FormatTime(h.Since))
}

// HeldError says who holds the lease of a cluster.
type HeldError struct {
	Cluster string
	Topic   string
	// Holders are the producers on the lock topic (normally one); empty when the broker's
	// stats did not show it (it went away in between).
	Holders []Holder
	Waited  time.Duration
}

func (e *HeldError) Error() string {
	who := "another process (the topic stats did not name it)"
	if len(e.Holders) > 0 {
		who = e.Holders[0].String()
	}
	msg := fmt.Sprintf("cluster %s: the writer lease (%s) is held by %s", e.Cluster, e.Topic, who)
	if e.Waited > 0 {
		msg += fmt.Sprintf("; waited %s (--lease-wait)", e.Waited.Round(time.Millisecond))
	}
	return msg + "; nothing was written"
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Broker is what a lease needs of one cluster.
type Broker interface {
	// Prepare makes sure topic can serve as a lock: a non-partitioned topic in a namespace
	// replicated to this cluster only (created when missing).
	Prepare(ctx context.Context, topic string) error
	// Claim takes topic exclusively on behalf of props; ErrBusy (wrapped) when another
	// producer has it. release gives it up.
	Claim(ctx context.Context, topic string, props map[string]string) (release func(), err error)
	// Holders are the producers connected to topic.
	Holders(ctx context.Context, topic string) ([]Holder, error)
}

// Lease is the writer lease of one cluster. Acquire before the first write; Release when
// done. The zero Wait fails at once when another process holds it.
type Lease struct {
	Cluster string
	Topic   string
	Broker  Broker
	Self    audit.Who
	// Wait is how long Acquire keeps trying while another process holds the lease.
	Wait time.Duration
	// Retry is the time between two attempts (default DefaultRetry).
	Retry time.Duration
	// Now and Sleep are for tests.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error

	mu      sync.Mutex
	release func()
	waited  bool
}

func (l *Lease) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Lease) sleep(ctx context.Context, d time.Duration) error {
	if l.Sleep != nil {
		return l.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Held reports whether this process holds the lease.
func (l *Lease) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.release != nil
}

// Waited reports whether the last acquisition found the lease held by another process and
// waited for it (--lease-wait): what that process wrote since may change a plan made before.
func (l *Lease) Waited() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waited
}

// Acquire takes the lease, or returns at once when this process holds it. While another
// process holds it, it tries again every Retry for up to Wait, then returns a *HeldError
// naming the holder. Any other failure (the lock topic cannot be created, the cluster
// does not answer) is returned as is.
func (l *Lease) Acquire(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.release != nil {
		return nil
	}
	// Prepared on every acquisition: a broker that deletes inactive topics
	// (brokerDeleteInactiveTopicsEnabled) drops the lock topic between two leases.
	if err := l.Broker.Prepare(ctx, l.Topic); err != nil {
		return fmt.Errorf("cluster %s: writer lease %s: %w", l.Cluster, l.Topic, err)
	}
	retry := l.Retry
	if retry <= 0 {
		retry = DefaultRetry
	}
	start := l.now()
	l.waited = false
	for {
		self := Holder{Who: l.Self, Since: l.now()}
		release, err := l.Broker.Claim(ctx, l.Topic, self.Properties())
		if err == nil {
			l.release = release
			return nil
		}
		if !errors.Is(err, ErrBusy) {
			return fmt.Errorf("cluster %s: writer lease %s: %w", l.Cluster, l.Topic, err)
		}
		waited := l.now().Sub(start)
		if waited >= l.Wait {
			he := &HeldError{Cluster: l.Cluster, Topic: l.Topic}
			if l.Wait > 0 {
				he.Waited = waited
			}
			he.Holders, _ = l.Broker.Holders(ctx, l.Topic)
			return he
		}
		l.waited = true
		if err := l.sleep(ctx, min(retry, l.Wait-waited)); err != nil {
			return fmt.Errorf("cluster %s: writer lease %s: %w", l.Cluster, l.Topic, err)
		}
	}
}

// Release gives the lease up (a no-op when not held).
func (l *Lease) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.release != nil {
		l.release()
		l.release = nil
	}
}

// Admin guards a reload.BundleAdmin: UnloadBundle takes the lease first (a no-op when held)
// and is refused when it cannot. Lookups are not guarded: a lookup only makes a broker
// load a bundle, as any client's lookup does, and the lookups that follow an unload must
// never be refused.
type Admin struct {
	reload.BundleAdmin
	Lease *Lease
}

// UnloadBundle implements reload.BundleAdmin.
func (a Admin) UnloadBundle(ctx context.Context, namespace, bundleRange string) error {
	if err := a.Lease.Acquire(ctx); err != nil {
		return err
	}
	return a.BundleAdmin.UnloadBundle(ctx, namespace, bundleRange)
}
