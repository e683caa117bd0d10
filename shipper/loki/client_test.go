package loki

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golang/snappy"
	"github.com/grafana/loki/pkg/push"
)

// receiver is a Loki-protocol endpoint on loopback answering from a script.
type receiver struct {
	mu       sync.Mutex
	answers  []func(*push.PushRequest) (int, string)
	requests []push.PushRequest
	headers  []http.Header
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	body, err := snappy.Decode(nil, raw)
	var pr push.PushRequest
	if err == nil {
		err = pr.Unmarshal(body)
	}
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad request encoding", 400)
		return
	}
	r.mu.Lock()
	r.requests = append(r.requests, pr)
	r.headers = append(r.headers, req.Header.Clone())
	answer := func(*push.PushRequest) (int, string) { return 204, "" }
	if len(r.answers) > 0 {
		answer, r.answers = r.answers[0], r.answers[1:]
	}
	r.mu.Unlock()
	code, msg := answer(&pr)
	w.WriteHeader(code)
	io.WriteString(w, msg)
}

func status(code int, msg string) func(*push.PushRequest) (int, string) {
	return func(*push.PushRequest) (int, string) { return code, msg }
}

func setup(t *testing.T, cfg Config, answers ...func(*push.PushRequest) (int, string)) (*Client, *receiver, map[string]int) {
	rec := &receiver{answers: answers}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	cfg.URL = srv.URL + "/loki/api/v1/push"
	cfg.MinBackoff, cfg.MaxBackoff = time.Millisecond, 4*time.Millisecond
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dropped := map[string]int{}
	c.Dropped = func(reason string, n int) { dropped[reason] += n }
	c.now = func() time.Time { return time.Unix(1800000000, 0) }
	return c, rec, dropped
}

var labels = `{channel="System", job="windows-events"}`

func batch(ts ...int64) []Stream {
	s := Stream{Labels: labels}
	for _, t := range ts {
		s.Entries = append(s.Entries, Entry{Time: time.Unix(0, t), Line: []byte(`{"n":` + time.Unix(0, t).Format("05") + `}`)})
	}
	return []Stream{s}
}

