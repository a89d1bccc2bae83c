package cmdutil

import (
	"os"
	"runtime/debug"
)

// GC percentages of CompactGC: the commands that replay once, and watch, which holds its
// state for weeks.
const (
	GCReplay = 50
	GCWatch  = 10
)

// CompactGC makes the garbage collector run when the heap has grown by percent of the live
// heap instead of Go's default 100, unless the user set GOGC, and returns the function that
// restores the old setting. For commands whose heap is nearly all a replayed, mostly
// pointer-free state (dump --compacted, check, watch): cheap to mark, and at a million keys
// much less at the peak for more, short collections.
func CompactGC(percent int) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(old) }
}
