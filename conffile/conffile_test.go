package conffile

import (
	"strings"
	"testing"
)

// Echoed text never acts on a terminal or a CI log: control characters,
// invalid UTF-8 and bidirectional overrides are escaped, other text kept.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain é text":            "plain é text",
		"a\r\n::error::forged":    `a\r\n::error::forged`,
		"\x1b[31mred":             `\x1b[31mred`,
		"bad \xff byte":           `bad \xff byte`,
		"rtl \u202e override":     `rtl \u202e override`,
		"tab\tand NUL\x00":        `tab\tand NUL\x00`,
		"a real \uFFFD character": "a real \uFFFD character",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// A problem under a hostile key prints one bounded, escaped line; reasons
// are never cut; a thousand problems print a hundred and the count.
func TestProblemMessagesAreBounded(t *testing.T) {
	key := "x\r\n::error file=a::forged" + strings.Repeat("k", 1<<20)
	p := Problem{File: "c.yaml", Line: 3, Path: "alerts." + key, Msg: "unknown field"}
	msg := p.Error()
	if strings.ContainsAny(msg, "\r\n") || len(msg) > 300 || !strings.Contains(msg, `x\r\n::error`) {
		t.Errorf("%d bytes: %.200q", len(msg), msg)
	}
	reason := strings.Repeat("a Kubernetes explanation, ", 20) // 520 bytes
	if got := (Problem{Path: "p", Msg: reason}).Error(); !strings.HasSuffix(got, reason) {
		t.Errorf("the reason was cut: %q", got)
	}
	var ps Problems
	for range 1000 {
		ps = append(ps, p)
	}
	if out := ps.Error(); !strings.Contains(out, "1000 problem(s)") || !strings.Contains(out, "… and 900 more") || len(out) > 40000 {
		t.Errorf("%d bytes", len(out))
	}
}

// One document per file: a second one is reported at its line, with or
// without a syntax error in it, and an empty first one does not hide it.
func TestOneDocumentPerFile(t *testing.T) {
	type cfg struct {
		A int `yaml:"a"`
	}
	for _, tc := range []struct {
		name, src, want string
	}{
		{"one document after ---", "---\na: 1\n", ""},
		{"a second document", "a: 1\n---\na: 2\n", "c.yaml:3: a second YAML document"},
		{"a leading empty document", "---\n---\na: 2\n", "c.yaml:3: a second YAML document"},
		{"a syntax error in the second", "a: 1\n---\na: [\n", "c.yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c cfg
			_, probs := Decode("c.yaml", []byte(tc.src), &c)
			switch {
			case tc.want == "" && len(probs) > 0:
				t.Errorf("problems %v", probs)
			case tc.want != "" && (len(probs) != 1 || !strings.HasPrefix(probs[0].Error(), tc.want)):
				t.Errorf("problems %v, want %q", probs, tc.want)
			}
		})
	}
}

// Type errors speak of lists, maps, numbers and text, never of YAML tags or
// Go types.
func TestPlainTypeErrors(t *testing.T) {
	for in, want := range map[string]string{
		"cannot unmarshal !!str `abc` into int":             "cannot read text `abc` where a whole number is expected",
		"cannot unmarshal !!map into config.Services":       "cannot read a map where this field's kind of value is expected",
		"cannot unmarshal !!seq into map[string]string":     "cannot read a list where a map of names to values is expected",
		"cannot unmarshal !!str `x` into []string":          "cannot read text `x` where a list is expected",
		"cannot unmarshal !!str `maybe` into bool":          "cannot read text `maybe` where true or false is expected",
		"cannot unmarshal !!int `3` into conffile.Duration": "cannot read a number `3` where this field's kind of value is expected",
	} {
		if got := plainTypeError(in); got != want {
			t.Errorf("%q\n got  %q\n want %q", in, got, want)
		}
	}
}
