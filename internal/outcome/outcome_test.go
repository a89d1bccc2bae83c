package outcome

import (
	"encoding/json"
	"testing"
)

// The exit codes are a contract (cli.md); the JSON `exitCode` fields carry them as numbers.
func TestExitCodes(t *testing.T) {
	want := map[Outcome]int{OK: 0, Found: 1, Usage: 2, Unreachable: 3, WriteFailed: 4}
	for o, code := range want {
		if o.ExitCode() != code {
			t.Errorf("%d: exit %d, want %d", o, o.ExitCode(), code)
		}
		b, err := json.Marshal(struct {
			ExitCode Outcome `json:"exitCode"`
		}{o})
		if err != nil || string(b) != `{"exitCode":`+string(rune('0'+code))+`}` {
			t.Errorf("%d: json %s %v", o, b, err)
		}
	}
}
