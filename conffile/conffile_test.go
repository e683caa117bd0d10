package conffile

import (
	"math"
	"reflect"
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

// testConfig exercises every kind the decoder sets.
type testConfig struct {
	Name    string            `yaml:"name"`
	Enabled bool              `yaml:"enabled"`
	Port    int               `yaml:"port"`
	Small   int8              `yaml:"small"`
	Ratio   float64           `yaml:"ratio"`
	Wait    Duration          `yaml:"wait"`
	Items   []testItem        `yaml:"items"`
	Labels  Labels            `yaml:"labels"`
	Limits  map[string]string `yaml:"limits"`
	Nested  testNested        `yaml:"nested"`
	Pointer *testNested       `yaml:"pointer"`
	Inlined `yaml:",inline"`
}

type testItem struct {
	Name   string `yaml:"name"`
	Levels []int  `yaml:"levels"`
}

type testNested struct {
	Host string `yaml:"host"`
}

// Inlined's keys are the outer struct's.
type Inlined struct {
	URL string `yaml:"url"`
}

func defaults() testConfig {
	return testConfig{Name: "lab", Port: 80, Ratio: 0.5, Wait: "5m",
		Labels: Labels{"a": "1", "b": "2"}, Limits: map[string]string{"cpu": "1", "memory": "1Gi"},
		Items: []testItem{{Name: "System", Levels: []int{1}}}, Nested: testNested{Host: "h"}}
}

// Every problem is found at the path and line of its own node, in block and
// flow style alike, through aliases, in words a user reads.
func TestDecodeProblemsAtTheirNode(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string // each a problem's Error(), in order
	}{
		{"flow-style list of maps", "items: [{name: System, levels: [error]}]\n",
			[]string{`c.yaml:1: items[0].levels[0]: must be a whole number, not the text "error"`}},
		{"second item of a flow list on its own line", "items: [{name: a, levels: [1]},\n  {name: b, levels: {x: 1}}]\n",
			[]string{`c.yaml:2: items[1].levels: must be a list, not a map`}},
		{"block style", "items:\n  - name: a\n    levels:\n      - 1\n      - two\n",
			[]string{`c.yaml:5: items[0].levels[1]: must be a whole number, not the text "two"`}},
		{"unknown keys with suggestions", "nmae: x\nnested: {hots: y}\n",
			[]string{`c.yaml:1: nmae: unknown field (did you mean "name"?)`, `c.yaml:2: nested.hots: unknown field (did you mean "host"?)`}},
		{"text where a map is", "nested: text\n", []string{`c.yaml:1: nested: must be a map of fields, not the text "text"`}},
		{"a list where text is", "name: [a]\n", []string{`c.yaml:1: name: must be text, not a list`}},
		{"a list where a map of names is", "labels: [a]\n", []string{`c.yaml:1: labels: must be a map of names to values, not a list`}},
		{"a map where a list is", "items: {a: 1}\n", []string{`c.yaml:1: items: must be a list, not a map`}},
		{"a number out of range", "small: 300\nport: 99999999999999999999\n",
			[]string{`c.yaml:1: small: the number "300" is out of range`, `c.yaml:2: port: must be a whole number, not the number "99999999999999999999"`}},
		{"a fraction where a whole number is", "port: 1.5\n", []string{`c.yaml:1: port: must be a whole number, not the number "1.5"`}},
		{"a key given twice", "name: a\nport: 1\nname: b\n", []string{`c.yaml:3: name: given twice (first at line 1)`}},
		{"a key that is a list", "? [a]\n: 1\n", []string{`c.yaml:1: a key must be text, not a list`}},
		{"a problem through an alias is at the alias", "nested: &n {host: h}\npointer: *n\nitems:\n  - name: *n\n",
			[]string{`c.yaml:4: items[0].name: must be text, not a map`}},
		{"a problem under an alias key", "labels: {k: &key name}\nnested:\n  *key : x\n",
			[]string{`c.yaml:3: nested.name: unknown field`}},
		{"a merge key naming text", "nested:\n  <<: text\n", []string{`c.yaml:2: nested.<<: a merge key (<<) must name a map or a list of maps`}},
		{"binary and custom tags", "name: !!binary aGVsbG8=\nnested: {host: !env HOME}\nlabels: {a: !!str 12}\n",
			[]string{`c.yaml:1: name: must not carry the YAML tag !!binary`, `c.yaml:2: nested.host: must not carry the YAML tag !env`}},
		{"an empty list item", "items: [{name: a}, ~, null]\n",
			[]string{`c.yaml:1: items[1]: must be a map of fields, not nothing`, `c.yaml:1: items[2]: must be a map of fields, not nothing`}},
		{"an empty map value", "labels:\n  a:\n", []string{`c.yaml:2: labels.a: must be text, not nothing`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaults()
			_, probs := Decode("c.yaml", []byte(tc.src), &c)
			var got []string
			for _, p := range probs.Sorted() {
				got = append(got, p.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			for _, g := range got {
				if strings.Contains(g, "!!") && !strings.Contains(g, "must not carry the YAML tag") || strings.Contains(g, "conffile.") || strings.Contains(g, "map[") || strings.Contains(g, "[]") {
					t.Errorf("YAML tags or Go types in %q", g)
				}
			}
		})
	}
}

// Booleans are strict: an unquoted true or false in any of YAML's cases,
// nothing else; a quoted one is refused with the fix.
func TestStrictBooleans(t *testing.T) {
	for src, want := range map[string]string{
		"enabled: true":    "",
		"enabled: True":    "",
		"enabled: FALSE":   "",
		"enabled: yes":     `must be true or false, not the text "yes"`,
		"enabled: on":      `must be true or false, not the text "on"`,
		`enabled: "yes"`:   `must be true or false, not the text "yes"`,
		`enabled: "true"`:  `must be true or false without quotes, not the text "true"`,
		`enabled: 'false'`: `must be true or false without quotes, not the text "false"`,
		"enabled: 1":       `must be true or false, not the number "1"`,
	} {
		c := defaults()
		_, probs := Decode("c.yaml", []byte(src+"\n"), &c)
		switch {
		case want == "" && len(probs) > 0:
			t.Errorf("%s: %v", src, probs)
		case want != "" && (len(probs) != 1 || probs[0].Msg != want):
			t.Errorf("%s: got %v, want %q", src, probs, want)
		}
	}
}

// Fields the document sets are replaced, the rest kept; a list is replaced
// whole, Labels are replaced whole, other maps merge key by key; nothing
// empties a list or map and keeps a scalar; merge keys and aliases read as
// YAML says.
func TestDecodeOverlaysDefaults(t *testing.T) {
	src := `
base: &base {host: merged}
name: &n lab2
enabled: true
ratio: .inf
port: 0x10
items: [{name: Application, levels: [2, 3]}]
labels: {c: "3"}
limits: {memory: 2Gi}
nested:
  <<: *base
pointer:
  <<: [*base, {host: second}]
url: *n
wait:
`
	c := defaults()
	_, probs := Decode("c.yaml", []byte(src), &c)
	if len(probs) != 1 || probs[0].Path != "base" { // base is not a field: only the anchor's carrier
		t.Fatalf("problems %v", probs)
	}
	want := testConfig{Name: "lab2", Enabled: true, Port: 16, Ratio: math.Inf(1), Wait: "5m",
		Items:  []testItem{{Name: "Application", Levels: []int{2, 3}}},
		Labels: Labels{"c": "3"}, Limits: map[string]string{"cpu": "1", "memory": "2Gi"},
		Nested: testNested{Host: "merged"}, Pointer: &testNested{Host: "merged"}, Inlined: Inlined{URL: "lab2"}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
	c = defaults()
	if _, probs := Decode("c.yaml", []byte("items:\nlabels:\nname:\n"), &c); len(probs) > 0 || c.Items != nil || c.Labels != nil || c.Name != "lab" {
		t.Errorf("null: %v %+v", probs, c)
	}
}

// Validation problems are located at the user's node, an alias key
// included, and dropped under a path that already failed to decode.
func TestLocate(t *testing.T) {
	src := "items: [{name: System, levels: [error]}]\nlabels: {k: &key name}\nnested: {*key : x}\n"
	c := defaults()
	doc, probs := Decode("c.yaml", []byte(src), &c)
	if len(probs) != 2 {
		t.Fatalf("problems %v", probs)
	}
	located := doc.Locate(Problems{
		{Path: "items[0].levels[0]", Msg: "must be a level from 1 to 5"}, // a consequence of the failure
		{Path: "items[0].name", Msg: "checked"},
		{Path: "labels.k", Msg: "checked"},
		{Path: "wait", Msg: "checked"},
	})
	var got []string
	for _, p := range located {
		got = append(got, p.Error())
	}
	want := []string{"c.yaml:1: items[0].name: checked", "c.yaml:2: labels.k: checked", "(default): wait: checked"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := (*Document)(nil).Locate(Problems{{Path: "name", Msg: "x"}}); got[0].File != "(default)" {
		t.Errorf("no document: %v", got)
	}
}
