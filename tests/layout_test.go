package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/lokiproc"
	"github.com/winobs/winobs/shipper/eventxml"
)

// layoutMix is one node's events in the last quarter hour, by fixture: a
// Security brute force among the other audit events, the SCM's events and
// applications' errors, and HNS and HCS errors, enough for each detection
// to have input and some to fire.
var layoutMix = []struct {
	dir, file, channel string
	n                  int
}{
	{fixture.Events, "security-4625-failed-logon.xml", "", 25},
	{fixture.Events, "security-4740-lockout.xml", "", 1},
	{fixture.Events, "security-1102-log-cleared.xml", "", 1},
	{fixture.Events, "security-4720-account-created.xml", "", 1},
	{fixture.Events, "security-4732-member-added-administrators.xml", "", 1},
	{fixture.Events, "security-4697-service-installed.xml", "", 1},
	{fixture.Events, "system-7045-service-installed.xml", "", 1},
	{fixture.EventLog, "scm-7036-print-spooler.xml", "", 20},
	{fixture.EventLog, "scm-7000-sql-server-file-not-found.xml", "", 2},
	{fixture.EventLog, "scm-7031-windows-update-template.xml", "", 2},
	// Application's errors: the SCM's error 7000 with its channel changed.
	{fixture.EventLog, "scm-7000-sql-server-file-not-found.xml", config.ChannelApplication, 20},
	{fixture.Events, "hns-admin-error.xml", "", 3},
	{fixture.Events, "hcs-admin-error.xml", "", 3},
}

// channelSelection is how a detection selects its channels in the stream
// layout the agents write (class, then the channel's metadata).
var channelSelection = regexp.MustCompile(`\{(job="[^"]*")(?:, class="[a-z]+")?\} \| channel(=~?"[^"]*")`)

// The channel as structured metadata, measured against the channel as a
// stream label on a real Loki, for every rendered Loki detection over the
// same events of 20 nodes (each layout in a tenant of its own): every
// detection answers the same, Security's detections read exactly the lines
// they read before (their class holds Security alone), and the others read
// their node class's lines, the ratio logged (docs/shipper.md). Lines and
// bytes processed are Loki's own statistics: no verdict on time.
func TestEventQueriesByStreamLayout(t *testing.T) {
	cfg := config.Default()
	loki := lokiproc.Start(t, lokiproc.Options{Tenants: true})
	now := time.Now().UTC()
	type stream struct {
		Stream map[string]string `json:"stream"`
		Values [][]any           `json:"values"`
	}
	layouts := map[string][]stream{}
	for n := range 20 {
		node := fmt.Sprintf("akswin%06d", n)
		byLayout := map[string]map[string]*stream{"channel": {}, "class": {}}
		k := 0
		for _, m := range layoutMix {
			xml := strings.ReplaceAll(string(fixture.Read(t, m.dir, m.file)), "akswin000001", node)
			if m.channel != "" {
				xml = regexp.MustCompile(`<Channel>[^<]*</Channel>`).ReplaceAllString(xml, "<Channel>"+m.channel+"</Channel>")
			}
			e, err := eventxml.Parse([]byte(xml))
			if err != nil {
				t.Fatal(err)
			}
			ch, line := e.Channel(), string(e.Line(nil, eventxml.Lookups{}))
			for range m.n {
				k++
				ts := strconv.FormatInt(now.Add(-9*time.Minute+time.Duration(k)*6*time.Second).UnixNano(), 10) // inside every window
				base := map[string]string{contract.LabelJob: cfg.Logs.EventsJob, contract.LabelNode: node, contract.LabelComputer: node}
				for layout, key := range map[string]string{"channel": ch, "class": contract.EventClass(ch)} {
					s := byLayout[layout][key]
					if s == nil {
						s = &stream{Stream: map[string]string{}}
						for k, v := range base {
							s.Stream[k] = v
						}
						if layout == "channel" {
							s.Stream[contract.LabelChannel] = ch
						} else {
							s.Stream[contract.LabelClass] = key
						}
						byLayout[layout][key] = s
					}
					v := []any{ts, line}
					if layout == "class" {
						v = append(v, map[string]string{contract.LabelChannel: ch})
					}
					s.Values = append(s.Values, v)
				}
			}
		}
		for layout, ss := range byLayout {
			for _, s := range ss {
				layouts[layout] = append(layouts[layout], *s)
			}
		}
	}
	for layout, ss := range layouts {
		body, err := json.Marshal(map[string]any{"streams": ss})
		if err != nil {
			t.Fatal(err)
		}
		if code, answer := loki.Push(t, layout, "application/json", body); code != http.StatusNoContent {
			t.Fatalf("push %s: %d %s", layout, code, answer)
		}
	}
	t.Logf("streams: %d with the channel a stream label, %d with it structured metadata", len(layouts["channel"]), len(layouts["class"]))

	groups, err := rules.LokiGroups(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	at := now.Add(-time.Second)
	fired := map[bool]int{} // by whether the detection reads Security's class
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if !channelSelection.MatchString(r.Expr) {
				continue // pod logs
			}
			old := channelSelection.ReplaceAllString(r.Expr, `{$1, channel$2}`)
			newAns, newStats := layoutQuery(t, loki, "class", r.Expr, at)
			oldAns, oldStats := layoutQuery(t, loki, "channel", old, at)
			if !slices.Equal(newAns, oldAns) {
				t.Errorf("%s answers %v, with the channel a stream label %v", r.Alert, newAns, oldAns)
			}
			security := strings.Contains(r.Expr, `class="`+contract.ClassSecurity+`"`)
			if len(newAns) > 0 {
				fired[security]++
			}
			t.Logf("%s: %d lines (%d bytes) read, with the channel a stream label %d (%d): ×%.2f; %d results",
				r.Alert, newStats.Lines, newStats.Bytes, oldStats.Lines, oldStats.Bytes, float64(newStats.Lines)/float64(oldStats.Lines), len(newAns))
			if security && newStats.Lines != oldStats.Lines {
				t.Errorf("%s reads %d lines, %d with the channel a stream label: Security's class holds Security alone", r.Alert, newStats.Lines, oldStats.Lines)
			}
			if newStats.Lines == 0 {
				t.Errorf("%s read nothing: the mix gives it no input", r.Alert)
			}
		}
	}
	// Equal answers prove something only where there are answers.
	if fired[true] == 0 || fired[false] == 0 {
		t.Errorf("detections with results: %d of Security's class, %d of the others; want some of each", fired[true], fired[false])
	}
}

// layoutQuery runs an instant query as tenant: its vector, sorted, and what
// Loki processed for it.
func layoutQuery(t *testing.T, loki *lokiproc.Loki, tenant, query string, at time.Time) ([]string, lokiproc.Stats) {
	t.Helper()
	samples, stats := loki.Instant(t, tenant, query, at)
	var out []string
	for _, s := range samples {
		out = append(out, fmt.Sprint(s.Metric, s.Value))
	}
	slices.Sort(out)
	return out, stats
}
