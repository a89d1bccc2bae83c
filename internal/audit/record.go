// Package audit keeps the trail of every write kop-offsets sends to a cluster: each bundle
// unload, each lookup that makes a broker load a bundle, each offset commit failover writes
// or watch --sync sends through KoP, each offset sync deletes, each policy sync setup sets.
// A write is recorded after it returns, with who sent it (host, user, pid, command line),
// when, why (the plan's bundle and groups) and the result, as one JSON line. Decorators
// (Admin, Commits) record without changing the code that writes.
package audit

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/output"
)

// Actions of a Record.
const (
	ActionUnload = "unload" // a namespace bundle unload
	ActionLookup = "lookup" // a topic lookup: the broker that answers takes the bundle
	ActionCommit = "commit" // an offset commit written into the offsets topic (failover)
	ActionPolicy = "policy" // a topic policy set or removed (sync setup: replication clusters)
	ActionDelete = "delete" // an offset deleted through KoP's OffsetDelete (watch --sync)
	// ActionDeleteGroup is a group deleted with its offsets through KoP's DeleteGroups
	// (watch --sync: the source holds nothing of it any more).
	ActionDeleteGroup = "delete-group"
)

// Results of a Record.
const (
	ResultOK    = "ok"
	ResultError = "error"
)

// Who is the process that sends writes.
type Who struct {
	Host    string `json:"host"`
	User    string `json:"user"`
	PID     int    `json:"pid"`
	Command string `json:"command"`
}

// maxCommand bounds the command line kept: it travels in producer metadata too.
const maxCommand = 512

// Self is the current process, its command line as started (flags only: secrets come from
// the config file, never from flags).
func Self() Who {
	w := Who{PID: os.Getpid(), User: "unknown", Host: "unknown"}
	if h, err := os.Hostname(); err == nil {
		w.Host = h
	}
	if u, err := user.Current(); err == nil {
		w.User = u.Username
	}
	args := append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...)
	w.Command = strings.Join(args, " ")
	if len(w.Command) > maxCommand {
		w.Command = w.Command[:maxCommand] + "..."
	}
	return w
}

// Record is one write.
type Record struct {
	Time    output.Time `json:"time"`
	Who     Who         `json:"who"`
	Cluster string      `json:"cluster"`
	Action  string      `json:"action"`
	// Namespace and Bundle name an unload; Topic a lookup or the offsets partition topic a
	// commit went to.
	Namespace string `json:"namespace,omitempty"`
	Bundle    string `json:"bundle,omitempty"`
	Topic     string `json:"topic,omitempty"`
	// Reason says why the command wrote (see Why); Groups are the groups the write
	// reloads (an unload or lookup: every group of the bundle) or commits.
	Reason          string   `json:"reason,omitempty"`
	RequestedGroups []string `json:"requestedGroups,omitempty"`
	Groups          []string `json:"groups"`
	// Offsets are the commits written (ActionCommit).
	Offsets []Offset `json:"offsets,omitempty"`
	Result  string   `json:"result"`
	Error   string   `json:"error,omitempty"`
	// Owner is the broker a lookup answered; MessageID where a commit was written.
	Owner      string `json:"owner,omitempty"`
	MessageID  string `json:"messageId,omitempty"`
	DurationMs int64  `json:"durationMs"`
}

// Tenant is the tenant whose metadata namespace the record wrote to: the first part of its
// namespace, else of its topic ("" when it names neither).
func (r Record) Tenant() string {
	name := r.Namespace
	if name == "" {
		_, name, _ = strings.Cut(r.Topic, "://")
	}
	t, _, _ := strings.Cut(name, "/")
	return t
}

// Offset is one committed offset of a commit record.
type Offset struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"` // -1: deleted (ActionDelete)
	// Metadata is the commit's metadata (watch --sync: its mark names the source).
	Metadata string `json:"metadata,omitempty"`
}

// Sink receives records. Write must be safe for concurrent use.
type Sink interface {
	Write(Record) error
}

// BatchSink is a Sink that takes many records at once (failover's commits, one per group)
// without a round trip each.
type BatchSink interface {
	WriteAll([]Record) error
}

// WriteAll writes rs to s, at once where s is a BatchSink, else one by one.
func WriteAll(s Sink, rs []Record) error {
	if b, ok := s.(BatchSink); ok {
		return b.WriteAll(rs)
	}
	var errs []error
	for _, r := range rs {
		errs = append(errs, s.Write(r))
	}
	return errors.Join(errs...)
}

// Discard is the Sink of --audit-file "" (no trail).
type Discard struct{}

// Write implements Sink.
func (Discard) Write(Record) error { return nil }

// finish sets the result fields of r from err and the time the call took.
func finish(r *Record, start time.Time, now time.Time, err error) {
	r.Time = output.Time{Time: now}
	r.DurationMs = now.Sub(start).Milliseconds()
	r.Result = ResultOK
	if err != nil {
		r.Result, r.Error = ResultError, err.Error()
	}
	if r.Groups == nil {
		r.Groups = []string{}
	}
}
