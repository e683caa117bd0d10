package eventfilter

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Fields are what a query can test of an event. Channel is the log the
// event is read from, which Windows matches a Select's Path against: for a
// collector's ForwardedEvents that is ForwardedEvents, not the event's own
// <Channel>.
type Fields struct {
	Channel, Provider string
	EventID, Level    int
	Keywords          uint64
}

// Query is a parsed query, evaluated as Windows evaluates it.
type Query struct {
	selects, suppresses []node
}

// Parse reads a query in the subset of Windows' event XPath this package
// writes (and that users write the same way): `*`, or `*[System[...]]`
// with and, or, parentheses, comparisons of Level and EventID to numbers, Provider[@Name='...'] and band(Keywords, N); or a
// <QueryList> of one <Query> whose Select and Suppress elements hold such
// XPaths. Anything else is an error naming where it stopped.
func Parse(query string) (*Query, error) {
	q := strings.TrimSpace(query)
	if !strings.HasPrefix(q, "<") {
		n, err := parseXPath(q)
		if err != nil {
			return nil, err
		}
		return &Query{selects: []node{n}}, nil
	}
	var list struct {
		XMLName xml.Name `xml:"QueryList"`
		Queries []struct {
			Path     string `xml:"Path,attr"`
			Elements []struct {
				XMLName xml.Name
				Path    string `xml:"Path,attr"`
				Text    string `xml:",chardata"`
			} `xml:",any"`
		} `xml:"Query"`
	}
	if err := xml.Unmarshal([]byte(q), &list); err != nil {
		return nil, fmt.Errorf("not a <QueryList>: %v", err)
	}
	if len(list.Queries) != 1 {
		return nil, fmt.Errorf("a <QueryList> of %d <Query> elements: one is read", len(list.Queries))
	}
	out := &Query{}
	query0 := list.Queries[0]
	for _, e := range query0.Elements {
		n, err := parseXPath(strings.TrimSpace(e.Text))
		if err != nil {
			return nil, fmt.Errorf("<%s>: %w", e.XMLName.Local, err)
		}
		path := e.Path
		if path == "" {
			path = query0.Path
		}
		switch e.XMLName.Local {
		case "Select":
			out.selects = append(out.selects, pathNode{path, n})
		case "Suppress":
			out.suppresses = append(out.suppresses, pathNode{path, n})
		default:
			return nil, fmt.Errorf("<%s> in a <Query>: only Select and Suppress are read", e.XMLName.Local)
		}
	}
	if len(out.selects) == 0 {
		return nil, fmt.Errorf("a <Query> without a <Select>")
	}
	return out, nil
}

// Match tells whether the query selects the event: a Select takes it and
// no Suppress removes it.
func (q *Query) Match(f Fields) bool {
	if !slices.ContainsFunc(q.selects, func(n node) bool { return n.eval(f) }) {
		return false
	}
	return !slices.ContainsFunc(q.suppresses, func(n node) bool { return n.eval(f) })
}

// node is a boolean expression over an event's fields.
type node interface{ eval(Fields) bool }

type all struct{}

func (all) eval(Fields) bool { return true }

type and []node

func (a and) eval(f Fields) bool {
	for _, n := range a {
		if !n.eval(f) {
			return false
		}
	}
	return true
}

type or []node

func (o or) eval(f Fields) bool {
	for _, n := range o {
		if n.eval(f) {
			return true
		}
	}
	return false
}

// cmp compares a numeric System field to a number.
type cmp struct {
	field, op string
	value     int
}

func (c cmp) eval(f Fields) bool {
	v := f.EventID
	if c.field == "Level" {
		v = f.Level
	}
	switch c.op {
	case "=":
		return v == c.value
	case "!=":
		return v != c.value
	case "<":
		return v < c.value
	case "<=":
		return v <= c.value
	case ">":
		return v > c.value
	}
	return v >= c.value
}

type provider string

func (p provider) eval(f Fields) bool { return f.Provider == string(p) }

type band uint64

func (b band) eval(f Fields) bool { return f.Keywords&uint64(b) != 0 }

// pathNode is a Select or Suppress: its XPath on its channel.
type pathNode struct {
	path string
	n    node
}

func (p pathNode) eval(f Fields) bool {
	return (f.Channel == "" || strings.EqualFold(p.path, f.Channel)) && p.n.eval(f)
}

