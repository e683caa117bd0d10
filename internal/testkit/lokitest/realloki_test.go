package lokitest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/winobs/winobs/internal/testkit/lokiproc"
	"github.com/winobs/winobs/shipper/loki"
)

// The model answers every request as a real Loki 3.7.6 with default limits
// does: the same requests to both, the same status and the same refusals
// (grouped refusals compared as a set: Loki writes them in map order; the
// oldest time a too-old refusal gives is Loki's clock, to the second, so
// it is compared to within one). Each case streams under its own job, so
// what one case stored does not bear on another.
func TestModelAnswersAsARealLoki(t *testing.T) {
	real := lokiproc.Start(t, lokiproc.Options{})
	now := time.Now().UTC().Truncate(time.Millisecond)
	ent := func(ago time.Duration, line string) loki.Entry {
		return loki.Entry{Time: now.Add(-ago), Line: []byte(line)}
	}
	behind := func(n int) []loki.Entry {
		var es []loki.Entry
		for i := range n {
			es = append(es, ent(2*time.Hour-time.Duration(i)*time.Second, fmt.Sprint("behind ", i)))
		}
		return es
	}
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name     string
		requests func(x, y string) [][]loki.Stream
	}{
		{"entries that fit", func(x, _ string) [][]loki.Stream {
			return [][]loki.Stream{{{Labels: x, Entries: []loki.Entry{ent(time.Minute, "a"), ent(0, "b")}}}}
		}},
		{"one entry too old", func(x, _ string) [][]loki.Stream {
			return [][]loki.Stream{{{Labels: x, Entries: []loki.Entry{ent(8*day, "old"), ent(0, "b")}}}}
		}},
		{"refusals of several kinds, grouped", func(x, _ string) [][]loki.Stream {
			return [][]loki.Stream{{{Labels: x, Entries: []loki.Entry{ent(8*day, "o1"), ent(8*day-time.Second, "o2"), ent(8*day-time.Second, "o3"),
				ent(time.Minute, strings.Repeat("x", 300000)), ent(-20*time.Minute, "new"), ent(0, "ok")}}}}
		}},
		{"too far behind a live writer, more than ten", func(x, _ string) [][]loki.Stream {
			return [][]loki.Stream{{{Labels: x, Entries: []loki.Entry{ent(0, "live")}}}, {{Labels: x, Entries: append(behind(12), ent(time.Minute, "fits"))}}}
		}},
		{"a request's first stream behind, its last taken: 204", func(x, y string) [][]loki.Stream {
			return [][]loki.Stream{{{Labels: x, Entries: []loki.Entry{ent(0, "live")}}}, {{Labels: x, Entries: behind(3)}, {Labels: y, Entries: []loki.Entry{ent(0, "y")}}}}
		}},
		{"a request's last stream behind", func(x, y string) [][]loki.Stream {
			return [][]loki.Stream{{{Labels: x, Entries: []loki.Entry{ent(0, "live")}}}, {{Labels: y, Entries: []loki.Entry{ent(0, "y")}}, {Labels: x, Entries: behind(3)}}}
		}},
		{"the ingester's answer hides the distributor's", func(x, _ string) [][]loki.Stream {
			return [][]loki.Stream{{{Labels: x, Entries: []loki.Entry{ent(0, "live")}}}, {{Labels: x, Entries: append([]loki.Entry{ent(8*day, "old")}, behind(3)...)}}}
		}},
		{"a label value too long", func(_, _ string) [][]loki.Stream {
			long := loki.FormatLabels(map[string]string{"job": "labels", "computer": strings.Repeat("W", 2100)})
			return [][]loki.Stream{{{Labels: long, Entries: []loki.Entry{ent(0, "a")}}}}
		}},
		{"the same entries twice", func(x, _ string) [][]loki.Stream {
			s := []loki.Stream{{Labels: x, Entries: []loki.Entry{ent(time.Minute, "a"), ent(0, "b")}}}
			return [][]loki.Stream{s, s}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, err := New()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(model.Stop)
			job := fmt.Sprintf("case-%d", time.Now().UnixNano())
			x := loki.FormatLabels(map[string]string{"job": job, "channel": "X"})
			y := loki.FormatLabels(map[string]string{"job": job, "channel": "Y"})
			asLoki := &lokiproc.Loki{URL: strings.TrimSuffix(model.URL(), "/loki/api/v1/push")}
			for i, req := range tc.requests(x, y) {
				rs, rb := real.Push(t, "", "application/x-protobuf", loki.Body(req))
				ms, mb := asLoki.Push(t, "", "application/x-protobuf", loki.Body(req))
				if rs != ms || !sameRefusals(rb, mb) {
					t.Errorf("request %d: Loki %d %q\nthe model %d %q", i, rs, rb, ms, mb)
				}
			}
		})
	}
}

var (
	groupStart = regexp.MustCompile(`(?:^|; )\d+ errors like: `)
	oldestOK   = regexp.MustCompile(`(too old: \S+, oldest acceptable timestamp is: )(\S+)`)
)

// sameRefusals compares two answers refusal by refusal, grouped ones as a
// set, a too-old refusal's oldest acceptable time to within a second.
func sameRefusals(a, b string) bool {
	split := func(s string) []string {
		var out []string
		for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			counts := groupStart.FindAllString(line, -1)
			parts := groupStart.Split(line, -1)
			if len(counts) > 0 && parts[0] == "" {
				parts = parts[1:]
				for i := range parts {
					parts[i] = strings.TrimPrefix(counts[i], "; ") + parts[i]
				}
			}
			out = append(out, parts...)
		}
		slices.Sort(out)
		return out
	}
	pa, pb := split(a), split(b)
	if len(pa) != len(pb) {
		return false
	}
	for i := range pa {
		ma, mb := oldestOK.FindStringSubmatch(pa[i]), oldestOK.FindStringSubmatch(pb[i])
		if ma != nil && mb != nil {
			ta, ea := time.Parse(time.RFC3339, ma[2])
			tb, eb := time.Parse(time.RFC3339, mb[2])
			d := ta.Sub(tb)
			if ea != nil || eb != nil || d > time.Second || d < -time.Second {
				return false
			}
			pa[i], pb[i] = oldestOK.ReplaceAllString(pa[i], "$1"), oldestOK.ReplaceAllString(pb[i], "$1")
		}
		if pa[i] != pb[i] {
			return false
		}
	}
	return true
}
