package shipper

import (
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/winobs/winobs/eventfilter"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/lanes"
	"github.com/winobs/winobs/shipper/loki"
	"github.com/winobs/winobs/shipper/shipconfig"
	"github.com/winobs/winobs/shipper/state"
)

// The formatter alone, on the real sample events.

const renderedSample = "scm-7036-appxsvc-renderinginfo.xml" // carries its texts, like a dump

func testFormatter(t testing.TB, edit func(*shipconfig.Config)) *formatter {
	t.Helper()
	cfg, err := shipconfig.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Labels = map[string]string{"job": "windows-events", "node": "k8s-lab-win-1"}
	if edit != nil {
		edit(cfg)
	}
	lc := &lanes.Controller{PerLane: float64(cfg.Limits.StreamBytesPerSecond), Max: cfg.Limits.Lanes(), Now: time.Now,
		Save: func(string, lanes.Plans) error { return nil }, Acked: func(string) uint64 { return 0 }}
	return newFormatter(cfg, newMetrics([]string{"System"}), slog.New(slog.DiscardHandler), lc)
}

func sampleTime(t *testing.T, xml []byte) time.Time {
	t.Helper()
	_, after, _ := strings.Cut(string(xml), "SystemTime='")
	ts, err := time.Parse(time.RFC3339Nano, after[:strings.IndexByte(after, '\'')])
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestFormatterWritesAlloysLineAndLabels(t *testing.T) {
	xml := fixture.Read(t, fixture.EventLog, renderedSample)
	f := testFormatter(t, nil)
	// The golden lines name services.exe, as looked up on the shipping host.
	f.lookups = eventxml.Lookups{ProcessName: func(uint32) string { return "services.exe" }}
	b := newBatch()
	f.add(b, record{channel: "System", xml: xml, cp: state.Checkpoint{Channel: "System", Offset: 42}, size: int64(len(xml))})

	if len(b.streams) != 1 || len(b.streams[0].Entries) != 1 {
		t.Fatalf("streams %+v", b.streams)
	}
	st := b.streams[0]
	if want := `{class="node", computer="EC2AMAZ-25GMQOK", job="windows-events", node="k8s-lab-win-1"}`; st.Labels != want {
		t.Errorf("labels %s, want %s", st.Labels, want)
	}
	if got, want := string(st.Entries[0].Line), fixture.ExpectedLines(t)[renderedSample]; got != want {
		t.Errorf("line\n got  %s\n want %s", got, want)
	}
	cp := b.positions["System"]
	if cp.Offset != 42 || cp.RecordID == 0 || cp.TimeCreated == "" {
		t.Errorf("position %+v: want the record's offset and the event's id and time", cp)
	}
	if md := st.Entries[0].Metadata; !slices.Equal(md, []loki.Label{{Name: "channel", Value: "System"}}) {
		t.Errorf("structured metadata %v, want the channel alone", md)
	}
	if b.counts["System"] != 1 || b.charge != int64(len(xml)) || b.bytes != len(st.Entries[0].Line)+len("channel")+len("System") {
		t.Errorf("counts %v, charge %d, bytes %d", b.counts, b.charge, b.bytes)
	}
	if got := testutil.ToFloat64(f.m.read.WithLabelValues("System")); got != 1 {
		t.Errorf("read %v", got)
	}
}

// Every skipped record is counted under its reason and still moves the
// position, which keeps naming the last event actually formatted.
func TestFormatterCountsEverySkip(t *testing.T) {
	xml := fixture.Read(t, fixture.EventLog, renderedSample)
	f := testFormatter(t, nil)
	b := newBatch()
	f.add(b, record{channel: "System", xml: xml, cp: state.Checkpoint{Channel: "System", Offset: 1}})
	first := b.positions["System"]
	for i, r := range []record{
		{channel: "System", xml: []byte("<Event><System>"), cp: state.Checkpoint{Channel: "System", Offset: 2}},
		{channel: "System", drop: "render_error", cp: state.Checkpoint{Channel: "System", Offset: 3}},
		{channel: "System", drop: "too_large", cp: state.Checkpoint{Channel: "System", Offset: 4}},
	} {
		f.add(b, r)
		cp := b.positions["System"]
		if cp.Offset != int64(i+2) || cp.RecordID != first.RecordID || cp.TimeCreated != first.TimeCreated {
			t.Errorf("after skip %d: position %+v, want offset %d and the last event %d", i, cp, i+2, first.RecordID)
		}
	}
	for reason, want := range map[string]float64{"malformed_xml": 1, "render_error": 1, "too_large": 1} {
		if got := testutil.ToFloat64(f.m.dropped.WithLabelValues("System", reason)); got != want {
			t.Errorf("dropped{%s} = %v, want %v", reason, got, want)
		}
	}
	if got := testutil.ToFloat64(f.m.renderErrors.WithLabelValues("System")); got != 1 {
		t.Errorf("render errors %v, want 1 (the malformed XML; a source counts its own render errors)", got)
	}
	if b.events != 1 {
		t.Errorf("%d entries, want only the good event", b.events)
	}
}

// Loki refuses entries older than its reject_old_samples_max_age and entries
// further behind their stream than its window (reference/loki-push.md): the
// formatter moves them inside, or drops them with tooOld: drop, and counts.
func TestFormatterKeepsEntriesInsideLokisWindows(t *testing.T) {
	xml := fixture.Read(t, fixture.EventLog, renderedSample)
	created := sampleTime(t, xml)
	now := created.Add(8 * 24 * time.Hour)
	for _, tc := range []struct {
		name    string
		tooOld  string
		entries int
		ts      time.Time
		counter string
	}{
		{"restamp", shipconfig.Restamp, 1, now.Add(-6 * 24 * time.Hour), "restamped"},
		{"drop", shipconfig.Drop, 0, time.Time{}, "dropped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := testFormatter(t, func(c *shipconfig.Config) { c.Timestamp = shipconfig.EventTime; c.Limits.TooOld = tc.tooOld })
			f.now = func() time.Time { return now }
			b := newBatch()
			f.add(b, record{channel: "System", xml: xml})
			if b.events != tc.entries {
				t.Fatalf("%d entries, want %d", b.events, tc.entries)
			}
			if tc.entries == 1 && !b.streams[0].Entries[0].Time.Equal(tc.ts) {
				t.Errorf("timestamp %v, want %v", b.streams[0].Entries[0].Time, tc.ts)
			}
			vec := map[string]float64{
				"restamped": testutil.ToFloat64(f.m.restamped.WithLabelValues("System", "too_old")),
				"dropped":   testutil.ToFloat64(f.m.dropped.WithLabelValues("System", "too_old")),
			}
			if vec[tc.counter] != 1 {
				t.Errorf("counters %v, want %s{too_old} = 1", vec, tc.counter)
			}
			if b.positions["System"].RecordID != 0 && tc.entries == 0 {
				t.Errorf("a dropped event named as the last delivered")
			}
		})
	}

	t.Run("too far behind its stream", func(t *testing.T) {
		f := testFormatter(t, func(c *shipconfig.Config) { c.Timestamp = shipconfig.EventTime })
		f.now = func() time.Time { return created.Add(time.Hour) }
		late := strings.Replace(string(xml), created.Format("2006-01-02T15"), created.Add(-2*time.Hour).Format("2006-01-02T15"), 1)
		b := newBatch()
		f.add(b, record{channel: "System", xml: xml})
		f.add(b, record{channel: "System", xml: []byte(late)})
		lag := time.Duration(f.cfg.Limits.MaxStreamLag.Model())
		if got := b.streams[0].Entries[1].Time; !got.Equal(created.Add(-lag)) {
			t.Errorf("late entry at %v, want %v (the stream's newest minus maxStreamLag)", got, created.Add(-lag))
		}
		if got := testutil.ToFloat64(f.m.restamped.WithLabelValues("System", "too_far_behind")); got != 1 {
			t.Errorf("restamped{too_far_behind} = %v", got)
		}
	})
}

