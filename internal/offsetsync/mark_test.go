package offsetsync

import (
	"strings"
	"testing"
)

func TestMarkRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		m    Mark
		orig string
	}{
		{Mark{From: "scus", Source: 1200, HasFloor: true}, ""},
		{Mark{From: "wus", Source: 0, HasFloor: true}, "app metadata"},
		{Mark{From: "eus-2", Source: 1 << 40, Floor: 1 << 39, HasFloor: true}, "a|b,from=x"},
		// A client's metadata that is itself marked stays whole inside.
		{Mark{From: "scus", Source: 5, Floor: 3, HasFloor: true}, "kop-offsets-sync:from=wus,source=9|"},
	} {
		md := tc.m.Metadata(tc.orig)
		m, orig, ok := ParseMark(md)
		if !ok || m != tc.m || orig != tc.orig {
			t.Errorf("ParseMark(%q) = %+v %q %v, want %+v %q", md, m, orig, ok, tc.m, tc.orig)
		}
	}
	if got := (Mark{From: "scus", Source: 1200, Floor: 7}).Metadata("x"); got != "kop-offsets-sync:from=scus,source=1200,floor=7|x" {
		t.Errorf("Metadata = %q", got)
	}
	// A mark of the releases before floors were carried: read, without a floor.
	if m, orig, ok := ParseMark("kop-offsets-sync:from=scus,source=1200|x"); !ok || m != (Mark{From: "scus", Source: 1200}) || orig != "x" {
		t.Errorf("a mark without floor: %+v %q %v", m, orig, ok)
	}
}

func TestParseMarkRejects(t *testing.T) {
	for _, md := range []string{
		"",
		"app metadata",
		"kop-offsets-sync:",
		"kop-offsets-sync:from=scus,source=12",                    // no '|'
		"kop-offsets-sync:from=,source=12|",                       // no cluster
		"kop-offsets-sync:from=scus|",                             // no source
		"kop-offsets-sync:from=scus,source=|",                     // empty source
		"kop-offsets-sync:from=scus,source=-1|",                   // negative
		"kop-offsets-sync:from=scus,source=012|",                  // not canonical
		"kop-offsets-sync:from=scus,source=1x|",                   // not a number
		"kop-offsets-sync:source=1,from=scus|",                    // other order
		"kop-offsets-sync:from=a,b,source=1|",                     // ',' in the cluster
		"kop-offsets-sync:from=scus,source=1 |",                   // trailing space
		" kop-offsets-sync:from=scus,source=1|",                   // not at the start
		"KOP-OFFSETS-SYNC:from=scus,source=1|",                    // case
		"kop-offsets-sync:from=scus,source=99999999999999999999|", // overflow
		"kop-offsets-sync:from=scus,source=1,floor=|",             // empty floor
		"kop-offsets-sync:from=scus,source=1,floor=-2|",           // negative floor
		"kop-offsets-sync:from=scus,source=1,flor=2|",             // not floor
		"kop-offsets-sync:from=scus,source=1,floor=2,x=1|",        // more fields
	} {
		if m, orig, ok := ParseMark(md); ok || orig != md || m != (Mark{}) {
			t.Errorf("ParseMark(%q) = %+v %q %v, want no mark and the metadata whole", md, m, orig, ok)
		}
	}
}

// FuzzParseMark: a mark read back writes the same metadata (one of the releases before
// floors were carried writes it with floor 0); anything else is returned whole.
func FuzzParseMark(f *testing.F) {
	f.Add("kop-offsets-sync:from=scus,source=1200|app")
	f.Add("kop-offsets-sync:from=scus,source=1200,floor=900|app")
	f.Add("kop-offsets-sync:from=scus,source=-1|")
	f.Add("app")
	f.Fuzz(func(t *testing.T, md string) {
		m, orig, ok := ParseMark(md)
		if !ok {
			if orig != md {
				t.Fatalf("no mark, but %q came back as %q", md, orig)
			}
			return
		}
		want := md
		if !m.HasFloor {
			want = strings.Replace(md, "|", ",floor=0|", 1)
		}
		if got := m.Metadata(orig); got != want {
			t.Fatalf("ParseMark(%q) = %+v %q, which writes %q", md, m, orig, got)
		}
	})
}
