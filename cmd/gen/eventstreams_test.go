package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/grafana/alloy/syntax/ast"
	"go.yaml.in/yaml/v3"

	"github.com/winobs/winobs/eventfilter"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/shipconfig"
)

// A config asking for Security with the filter and a channel of 25
// ids renders for both agents: Alloy's component and the shipper's channel
// carry the same query, an XPath for the first and a structured
// <QueryList> for the second, and on Event XML exactly the events the
// filter names pass (4738 and 4624 do not).
func TestEventFiltersRenderForBothAgents(t *testing.T) {
	var ids []string
	for i := range 25 {
		ids = append(ids, strconv.Itoa(4700+i))
	}
	body := "eventLog:\n  sets: []\n  channels:\n" +
		`    - {name: Security, events: ["4625", "4740", "4720-4767", "-4738", "1102"]}` + "\n" +
		`    - {name: Microsoft-Windows-TaskScheduler/Operational, events: ["` + strings.Join(ids, `", "`) + `"]}` + "\n"
	code, stderr, out, _ := genWith(t, body)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	alloyQueries := alloyStrings(t, out, "xpath_query")
	shipperQueries := map[string]string{}
	for _, ch := range renderedShipperConfig(t, out).Channels {
		shipperQueries[ch.Name] = ch.Query
	}
	for _, ch := range []string{"Security", "Microsoft-Windows-TaskScheduler/Operational"} {
		if !slices.Contains(alloyQueries, shipperQueries[ch]) {
			t.Errorf("%s: the shipper's query %q is not Alloy's (%q)", ch, shipperQueries[ch], alloyQueries)
		}
	}
	if q := shipperQueries["Microsoft-Windows-TaskScheduler/Operational"]; !strings.HasPrefix(q, "<QueryList>") || strings.Count(q, "<Select") != 2 {
		t.Errorf("25 ids: %s, want a structured query of two Selects", q)
	}
	q, err := eventfilter.Parse(shipperQueries["Security"])
	if err != nil {
		t.Fatal(err)
	}
	var passed []string
	for _, f := range fixture.Glob(t, 9, fixture.Events, "security-*.xml") {
		e, err := eventxml.Parse(fixture.Read(t, fixture.Events, filepath.Base(f)))
		if err != nil {
			t.Fatal(err)
		}
		if q.Match(e.FilterFields()) {
			passed = append(passed, strings.Split(filepath.Base(f), "-")[1])
		}
	}
	slices.Sort(passed)
	if want := []string{"1102", "4625", "4720", "4732", "4732", "4740"}; !slices.Equal(passed, want) {
		t.Errorf("Security events passed %v, want %v", passed, want)
	}
}

// alloyStrings are the string literal values of every attribute name in
// the rendered config.alloy.
func alloyStrings(t *testing.T, out, name string) []string {
	t.Helper()
	var vals []string
	for _, v := range alloyAttrs(t, out, name) {
		if lit, ok := v.(*ast.LiteralExpr); ok {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				vals = append(vals, s)
			}
		}
	}
	return vals
}

// renderedShipperConfig is the shipper's config in the rendered ConfigMap,
// loaded as the shipper loads it.
func renderedShipperConfig(t *testing.T, out string) *shipconfig.Config {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "shipper", "eventlog-shipper.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var obj struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("no ConfigMap with shipper.yaml: %v", err)
		}
		if obj.Kind != "ConfigMap" {
			continue
		}
		p := filepath.Join(t.TempDir(), "shipper.yaml")
		os.WriteFile(p, []byte(obj.Data["shipper.yaml"]), 0o644)
		t.Setenv("NODE_NAME", "n1")
		sc, err := shipconfig.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
}

