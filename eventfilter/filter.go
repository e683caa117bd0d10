// Package eventfilter turns a channel's event filters (levels, event ids in
// Winlogbeat's notation, providers, audit keywords) into the one query
// Windows runs for it, and evaluates such a query on an event.
//
// Both log agents take the same string: Alloy's loki.source.windowsevent as
// xpath_query, the eventlog-shipper as its subscription's query (passed to
// EvtSubscribe as it is) and, for dumps read on Linux, evaluated here. The
// query is built by construction: every value is checked against what the
// query language takes before it is written, and the query is an XPath
// while it stays within Windows' limit of 20 expressions, a structured
// <QueryList> beyond it (Microsoft, "Consuming Events").
package eventfilter

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Filter selects events of one channel. Every field that is set must match;
// an empty field matches all. A filter with events and no levels takes its
// events at any level (audit events are level 0, 1102 is level 4).
type Filter struct {
	// Levels are event levels 0 (LogAlways, audit events) to 5 (verbose).
	Levels []int `yaml:"levels"`
	// Events are event ids in Winlogbeat's notation: an id ("4625"), a
	// range ("4720-4767"), or an exclusion ("-4738").
	Events []string `yaml:"events"`
	// Providers are provider names (System/Provider/@Name).
	Providers []string `yaml:"providers"`
	// Keywords are audit keywords: audit_success, audit_failure.
	Keywords []string `yaml:"keywords"`
}

// Audit keyword names and their bits in System/Keywords.
const (
	AuditSuccess = "audit_success"
	AuditFailure = "audit_failure"
)

var keywordBits = map[string]uint64{
	AuditSuccess: 0x0020000000000000,
	AuditFailure: 0x0010000000000000,
}

// MaxExpressions is the most comparisons one XPath expression may hold;
// a longer filter becomes a structured query (Microsoft, "Consuming
// Events": more than 20 expressions need one).
const MaxExpressions = 20

// Problem is one invalid value of a filter, by its field ("events[2]").
type Problem struct {
	Field, Msg string
}

func (p Problem) Error() string { return p.Field + ": " + p.Msg }

// idRange is an inclusive range of event ids; lo == hi for one id.
type idRange struct{ lo, hi int }

// parsed is a filter whose values were checked.
type parsed struct {
	levels    []int
	ids       []idRange // selected; none: any id
	excluded  []int
	providers []string
	keywords  []uint64
}

// Check reports every invalid value of f, each by its field.
func (f Filter) Check() []Problem {
	_, probs := f.parse()
	return probs
}

func (f Filter) parse() (parsed, []Problem) {
	var p parsed
	var probs []Problem
	add := func(field, format string, a ...any) {
		probs = append(probs, Problem{field, fmt.Sprintf(format, a...)})
	}
	if len(f.Levels) == 0 && len(f.Events) == 0 && len(f.Providers) == 0 && len(f.Keywords) == 0 {
		add("levels", "list levels, events, providers or keywords: a channel without any would forward every event")
	}
	for i, l := range f.Levels {
		if l < 0 || l > 5 {
			add(fmt.Sprintf("levels[%d]", i), "must be a level from 0 (LogAlways, audit events) to 5 (verbose), got %d", l)
			continue
		}
		p.levels = append(p.levels, l)
	}
	for i, e := range f.Events {
		field := fmt.Sprintf("events[%d]", i)
		r, excl, err := parseEvent(e)
		switch {
		case err != nil:
			add(field, "%v", err)
		case excl:
			p.excluded = append(p.excluded, r.lo)
		default:
			p.ids = append(p.ids, r)
		}
	}
	for i, name := range f.Providers {
		if err := checkProvider(name); err != nil {
			add(fmt.Sprintf("providers[%d]", i), "%v", err)
			continue
		}
		p.providers = append(p.providers, name)
	}
	for i, k := range f.Keywords {
		bit, ok := keywordBits[k]
		if !ok {
			add(fmt.Sprintf("keywords[%d]", i), "must be %s or %s, got %q", AuditSuccess, AuditFailure, excerpt(k))
			continue
		}
		p.keywords = append(p.keywords, bit)
	}
	if n := p.baseExpressions() + 1; n > MaxExpressions {
		add("providers", "levels, providers and keywords make %d expressions with an event id, over Windows' %d for one query: split the filter", n, MaxExpressions)
	} else if n := p.baseExpressions() + 2; n > MaxExpressions && slices.ContainsFunc(p.ids, func(r idRange) bool { return r.lo != r.hi }) {
		// A range is two comparisons and cannot be split across Selects.
		add("events", "a range is two expressions and levels, providers and keywords take %d: %d, over Windows' %d for one Select; list the range's ids or drop a level, provider or keyword",
			p.baseExpressions(), n, MaxExpressions)
	}
	return p, probs
}

