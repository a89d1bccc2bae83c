package failover

import (
	"context"
	"errors"
	"fmt"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
)

// LocalWriter writes OffsetCommit requests, one per group, into the target's offsets
// topic, in KoP's format, with replication disabled so that the records stay on the target
// (*kop.Writer with Local set): all sent before any acknowledgement is awaited, result i
// is request i's.
type LocalWriter interface {
	CommitRequests(ctx context.Context, reqs [][]kop.OffsetCommit) []kop.Sent
}

// WriteError is a row whose record could not be written into the target's offsets topic.
type WriteError struct {
	Cluster   string `json:"cluster"`
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Error     string `json:"error"`
}

// write writes the landings, then the held values: a request per group, each batch sent at
// once. A row that fails is named (res.WriteErrors) and does not stop the others; false
// when some failed (res says which): the failover then ends before any reload.
func (e *Executor) write(ctx context.Context, plan *Plan, res *Result) bool {
	written := map[string]bool{}
	for _, w := range []struct {
		action string
		writer LocalWriter
		what   string
	}{{ActionWrite, e.Writer, "the translated offsets"}, {ActionHold, e.Holder, "the held offsets"}} {
		groups, reqs := plan.requests(w.action, e.To.KafkaNamespace)
		if len(reqs) == 0 {
			continue
		}
		e.log("cluster %s: writing %s of %d groups (replication disabled)", plan.To, w.what, len(groups))
		sent := send(ctx, w.writer, reqs)
		for i, g := range groups {
			if err := sent[i].Err; err != nil {
				for _, c := range reqs[i] {
					res.WriteErrors = append(res.WriteErrors, WriteError{Cluster: plan.To, Group: g, Topic: loader.ShortName(c.Topic, e.To.KafkaNamespace),
						Partition: c.Partition, Offset: c.Offset, Error: err.Error()})
				}
			} else if !written[g] {
				written[g] = true
				res.Written = append(res.Written, g)
			}
		}
		if len(res.WriteErrors) > 0 {
			res.Error, res.ExitCode = writeFailure(plan.To, res), outcome.WriteFailed
			return false
		}
	}
	return true
}

// requests are the OffsetCommit requests of the rows of one action: one per group, in
// group order.
func (p *Plan) requests(action, kafkaNamespace string) ([]string, [][]kop.OffsetCommit) {
	var groups []string
	var reqs [][]kop.OffsetCommit
	for _, r := range p.Rows { // sorted by group
		if r.Action != action {
			continue
		}
		if len(groups) == 0 || groups[len(groups)-1] != r.Group {
			groups, reqs = append(groups, r.Group), append(reqs, nil)
		}
		reqs[len(reqs)-1] = append(reqs[len(reqs)-1], kop.OffsetCommit{Group: r.Group,
			Topic: loader.NormalizeTopic(r.Topic, kafkaNamespace), Partition: r.Partition, Offset: *r.Translated})
	}
	return groups, reqs
}

// send writes reqs through w, one result per request (an error for each when there is no
// writer, or where w answered fewer).
func send(ctx context.Context, w LocalWriter, reqs [][]kop.OffsetCommit) []kop.Sent {
	var sent []kop.Sent
	if w != nil {
		sent = w.CommitRequests(ctx, reqs)
	}
	for len(sent) < len(reqs) {
		err := errNoHolder
		if w != nil {
			err = errNotAnswered
		}
		sent = append(sent, kop.Sent{Err: err})
	}
	return sent
}

// writeFailure is Result.Error after failed writes: the first row that failed, how many
// others, and what was written (loaded by running the failover again).
func writeFailure(cluster string, res *Result) string {
	first := res.WriteErrors[0]
	groups := map[string]bool{}
	for _, we := range res.WriteErrors {
		groups[we.Group] = true
	}
	msg := fmt.Sprintf("cluster %s: write of group %s %s[%d] failed: %s", cluster, first.Group, first.Topic, first.Partition, first.Error)
	if n := len(res.WriteErrors) - 1; n > 0 {
		msg += fmt.Sprintf(" (%d rows of %d groups failed in all, each in writeErrors)", n+1, len(groups))
	}
	if len(res.Written) > 10 {
		return msg + fmt.Sprintf("; %d groups were written (their records are in the offsets topic but not loaded: run failover again)", len(res.Written))
	}
	return msg + fmt.Sprintf("; written: %v (their records are in the offsets topic but not loaded: run failover again)", res.Written)
}

var errNotAnswered = errors.New("the writer did not answer for this request")

var errNoHolder = errors.New("no writer for held values")
