package eventfilter_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/winobs/winobs/eventfilter"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/shipper/eventxml"
)

// events are testdata/events/ and the SCM samples, parsed, by file name.
func events(t *testing.T) map[string]eventfilter.Fields {
	t.Helper()
	out := map[string]eventfilter.Fields{}
	for dir, n := range map[string]int{fixture.Events: 12, fixture.EventLog: 6} {
		for _, f := range fixture.Glob(t, n, dir, "*.xml") {
			e, err := eventxml.Parse(fixture.Read(t, dir, filepath.Base(f)))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[filepath.Base(f)] = e.FilterFields()
		}
	}
	return out
}

// passing is the files whose event q selects, sorted.
func passing(t *testing.T, q string, evs map[string]eventfilter.Fields) []string {
	t.Helper()
	parsed, err := eventfilter.Parse(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for name, f := range evs {
		if parsed.Match(f) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// The example on Security, and the filters the sets are made of,
// each compiled and run on Event XML: exactly the events it names pass.
func TestFiltersOnEventXML(t *testing.T) {
	evs := events(t)
	for _, tc := range []struct {
		name, channel string
		filters       []eventfilter.Filter
		query         string // "": not checked (a <QueryList>)
		want          []string
	}{
		{"ids, a range, an exclusion, 1102 at its own level", "Security",
			[]eventfilter.Filter{{Events: []string{"4625", "4740", "4720-4767", "-4738", "1102"}}},
			"*[System[(EventID=4625 or EventID=4740 or (EventID>=4720 and EventID<=4767) or EventID=1102) and EventID!=4738]]",
			[]string{"security-1102-log-cleared.xml", "security-4625-failed-logon.xml", "security-4720-account-created.xml",
				"security-4732-member-added-administrators.xml", "security-4732-member-added-users.xml", "security-4740-lockout.xml"}},
		{"audit failures only", "Security",
			[]eventfilter.Filter{{Keywords: []string{"audit_failure"}}},
			"*[System[(band(Keywords,4503599627370496))]]",
			[]string{"security-4625-failed-logon.xml"}},
		{"levels 0 as a levels-only filter takes every audit event", "Security",
			[]eventfilter.Filter{{Levels: []int{0}}}, "*[System[(Level=0)]]",
			[]string{"security-4624-logon.xml", "security-4625-failed-logon.xml", "security-4697-service-installed.xml", "security-4720-account-created.xml",
				"security-4732-member-added-administrators.xml", "security-4732-member-added-users.xml", "security-4738-account-changed.xml", "security-4740-lockout.xml"}},
		{"a provider and an id", "System",
			[]eventfilter.Filter{{Providers: []string{"Service Control Manager"}, Events: []string{"7045"}}},
			"*[System[Provider[@Name='Service Control Manager'] and (EventID=7045)]]",
			[]string{"system-7045-service-installed.xml"}},
		{"errors of System and a provider's info event on one channel", "System",
			[]eventfilter.Filter{{Levels: []int{1, 2, 3}}, {Providers: []string{"Service Control Manager"}, Events: []string{"7045"}}}, "",
			[]string{"hcs-admin-error.xml", "hns-admin-error.xml", "scm-7000-sql-server-file-not-found.xml", "scm-7009-demo-service-template.xml",
				"scm-7031-windows-update-template.xml", "system-7045-service-installed.xml"}},
	} {
		q, err := eventfilter.Compile(tc.channel, tc.filters)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.query != "" && q != tc.query {
			t.Errorf("%s:\n got  %s\n want %s", tc.name, q, tc.query)
		}
		// The channel's subscription delivers only its own events.
		own := map[string]eventfilter.Fields{}
		for name, f := range evs {
			if f.Channel == tc.channel || tc.channel == "System" && strings.HasPrefix(name, "h") {
				own[name] = f
			}
		}
		if tc.channel == "System" && len(tc.filters) == 2 { // a <QueryList> checks its path: other channels' errors do not pass
			tc.want = slices.DeleteFunc(tc.want, func(s string) bool { return strings.HasPrefix(s, "h") })
		}
		if got := passing(t, q, own); !slices.Equal(got, tc.want) {
			t.Errorf("%s (%s): passed %v\n want %v", tc.name, q, got, tc.want)
		}
	}
}

// expressions counts the comparisons of one XPath.
var comparison = regexp.MustCompile(`Level=|EventID(=|!=|>=|<=)|@Name=|band\(`)

// Over 20 expressions a filter becomes a structured query whose every
// Select holds at most 20, and means what the XPath would.
func TestStructuredBeyondTheLimit(t *testing.T) {
	var ids []string
	for i := range 25 {
		ids = append(ids, fmt.Sprint(4700+2*i))
	}
	q, err := eventfilter.Compile("Security", []eventfilter.Filter{{Events: append(ids, "-4702"), Levels: []int{0}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(q, `<QueryList><Query Id="0" Path="Security"><Select Path="Security">`) || strings.Count(q, "<Select") != 2 ||
		!strings.Contains(q, `<Suppress Path="Security">*[System[(EventID=4702)]]</Suppress>`) {
		t.Errorf("25 ids and an exclusion: %s", q)
	}
	for _, sel := range regexp.MustCompile(`<(Select|Suppress)[^>]*>([^<]*)<`).FindAllStringSubmatch(q, -1) {
		if n := len(comparison.FindAllString(sel[2], -1)); n > eventfilter.MaxExpressions {
			t.Errorf("a %s of %d expressions: %s", sel[1], n, sel[2])
		}
	}
	parsed, err := eventfilter.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	for id := 4690; id < 4760; id++ {
		want := id >= 4700 && id <= 4748 && id%2 == 0 && id != 4702
		if got := parsed.Match(eventfilter.Fields{Channel: "Security", EventID: id}); got != want {
			t.Errorf("event %d: %v, want %v", id, got, want)
		}
	}
	if parsed.Match(eventfilter.Fields{Channel: "Security", EventID: 4700, Level: 4}) {
		t.Error("a level-4 event passed a level-0 filter")
	}
}

// The property: for random filters, the compiled query (XPath or
// structured) selects exactly what the filters say, as the test reads them
// itself (an exclusion in any filter removes the id from the channel), and
// no Select or Suppress passes Windows' limit, exclusions counted. The
// shapes include the hard ones: many exclusions beside other filters, and
// levels, providers and keywords leaving room for one or two ids.
func TestCompiledQueryMeansTheFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	providers := []string{"A", "Service Control Manager", "Microsoft-Windows-Security-Auditing"}
	for i := range 12 {
		providers = append(providers, fmt.Sprintf("P%d", i))
	}
	longest := 0
	for trial := range 600 {
		var filters []eventfilter.Filter
		for range 1 + rng.IntN(3) {
			var f eventfilter.Filter
			for l := range 6 {
				if rng.IntN(4) == 0 {
					f.Levels = append(f.Levels, l)
				}
			}
			excl := 4
			if rng.IntN(3) == 0 {
				excl = 1 // mostly exclusions: up to 40 of them
			}
			for range rng.IntN(50) {
				a := rng.IntN(60)
				switch rng.IntN(excl) {
				case 0:
					f.Events = append(f.Events, fmt.Sprintf("-%d", a))
				case 1:
					f.Events = append(f.Events, fmt.Sprintf("%d-%d", a, a+rng.IntN(6)))
				default:
					f.Events = append(f.Events, fmt.Sprint(a))
				}
			}
			switch rng.IntN(4) {
			case 0:
				f.Providers = providers[:1+rng.IntN(3)]
			case 1:
				f.Providers = providers[:10+rng.IntN(5)] // near the limit
			}
			if rng.IntN(3) == 0 {
				f.Keywords = []string{"audit_failure"}
			}
			if f.Check() != nil {
				f.Levels, f.Providers, f.Keywords = []int{2}, nil, nil
			}
			filters = append(filters, f)
		}
		q, err := eventfilter.Compile("Security", filters)
		if err != nil {
			t.Fatal(err)
		}
		for _, el := range regexp.MustCompile(`<(Select|Suppress)[^>]*>([^<]*)<`).FindAllStringSubmatch(q, -1) {
			n := len(comparison.FindAllString(el[2], -1))
			longest = max(longest, n)
			if n > eventfilter.MaxExpressions {
				t.Fatalf("trial %d: a %s of %d expressions: %s\nfilters %+v", trial, el[1], n, el[2], filters)
			}
		}
		if !strings.HasPrefix(q, "<") {
			if n := len(comparison.FindAllString(q, -1)); n > eventfilter.MaxExpressions {
				t.Fatalf("trial %d: an XPath of %d expressions: %s", trial, n, q)
			}
		}
		parsed, err := eventfilter.Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for range 200 {
			ev := eventfilter.Fields{Channel: "Security", EventID: rng.IntN(70), Level: rng.IntN(6), Provider: providers[rng.IntN(len(providers))]}
			if rng.IntN(2) == 0 {
				ev.Keywords = 0x8010000000000000
			}
			if got, want := parsed.Match(ev), anySelects(filters, ev); got != want {
				t.Fatalf("trial %d: %+v: %v, want %v\nfilters %+v\nquery %s", trial, ev, got, want, filters, q)
			}
		}
	}
	if longest != eventfilter.MaxExpressions {
		t.Errorf("no trial reached the limit (longest element %d expressions): the shapes are too easy", longest)
	}
}

// anySelects is the filters' meaning, read off them directly: an id any
// filter excludes is the channel's exclusion.
func anySelects(filters []eventfilter.Filter, ev eventfilter.Fields) bool {
	for _, f := range filters {
		for _, e := range f.Events {
			var a int
			if _, err := fmt.Sscanf(e, "-%d", &a); err == nil && strings.HasPrefix(e, "-") && ev.EventID == a {
				return false
			}
		}
	}
	for _, f := range filters {
		if selects(f, ev) {
			return true
		}
	}
	return false
}

func selects(f eventfilter.Filter, ev eventfilter.Fields) bool {
	if len(f.Levels) > 0 && !slices.Contains(f.Levels, ev.Level) {
		return false
	}
	if len(f.Providers) > 0 && !slices.Contains(f.Providers, ev.Provider) {
		return false
	}
	if len(f.Keywords) > 0 && ev.Keywords&0x0010000000000000 == 0 {
		return false
	}
	in, anyIDs := false, false
	for _, e := range f.Events {
		var a, b int
		switch {
		case strings.HasPrefix(e, "-"):
			continue // the channel's exclusions: anySelects
		case strings.Contains(e, "-"):
			fmt.Sscanf(e, "%d-%d", &a, &b)
		default:
			fmt.Sscanf(e, "%d", &a)
			b = a
		}
		anyIDs = true
		in = in || ev.EventID >= a && ev.EventID <= b
	}
	return !anyIDs || in
}

// Config text never reaches the query unchecked: each bad value is named
// by its field, and Compile refuses it.
func TestFilterProblems(t *testing.T) {
	for _, tc := range []struct {
		f    eventfilter.Filter
		want []string
	}{
		{eventfilter.Filter{}, []string{"levels: list levels, events, providers or keywords"}},
		{eventfilter.Filter{Providers: []string{"Evil' or @Name='x"}}, []string{"providers[0]:", `holds '\''`}},
		{eventfilter.Filter{Events: []string{"4767-4720"}}, []string{"events[0]: the range 4767-4720 is backwards"}},
		{eventfilter.Filter{Events: []string{"4625", "70000"}}, []string{"events[1]: must be an event id from 0 to 65535"}},
		{eventfilter.Filter{Events: []string{"-4700-4710"}}, []string{"events[0]: an exclusion is -ID with one id"}},
		{eventfilter.Filter{Events: []string{"4625) or (1=1"}}, []string{"events[0]: must be an event id"}},
		{eventfilter.Filter{Levels: []int{6}, Keywords: []string{"audit"}}, []string{"levels[0]: must be a level from 0", `keywords[0]: must be audit_success or audit_failure, got "audit"`}},
		// 19 expressions of levels and providers leave room for one id: a
		// range (two comparisons) fits in no Select.
		{eventfilter.Filter{Levels: []int{0, 1, 2, 3, 4, 5}, Providers: strings.Fields("a b c d e f g h i j k l m"), Events: []string{"4625", "4720-4767"}},
			[]string{"events: a range is two expressions and levels, providers and keywords take 19: 21, over Windows' 20"}},
	} {
		var got []string
		for _, p := range tc.f.Check() {
			got = append(got, p.Error())
		}
		all := strings.Join(got, "\n")
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%+v: problems %q lack %q", tc.f, got, w)
			}
		}
		if _, err := eventfilter.Compile("Security", []eventfilter.Filter{tc.f}); err == nil {
			t.Errorf("%+v compiled", tc.f)
		}
	}
}

// Parse reads only what it can evaluate: anything else is an error, so a
// dump is never filtered by a query it misreads.
func TestParseRefuses(t *testing.T) {
	for _, q := range []string{
		"", "Event", "*[System[Task=1]]", "*[EventData[Data[@Name='TargetUserName']='bob']]",
		"*[System[(EventID=1]]", "*[System[EventID=1]] and more", "<QueryList><Query><Select>*[System[Level=9x]]</Select></Query></QueryList>",
		"<QueryList></QueryList>", `<QueryList><Query Id="0" Path="S"><Suppress>*</Suppress></Query></QueryList>`,
	} {
		if _, err := eventfilter.Parse(q); err == nil {
			t.Errorf("Parse(%q) passed", q)
		}
	}
}

// A structured query is XML whatever the channel is called: its name is
// escaped in the attributes, and the query text in the elements, and the
// query reads back the same.
func TestStructuredEscapes(t *testing.T) {
	q, err := eventfilter.Compile(`A&B "x" <y>`, []eventfilter.Filter{{Levels: []int{2}}, {Providers: []string{"P"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `<QueryList><Query Id="0" Path="A&amp;B &quot;x&quot; &lt;y&gt;"><Select Path="A&amp;B &quot;x&quot; &lt;y&gt;">*[System[(Level=2)]]</Select>` +
		`<Select Path="A&amp;B &quot;x&quot; &lt;y&gt;">*[System[Provider[@Name='P']]]</Select></Query></QueryList>`; q != want {
		t.Errorf("got  %s\nwant %s", q, want)
	}
	parsed, err := eventfilter.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	if !parsed.Match(eventfilter.Fields{Channel: `A&B "x" <y>`, Provider: "P"}) || parsed.Match(eventfilter.Fields{Channel: "other", Provider: "P"}) {
		t.Error("the escaped path does not read back")
	}
}

// Exclusion reads an exclusion as the filter does, and nothing else.
func TestExclusion(t *testing.T) {
	for entry, want := range map[string]int{"-4697": 4697, " -0 ": 0, "4697": -1, "4720-4767": -1, "-x": -1, "-4720-4767": -1, "-65536": -1} {
		id, ok := eventfilter.Exclusion(entry)
		if got := map[bool]int{true: id, false: -1}[ok]; got != want {
			t.Errorf("Exclusion(%q) = %d, %v; want %d", entry, id, ok, want)
		}
	}
}
