package alloy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/winobs/winobs"
	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/eventfilter"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/logqlcheck"
)

// alloyHarness is the program make test builds from Alloy's own module
// (tests/alloy/README.md): Alloy's parser, validator and loki.process, not
// a model of them. Without it the tests skip, unless WINOBS_REQUIRE_ALLOY is
// set (make test sets it).
func alloyHarness(t *testing.T) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "bin", "alloyharness-"+winobs.Pinned().AlloyHarness))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("WINOBS_REQUIRE_ALLOY") != "" {
			t.Fatalf("Alloy harness missing: %v (make alloy-harness builds it)", err)
		}
		t.Skipf("Alloy harness missing: %v (make test builds it)", err)
	}
	return path
}

// writeConfig writes cfg's config.alloy into a temporary directory: its
// path.
func writeConfig(t *testing.T, cfg *config.Config) string {
	t.Helper()
	conf, err := Config(view.Of(cfg).Alloy)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "config.alloy")
	if err := os.WriteFile(p, conf, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runHarness runs the harness and fails t with its output if it fails.
func runHarness(t *testing.T, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(alloyHarness(t), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("alloyharness %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// Every config gen renders is one Alloy loads: its parser reads it, its
// formatter leaves it as it is, and its validator accepts every component's
// arguments (what `alloy validate` runs).
func TestRenderedConfigsPassAlloysValidator(t *testing.T) {
	configs := map[string]func(*config.Config){
		"default": func(*config.Config) {},
		"multi-cluster, secret, hostile values": func(c *config.Config) {
			c.Cluster.Name = `eu"$1\west`
			c.Logs.PodLogsJob = "pods`$x"
			c.Loki.URL = "https://loki.example.com/loki/api/v1/push"
			c.LokiSecret.Name = "loki"
			c.Loki.BasicAuth.Username = `us"er`
			c.Loki.BasicAuth.PasswordFile = c.LokiSecret.MountPath + `\password`
		},
	}
	for name, mutate := range configs {
		t.Run(name, func(t *testing.T) {
			cfg := config.Default()
			mutate(cfg)
			if probs := config.Validate(cfg); len(probs) > 0 {
				t.Fatalf("test config invalid: %v", probs)
			}
			p := writeConfig(t, cfg)
			runHarness(t, nil, "validate", p)
		})
	}
}

// harnessEntry is one entry in and out of the harness.
type harnessEntry struct {
	Line     string            `json:"line"`
	Labels   map[string]string `json:"labels"`
	Metadata map[string]string `json:"metadata"`
	TS       time.Time         `json:"ts"`
}

// LogMonitor's line shapes (tests/alloy/testdata/logmonitor.jsonl, derived
// from LogMonitor's format strings) through the rendered loki.process, run
// by Alloy's own code: each keeps its text and CRI time and gets the
// structured metadata the dashboards and Loki rules read; every other line
// passes untouched.
func TestLogMonitorLinesThroughAlloy(t *testing.T) {
	for _, metadata := range []bool{true, false} {
		t.Run(fmt.Sprintf("structuredMetadata=%t", metadata), func(t *testing.T) { logMonitorLinesThroughAlloy(t, metadata) })
	}
}

// logMonitorLinesThroughAlloy is TestLogMonitorLinesThroughAlloy in one
// layout: without metadata (issue 67) every line passes as it is, with
// none; the rules and dashboards read LogMonitor's fields from the line
// (proven on a real Loki by the Loki rule tests in that layout).
func logMonitorLinesThroughAlloy(t *testing.T, metadata bool) {
	cfg := config.Default()
	cfg.Logs.StructuredMetadata = metadata
	p := writeConfig(t, cfg)
	in, err := os.ReadFile(filepath.Join("..", "..", "tests", "alloy", "testdata", "logmonitor.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// What containerd wrote: the time, the stream and the content (P parts
	// joined) of each fixture.
	type written struct {
		ts      time.Time
		stream  string
		content string
	}
	sent := map[string]*written{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(in))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e harnessEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		parts := strings.SplitN(e.Line, " ", 4)
		ts, err := time.Parse(time.RFC3339Nano, parts[0])
		if err != nil {
			t.Fatal(err)
		}
		id := e.Labels["fixture"]
		if w := sent[id]; w != nil { // a P part's continuation: the entry takes its time
			w.content += parts[3]
			w.ts = ts
			continue
		}
		sent[id] = &written{ts: ts, stream: parts[1], content: parts[3]}
		order = append(order, id)
	}

	out := runHarness(t, in, "process", p, "pods", strconv.Itoa(len(order)))
	got := map[string]harnessEntry{}
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var e harnessEntry
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		got[e.Labels["fixture"]] = e
	}
	want := map[string]map[string]string{
		"eventlog-app-error":     {"logmonitor": "EventLog", "level": "error", "channel": "Application", "source": "Application Error", "event_id": "1000"},
		"eventlog-scm-info":      {"logmonitor": "EventLog", "level": "info", "channel": "System", "source": "Service Control Manager", "event_id": "7036"},
		"eventlog-v20-warning":   {"logmonitor": "EventLog", "level": "warn", "channel": "System", "event_id": "134"},
		"eventlog-verbose":       {"logmonitor": "EventLog", "level": "debug", "channel": "Application", "source": ".NET Runtime", "event_id": "1026"},
		"eventlog-critical":      {"logmonitor": "EventLog", "level": "critical", "channel": "Application", "source": "Application Hang", "event_id": "1002"},
		"eventlog-split":         {"logmonitor": "EventLog", "level": "error", "channel": "Application", "source": "Application Error", "event_id": "1000"},
		"eventlog-v21-raw-tab":   {"logmonitor": "EventLog", "level": "error", "channel": "Application", "source": "Application Error", "event_id": "1000"},
		"etw-warning":            {"logmonitor": "ETW", "level": "warn", "source": "Microsoft-Windows-User-Diagnostic", "event_id": "1"},
		"etw-iis-info":           {"logmonitor": "ETW", "level": "info", "source": "Microsoft-Windows-IIS-Logging", "event_id": "6200"},
		"etw-tracelogging-none":  {"logmonitor": "ETW", "level": "unknown", "source": "Contoso.App"},
		"etw-invalid-number":     {"logmonitor": "ETW", "level": "error", "source": "Contoso.Billing", "event_id": "17"},
		"file-iis":               {"logmonitor": "File", "file": `W3SVC1\u_ex260504.log`},
		"file-v22-escaped":       {"logmonitor": "File", "file": "app.log"},
		"file-v21-raw-tab":       {"logmonitor": "File"},
		"process-plain":          {"logmonitor": "Process"},
		"process-invalid-json":   {"logmonitor": "Process"},
		"process-question-marks": {"logmonitor": "Process"},
		"process-v211-escaped":   {"logmonitor": "Process"},
		"process-cut-at-nul":     {"logmonitor": "Process"},
		"process-stderr":         {"logmonitor": "Process"},
		"logmonitor-error":       {"logmonitor": "LogMonitor", "level": "error"},
		"logmonitor-warning":     {"logmonitor": "LogMonitor", "level": "warn"},
		"logmonitor-info":        {"logmonitor": "LogMonitor", "level": "info"},
		"slog-json":              nil,
		"plain-text":             nil,
	}
	if len(want) != len(order) {
		t.Errorf("%d fixtures, %d expectations", len(order), len(want))
	}
	if !metadata {
		for id := range want {
			want[id] = nil
		}
	}
	for _, id := range order {
		w, e := sent[id], got[id]
		if e.Labels == nil {
			t.Errorf("%s: Alloy forwarded nothing", id)
			continue
		}
		if e.Line != w.content || !e.TS.Equal(w.ts) {
			t.Errorf("%s: line or time changed:\n got  %s %.200q (%d bytes)\n want %s %.200q (%d bytes)", id, e.TS, e.Line, len(e.Line), w.ts, w.content, len(w.content))
		}
		if !maps.Equal(e.Metadata, want[id]) {
			t.Errorf("%s: structured metadata %v, want %v", id, e.Metadata, want[id])
		}
		for k := range e.Metadata {
			if !slices.Contains(contract.PodLogMetadata, k) {
				t.Errorf("%s: metadata %s is not in contract.PodLogMetadata", id, k)
			}
		}
		for k := range e.Labels {
			if k != "fixture" && k != "filename" && !slices.Contains(contract.PodLogStreamLabels, k) {
				t.Errorf("%s: stream label %s=%s is not in contract.PodLogStreamLabels", id, k, e.Labels[k])
			}
		}
	}
	if !metadata {
		return
	}
	// The Loki alert on containers' application crashes selects exactly
	// the crash events among what Alloy forwarded.
	crashes := map[string]bool{}
	for _, id := range order {
		e := got[id]
		if e.Labels == nil {
			continue
		}
		ok, err := logqlcheck.Selects(crashRule(t), e.Labels, e.Metadata)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			crashes[id] = true
		}
	}
	wantCrashes := map[string]bool{"eventlog-app-error": true, "eventlog-verbose": true, "eventlog-critical": true, "eventlog-split": true, "eventlog-v21-raw-tab": true}
	if !maps.Equal(crashes, wantCrashes) {
		t.Errorf("%s selects %v, want %v", contract.AlertContainerAppCrashed, slices.Sorted(maps.Keys(crashes)), slices.Sorted(maps.Keys(wantCrashes)))
	}
}

// crashRule is the expression of the Loki alert on containers' crashes.
func crashRule(t *testing.T) string {
	t.Helper()
	groups, err := rules.LokiGroups(view.Of(config.Default()).Rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range groups.Groups[0].Rules {
		if r.Alert == contract.AlertContainerAppCrashed {
			return r.Expr
		}
	}
	t.Fatalf("no %s", contract.AlertContainerAppCrashed)
	return ""
}

// Events as loki.source.windowsevent labels them (job and node from the
// component, channel and computer from the event: its target.go) through
// the rendered loki.process "events", run by Alloy's own code: each leaves
// with its channel's class as a stream label and the channel as structured
// metadata, so a node's channels share two streams; and the Loki rules'
// and dashboards' channel selection (vocab's Channels) picks exactly its
// channel's events among them.
func TestEventsThroughAlloy(t *testing.T) {
	for _, metadata := range []bool{true, false} {
		t.Run(fmt.Sprintf("structuredMetadata=%t", metadata), func(t *testing.T) { eventsThroughAlloy(t, metadata) })
	}
}

// eventsThroughAlloy is TestEventsThroughAlloy in one layout: with
// metadata, a node's channels in its two class streams with the channel as
// metadata; without (issue 67: a Loki that refuses metadata), each channel
// a stream of its own with the channel a label, and no metadata at all.
func eventsThroughAlloy(t *testing.T, metadata bool) {
	cfg := config.Default()
	cfg.Logs.StructuredMetadata = metadata
	cfg.EventLog.Channels = append(cfg.EventLog.Channels, config.Channel{Name: "ForwardedEvents", Filter: eventfilter.Filter{Levels: []int{1, 2, 3}}})
	p := writeConfig(t, cfg)
	// A collector's ForwardedEvents labels each event with its own
	// channel: the Security event from another host is Security's.
	channels := append(cfg.EventLog.ChannelNames(), "")
	var in bytes.Buffer
	ts := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	for i, ch := range channels {
		labels := map[string]string{contract.LabelJob: cfg.Logs.EventsJob, contract.LabelNode: "akswin000001", contract.LabelComputer: "akswin000001", "fixture": strconv.Itoa(i)}
		if ch != "" { // windowsevent sets no channel label for an event without one
			labels[contract.LabelChannel] = ch
		}
		line, err := json.Marshal(harnessEntry{Line: `{"channel":"` + ch + `","event_id":1}`, Labels: labels, TS: ts.Add(time.Duration(i) * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(line, '\n'))
	}
	out := runHarness(t, in.Bytes(), "process", p, "events", strconv.Itoa(len(channels)))
	streams := map[string]bool{}
	got := map[string]harnessEntry{}
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var e harnessEntry
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		i, _ := strconv.Atoi(e.Labels["fixture"])
		got[channels[i]] = e
		delete(e.Labels, "fixture")
		streams[fmt.Sprint(e.Labels)] = true
	}
	for _, ch := range channels {
		e, ok := got[ch]
		if !ok {
			t.Errorf("channel %q: Alloy forwarded nothing", ch)
			continue
		}
		wantLabels := map[string]string{contract.LabelJob: cfg.Logs.EventsJob, contract.LabelNode: "akswin000001",
			contract.LabelComputer: "akswin000001", contract.LabelClass: contract.EventClass(ch)}
		var wantMeta map[string]string
		switch {
		case ch != "" && metadata:
			wantMeta = map[string]string{contract.LabelChannel: ch}
		case ch != "":
			wantLabels[contract.LabelChannel] = ch
		}
		if !maps.Equal(e.Labels, wantLabels) || !maps.Equal(e.Metadata, wantMeta) {
			t.Errorf("channel %q: labels %v, metadata %v; want %v, %v", ch, e.Labels, e.Metadata, wantLabels, wantMeta)
		}
	}
	if want := map[bool]int{true: 2, false: len(channels)}[metadata]; len(streams) != want {
		t.Errorf("a node's %d channels in %d streams, want %d: %v", len(channels), len(streams), want, slices.Sorted(maps.Keys(streams)))
	}
	terms := view.Of(cfg).Rules.Terms
	for _, sel := range channels[:len(channels)-1] {
		q := terms.Channels(nil, sel)
		for _, ch := range channels {
			e := got[ch]
			ok, err := logqlcheck.Selects(q, e.Labels, e.Metadata)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (ch == sel) {
				t.Errorf("%s selects channel %q's event: %v, want %v", q, ch, ok, ch == sel)
			}
		}
	}
}
