package commands

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxLine is the longest line an error or result may print (issue 48, item 2): longer than
// this and a terminal wraps it into something nobody reads.
const maxLine = 200

// rawText is library text that must not reach a user without --verbose: Go's dial errors and
// net/http's request errors say nothing the cause and fix do not say better.
var rawText = regexp.MustCompile(`dial tcp|Get "http|Post "http|Put "http|Delete "http`)

// clusterFlag is a cluster named in a command the user is told to run next ("then:
// kop-offsets --cluster scus config check"): a command to copy, not the message naming it.
var clusterFlag = regexp.MustCompile(`--cluster[ =]\S+`)

// styleProblems lists what breaks the one error style in text, the output of one run: a
// line over maxLine, a cluster named twice in one line, a raw library text. A log record
// (watch logs JSON, one record a line, for a log pipeline) is held to the last rule only.
func styleProblems(text string, clusters []string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if rawText.MatchString(l) {
			out = append(out, "raw library text: "+l)
		}
		if strings.HasPrefix(l, `{"time":`) {
			continue
		}
		if n := len([]rune(l)); n > maxLine {
			out = append(out, fmt.Sprintf("line of %d characters: %s", n, l))
		}
		for _, c := range clusters {
			re := regexp.MustCompile(`\b` + regexp.QuoteMeta(c) + `\b`)
			if n := len(re.FindAllStringIndex(clusterFlag.ReplaceAllString(l, ""), -1)); n > 1 {
				out = append(out, fmt.Sprintf("cluster %s named %d times: %s", c, n, l))
			}
		}
	}
	return out
}

func TestStyleProblems(t *testing.T) {
	if p := styleProblems("Error: cluster scus: admin 127.0.0.1:1: connection refused\n", []string{"scus"}); len(p) != 0 {
		t.Errorf("a good line is refused: %v", p)
	}
	bad := map[string]string{
		"long":     strings.Repeat("x", maxLine+1),
		"twice":    "cluster scus: cluster scus: refused",
		"dial":     "refused: dial tcp 127.0.0.1:1: connect: connection refused",
		"url text": `unreachable: Get "http://127.0.0.1:1/admin/v2"`,
		"log dial": `{"time":"t","err":"dial tcp 127.0.0.1:1: connect: connection refused"}`,
	}
	if p := styleProblems("error: cluster scus: refused\n  fix: then: kop-offsets --cluster scus config check", []string{"scus"}); len(p) != 0 {
		t.Errorf("the next command naming the cluster is refused: %v", p)
	}
	for name, l := range bad {
		if p := styleProblems(l, []string{"scus"}); len(p) != 1 {
			t.Errorf("%s: %v, want one problem", name, p)
		}
	}
}

// jsonCommands are the commands that take -o json and print a document: all of them.
var jsonCommands = []string{"check", "config check", "decode", "doctor", "dump", "failover", "groups",
	"history", "locate", "reload", "repair", "sync setup", "version", "watch"}

// checkJSONDoc runs args again with -o json: a command that takes it prints one document on
// every exit, with schemaVersion, the exit code of the run without -o json, and its errors
// as objects with a cause.
func checkJSONDoc(t *testing.T, env map[string]string, path string, args []string, code int) {
	t.Helper()
	if !slices.Contains(jsonCommands, path) {
		return
	}
	r := runBounded(t, env, 0, append(slices.Clone(args), "-o", "json")...)
	if r.code != code {
		return // a flag error before -o was read, or an -o json run that differs: not this test's
	}
	var doc struct {
		SchemaVersion *int              `json:"schemaVersion"`
		Errors        []json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || doc.SchemaVersion == nil {
		t.Errorf("%v -o json (exit %d): no document with schemaVersion (%v)\nstdout: %s\nstderr: %s", args, r.code, err, r.out, r.errOut)
		return
	}
	for _, e := range doc.Errors {
		var p struct {
			Cause *string `json:"cause"`
		}
		if json.Unmarshal(e, &p) != nil || p.Cause == nil {
			t.Errorf("%v -o json: an error is not an object with a cause: %s", args, e)
		}
	}
}
