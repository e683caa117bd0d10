package conffile

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Labels is a map of names to values that a document replaces as a whole
// instead of merging into the default, so a default selector label can be
// dropped. Other maps merge key by key.
type Labels map[string]string

var labelsType = reflect.TypeOf(Labels(nil))

// decoder sets a Go value from a YAML node itself, rather than through the
// yaml package's decoder, so every problem carries the path it was found at
// (flow-style lists and aliases included), the line of the node in the
// user's file, and words a user reads: no YAML tags, no Go types.
type decoder struct {
	file  string
	probs Problems
	// failed holds the paths that could not be decoded, so validation does
	// not add a second, misleading problem about what was left unset.
	failed map[string]bool
}

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.probs = append(d.probs, Problem{File: d.file, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)})
	d.failed[path] = true
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// plainTags are the tags a config value may be written with explicitly.
var plainTags = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true, "!!map": true, "!!seq": true}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// describe names what a node holds, the way the messages quote it.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	}
	v := strconv.Quote(Excerpt(n.Value))
	switch n.ShortTag() {
	case "!!int", "!!float":
		return "the number " + v
	case "!!bool":
		return "the boolean " + v
	case "!!null":
		return "nothing"
	}
	return "the text " + v
}

// kind names what a node holds without quoting it.
func kind(n *yaml.Node) string {
	n = resolve(n)
	switch {
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.ShortTag() == "!!int" || n.ShortTag() == "!!float":
		return "a number"
	case n.ShortTag() == "!!bool":
		return "a boolean"
	}
	return fmt.Sprintf("text of %d bytes", len(n.Value))
}

// wants names what a Go type takes, in a user's words.
func wants(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		return "a map of fields"
	case reflect.Map:
		return "a map of names to values"
	case reflect.Slice:
		return "a list"
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a value of another kind"
}

// value decodes n into v (addressable) at path.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	at := n // an alias is reported where the user wrote it
	n = resolve(n)
	if n.Style&yaml.TaggedStyle != 0 && !plainTags[n.ShortTag()] {
		// !!binary would be decoded to other bytes than written, and a
		// custom tag means something to some other program: neither is
		// what a config value says.
		d.fail(at, path, "must not carry the YAML tag %s", Printable(Excerpt(n.Tag)))
		return
	}
	if isNull(n) {
		// As the yaml package does: nothing empties a list, a map or a
		// pointer and leaves every other value as it was.
		switch v.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer:
			v.Set(reflect.Zero(v.Type()))
		}
		return
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.value(n, v.Elem(), path)
		return
	}
	mismatch := func() { d.fail(at, path, "must be %s, not %s", wants(v.Type()), describe(n)) }
	switch v.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			mismatch()
			return
		}
		d.structure(n, v, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode || v.Type().Key().Kind() != reflect.String {
			mismatch()
			return
		}
		if v.IsNil() || v.Type() == labelsType {
			v.Set(reflect.MakeMap(v.Type()))
		}
		d.pairs(n, path, func(key, val *yaml.Node, p string) {
			if isNull(resolve(val)) {
				d.fail(val, p, "must be %s, not nothing", wants(v.Type().Elem()))
				return
			}
			k := reflect.ValueOf(resolve(key).Value).Convert(v.Type().Key())
			elem := reflect.New(v.Type().Elem()).Elem()
			if old := v.MapIndex(k); old.IsValid() {
				elem.Set(old)
			}
			d.value(val, elem, p)
			v.SetMapIndex(k, elem)
		})
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			mismatch()
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if isNull(resolve(item)) { // an empty item is a mistake, not a zero value
				d.fail(item, p, "must be %s, not nothing", wants(v.Type().Elem()))
				continue
			}
			d.value(item, s.Index(i), p)
		}
		v.Set(s)
	default:
		if n.Kind != yaml.ScalarNode {
			mismatch()
			return
		}
		if msg := scalar(n, v); msg != "" {
			d.fail(at, path, "%s", msg)
		}
	}
}

// structure decodes a mapping into a struct's fields, reporting every key
// no field takes, with a suggestion.
func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	fields := fieldIndex(v.Type())
	d.pairs(n, path, func(key, val *yaml.Node, p string) {
		idx, ok := fields[resolve(key).Value]
		if !ok {
			d.fail(key, p, "unknown field%s", suggest(resolve(key).Value, fields))
			return
		}
		d.value(val, v.FieldByIndex(idx), p)
	})
}