// parser reads the XPath subset; pos is the byte offset for errors.
type parser struct {
	s   string
	pos int
}

func parseXPath(s string) (node, error) {
	p := &parser{s: s}
	if !p.eat("*") {
		return nil, p.fail("an event query starts with *")
	}
	if p.done() {
		return all{}, nil
	}
	if !p.eat("[") || !p.eat("System") || !p.eat("[") {
		return nil, p.fail("expected [System[")
	}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	for _, tok := range []string{"]", "]"} {
		if !p.eat(tok) {
			return nil, p.fail("expected ]] and the end")
		}
	}
	if !p.done() {
		return nil, p.fail("expected the end")
	}
	return n, nil
}

func (p *parser) skip() {
	for p.pos < len(p.s) && strings.ContainsRune(" \t\r\n", rune(p.s[p.pos])) {
		p.pos++
	}
}

func (p *parser) done() bool { p.skip(); return p.pos == len(p.s) }

// eat consumes tok if it is next; a word must end there.
func (p *parser) eat(tok string) bool {
	p.skip()
	if !strings.HasPrefix(p.s[p.pos:], tok) {
		return false
	}
	end := p.pos + len(tok)
	if isWord(tok[len(tok)-1]) && end < len(p.s) && isWord(p.s[end]) {
		return false
	}
	p.pos = end
	return true
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func (p *parser) fail(msg string) error {
	at := p.s[p.pos:]
	if len(at) > 30 {
		at = at[:30] + "…"
	}
	return fmt.Errorf("%s at byte %d (%q)", msg, p.pos, at)
}

func (p *parser) or() (node, error) {
	return p.joined("or", p.and, func(ns []node) node { return or(ns) })
}

func (p *parser) and() (node, error) {
	return p.joined("and", p.unary, func(ns []node) node { return and(ns) })
}

// joined reads one or more items separated by word; several become one
// node by join.
func (p *parser) joined(word string, item func() (node, error), join func([]node) node) (node, error) {
	var items []node
	for {
		n, err := item()
		if err != nil {
			return nil, err
		}
		items = append(items, n)
		if !p.eat(word) {
			break
		}
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return join(items), nil
}

func (p *parser) unary() (node, error) {
	switch {
	case p.eat("("):
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.eat(")") {
			return nil, p.fail("expected )")
		}
		return n, nil
	case p.eat("Provider"):
		return p.providers()
	case p.eat("band"):
		if !p.eat("(") || !p.eat("Keywords") || !p.eat(",") {
			return nil, p.fail("expected band(Keywords, N)")
		}
		v, err := p.number()
		if err != nil {
			return nil, err
		}
		if !p.eat(")") {
			return nil, p.fail("expected )")
		}
		return band(v), nil
	}
	for _, field := range []string{"Level", "EventID"} {
		if p.eat(field) {
			op := ""
			for _, o := range []string{"!=", ">=", "<=", "=", "<", ">"} {
				if p.eat(o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, p.fail("expected a comparison")
			}
			v, err := p.number()
			if err != nil {
				return nil, err
			}
			return cmp{field, op, int(v)}, nil
		}
	}
	return nil, p.fail("expected a condition on Level, EventID, Provider or Keywords")
}

// providers reads [@Name='a' or @Name='b'].
func (p *parser) providers() (node, error) {
	if !p.eat("[") {
		return nil, p.fail("expected Provider[")
	}
	var names or
	for {
		if !p.eat("@Name") || !p.eat("=") {
			return nil, p.fail("expected @Name=")
		}
		p.skip()
		if p.pos >= len(p.s) || p.s[p.pos] != '\'' && p.s[p.pos] != '"' {
			return nil, p.fail("expected a quoted name")
		}
		quote := p.s[p.pos]
		end := strings.IndexByte(p.s[p.pos+1:], quote)
		if end < 0 {
			return nil, p.fail("unterminated name")
		}
		names = append(names, provider(p.s[p.pos+1:p.pos+1+end]))
		p.pos += end + 2
		if !p.eat("or") {
			break
		}
	}
	if !p.eat("]") {
		return nil, p.fail("expected ]")
	}
	return names, nil
}

func (p *parser) number() (uint64, error) {
	p.skip()
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		p.pos++
	}
	v, err := strconv.ParseUint(p.s[start:p.pos], 10, 64)
	if err != nil {
		p.pos = start
		return 0, p.fail("expected a number")
	}
	return v, nil
}
