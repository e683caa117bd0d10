package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a configuration, located as precisely as
// the input allows.
type Problem struct {
	File string // config file, or "(default)" for the embedded one
	Line int    // 1-based; 0 when the value came from the default
	Path string // field path such as alerts.nodeCommit.warning
	Msg  string
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	if p.Path != "" {
		b.WriteString(": " + p.Path)
	}
	b.WriteString(": " + excerptMsg(p.Msg))
	return b.String()
}

// Problems is every problem found in one configuration.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return fmt.Sprintf("%d problem(s) in the configuration:\n  %s", len(ps), strings.Join(lines, "\n  "))
}

func (ps Problems) sort() {
	sort.SliceStable(ps, func(i, j int) bool {
		// Problems in the user's file first, in file order; then the defaults.
		li, lj := ps[i].Line, ps[j].Line
		if (li == 0) != (lj == 0) {
			return lj == 0
		}
		if li != lj {
			return li < lj
		}
		return ps[i].Path < ps[j].Path
	})
}

// locate finds the line of a field path in the user file; a path the user did
// not set keeps its value from the embedded default.
func locate(file string, root *yaml.Node, path string) (string, int) {
	if n := lookup(root, path); n != nil {
		return file, n.Line
	}
	return "(default)", 0
}

// excerptMsg bounds a message that quotes a value (yaml's type errors quote
// the whole scalar).
func excerptMsg(m string) string {
	const n = 400
	if len(m) <= n {
		return m
	}
	return excerpt(m[:n]) + "… (message cut)"
}

func lookup(n *yaml.Node, path string) *yaml.Node {
	if n == nil {
		return nil
	}
	for _, seg := range splitPath(path) {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch {
		case n.Kind == yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg {
					next = n.Content[i+1]
				}
			}
			if next == nil {
				return nil
			}
			n = next
		case n.Kind == yaml.SequenceNode:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(n.Content) {
				return nil
			}
			n = n.Content[i]
		default:
			return nil
		}
	}
	return n
}

// splitPath turns `a.b[2].c["x.y/z"]` into ["a", "b", "2", "c", "x.y/z"].
func splitPath(path string) []string {
	var out []string
	for path != "" {
		switch {
		case strings.HasPrefix(path, `["`):
			q, err := strconv.QuotedPrefix(path[1:])
			if err != nil {
				return append(out, path)
			}
			key, _ := strconv.Unquote(q)
			out = append(out, key)
			path = strings.TrimPrefix(path[1+len(q):], "]")
		case path[0] == '.' || path[0] == '[' || path[0] == ']':
			path = path[1:]
		default:
			end := strings.IndexAny(path, ".[]")
			if end < 0 {
				end = len(path)
			}
			out = append(out, path[:end])
			path = path[end:]
		}
	}
	return out
}

// unknownFields walks the document against the Go types and reports every key
// that no field takes, so one run lists them all (yaml's KnownFields stops at
// the first).
func unknownFields(file string, n *yaml.Node, out any) Problems {
	var probs Problems
	var walk func(n *yaml.Node, t reflect.Type, path string)
	walk = func(n *yaml.Node, t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
			fields := yamlFields(t)
			for i := 0; i+1 < len(n.Content); i += 2 {
				key, val := n.Content[i], n.Content[i+1]
				p := join(path, key.Value)
				ft, ok := fields[key.Value]
				if !ok {
					probs = append(probs, Problem{File: file, Line: key.Line, Path: p,
						Msg: "unknown field" + suggest(key.Value, fields)})
					continue
				}
				walk(val, ft, p)
			}
		case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
			for i, item := range n.Content {
				walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(n, reflect.TypeOf(out), "")
	return probs
}

func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			fields[name] = f.Type
		}
	}
	return fields
}

// suggest names a known field that differs only in case or by a small edit.
func suggest(key string, fields map[string]reflect.Type) string {
	best, bestDist := "", 3
	for name := range fields {
		d := editDistance(strings.ToLower(key), strings.ToLower(name))
		if d < bestDist || (d == bestDist && name < best) {
			best, bestDist = name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// typeProblem turns a yaml type error ("line 7: cannot unmarshal ...") into a
// Problem carrying the field path found at that line.
func typeProblem(file string, root *yaml.Node, msg string) Problem {
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return Problem{File: file, Msg: msg}
	}
	line, _ := strconv.Atoi(m[1])
	// The error names the kind of node it could not decode.
	collection := strings.Contains(m[2], "!!seq") || strings.Contains(m[2], "!!map")
	return Problem{File: file, Line: line, Path: pathAtLine(root, line, collection), Msg: m[2]}
}

func syntaxProblem(file string, err error) Problem {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{File: file, Line: line, Msg: "invalid YAML: " + m[2]}
	}
	return Problem{File: file, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// pathAtLine returns the path of the value on line. A flow collection and
// its items share a line, so it picks the innermost collection when the error
// is about one, else the first scalar.
func pathAtLine(n *yaml.Node, line int, collection bool) string {
	var first, inner, scalar string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if n.Line == line && path != "" {
			if first == "" {
				first = path
			}
			if n.Kind == yaml.ScalarNode && scalar == "" {
				scalar = path
			}
			if n.Kind != yaml.ScalarNode {
				inner = path
			}
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], join(path, n.Content[i].Value))
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(n, "")
	switch {
	case collection && inner != "":
		return inner
	case !collection && scalar != "":
		return scalar
	}
	return first
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
