package output

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
)

func TestAppendTimeIsAppendFormat(t *testing.T) {
	for _, ms := range []int64{0, -5, 1741064767000, 1741064767001, 253402300799999, -62135596800000, 4102444800123} {
		tm := offsetlog.Millis(ms).Time()
		if got, want := string(AppendTime(nil, tm)), tm.Format(TimeLayout); got != want {
			t.Errorf("%d: %s, want %s", ms, got, want)
		}
	}
	local := time.Date(2025, 3, 4, 5, 6, 7, 8e6, time.FixedZone("x", 3600))
	if got, want := string(AppendTime(nil, local)), local.Format(TimeLayout); got != want {
		t.Errorf("zone: %s, want %s", got, want)
	}
}

// sample is a nested object written both by encoding/json and by a JSONWriter.
type sample struct {
	S     string  `json:"s"`
	N     *int64  `json:"n"`
	F     float64 `json:"f"`
	T     *Time   `json:"t"`
	B     bool    `json:"b"`
	Inner struct {
		X     int64          `json:"x"`
		Empty map[string]int `json:"empty"`
	} `json:"inner"`
}

func (s *sample) write(w *JSONWriter) {
	w.Open()
	w.String("s", s.S)
	w.IntPtr("n", s.N)
	w.Float("f", s.F)
	if s.T == nil {
		w.Null("t")
	} else {
		w.Time("t", s.T.Time)
	}
	w.Bool("b", s.B)
	w.Key("inner")
	w.Open()
	w.Int("x", s.Inner.X)
	w.Key("empty")
	w.Open()
	w.Close()
	w.Close()
	w.Close()
}

// A JSONWriter writes what encoding/json (HTML escaping off) and json.Indent write.
func TestJSONWriterIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "plain", `quo"te`, "back\\slash", "tab\tnew\nline", "<html>&", "ünï", "\x01ctl", "\u2028"}
	floats := []float64{0, 1, -1.5, 1e-7, 1.234e-9, 123456789.125, 1e21, 9.99e20, -3e-300, 0.000001, math.MaxFloat64}
	cache := new(TimeCache)
	for i := range 2000 {
		var s sample
		s.S = strs[r.IntN(len(strs))]
		if r.IntN(3) > 0 {
			n := r.Int64N(1<<40) - 1<<39
			s.N = &n
		}
		s.F = floats[r.IntN(len(floats))]
		if r.IntN(4) > 0 {
			s.T = &Time{time.UnixMilli(r.Int64N(4102444800000)).UTC()}
		} else if r.IntN(2) == 0 {
			s.T = &Time{} // the zero time is null
		}
		s.B = r.IntN(2) == 0
		s.Inner.X = int64(i)
		s.Inner.Empty = map[string]int{}
		for _, ind := range [][2]string{{"", ""}, {"    ", "  "}, {"  ", "  "}} {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(&s); err != nil {
				t.Fatal(err)
			}
			want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
			if ind[1] != "" {
				var out bytes.Buffer
				if err := json.Indent(&out, want, ind[0], ind[1]); err != nil {
					t.Fatal(err)
				}
				want = out.Bytes()
			}
			w := JSONWriter{Prefix: ind[0], Indent: ind[1]}
			if i%2 == 0 {
				w.Times = cache
			}
			s.write(&w)
			if w.Err() != nil || !bytes.Equal(w.B, want) {
				t.Fatalf("sample %d indent %q (err %v):\n got %s\nwant %s", i, ind[1], w.Err(), w.B, want)
			}
		}
	}
}

func TestJSONWriterRefusesNaN(t *testing.T) {
	w := JSONWriter{}
	w.Open()
	w.Float("f", math.NaN())
	w.Close()
	if w.Err() == nil {
		t.Fatalf("NaN written without an error: %s", w.B)
	}
}