// Exclusion is the id an Events entry excludes ("-4697"), if it is one.
func Exclusion(entry string) (int, bool) {
	r, excluded, err := parseEvent(entry)
	return r.lo, excluded && err == nil
}

// parseEvent reads one entry of Winlogbeat's event id notation.
func parseEvent(s string) (r idRange, excluded bool, err error) {
	t := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(t, "-"); ok {
		id, err := parseID(rest)
		if err != nil {
			return r, false, fmt.Errorf("an exclusion is -ID with one id, got %q", excerpt(s))
		}
		return idRange{id, id}, true, nil
	}
	if a, b, ok := strings.Cut(t, "-"); ok {
		lo, err1 := parseID(a)
		hi, err2 := parseID(b)
		if err1 != nil || err2 != nil {
			return r, false, fmt.Errorf("a range is A-B with ids from 0 to 65535, got %q", excerpt(s))
		}
		if lo > hi {
			return r, false, fmt.Errorf("the range %d-%d is backwards", lo, hi)
		}
		return idRange{lo, hi}, false, nil
	}
	id, err := parseID(t)
	if err != nil {
		return r, false, fmt.Errorf("must be an event id from 0 to 65535, a range A-B or an exclusion -ID, got %q", excerpt(s))
	}
	return idRange{id, id}, false, nil
}

func parseID(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not an id: %q", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > 65535 {
		return 0, fmt.Errorf("not an id: %q", s)
	}
	return n, nil
}

// checkProvider admits the characters provider names use (letters, digits,
// space, '.', '-', '_', '/'): a quote would end the XPath string literal.
func checkProvider(name string) error {
	if name == "" || len(name) > 255 {
		return fmt.Errorf("must be a provider name of 1 to 255 characters, got %q", excerpt(name))
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(" .-_/", r)
		if !ok {
			return fmt.Errorf("%q holds %q: a provider name is letters, digits, spaces and . - _ /", excerpt(name), r)
		}
	}
	return nil
}

