package explain

import (
	"errors"
	"regexp"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// Problem is one error as every JSON document carries it in its `errors` array: the same
// fields whatever the command (docs/contract-changes.md). Error is the one line a terminal
// shows; cause, fix and the library's detail are its parts.
type Problem struct {
	Tenant   string `json:"tenant,omitempty"`
	Cluster  string `json:"cluster"`
	Endpoint string `json:"endpoint,omitempty"` // admin, pulsar or kafka; empty: not an endpoint's
	URL      string `json:"url,omitempty"`
	// Step is the step of a run of several that failed ("first check", "second check").
	Step   string `json:"step,omitempty"`
	Cause  string `json:"cause"`
	Fix    string `json:"fix,omitempty"`
	Detail string `json:"detail,omitempty"` // the underlying error's own text
	Error  string `json:"error"`
}

// Problem is e as a JSON document's error.
func (e *Error) Problem() Problem {
	return Problem{Cluster: e.Cluster, Endpoint: string(e.Endpoint), URL: e.URL, Cause: e.Cause, Fix: e.Fix, Detail: e.Detail, Error: e.Error()}
}

// ProblemOf is any error a command ended with as a JSON document's error: an endpoint's
// failure explained where it is one, else its text as the cause.
func ProblemOf(err error) Problem {
	if e := Find(err); e != nil {
		p := e.Problem()
		p.Error = Line(err)
		return p
	}
	line := Line(err)
	return Problem{Cluster: clusterOf(line), Cause: line, Error: line}
}

// Find is the explained endpoint failure in err's chain: an *Error, or an admin API failure
// explained here (nil: none).
func Find(err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	if ae, ok := errors.AsType[*pulsarx.AdminError](err); ok && ae.Cluster != "" {
		return New(ae.Cluster, Admin, "", ae)
	}
	return nil
}

var clusterPrefix = regexp.MustCompile(`cluster ([^\s:;,()]+)`)

func clusterOf(line string) string {
	if m := clusterPrefix.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

// Line is err's text as one line that names each cluster once: wrappers that each add
// "cluster NAME: " to an error that names it already (the admin API's, the command's own)
// are folded into the first.
func Line(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	for _, m := range clusterPrefix.FindAllStringSubmatch(s, -1) {
		dup := "cluster " + m[1] + ": "
		if i := strings.Index(s, "cluster "+m[1]); i >= 0 {
			head, tail := s[:i+len("cluster "+m[1])], s[i+len("cluster "+m[1]):]
			s = head + strings.ReplaceAll(tail, dup, "")
		}
	}
	return s
}

// Fixed is a failure that is not an endpoint's, with the fix the user is told.
type Fixed struct {
	Err error
	Fix string
}

func (f *Fixed) Error() string { return f.Err.Error() }
func (f *Fixed) Unwrap() error { return f.Err }

// FixOf is the fix for err: its endpoint failure's, else a Fixed's in its chain ("": none).
func FixOf(err error) string {
	if e := Find(err); e != nil {
		return e.Fix
	}
	if f, ok := errors.AsType[*Fixed](err); ok {
		return f.Fix
	}
	return ""
}
