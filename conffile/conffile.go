// Package conffile reads YAML configuration files the way both winobs
// binaries need: bounded reads of regular files only, a document overlaid
// on defaults field by field, every unknown key and type error reported at
// once with file, line and field path, and alias bombs refused. It holds no
// schema of its own, so gen's config and the eventlog-shipper's both build
// on it without either depending on the other.
package conffile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a configuration, located as precisely as
// the input allows.
type Problem struct {
	File string // config file, or "(default)" for the embedded one
	Line int    // 1-based; 0 when the value came from the default
	Path string // field path such as alerts.nodeCommit.warning
	Msg  string
	// Related is another field the problem comes from (two fields that must
	// agree): when the file does not set Path, the problem is located at
	// Related if the file sets that.
	Related string
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	if p.Path != "" {
		// Paths hold the user's keys: escaped and bounded like any echoed text.
		b.WriteString(": " + Printable(Excerpt(p.Path)))
	}
	b.WriteString(": " + excerptMsg(p.Msg))
	return b.String()
}

// Printable escapes what a terminal or a CI log would act on (control
// characters: CR and LF forge lines, ESC starts sequences; line and
// paragraph separators; every format character: bidirectional overrides,
// isolates and marks such as U+200E, zero-width ones) and invalid UTF-8, the
// way Go quotes them, leaving all other text as it is.
func Printable(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Problems is every problem found in one configuration.
type Problems []Problem

func (ps Problems) Error() string {
	// Every problem is reported, up to a bound: a file of aliased keys must
	// not turn into megabytes of messages.
	const most = 100
	lines := make([]string, 0, min(len(ps), most+1))
	for i, p := range ps {
		if i == most {
			lines = append(lines, fmt.Sprintf("… and %d more", len(ps)-most))
			break
		}
		lines = append(lines, p.Error())
	}
	return fmt.Sprintf("%d problem(s) in the configuration:\n  %s", len(ps), strings.Join(lines, "\n  "))
}

// Sorted returns the problems in file order, defaults last.
func (ps Problems) Sorted() Problems {
	ps.sort()
	return ps
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
	if n := Lookup(root, path); n != nil {
		return file, n.Line
	}
	// A field the file leaves unset, of an item or map the file writes (a
	// toleration without its operator): the problem is the file's, at that
	// item. Top-level sections do not count: setting one field of alerts
	// does not make every other alert the file's.
	segs := splitPath(path)
	for i := len(segs) - 1; i >= 2; i-- {
		if n := lookupSegs(root, segs[:i]); n != nil {
			return file, n.Line
		}
	}
	return "(default)", 0
}

// excerptMsg bounds a message that quotes a value (yaml's type errors quote
// the whole scalar).
func excerptMsg(m string) string {
	// Reasons are kept whole; only a message swollen by an echoed value is
	// cut, and what is echoed is always escaped.
	const n = 2000
	if len(m) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(m[cut]) {
			cut--
		}
		m = m[:cut] + fmt.Sprintf("… (message cut, %d bytes)", len(m))
	}
	return Printable(m)
}

// Lookup returns the node at a field path (a.b[2].c, or a.b["x.y/z"] for a
// map key with path punctuation), following aliases; nil if absent.
func Lookup(n *yaml.Node, path string) *yaml.Node { return lookupSegs(n, splitPath(path)) }

