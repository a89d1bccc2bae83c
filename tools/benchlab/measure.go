package main

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Sample is one measured run of a command: wall time, CPU time (user + system) and peak RSS
// of the process (getrusage of the child: ru_maxrss).
type Sample struct {
	Wall, CPU time.Duration
	RSS       int64 // bytes
	Stdout    []byte
	// KoP's own load (kopLoad): longest and summed per-partition times, attempts needed.
	KoPMax, KoPSum time.Duration
	Attempts       int
	// Partial says which offsets partitions KoP never loaded, when it loaded only some of
	// them in every attempt (KoPMax and KoPSum are then those it loaded).
	Partial string
}

// Cmd is a command to measure.
type Cmd struct {
	Name string
	Args []string
	Env  []string
	// OK lists the exit codes that are a success besides 0 (check: 1 = drift found).
	OK []int
	// Keep keeps stdout (for parsing); otherwise it is counted and dropped.
	Keep bool
}

func (c Cmd) String() string { return strings.Join(c.Args, " ") }

func measure(c Cmd) (Sample, error) {
	cmd := exec.Command(c.Args[0], c.Args[1:]...)
	cmd.Env = append(os.Environ(), c.Env...)
	var out bytes.Buffer
	var errb bytes.Buffer
	if c.Keep {
		cmd.Stdout = &out
	} else {
		cmd.Stdout = io.Discard
	}
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		return Sample{}, fmt.Errorf("%s: %w", c, err)
	}
	if err != nil && !slices.Contains(c.OK, cmd.ProcessState.ExitCode()) {
		return Sample{}, fmt.Errorf("%s: %w\n%s", c, err, tail(errb.String(), 15))
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return Sample{
		Wall:   wall,
		CPU:    time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		RSS:    ru.Maxrss * 1024, // kilobytes on Linux
		Stdout: out.Bytes(),
	}, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Stat is the median of several samples, with the spread of the wall times.
type Stat struct {
	N                int
	Wall, CPU        time.Duration
	RSS              int64
	MinWall, MaxWall time.Duration
	KoPMax, KoPSum   time.Duration
	Attempts         int    // most attempts any run needed
	Partial          string // a run's Sample.Partial
}

func median(ss []Sample) Stat {
	if len(ss) == 0 {
		return Stat{}
	}
	med := func(f func(Sample) int64) int64 {
		v := make([]int64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	st := Stat{N: len(ss),
		Wall: time.Duration(med(func(s Sample) int64 { return int64(s.Wall) })),
		CPU:  time.Duration(med(func(s Sample) int64 { return int64(s.CPU) })),
		RSS:  med(func(s Sample) int64 { return s.RSS }),
	}
	st.KoPMax = time.Duration(med(func(s Sample) int64 { return int64(s.KoPMax) }))
	st.KoPSum = time.Duration(med(func(s Sample) int64 { return int64(s.KoPSum) }))
	st.MinWall, st.MaxWall = ss[0].Wall, ss[0].Wall
	for _, s := range ss {
		st.MinWall, st.MaxWall = min(st.MinWall, s.Wall), max(st.MaxWall, s.Wall)
		st.Attempts = max(st.Attempts, s.Attempts)
		st.Partial = cmp.Or(st.Partial, s.Partial)
	}
	return st
}

func (s Stat) String() string {
	return fmt.Sprintf("%.2f s (%.2f-%.2f), %.2f s CPU, %s", s.Wall.Seconds(), s.MinWall.Seconds(), s.MaxWall.Seconds(), s.CPU.Seconds(), mib(s.RSS))
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// ratio renders ours/ref as "2.1x slower" or "3.4x faster".
func ratio(ours, ref time.Duration) string {
	if ours <= 0 || ref <= 0 {
		return "-"
	}
	r := float64(ours) / float64(ref)
	if r >= 1 {
		return fmt.Sprintf("%.2fx (%.1fx slower)", r, r)
	}
	return fmt.Sprintf("%.2fx (%.1fx faster)", r, 1/r)
}
