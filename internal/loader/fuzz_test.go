package loader

import (
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog/offsetlogtest"
)

// FuzzReplay replays any value (the seeds of offsetlog's FuzzDecode): an undecodable one is
// an error here and is counted in the result.
func FuzzReplay(f *testing.F) {
	for _, s := range offsetlogtest.Seeds(f) {
		f.Add(s.Key, s.Value, s.Fix)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, fix bool) {
		if fix {
			value = append([]byte(nil), value...)
			offsetlogtest.FixCRC(value)
		}
		rp := NewReplayer(0, OrderingKoP)
		_ = rp.ApplyMessage(Message{Key: []byte("k"), Value: value})
		_ = rp.ApplyMessage(Message{Key: []byte("k"), Value: value})
		res := rp.Result()
		if c := res.Counts; c.Messages != 2 {
			t.Fatalf("counts %+v", c)
		}
	})
}