func lookupSegs(n *yaml.Node, segs []string) *yaml.Node {
	if n == nil {
		return nil
	}
	for _, seg := range segs {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch {
		case n.Kind == yaml.MappingNode:
			if n = mapValue(n, seg, 0); n == nil {
				return nil
			}
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

// mapValue is the value of key in a mapping, an alias key or a merged map
// (<<) included, as the decoder reads it.
func mapValue(n *yaml.Node, key string, depth int) *yaml.Node {
	if depth > 100 {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := resolve(n.Content[i]); k.ShortTag() != "!!merge" && k.Value == key {
			return n.Content[i+1]
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := resolve(n.Content[i]); k.ShortTag() == "!!merge" {
			for _, m := range mergeSources(resolve(n.Content[i+1])) {
				if v := mapValue(m, key, depth+1); v != nil {
					return v
				}
			}
		}
	}
	return nil
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

// suggest names a known field that differs only in case or by a small edit.
func suggest(key string, fields map[string][]int) string {
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

// syntaxProblem is a document that does not parse as YAML.
func syntaxProblem(file string, err error) Problem {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{File: file, Line: line, Msg: "invalid YAML: " + m[2]}
	}
	return Problem{File: file, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// Join appends a plain key to a field path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Duration is a Prometheus duration string ("5m", "1h30m"), kept as written so
// that an invalid one is reported by Validate together with every other problem.
type Duration string

// Model returns the parsed duration; Validate has rejected invalid ones.
func (d Duration) Model() model.Duration {
	v, _ := model.ParseDuration(string(d))
	return v
}

// Document is a decoded configuration file: where its values are, and
// which of them could not be decoded.
type Document struct {
	file   string
	root   *yaml.Node
	failed map[string]bool
}

// Locate fills in the file and line of validation problems from their field
// paths (a path the file does not set is reported against the defaults) and
// drops those at or under a path that already failed to decode: a list that
// could not be read is not also "empty". A nil Document (no file) reports
// everything against the defaults.
func (doc *Document) Locate(probs Problems) Problems {
	if doc == nil {
		doc = &Document{}
	}
	out := probs[:0:0]
	for _, p := range probs {
		if doc.underFailed(p.Path) {
			continue
		}
		p.File, p.Line = locate(doc.file, doc.root, p.Path)
		if p.Line == 0 && p.Related != "" {
			if f, l := locate(doc.file, doc.root, p.Related); l > 0 {
				p.File, p.Line = f, l
			}
		}
		out = append(out, p)
	}
	return out
}

// Sets reports whether the file writes the field at path (a nil Document,
// no file, writes none): a default is then the user's choice only when
// written.
func (doc *Document) Sets(path string) bool {
	return doc != nil && doc.root != nil && Lookup(doc.root, path) != nil
}

func (doc *Document) underFailed(path string) bool {
	for f := range doc.failed {
		if path == f || strings.HasPrefix(path, f+".") || strings.HasPrefix(path, f+"[") {
			return true
		}
	}
	return false
}

// MaxFileSize bounds a config file: a real one is a few KiB.
const MaxFileSize = 1 << 20

// maxExpandedNodes bounds a document after YAML alias expansion (the default
// config has about 300 nodes), so an alias bomb is refused before decoding.
const maxExpandedNodes = 20000

// ErrNotRegular and ErrTooLarge are what ReadFile and OpenRegular refuse.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("larger than")
)

// ReadFile reads a regular file of at most max bytes. Devices, FIFOs and
// directories are refused without reading them, so /dev/zero or a named pipe
// cannot exhaust memory or hang the read. A link is followed (Kubernetes
// mounts Secrets as links).
func ReadFile(path string, max int64) ([]byte, error) { return readFile(path, max, true) }

// ReadFileNoFollow is ReadFile for files the program itself keeps (state,
// checkpoints): a link at path is refused, never read through.
func ReadFileNoFollow(path string, max int64) ([]byte, error) { return readFile(path, max, false) }

func readFile(path string, max int64, follow bool) ([]byte, error) {
	f, err := openRegular(path, follow)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w %d bytes", ErrTooLarge, max)
	}
	return b, nil
}

// OpenRegular opens path for reading only if it is a regular file: a pipe,
// a device or a directory is refused before it is opened (opening a FIFO
// would block until a writer comes, and reading a device never ends), the
// open itself never blocks, and a file swapped in between is refused too.
func OpenRegular(path string) (*os.File, error) { return openRegular(path, true) }

// OpenRegularNoFollow is OpenRegular that refuses a link at path itself.
func OpenRegularNoFollow(path string) (*os.File, error) { return openRegular(path, false) }

func openRegular(path string, follow bool) (*os.File, error) {
	stat, flags := os.Stat, os.O_RDONLY|openNonBlocking
	if !follow {
		stat, flags = os.Lstat, flags|openNoFollow
	}
	st, err := stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s)", ErrNotRegular, st.Mode().Type())
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", err)
	}
	fst, err := f.Stat()
	if err != nil || !fst.Mode().IsRegular() || !os.SameFile(st, fst) {
		f.Close()
		return nil, fmt.Errorf("%w (replaced while opened)", ErrNotRegular)
	}
	return f, nil
}

// expandedSize counts the nodes a document has once every alias is
// expanded, stopping as soon as it passes limit.
func expandedSize(n *yaml.Node, limit int, memo map[*yaml.Node]int) int {
	if n == nil {
		return 0
	}
	if v, ok := memo[n]; ok {
		return v
	}
	memo[n] = limit + 1 // an alias cycle counts as too large
	total := 1
	if n.Kind == yaml.AliasNode {
		total += expandedSize(n.Alias, limit, memo)
	}
	for _, c := range n.Content {
		if total > limit {
			break
		}
		total += expandedSize(c, limit, memo)
	}
	memo[n] = total
	return total
}

// Decode overlays the YAML document src (read from file) onto out, a
// pointer to a struct already holding defaults: fields the document sets are
// replaced, the rest kept. It reports every unknown key (with a suggestion),
// every value of the wrong kind and every key given twice, each at the path
// and line of its own node, and returns the document for Locate.
func Decode(file string, src []byte, out any) (*Document, Problems) {
	// One document per file: a second one (even an empty first one before
	// it) would otherwise be ignored without a word, syntax errors and all.
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var docs []*yaml.Node
	for {
		var d yaml.Node
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, Problems{syntaxProblem(file, err)}
		}
		docs = append(docs, &d)
	}
	if len(docs) > 1 {
		line := docs[1].Line
		if len(docs[1].Content) > 0 {
			line = docs[1].Content[0].Line
		}
		return nil, Problems{{File: file, Line: line, Msg: "a second YAML document (after '---'): a config file is one document"}}
	}
	if len(docs) == 0 || len(docs[0].Content) == 0 {
		return nil, nil // an empty file changes nothing
	}
	root := docs[0].Content[0]
	if n := expandedSize(root, maxExpandedNodes, map[*yaml.Node]int{}); n > maxExpandedNodes {
		return nil, Problems{{File: file, Line: root.Line, Msg: fmt.Sprintf("the document expands to more than %d YAML nodes (aliases repeated too often); a config needs far fewer", maxExpandedNodes)}}
	}
	if root.Kind != yaml.MappingNode && !isNull(root) {
		// A file whose document is not a map was never written as a config
		// (a linked credential file, a token, a .env): say what kind of
		// thing it holds, never what it says.
		return nil, Problems{{File: file, Line: root.Line, Msg: fmt.Sprintf("must be a map of fields (such as \"namespace: monitoring\"), not %s; its text is not shown", kind(root))}}
	}
	d := &decoder{file: file, failed: map[string]bool{}}
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic("conffile.Decode: out must be a non-nil pointer")
	}
	d.value(root, v.Elem(), "")
	return &Document{file: file, root: root, failed: d.failed}, d.probs
}

// KeyPath is the field path of a map key: a.b.key, or a.b["key.with/dots"]
// when the key holds path punctuation.
func KeyPath(path, key string) string {
	if strings.ContainsAny(key, `.[]"`) || key == "" {
		return path + "[" + strconv.Quote(key) + "]"
	}
	return Join(path, key)
}

// Excerpt shortens a value quoted in a message.
func Excerpt(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

// FieldPaths lists the yaml path of every leaf field of v's type.
func FieldPaths(v any) []string {
	var out []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		if t.Kind() != reflect.Struct {
			out = append(out, path)
			return
		}
		for name, idx := range fieldIndex(t) {
			walk(t.FieldByIndex(idx).Type, Join(path, name))
		}
	}
	walk(reflect.TypeOf(v), "")
	return out
}
