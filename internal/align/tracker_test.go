package align

import (
	"context"
	"fmt"
	"testing"
)

func (m *mem) ScanFrom(_ context.Context, _ string, _ int32, from int64, fn func(Record) bool) (Bounds, error) {
	b := Bounds{Start: m.start, End: m.start + int64(len(m.ids))}
	for i := max(from-m.start, 0); i < int64(len(m.ids)); i++ {
		m.reads.Add(1)
		if !fn(Record{Offset: m.start + i, ID: m.ids[i]}) {
			break
		}
	}
	return b, nil
}

// replicate appends the messages ids to both copies, as the replicator does.
func replicate(src, dst *mem, ids ...uint64) {
	src.ids = append(src.ids, ids...)
	dst.ids = append(dst.ids, ids...)
}

// TestTrackerMatchesBuild grows both copies as replication would and checks, after every
// step, that the Tracker's answer is a fresh Build's answer and keeps the no-skip rule.
func TestTrackerMatchesBuild(t *testing.T) {
	cases := []struct {
		name string
		// setup returns the copies before the first commit is translated.
		setup func() (src, dst *mem)
		// step grows the copies at step i.
		step func(i int, src, dst *mem)
		// builds is how many full Builds the Tracker may make over the whole run.
		builds int64
	}{
		{"aligned", func() (*mem, *mem) { return &mem{ids: seq(0, 100)}, &mem{ids: seq(0, 100)} },
			func(i int, s, d *mem) { replicate(s, d, seq(uint64(1000*i+1000), uint64(1000*i+1050))...) }, 1},
		{"source ahead from the start (never replicated)", func() (*mem, *mem) {
			return &mem{ids: cat(seq(1<<40, 1<<40+300), seq(0, 100))}, &mem{ids: seq(0, 100)}
		}, func(i int, s, d *mem) { replicate(s, d, seq(uint64(1000*i+1000), uint64(1000*i+1050))...) }, 2}, // the first anchor lies in the never-replicated prefix
		{"target ahead from the start", func() (*mem, *mem) {
			return &mem{ids: seq(0, 100)}, &mem{ids: cat(seq(1<<41, 1<<41+40), seq(0, 100))}
		}, func(i int, s, d *mem) { replicate(s, d, seq(uint64(1000*i+1000), uint64(1000*i+1050))...) }, 1},
		{"target behind (replication lag)", func() (*mem, *mem) { return &mem{ids: seq(0, 100)}, &mem{ids: seq(0, 60)} },
			func(i int, s, d *mem) {
				s.ids = append(s.ids, seq(uint64(1000*i+1000), uint64(1000*i+1050))...)
				d.ids = append(d.ids, s.ids[len(d.ids):len(s.ids)-20]...)
			}, 1},
		{"a message on the target only, later", func() (*mem, *mem) { return &mem{ids: seq(0, 100)}, &mem{ids: seq(0, 100)} },
			func(i int, s, d *mem) {
				replicate(s, d, seq(uint64(1000*i+1000), uint64(1000*i+1050))...)
				if i == 3 {
					d.ids = append(d.ids, 9_999_999) // published on the target with replication off
				}
			}, 2},
		{"a message on the source only, later", func() (*mem, *mem) { return &mem{ids: seq(0, 100)}, &mem{ids: seq(0, 100)} },
			func(i int, s, d *mem) {
				if i == 3 {
					s.ids = append(s.ids, 8_888_888) // published on the source with replication off
				}
				replicate(s, d, seq(uint64(1000*i+1000), uint64(1000*i+1050))...)
			}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, dst := c.setup()
			tr := &Tracker{From: "scus", To: "wus", Topic: "t", Src: src, Dst: dst}
			for i := range 10 {
				c.step(i, src, dst)
				end := src.start + int64(len(src.ids))
				// A lagging group, one in the middle, one at the log end, one past it.
				for _, o := range []int64{end / 3, end - 30, end, end + 5} {
					got, err := tr.Translate(context.Background(), o)
					if err != nil {
						t.Fatalf("step %d offset %d: %v", i, o, err)
					}
					if o < tr.m.UpTo && o != end/3 {
						continue // answered by the Map: Build's own answer
					}
					want := translate(t, src, dst, o)
					// (TargetOnly may differ: "as far as read", and the two read different ranges.)
					if got.Translated != want.Translated {
						t.Fatalf("step %d offset %d: tracker %s, build %s", i, o, got, want)
					}
					noSkip(t, src, dst, o, got)
				}
			}
			if b := tr.Stats().Builds; b > c.builds {
				t.Fatalf("%d full builds, want at most %d", b, c.builds)
			}
		})
	}
}

