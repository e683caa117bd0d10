package shipper

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/winobs/winobs/shipper/shipconfig"

	"github.com/golang/snappy"
	"github.com/grafana/loki/pkg/push"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/loki"
	"github.com/winobs/winobs/shipper/subscribe"
)

// fakeAPI serves the real sample events once, as a live channel would,
// and keeps the queries it was subscribed with.
type fakeAPI struct {
	events  []subscribe.Event
	mu      sync.Mutex
	queries []string
}

func (f *fakeAPI) Subscribe(_, query, bookmark string, _ subscribe.Start) (subscribe.Subscription, error) {
	f.mu.Lock()
	f.queries = append(f.queries, query)
	f.mu.Unlock()
	s := &fakeSub{}
	for i, e := range f.events {
		if e.Bookmark == bookmark {
			s.events = f.events[i+1:]
			return s, nil
		}
	}
	s.events = f.events
	return s, nil
}
func (f *fakeAPI) Newest(string, string) (string, bool, error) { return "", false, nil }
func (f *fakeAPI) NewestRecord(string) (uint64, error)         { return 3570, nil }

type fakeSub struct{ events []subscribe.Event }

func (s *fakeSub) Wait(d time.Duration) error { time.Sleep(d / 10); return nil }
func (s *fakeSub) Close() error               { return nil }
func (s *fakeSub) Next(n int) ([]subscribe.Event, error) {
	if len(s.events) == 0 {
		return nil, subscribe.ErrNoMoreItems
	}
	n = min(n, len(s.events))
	out := s.events[:n]
	s.events = s.events[n:]
	return out, nil
}

// The live path on Linux: events with texts from EvtFormatMessage, the
// process name looked up, bookmarks as checkpoints.
func TestLiveSourceShipsAndCheckpoints(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		body, _ := snappy.Decode(nil, raw)
		var req push.PushRequest
		if err := req.Unmarshal(body); err != nil {
			t.Error(err)
		}
		mu.Lock()
		for _, s := range req.Streams {
			for _, e := range s.Entries {
				lines = append(lines, s.Labels+" "+e.Line)
			}
		}
		mu.Unlock()
		w.WriteHeader(204)
	}))
	defer srv.Close()

	xml := fixture.Read(t, fixture.EventLog, "scm-7036-print-spooler.xml")
	texts := &eventxml.Texts{Level: "Information", Keywords: []string{"Classic"}, Message: "The Print Spooler service entered the stopped state."}
	api := &fakeAPI{events: []subscribe.Event{
		{XML: xml, Texts: texts, Bookmark: "<BookmarkList><Bookmark Channel='System' RecordId='3562' IsCurrent='true'/></BookmarkList>"},
		{RenderErr: io.ErrUnexpectedEOF, Bookmark: "<BookmarkList><Bookmark Channel='System' RecordId='3563' IsCurrent='true'/></BookmarkList>"},
	}}
	// The live source is set below; the config needs a source to be valid.
	s := testShipper(t, "loki: {url: "+srv.URL+"}\ndumps: [{path: unused, channel: Unused}]\nlabels: {job: windows-events, node: k8s-lab-win-1}\nbatch: {maxWait: 50ms}\nlisten: 127.0.0.1:0\n")
	s.format.lookups = eventxml.Lookups{ProcessName: func(uint32) string { return "services.exe" }}
	// The channel's query as gen renders it for a channel two filters name:
	// EvtSubscribe is given exactly this string.
	query := `<QueryList><Query Id="0" Path="System"><Select Path="System">*[System[(Level=1 or Level=2 or Level=3)]]</Select>` +
		`<Select Path="System">*[System[Provider[@Name='Service Control Manager'] and (EventID=7045)]]</Select></Query></QueryList>`
	s.sources = []source{&liveSource{ch: shipconfig.Channel{Name: "System", Query: query}, api: api}}
	lagInterval = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	for deadline := time.Now().Add(fixture.Patience); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cp, found, _, _ := s.acker.store.Load("System"); found && strings.Contains(cp.Bookmark, "3563") {
			break
		}
	}
	// The record lag: newest record 3570, last delivered event 3562.
	for deadline := time.Now().Add(fixture.Patience); testutil.ToFloat64(s.m.lag.WithLabelValues("System")) != 8 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if lag := testutil.ToFloat64(s.m.lag.WithLabelValues("System")); lag != 8 {
		t.Errorf("record lag %v, want 8", lag)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	if len(api.queries) == 0 || slices.ContainsFunc(api.queries, func(q string) bool { return q != query }) {
		t.Errorf("subscribed with %q, want exactly the channel's query", api.queries)
	}
	api.mu.Unlock()
	want := `{class="node", computer="WIN-L6PC55MPB98", job="windows-events", node="k8s-lab-win-1"} {"source":"Service Control Manager","channel":"System","computer":"WIN-L6PC55MPB98","event_id":7036,"level":4,"levelText":"Information","keywords":"Classic","timeCreated":"2024-11-08T18:51:13.504187700Z","eventRecordID":3562,"execution":{"processId":604,"threadId":4792,"processName":"services.exe"},"event_data":"\u003cData Name='param1'\u003ePrint Spooler\u003c/Data\u003e\u003cData Name='param2'\u003estopped\u003c/Data\u003e\u003cBinary\u003e530070006F006F006C00650072002F0031000000\u003c/Binary\u003e","message":"The Print Spooler service entered the stopped state."}`
	if len(lines) != 1 || lines[0] != want {
		t.Errorf("pushed %q", lines)
	}
	// The unrenderable event was skipped and counted; the bookmark moved past it.
	cp, _, _, _ := s.acker.store.Load("System")
	if !strings.Contains(cp.Bookmark, "RecordId='3563'") {
		t.Errorf("checkpoint %q", cp.Bookmark)
	}
	if re, dr := testutil.ToFloat64(s.m.renderErrors.WithLabelValues("System")), testutil.ToFloat64(s.m.dropped.WithLabelValues("System", "render_error")); re != 1 || dr != 1 {
		t.Errorf("render errors %v, dropped{render_error} %v; want 1 and 1", re, dr)
	}
}

// /readyz reports not ready once pushes have failed for longer than
// notReadyAfter, and ready again after a delivery.
func TestReadyzFollowsDelivery(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(204)
	}))
	defer srv.Close()
	s := testShipper(t, "loki: {url: "+srv.URL+", minBackoff: 1ms, maxBackoff: 1ms}\ndumps: [{path: x, channel: System}]\n")
	s.ready.Store(true)
	readyz := func() int {
		rec := httptest.NewRecorder()
		s.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code
	}
	streams := []loki.Stream{{Labels: `{channel="System"}`, Entries: []loki.Entry{{Time: time.Now(), Line: []byte("x")}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	s.client.Send(ctx, streams)
	cancel()
	if code := readyz(); code != 200 {
		t.Errorf("readyz %d right after the first failures, want 200", code)
	}
	s.now = func() time.Time { return time.Now().Add(notReadyAfter + time.Second) }
	if code := readyz(); code != 503 {
		t.Errorf("readyz %d while pushes fail, want 503", code)
	}
	fail.Store(false)
	if _, err := s.client.Send(context.Background(), streams); err != nil {
		t.Fatal(err)
	}
	if code := readyz(); code != 200 {
		t.Errorf("readyz %d after a delivery, want 200", code)
	}
}

// testShipper builds a shipper from a config file with these lines and a
// fresh state directory, as the binary would load it.
func testShipper(t *testing.T, config string) *Shipper {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte(config+"stateDir: "+dir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := shipconfig.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
