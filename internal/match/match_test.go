package match

import "testing"

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"orders", "orders", true},
		{"orders", "orders-1", false},
		{"orders-*", "orders-1", true},
		{"orders-*", "payments-1", false},
		{"*", "a/b", true}, // * crosses "/", unlike path.Match
		{"persistent://public/default/*", "persistent://public/default/topic-1", true},
		{"*/topic-1", "public/default/topic-1", true},
		{"g?", "g1", true},
		{"g?", "g12", false},
		{"g[0-9]", "g7", true},
		{"g[!0-9]", "g7", false},
		{"g[^0-9]", "gx", true},
		{`g\*`, "g*", true},
		{`g\*`, "gx", false},
		{"a[/]b", "a/b", true},
		{"[", "[", false}, // invalid: matches nothing
	} {
		if got := Match(c.pattern, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

func TestValid(t *testing.T) {
	for _, p := range []string{"orders", "orders-*", "g[0-9]", `g\*`, "a/b*"} {
		if err := Valid(p); err != nil {
			t.Errorf("Valid(%q): %v", p, err)
		}
	}
	for _, p := range []string{"", "[", "g[0-9", `g\`} {
		if Valid(p) == nil {
			t.Errorf("Valid(%q) accepted", p)
		}
	}
}

func TestAnyAndLiterals(t *testing.T) {
	if !Any(nil, "x") || Any([]string{"a*"}, "b", "c") || !Any([]string{"a*", "c"}, "b", "c") {
		t.Error("Any")
	}
	if got := Literals([]string{"a", "b"}); len(got) != 2 {
		t.Errorf("Literals of names: %v", got)
	}
	if got := Literals([]string{"a", "b*"}); got != nil {
		t.Errorf("Literals with a glob: %v", got)
	}
}

func TestLiteral(t *testing.T) {
	for pattern, want := range map[string]string{"orders": "orders", `a\*b`: "a*b", `x\?\[y`: "x?[y", `a\\b`: `a\b`} {
		got, ok := Literal(pattern)
		if !ok || got != want || !Match(pattern, want) {
			t.Errorf("Literal(%q) = %q, %v; want %q (and the pattern to match it)", pattern, got, ok, want)
		}
	}
	for _, pattern := range []string{"a*", "a?", "[ab]", `a\*b*`} {
		if got, ok := Literal(pattern); ok {
			t.Errorf("Literal(%q) = %q: a glob, want false", pattern, got)
		}
	}
}
