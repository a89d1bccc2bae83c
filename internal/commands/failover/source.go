package failover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/shared"
	"github.com/kop-offsets/kop-offsets/internal/config"
	fo "github.com/kop-offsets/kop-offsets/internal/failover"
)

// dialSource is the source side after the target was dialled: dialled when it answered
// (srcErr nil), else, when the operator says it is gone (sourceDown), a side without clients
// and why it is down. Both down is not a lost source: the run ends naming the target.
func dialSource(f *cmdutil.Factory, opts *Options, from, to config.Cluster, srcErr error, closers *[]func()) (fo.Side, *shared.PulsarSide, error, error) {
	if srcErr != nil {
		if err := probe(f, to); err != nil {
			return fo.Side{}, nil, nil, cmdutil.UnreachableError(fmt.Errorf("cluster %s did not answer either: %w (nothing was written)", to.Name, err))
		}
	}
	srcDown, err := sourceDown(opts, from.Name, to.Name, func() error { return srcErr })
	if err != nil {
		return fo.Side{}, nil, nil, err
	}
	if srcDown == nil {
		src, srcPulsar, err := dialSide(f, from, closers)
		return src, srcPulsar, nil, err
	}
	fmt.Fprintf(opts.IO.ErrOut, "cluster %s is gone (%v): landing on what %s kept\n", from.Name, srcDown, to.Name)
	return fo.Side{Name: from.Name, KafkaNamespace: from.KafkaNamespace}, nil, srcDown, nil
}

// errSaidGone is why the source is not contacted under --source-gone.
var errSaidGone = errors.New("said gone with --source-gone: not contacted")

// sourceDown decides whether the failover runs without the source (its error: why), or ends
// (the second error). Gone is said, not guessed: --source-gone (the source is then not
// contacted), or, after the source did not answer within --timeout, a yes at the prompt on a
// terminal; else a source that does not answer ends the run (3), naming the flag.
func sourceDown(opts *Options, from, to string, probe func() error) (error, error) {
	if opts.SourceGone {
		return errSaidGone, nil
	}
	err := probe()
	if err == nil {
		return nil, nil
	}
	if !opts.Yes && opts.IO.CanPrompt() {
		ok, cerr := opts.Confirm(fmt.Sprintf("Is %s's region gone? Land the groups on what %s kept, as --source-gone does?", from, to))
		if cerr == nil && ok {
			return fmt.Errorf("said gone at the prompt after: %w", err), nil
		}
	}
	return nil, cmdutil.UnreachableError(fmt.Errorf("cluster %s did not answer (%w): nothing was written; "+
		"a wrong URL or a stopped broker is not a lost region (kop-offsets config check); if %s's region is gone, run again with --source-gone "+
		"to land the groups on what %s kept (docs/failover.md, \"Disaster runbook\")", from, err, from, to))
}

// probe asks cl's admin API for its offsets topic within the request timeout: nil when it
// answers, else what went wrong (a configuration error is not a cluster that is gone: it is
// returned by dialSide as before).
func probe(f *cmdutil.Factory, cl config.Cluster) error {
	adm, err := shared.NewAdmin(cl, f.Flags.Timeout)
	if err != nil {
		return nil
	}
	timeout := f.Flags.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := adm.PartitionedTopicPartitions(ctx, cl.OffsetsTopic()); err != nil {
		return err // the admin API error names the call
	}
	return nil
}
