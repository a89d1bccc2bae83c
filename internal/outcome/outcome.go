// Package outcome names how a run ended (ok, found, usage, unreachable, write failed) and
// holds the one table that maps each outcome to its process exit code (contract.go: what each
// code means and which situation of which command ends with it). Domain
// packages decide an Outcome; only this table knows the numbers.
package outcome

// Outcome is how a run ended. Its JSON form is its exit code, so the `exitCode` fields of
// the documents carry an Outcome as they are.
type Outcome int

// The one table: each outcome is declared with its exit code (cli.md).
const (
	OK          Outcome = 0 // done; nothing found that --fail-on names
	Found       Outcome = 1 // drift, findings or rows left: the run worked and found something
	Usage       Outcome = 2 // usage or configuration error; nothing was contacted
	Unreachable Outcome = 3 // a cluster or endpoint could not be reached or answered with errors
	WriteFailed Outcome = 4 // a write did not achieve its goal
	// Reread: done, and some rows landed on an older position than the newest (failover
	// --source-gone): their consumers re-read what they consumed; each row says how much.
	Reread Outcome = 5
)

// ExitCode is the process exit code of o.
func (o Outcome) ExitCode() int { return int(o) }

// severity ranks outcomes for Worst: an endpoint that failed says more than a write that
// did not take, which says more than what was found, which says more than a done run whose
// rows re-read (Reread ranks between OK and Found: scaled by 2 to fit it in).
var severity = map[Outcome]int{OK: 0, Reread: 1, Found: 2, Usage: 4, WriteFailed: 6, Unreachable: 8}

// Worst is the more severe of a and b: Unreachable over WriteFailed over Usage over Found
// over Reread over OK. A run of several steps ends with the worst outcome of its steps.
func Worst(a, b Outcome) Outcome {
	if severity[b] > severity[a] {
		return b
	}
	return a
}