// What Loki said of a stream is kept: after it named the oldest time it
// takes (another writer holds newer entries), an older event is moved up to
// it (plus the client's margin, and the time since), before it is sent; an
// event far in the future is re-stamped to the stream's newest time.
func TestFormatterUsesWhatLokiSaid(t *testing.T) {
	xml := fixture.Read(t, fixture.EventLog, renderedSample)
	created := sampleTime(t, xml)
	now := created.Add(3 * time.Hour)
	f := testFormatter(t, func(c *shipconfig.Config) { c.Timestamp = shipconfig.EventTime })
	f.now = func() time.Time { return now }
	b := newBatch()
	f.add(b, record{channel: "System", xml: xml})
	stream := b.streams[0].Labels
	floor := created.Add(2 * time.Hour)
	f.learn(map[string]time.Time{stream: floor})
	now = now.Add(time.Minute)
	f.add(b, record{channel: "System", xml: []byte(strings.Replace(string(xml), "<EventRecordID>", "<EventRecordID>1", 1))})
	if got, want := b.streams[0].Entries[1].Time, floor.Add(loki.BehindMargin+time.Minute); !got.Equal(want) {
		t.Errorf("entry after Loki named its floor at %v, want %v", got, want)
	}
	future := strings.Replace(string(xml), created.Format("2006"), "9999", 1)
	f.add(b, record{channel: "System", xml: []byte(future)})
	if got, want := b.streams[0].Entries[2].Time, b.streams[0].Entries[1].Time; !got.Equal(want) {
		t.Errorf("a year-9999 entry at %v, want the stream's newest %v", got, want)
	}
	for reason, want := range map[string]float64{"too_far_behind": 1, "too_new": 1} {
		if got := testutil.ToFloat64(f.m.restamped.WithLabelValues("System", reason)); got != want {
			t.Errorf("restamped{%s} = %v, want %v", reason, got, want)
		}
	}
}

