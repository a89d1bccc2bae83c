package labtest

import "testing"

func TestPositionCovers(t *testing.T) {
	for _, c := range []struct {
		md, lce string
		want    bool
	}{
		{"12:40", "12:40", true},
		{"12:39", "12:40", false}, // the last entry not acknowledged yet
		{"12:40", "13:-1", true},  // a new ledger holding nothing
		{"12:39", "13:0", false},  // a new ledger holding an entry
		{"bad", "12:40", false},   // unparsable: not caught up
		{"13:-1", "13:-1", true},  // equal
		{"14:-1", "13:5", false},  // md past lce (never seen): not claimed
	} {
		if got := positionCovers(c.md, c.lce); got != c.want {
			t.Errorf("positionCovers(%q, %q) = %v, want %v", c.md, c.lce, got, c.want)
		}
	}
}