func TestRetriesUntilDelivered(t *testing.T) {
	c, rec, dropped := setup(t, Config{Tenant: "7"},
		status(503, "ingester unavailable"), status(429, "rate limited"), status(260, ""), nil)
	rec.answers[3] = status(204, "")
	var statuses []int
	c.Observe = func(s int, _ time.Duration, _ bool) { statuses = append(statuses, s) }
	if err := c.Send(context.Background(), batch(1e9, 2e9)); err != nil {
		t.Fatal(err)
	}
	if len(rec.requests) != 4 || len(dropped) != 0 {
		t.Errorf("%d requests, dropped %v", len(rec.requests), dropped)
	}
	if got := rec.headers[3].Get("X-Scope-OrgID"); got != "7" {
		t.Errorf("tenant header %q", got)
	}
	if want := []int{503, 429, 260, 204}; !equalInts(statuses, want) {
		t.Errorf("statuses %v, want %v (260 is not delivered)", statuses, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A partial 400: the batch goes again, the stored entry unchanged (Loki
// drops it as identical), the too-old one with the reading time, the
// over-long one truncated with a marker.
func TestPartialRejection(t *testing.T) {
	old := time.Unix(0, 1377183104205667300).UTC()
	body := "entry for stream '" + labels + "' has timestamp too old: " + old.Format(lokiTimeFmt) + ", oldest acceptable timestamp is: 2026-11-25 00:00:00 +0000 UTC\n" +
		"Max entry size '60' bytes exceeded for stream '" + labels + "' while adding an entry with length '100' bytes\n"
	c, rec, dropped := setup(t, Config{}, status(400, body))
	streams := batch(old.UnixNano(), 1800000000e9)
	streams[0].Entries = append(streams[0].Entries, Entry{Time: time.Unix(1800000001, 0), Line: []byte(strings.Repeat("é", 50))})
	if err := c.Send(context.Background(), streams); err != nil {
		t.Fatal(err)
	}
	if len(rec.requests) != 2 {
		t.Fatalf("%d requests", len(rec.requests))
	}
	resent := rec.requests[1].Streams[0].Entries
	if len(resent) != 3 {
		t.Fatalf("resent %d entries, want the whole batch", len(resent))
	}
	if !resent[0].Timestamp.Equal(time.Unix(1800000000, 0)) || resent[0].Line != string(streams[0].Entries[0].Line) {
		t.Errorf("too-old entry resent as %v %q", resent[0].Timestamp, resent[0].Line)
	}
	if !resent[1].Timestamp.Equal(streams[0].Entries[1].Time) || resent[1].Line != string(streams[0].Entries[1].Line) {
		t.Errorf("stored entry resent changed: %v %q", resent[1].Timestamp, resent[1].Line)
	}
	if l := resent[2].Line; !strings.HasSuffix(l, TruncatedMarker) || len(l) > 60 || len(l) < 55 || !utf8.ValidString(l) {
		t.Errorf("over-long entry resent as %q", resent[2].Line)
	}
	if len(dropped) != 0 {
		t.Errorf("dropped %v", dropped)
	}
}

func TestRejectedIsDroppedAndCounted(t *testing.T) {
	c, _, dropped := setup(t, Config{}, status(422, "no streams"))
	if err := c.Send(context.Background(), batch(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if dropped["rejected_422"] != 3 {
		t.Errorf("dropped %v", dropped)
	}
	c, _, dropped = setup(t, Config{}, status(400, "error at insertion: stream has 20 labels, limit 15"))
	c.Send(context.Background(), batch(1, 2))
	if dropped["rejected_400"] != 1 {
		t.Errorf("an unknown 400 reason: dropped %v", dropped)
	}
	// A 400 naming fixable entries again and again still ends: each round
	// fixes what it names, and a round that names nothing fixable drops.
	old := time.Unix(0, 5).UTC().Format(lokiTimeFmt)
	c, rec, dropped := setup(t, Config{}, status(400, "entry for stream '"+labels+"' has timestamp too old: "+old+", oldest acceptable timestamp is: x"),
		status(400, "stream limit exceeded"))
	c.Send(context.Background(), batch(5, 6))
	if len(rec.requests) != 2 || dropped["rejected_400"] != 1 {
		t.Errorf("%d requests, dropped %v", len(rec.requests), dropped)
	}
}

func TestTooLargeIsSplit(t *testing.T) {
	c, rec, dropped := setup(t, Config{}, status(413, "too large"), status(413, "too large"))
	if err := c.Send(context.Background(), batch(1, 2, 3, 4)); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, r := range rec.requests {
		sizes = append(sizes, len(r.Streams[0].Entries))
	}
	if !equalInts(sizes, []int{4, 2, 1, 1, 2}) || len(dropped) != 0 {
		t.Errorf("request sizes %v, dropped %v", sizes, dropped)
	}
}

func TestCredentialsFromFiles(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	os.WriteFile(pw, []byte("s3cret\n"), 0o600)
	c, rec, _ := setup(t, Config{Username: "winobs", PasswordFile: pw})
	c.Send(context.Background(), batch(1))
	if u, p, ok := (&http.Request{Header: rec.headers[0]}).BasicAuth(); !ok || u != "winobs" || p != "s3cret" {
		t.Errorf("basic auth %q %q %v", u, p, ok)
	}
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("abc\n"), 0o600)
	c, rec, _ = setup(t, Config{BearerTokenFile: tok})
	c.Send(context.Background(), batch(1))
	if got := rec.headers[0].Get("Authorization"); got != "Bearer abc" {
		t.Errorf("authorization %q", got)
	}
}

// Cancelling stops the retries without claiming delivery.
func TestCancelDuringRetries(t *testing.T) {
	c, _, _ := setup(t, Config{})
	c.cfg.MinBackoff, c.cfg.MaxBackoff = time.Hour, time.Hour
	rec := &receiver{answers: []func(*push.PushRequest) (int, string){status(500, "down")}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c.cfg.URL = srv.URL
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Send(ctx, batch(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}
}