// pairs calls f once for each key of a mapping (the key node as written,
// perhaps an alias) and its value. A merge key
// (<<) adds the keys of the maps it names that the mapping does not set
// itself (the earlier map winning, as YAML says). Keys that are not text or
// are given twice are reported.
func (d *decoder) pairs(n *yaml.Node, path string, f func(key, val *yaml.Node, path string)) {
	own := map[string]int{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		keyNode := n.Content[i]
		key := resolve(keyNode)
		if key.Kind == yaml.ScalarNode && key.ShortTag() == "!!merge" {
			src := mergeSources(resolve(n.Content[i+1]))
			if src == nil {
				d.fail(keyNode, Join(path, "<<"), "a merge key (<<) must name a map or a list of maps")
			}
			merges = append(merges, src...)
			continue
		}
		if key.Kind != yaml.ScalarNode || isNull(key) {
			d.fail(keyNode, path, "a key must be text, not %s", describe(key))
			continue
		}
		p := KeyPath(path, key.Value)
		if first, dup := own[key.Value]; dup {
			d.fail(keyNode, p, "given twice (first at line %d)", first)
			continue
		}
		own[key.Value] = keyNode.Line
		f(keyNode, n.Content[i+1], p)
	}
	// A merged map may itself merge others: flattened the same way, depth
	// bounded by the alias expansion limit already checked.
	done := map[string]bool{}
	for _, m := range merges {
		d.pairs(m, path, func(key, val *yaml.Node, p string) {
			name := resolve(key).Value
			if _, set := own[name]; set || done[name] {
				return
			}
			done[name] = true
			f(key, val, p)
		})
	}
}

// mergeSources lists the maps a merge key names.
func mergeSources(n *yaml.Node) []*yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		return []*yaml.Node{n}
	case yaml.SequenceNode:
		var out []*yaml.Node
		for _, c := range n.Content {
			c = resolve(c)
			if c.Kind != yaml.MappingNode {
				return nil
			}
			out = append(out, c)
		}
		return out
	}
	return nil
}

// fieldIndex maps the yaml keys of a struct type to their field indexes; an
// inlined struct's keys are the outer struct's, as for the yaml decoder.
func fieldIndex(t reflect.Type) map[string][]int {
	fields := map[string][]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case opts == "inline" && f.Type.Kind() == reflect.Struct:
			for k, idx := range fieldIndex(f.Type) {
				fields[k] = append([]int{i}, idx...)
			}
		case name != "" && name != "-" && f.IsExported():
			fields[name] = []int{i}
		}
	}
	return fields
}

// floats are YAML's spellings of the special numbers.
var floats = map[string]float64{
	".inf": math.Inf(1), ".Inf": math.Inf(1), ".INF": math.Inf(1),
	"+.inf": math.Inf(1), "+.Inf": math.Inf(1), "+.INF": math.Inf(1),
	"-.inf": math.Inf(-1), "-.Inf": math.Inf(-1), "-.INF": math.Inf(-1),
	".nan": math.NaN(), ".NaN": math.NaN(), ".NAN": math.NaN(),
}

// scalar sets a string, bool or number from a scalar node and returns what
// is wrong, if anything. Booleans are strict: only an unquoted true or
// false, never "yes", "on" or a quoted "true".
func scalar(n *yaml.Node, v reflect.Value) string {
	tag, s := n.ShortTag(), n.Value
	want := wants(v.Type())
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
		return ""
	case reflect.Bool:
		if tag == "!!bool" {
			b, err := strconv.ParseBool(strings.ToLower(s))
			if err == nil {
				v.SetBool(b)
				return ""
			}
		}
		if lower := strings.ToLower(s); lower == "true" || lower == "false" {
			return fmt.Sprintf("must be true or false without quotes, not %s", describe(n))
		}
		return fmt.Sprintf("must be true or false, not %s", describe(n))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if tag == "!!int" {
			i, err := strconv.ParseInt(s, 0, v.Type().Bits())
			if err == nil {
				v.SetInt(i)
				return ""
			}
			return fmt.Sprintf("%s is out of range", describe(n))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if tag == "!!int" {
			u, err := strconv.ParseUint(s, 0, v.Type().Bits())
			if err == nil {
				v.SetUint(u)
				return ""
			}
			return fmt.Sprintf("must be %s, not %s (out of range or negative)", want, describe(n))
		}
	case reflect.Float32, reflect.Float64:
		if f, ok := floats[s]; ok && tag == "!!float" {
			v.SetFloat(f)
			return ""
		}
		if tag == "!!int" || tag == "!!float" {
			f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), v.Type().Bits())
			if err == nil {
				v.SetFloat(f)
				return ""
			}
			if i, err := strconv.ParseInt(s, 0, 64); err == nil { // 0x10, 0o17
				v.SetFloat(float64(i))
				return ""
			}
			return fmt.Sprintf("%s is out of range", describe(n))
		}
	default:
		return fmt.Sprintf("cannot be set from %s", describe(n))
	}
	return fmt.Sprintf("must be %s, not %s", want, describe(n))
}
