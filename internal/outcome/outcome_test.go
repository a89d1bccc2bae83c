package outcome

import (
	"encoding/json"
	"testing"
)

// The exit codes are a contract (cli.md); the JSON `exitCode` fields carry them as numbers.
func TestExitCodes(t *testing.T) {
	want := map[Outcome]int{OK: 0, Found: 1, Usage: 2, Unreachable: 3, WriteFailed: 4, Reread: 5}
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

// Reread (5) ranks between OK and Found: rows left say more than rows that re-read.
func TestWorstReread(t *testing.T) {
	for _, c := range [][3]Outcome{{OK, Reread, Reread}, {Reread, Found, Found}, {Reread, WriteFailed, WriteFailed}, {Unreachable, Reread, Unreachable}} {
		if got := Worst(c[0], c[1]); got != c[2] {
			t.Errorf("Worst(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
}