func excerpt(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// baseExpressions counts the comparisons of the levels, providers and
// keywords, which every select of the filter repeats.
func (p parsed) baseExpressions() int {
	return len(p.levels) + len(p.providers) + len(p.keywords)
}

// idExpressions counts the comparisons of ids: one an id, two a range.
func idExpressions(ids []idRange) int {
	n := 0
	for _, r := range ids {
		n++
		if r.lo != r.hi {
			n++
		}
	}
	return n
}

// Compile is the query for a channel's filters: events that any filter
// selects, less every id any filter excludes. An exclusion is the
// channel's: "-4697" in one filter removes 4697 from what every other
// filter on the channel (an event set's too) would take, since no one
// writing it means "unless something else wants it". One filter within
// MaxExpressions is an XPath; more, or one beyond it, a structured
// <QueryList> whose Selects each stay within MaxExpressions and whose
// Suppress elements carry the exclusions. Invalid filters are an error
// naming every problem (config validation reports them by file and line
// first).
func Compile(channel string, filters []Filter) (string, error) {
	if len(filters) == 0 {
		return "", fmt.Errorf("channel %s: no filter", channel)
	}
	var ps []parsed
	var excluded []int
	for i, f := range filters {
		p, probs := f.parse()
		if len(probs) > 0 {
			return "", fmt.Errorf("channel %s, filter %d: %w", channel, i, probs[0])
		}
		ps = append(ps, p)
		for _, id := range p.excluded {
			if !slices.Contains(excluded, id) {
				excluded = append(excluded, id)
			}
		}
	}
	if len(ps) == 1 {
		p := ps[0]
		if p.baseExpressions()+idExpressions(p.ids)+len(excluded) <= MaxExpressions {
			return xpath(p.terms(p.ids, excluded)), nil
		}
	}
	return structured(channel, ps, excluded), nil
}

// terms are the XPath conditions of p that select ids (and exclude
// excluded), joined by and.
func (p parsed) terms(ids []idRange, excluded []int) []string {
	var terms []string
	if len(p.levels) > 0 {
		var or []string
		for _, l := range p.levels {
			or = append(or, "Level="+strconv.Itoa(l))
		}
		terms = append(terms, "("+strings.Join(or, " or ")+")")
	}
	if len(p.providers) > 0 {
		var or []string
		for _, name := range p.providers {
			or = append(or, "@Name='"+name+"'")
		}
		terms = append(terms, "Provider["+strings.Join(or, " or ")+"]")
	}
	if len(p.keywords) > 0 {
		var or []string
		for _, bit := range p.keywords {
			or = append(or, "band(Keywords,"+strconv.FormatUint(bit, 10)+")")
		}
		terms = append(terms, "("+strings.Join(or, " or ")+")")
	}
	if len(ids) > 0 {
		terms = append(terms, "("+idsOr(ids)+")")
	}
	for _, id := range excluded {
		terms = append(terms, "EventID!="+strconv.Itoa(id))
	}
	return terms
}

func idsOr(ids []idRange) string {
	var or []string
	for _, r := range ids {
		if r.lo == r.hi {
			or = append(or, "EventID="+strconv.Itoa(r.lo))
		} else {
			or = append(or, "(EventID>="+strconv.Itoa(r.lo)+" and EventID<="+strconv.Itoa(r.hi)+")")
		}
	}
	return strings.Join(or, " or ")
}

// xpath is the query of terms; none selects every event.
func xpath(terms []string) string {
	if len(terms) == 0 {
		return "*"
	}
	return "*[System[" + strings.Join(terms, " and ") + "]]"
}

// structured is the <QueryList> of the filters: each filter's ids spread
// over as many Selects as keep each within MaxExpressions, and the
// channel's exclusions in Suppress elements, which remove what any Select
// took. parse guarantees a filter's levels, providers and keywords leave
// room for its costliest id, so no Select passes the limit.
func structured(channel string, ps []parsed, excluded []int) string {
	var b strings.Builder
	path := xmlEscape.Replace(channel)
	b.WriteString(`<QueryList><Query Id="0" Path="` + path + `">`)
	element := func(name, query string) {
		b.WriteString("<" + name + ` Path="` + path + `">` + xmlEscape.Replace(query) + "</" + name + ">")
	}
	for _, p := range ps {
		for _, chunk := range chunks(p.ids, MaxExpressions-p.baseExpressions()) {
			element("Select", xpath(p.terms(chunk, nil)))
		}
	}
	var ids []idRange
	for _, id := range excluded {
		ids = append(ids, idRange{id, id})
	}
	if len(ids) > 0 {
		for _, chunk := range chunks(ids, MaxExpressions) {
			element("Suppress", xpath([]string{"(" + idsOr(chunk) + ")"}))
		}
	}
	b.WriteString("</Query></QueryList>")
	return b.String()
}

// xmlEscape escapes XML's markup characters in text and in a double-quoted
// attribute (a query's own single quotes stay as they are, as Event Viewer
// writes them).
var xmlEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

// chunks splits ids into runs of at most room expressions; no ids is one
// empty run (a select of every id). room is at least the cost of the
// costliest id (parse refuses a filter where it is not).
func chunks(ids []idRange, room int) [][]idRange {
	if len(ids) == 0 {
		return [][]idRange{nil}
	}
	var out [][]idRange
	var cur []idRange
	n := 0
	for _, r := range ids {
		cost := idExpressions([]idRange{r})
		if n+cost > room && len(cur) > 0 {
			out, cur, n = append(out, cur), nil, 0
		}
		cur, n = append(cur, r), n+cost
	}
	return append(out, cur)
}