// Round 6: an exclusion the user writes is the channel's. With the default
// sets on, docs/events.md's example keeps 4697 (which the security set
// takes) off the wire for both agents, the set's other events still pass,
// the render's summary says what each filter of a channel takes and where
// it comes from, and an exclusion that blinds a detection
// names it.
func TestUserExclusionAppliesToTheSets(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "winobs.yaml")
	body := "eventLog:\n  channels: [{name: Security, events: [\"4625\", \"-4697\"]}]\n  sets: [node-operations, security]\n" +
		"shipper: {deploy: true}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--config", cfg, "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	var shipperQuery string
	for _, ch := range renderedShipperConfig(t, out).Channels {
		if ch.Name == "Security" {
			shipperQuery = ch.Query
		}
	}
	if !slices.Contains(alloyStrings(t, out, "xpath_query"), shipperQuery) {
		t.Fatalf("the shipper's Security query %q is not one of Alloy's", shipperQuery)
	}
	q, err := eventfilter.Parse(shipperQuery)
	if err != nil {
		t.Fatal(err)
	}
	passed := map[string]bool{}
	for _, f := range fixture.Glob(t, 9, fixture.Events, "security-*.xml") {
		e, err := eventxml.Parse(fixture.Read(t, fixture.Events, filepath.Base(f)))
		if err != nil {
			t.Fatal(err)
		}
		passed[strings.Split(filepath.Base(f), "-")[1]] = q.Match(e.FilterFields())
	}
	// 4625 is the user's, 1102/4720/4732/4740 the set's; 4697 excluded;
	// 4624 and 4738 nobody's.
	want := map[string]bool{"1102": true, "4625": true, "4720": true, "4732": true, "4740": true, "4697": false, "4624": false, "4738": false}
	for id, w := range want {
		if passed[id] != w {
			t.Errorf("Security %s passed: %v, want %v (query %s)", id, passed[id], w, shipperQuery)
		}
	}
	if strings.Contains(stderr.String(), "eventLog.channels[0]") {
		t.Errorf("an exclusion no detection reads is warned about:\n%s", stderr.String())
	}
	for _, w := range []string{
		"  Security: eventLog.channels (events 4625) + set security (events 1102,4625,4697,", ", less events 4697 (from every filter)\n",
		"  System: set node-operations (levels 1,2,3) + set security (events 7045 of Service Control Manager)\n",
	} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("the summary lacks %q:\n%s", w, stdout.String())
		}
	}

	// Excluding what a detection reads is said, with the detection.
	os.WriteFile(cfg, []byte(strings.Replace(body, `"-4697"`, `"-4740"`, 1)), 0o644)
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"--config", cfg, "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	if w := "eventLog.channels[0].events[1]: excludes Security event 4740, which the alert WindowsAccountLockedOut reads: it will never fire"; !strings.Contains(stderr.String(), w) {
		t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
	}
}

// Issue 58: a channel spelled "security" is rendered as Windows spells it
// for both agents (Alloy's eventlog_name, the shipper's channel), once
// beside the security set's Security, with a warning at the line. (The
// stream label is the event's own channel in both agents:
// TestChannelLabelIsTheEventsOwnRealLoki.)
func TestChannelSpelledOtherwiseIsRendered(t *testing.T) {
	code, stderr, out, _ := genWith(t, "eventLog:\n  channels: [{name: security, events: [\"4625\"]}, {name: SYSTEM, levels: [1, 2]}]\n")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	var shipper []string
	for _, ch := range renderedShipperConfig(t, out).Channels {
		shipper = append(shipper, ch.Name)
	}
	alloy := alloyStrings(t, out, "eventlog_name")
	for _, got := range [][]string{shipper, alloy} {
		slices.Sort(got)
		if want := []string{"Microsoft-Windows-Host-Network-Service-Admin", "Microsoft-Windows-Hyper-V-Compute-Admin", "Security", "System"}; !slices.Equal(got, want) {
			t.Errorf("channels %v, want %v", got, want)
		}
	}
	for _, w := range []string{`eventLog.channels[0].name: "security" is Windows' channel "Security"`, `eventLog.channels[1].name: "SYSTEM" is Windows' channel "System"`} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}