func TestFormatterTruncatesLongLines(t *testing.T) {
	xml := fixture.Read(t, fixture.EventLog, renderedSample)
	f := testFormatter(t, func(c *shipconfig.Config) { c.Limits.MaxLineBytes = 200 })
	b := newBatch()
	f.add(b, record{channel: "System", xml: xml})
	if n := len(b.streams[0].Entries[0].Line); n > 200 {
		t.Errorf("line of %d bytes, limit 200", n)
	}
	if got := testutil.ToFloat64(f.m.truncated.WithLabelValues("System")); got != 1 {
		t.Errorf("truncated %v", got)
	}
}

// Issue 58: a dump's <QueryList> is matched as Windows matches it, each
// Select's Path against the log read: a ForwardedEvents dump with a query
// compiled for ForwardedEvents takes its Security events (14 of 14 in the
// issue; was: 0, their own <Channel> compared). The same filter compiled
// for Security takes none of them, as Windows would not either.
func TestDumpQueryMatchesTheLogRead(t *testing.T) {
	var events [][]byte
	for _, f := range fixture.Glob(t, 9, fixture.Events, "security-*.xml") {
		events = append(events, fixture.Read(t, fixture.Events, filepath.Base(f)))
	}
	for _, tc := range []struct {
		compiledFor string
		want        int
	}{{"ForwardedEvents", len(events)}, {"Security", 0}} {
		// Two filters: a structured query, with Paths.
		q, err := eventfilter.Compile(tc.compiledFor, []eventfilter.Filter{{Levels: []int{0, 1, 2, 3, 4, 5}}, {Keywords: []string{"audit_failure"}}})
		if err != nil || !strings.HasPrefix(q, "<QueryList>") {
			t.Fatalf("%s %v", q, err)
		}
		f := testFormatter(t, func(c *shipconfig.Config) {
			c.Dumps = []shipconfig.Dump{{Path: "x", Channel: "ForwardedEvents", Query: q}}
		})
		kept := 0
		for _, raw := range events {
			if f.prepare(record{channel: "ForwardedEvents", xml: raw, size: int64(len(raw))}).ok {
				kept++
			}
		}
		if kept != tc.want {
			t.Errorf("a query compiled for %s kept %d of %d ForwardedEvents events, want %d", tc.compiledFor, kept, len(events), tc.want)
		}
	}
}

// A node's channels share two streams: Security's class and the node's
// class; each entry names its channel as structured metadata, so the
// detections still select a channel, and every default set costs a node
// two streams whatever its channels.
func TestChannelsShareTheirClassStream(t *testing.T) {
	f := testFormatter(t, nil)
	b := newBatch()
	for _, tc := range []struct{ channel, file string }{
		{"System", "system-7045-service-installed.xml"},
		{"Security", "security-4625-failed-logon.xml"},
		{"Microsoft-Windows-Host-Network-Service-Admin", "hns-admin-error.xml"},
		{"Microsoft-Windows-Hyper-V-Compute-Admin", "hcs-admin-error.xml"},
		{"Security", "security-4740-lockout.xml"},
	} {
		xml := fixture.Read(t, fixture.Events, tc.file)
		f.add(b, record{channel: tc.channel, xml: xml, cp: state.Checkpoint{Channel: tc.channel}, size: int64(len(xml))})
	}
	got := map[string][]string{}
	for _, st := range b.streams {
		labels := loki.ParseLabels(st.Labels)
		if _, ok := labels["channel"]; ok {
			t.Errorf("stream %s: the channel is a stream label", st.Labels)
		}
		for _, e := range st.Entries {
			if len(e.Metadata) != 1 || e.Metadata[0].Name != "channel" {
				t.Fatalf("stream %s: metadata %v, want the channel", st.Labels, e.Metadata)
			}
			got[labels["class"]] = append(got[labels["class"]], e.Metadata[0].Value)
		}
	}
	want := map[string][]string{
		"node":     {"System", "Microsoft-Windows-Host-Network-Service-Admin", "Microsoft-Windows-Hyper-V-Compute-Admin"},
		"security": {"Security", "Security"},
	}
	if len(b.streams) != 2 || !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("%d streams, channels by class %v, want 2 streams %v", len(b.streams), got, want)
	}
	for ch, n := range map[string]int{"System": 1, "Security": 2, "Microsoft-Windows-Hyper-V-Compute-Admin": 1} {
		if b.counts[ch] != n {
			t.Errorf("batch counts %s %d, want %d: the report counts a shared stream's entries by channel", ch, b.counts[ch], n)
		}
	}
}

// A channel name longer than a label value may be (a hostile dump's
// <Channel>) is cut as a label value is, at a UTF-8 boundary: Loki refuses
// an entry whose structured metadata passes 64 KB.
func TestLongChannelMetadataIsCut(t *testing.T) {
	f := testFormatter(t, nil)
	long := strings.Repeat("é", 70<<10)
	md := f.metadata(long)
	if len(md) != 1 || len(md[0].Value) > maxLabelValueBytes || !strings.HasPrefix(long, md[0].Value) || !utf8.ValidString(md[0].Value) {
		t.Errorf("metadata of a %d-byte channel: %d bytes", len(long), len(md[0].Value))
	}
}