// TestTrackerReadsWhatReplicated checks that a step reads what replicated since the last
// one, not both copies from the start.
func TestTrackerReadsWhatReplicated(t *testing.T) {
	src, dst := &mem{ids: cat(seq(1<<40, 1<<40+300), seq(0, 10_000))}, &mem{ids: seq(0, 10_000)}
	tr := &Tracker{From: "scus", To: "wus", Topic: "t", Src: src, Dst: dst}
	if _, err := tr.Translate(context.Background(), 10_300); err != nil {
		t.Fatal(err)
	}
	first := tr.Stats()
	for i := range 20 {
		replicate(src, dst, seq(uint64(100_000+100*i), uint64(100_000+100*i+100))...)
		o := int64(10_300 + 100*(i+1))
		got, err := tr.Translate(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if got.Translated != o-300 {
			t.Fatalf("offset %d translated to %d, want %d", o, got.Translated, o-300)
		}
	}
	st := tr.Stats()
	if st.Builds != 1 {
		t.Fatalf("%d builds, want 1", st.Builds)
	}
	// 20 steps of 100 messages: each message read once on each side (plus the one at o).
	if d := st.SourceReads - first.SourceReads; d > 20*101 {
		t.Fatalf("read %d source messages for 2000 replicated", d)
	}
	if d := st.TargetReads - first.TargetReads; d > 20*101 {
		t.Fatalf("read %d target messages for 2000 replicated", d)
	}
}

// BenchmarkKeepCurrent compares keeping one partition's translation current by the Tracker
// with the reference, a Build from the log start each cycle, at a history of 100,000
// messages and 1,000 replicated messages per cycle. It reports the messages read per
// replicated message.
func BenchmarkKeepCurrent(b *testing.B) {
	const history, perCycle = 100_000, 1_000
	for _, mode := range []string{"tracker", "rebuild"} {
		b.Run(mode, func(b *testing.B) {
			src, dst := &mem{ids: cat(seq(1<<40, 1<<40+300), seq(0, history))}, &mem{ids: seq(0, history)}
			tr := &Tracker{From: "scus", To: "wus", Topic: "t", Src: src, Dst: dst}
			next := uint64(history)
			reads0 := src.reads.Load() + dst.reads.Load()
			b.ResetTimer()
			for b.Loop() {
				replicate(src, dst, seq(next, next+perCycle)...)
				next += perCycle
				o := int64(len(src.ids))
				var err error
				if mode == "tracker" {
					_, err = tr.Translate(context.Background(), o)
				} else {
					var m *Map
					if m, err = Build(context.Background(), "scus", "wus", src, dst, "t", 0, o, 0); err == nil {
						_, err = m.Translate(o)
					}
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(src.reads.Load()+dst.reads.Load()-reads0)/float64(b.N*perCycle), "reads/replicated-msg")
		})
	}
}

func ExampleTracker() {
	src, dst := &mem{ids: cat(seq(500, 800), seq(0, 100))}, &mem{ids: seq(0, 100)}
	tr := &Tracker{From: "scus", To: "wus", Topic: "t", Src: src, Dst: dst}
	for _, o := range []int64{350, 400} {
		t, _ := tr.Translate(context.Background(), o)
		fmt.Println(t.Translated)
	}
	// Output:
	// 50
	// 100
}

// TestTrackerStuckReadsOnlyWhatItChecked: a group consuming the source's own messages (not
// on the target) translates to the target's first message; a later commit before the end
// must not count the unread rest of the source as checked (seen on KoP: a live group stuck
// at wus 0 after it had read past the shared messages).
func TestTrackerStuckReadsOnlyWhatItChecked(t *testing.T) {
	src := &mem{ids: cat(seq(1<<40, 1<<40+300), seq(0, 200))}
	dst := &mem{ids: seq(0, 200)}
	tr := &Tracker{From: "scus", To: "wus", Topic: "t", Src: src, Dst: dst}
	ctx := context.Background()
	for _, o := range []int64{10, 50, 120} {
		got, err := tr.Translate(ctx, o)
		if err != nil || got.Translated != 0 || !got.TargetOnly {
			t.Fatalf("scus %d: %+v %v, want wus 0 (target only)", o, got, err)
		}
	}
	replicate(src, dst, seq(1000, 1500)...)
	for _, o := range []int64{350, 900} {
		got, err := tr.Translate(ctx, o)
		if err != nil || got.Translated != o-300 {
			t.Fatalf("scus %d: %+v %v, want wus %d", o, got, err, o-300)
		}
	}
}
