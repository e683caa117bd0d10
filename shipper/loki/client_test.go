package loki

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	"unicode/utf8"

	"github.com/golang/snappy"
	"github.com/grafana/loki/pkg/push"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/endpoint"
	"github.com/winobs/winobs/internal/testkit/fixture"
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
	if code == 0 { // no answer: the connection breaks
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	w.WriteHeader(code)
	io.WriteString(w, msg)
}

func status(code int, msg string) func(*push.PushRequest) (int, string) {
	return func(*push.PushRequest) (int, string) { return code, msg }
}

// tclient records what Send reported: the drops by reason, and the last report.
type tclient struct {
	*Client
	dropped map[string]int
	last    Report
}

func (tc *tclient) Send(ctx context.Context, streams []Stream) error {
	rep, err := tc.Client.Send(ctx, streams)
	tc.last = rep
	for _, m := range rep.Dropped {
		for r, n := range m {
			tc.dropped[r] += n
		}
	}
	return err
}

func setup(t *testing.T, cfg Config, answers ...func(*push.PushRequest) (int, string)) (*tclient, *receiver, map[string]int) {
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
	c.now = func() time.Time { return time.Unix(1800000000, 0) }
	return &tclient{Client: c, dropped: dropped}, rec, dropped
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
	c, rec, dropped := setup(t, Config{Loki: endpoint.Loki{Tenant: "7"}},
		status(503, "ingester unavailable"), status(429, "rate limited"), status(260, ""), nil)
	rec.answers[3] = status(204, "")
	var statuses []int
	c.Observe = func(s int, _ string, _ time.Duration, _ bool) { statuses = append(statuses, s) }
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

// A Loki-compatible receiver that stores and answers 200 (Loki documents
// 204; older VictoriaLogs answered 200) delivers the batch: one request.
// (Was: the first batch resent forever, nothing checkpointed.)
func TestOKIsDelivered(t *testing.T) {
	c, rec, dropped := setup(t, Config{}, status(200, ""))
	if err := c.Send(context.Background(), batch(1e9, 2e9)); err != nil {
		t.Fatal(err)
	}
	if len(rec.requests) != 1 || len(dropped) != 0 || c.last.Stored[labels] != 2 {
		t.Errorf("%d requests, dropped %v, report %+v: want one request, both stored", len(rec.requests), dropped, c.last)
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

// The stream of the captured bodies, as the client sent it (Loki names it
// with service_name added).
const demo = `{channel="System", job="demo"}`

// A partial 400 in a real Loki's words (testdata/loki), each answering the
// one stream of a request. The distributor's words (too old, too long) come
// only when the ingester took every entry that reached it, so the entries
// they do not name are stored and only the named ones go again: re-stamped
// inside Loki's window, or truncated with the marker. The ingester's words
// hide the distributor's: "1 out of 1" of four entries sent says three
// never reached it, so every entry under the floor it names (to the second)
// is re-stamped above it and the others go again unchanged (Loki drops the
// stored ones as identical). Nothing is dropped.
func TestPartialRejectionRealBodies(t *testing.T) {
	tooOld := time.Date(2026, 11, 25, 7, 26, 19, 123456700, time.UTC)
	behind := time.Date(2026, 12, 3, 5, 26, 19, 899513623, time.UTC)
	stored := time.Date(2026, 12, 3, 7, 25, 0, 0, time.UTC)
	long := time.Date(2026, 12, 3, 7, 26, 0, 0, time.UTC)
	// Five minutes above the oldest time Loki named, as the stream's newest
	// entry moves on; a nanosecond apart in their order of time.
	aboveFloor := time.Date(2026, 12, 3, 6, 30, 21, 0, time.UTC)
	for _, tc := range []struct {
		file   string
		resent []int             // the entries sent again, in order
		want   map[int]time.Time // their new times, by entry
		trunc  int               // the entry truncated, or -1
	}{
		{"400-too-old.txt", []int{0}, map[int]time.Time{0: time.Date(2026, 11, 26, 8, 26, 19, 0, time.UTC)}, -1},
		{"400-max-entry-size.txt", []int{3}, nil, 3},
		{"400-too-far-behind.txt", []int{0, 1, 2, 3}, map[int]time.Time{0: aboveFloor, 1: aboveFloor.Add(1)}, -1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c, rec, dropped := setup(t, Config{}, status(400, string(fixture.Read(t, "loki", tc.file))))
			streams := []Stream{{Labels: demo, Entries: []Entry{
				{Time: tooOld, Line: []byte(`{"a":1}`)}, {Time: behind, Line: []byte(`{"a":2}`)},
				{Time: stored, Line: []byte(`{"a":3}`)}, {Time: long, Line: []byte(strings.Repeat("é", 150004))},
			}}}
			if err := c.Send(context.Background(), streams); err != nil {
				t.Fatal(err)
			}
			if len(rec.requests) != 2 || len(dropped) != 0 || c.last.Stored[demo] != 4 {
				t.Fatalf("%d requests, dropped %v, stored %d: want 2 requests, all 4 stored", len(rec.requests), dropped, c.last.Stored[demo])
			}
			resent := rec.requests[1].Streams[0].Entries
			if len(resent) != len(tc.resent) {
				t.Fatalf("%d entries sent again, want %d", len(resent), len(tc.resent))
			}
			for j, e := range resent {
				i := tc.resent[j]
				orig := streams[0].Entries[i]
				wantTime, moved := tc.want[i]
				switch {
				case i == tc.trunc:
					if !strings.HasSuffix(e.Line, TruncatedMarker) || len(e.Line) > 262144 || len(e.Line) < 262140 || !utf8.ValidString(e.Line) {
						t.Errorf("over-long entry resent with %d bytes", len(e.Line))
					}
				case moved:
					if !e.Timestamp.Equal(wantTime) || e.Line != string(orig.Line) {
						t.Errorf("entry %d resent at %v, want %v", i, e.Timestamp, wantTime)
					}
				default:
					if !e.Timestamp.Equal(orig.Time) || e.Line != string(orig.Line) {
						t.Errorf("entry %d changed on resend", i)
					}
				}
			}
		})
	}
}

// More than one refusal of the distributor comes as one line of groups
// (testdata/loki/400-grouped.txt, a real Loki 3.7.6's): each entry it names
// is repaired, the one it does not is stored and not sent again. (Was: not
// taken for Loki's words, retried unrepaired for as long as Loki refused.)
func TestPartialRejectionGrouped(t *testing.T) {
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	for _, tc := range []struct {
		file    string
		entries []Entry
		resent  int
	}{
		{"400-grouped.txt", []Entry{
			{Time: at("2026-11-27T19:22:47Z").Add(300 * time.Millisecond), Line: []byte("a")},
			{Time: at("2026-11-27T19:22:48Z").Add(100 * time.Millisecond), Line: []byte("b")},
			{Time: at("2026-11-27T19:22:48Z").Add(100 * time.Millisecond), Line: []byte("c")},
			{Time: at("2026-12-05T19:21:47Z"), Line: []byte(strings.Repeat("x", 300000))},
			{Time: at("2026-12-05T19:22:47Z"), Line: []byte("ok")},
		}, 4},
		{"400-grouped-same.txt", []Entry{
			{Time: at("2026-11-27T19:22:48Z").Add(100 * time.Millisecond), Line: []byte("b")},
			{Time: at("2026-11-27T19:22:48Z").Add(100 * time.Millisecond), Line: []byte("c")},
			{Time: at("2026-12-05T19:22:47Z"), Line: []byte("ok")},
		}, 2},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c, rec, dropped := setup(t, Config{}, status(400, string(fixture.Read(t, "loki", tc.file))))
			c.now = func() time.Time { return at("2026-12-05T19:22:50Z") }
			if err := c.Send(context.Background(), []Stream{{Labels: demo, Entries: tc.entries}}); err != nil {
				t.Fatal(err)
			}
			if len(rec.requests) != 2 || len(dropped) != 0 || c.last.Stored[demo] != len(tc.entries) {
				t.Fatalf("%d requests, dropped %v, stored %v", len(rec.requests), dropped, c.last.Stored)
			}
			resent := rec.requests[1].Streams[0].Entries
			if len(resent) != tc.resent {
				t.Fatalf("%d entries sent again, want the %d named", len(resent), tc.resent)
			}
			for _, e := range resent {
				switch {
				case e.Line == "ok":
					t.Error("the entry Loki did not name was sent again")
				case len(e.Line) > 262144:
					t.Errorf("a %d-byte line sent again", len(e.Line))
				case len(e.Line) == 1 && !e.Timestamp.After(at("2026-11-28T19:22:47Z")):
					t.Errorf("entry %s sent again at %v, not inside Loki's window", e.Line, e.Timestamp)
				}
			}
		})
	}
}

// Groups are split only outside the quoted label values Loki names a
// stream with: a computer name cannot forge a refusal.
func TestRefusalsSplitGroupsOnly(t *testing.T) {
	// As Loki prints it: quotes in a label value escaped.
	forged := `x\"; 1 errors like: stream '{channel=\"Security\"}' has label value too long: 'y`
	for _, tc := range []struct {
		body string
		want int
	}{
		{"entry for stream '{a=\"b\"}' has timestamp too old: 2026-11-27T19:22:47Z\n", 1},
		{string(fixture.Read(t, "loki", "400-grouped.txt")), 3},
		{string(fixture.Read(t, "loki", "400-grouped-same.txt")), 1},
		{string(fixture.Read(t, "loki", "400-too-far-behind-12-of-13.txt")), 11},
		{"2 errors like: entry for stream '{computer=\"" + forged + "\"}' has timestamp too old: 2026-11-27T19:22:47Z; 1 errors like: max entry size '1' bytes exceeded for stream '{a=\"b\"}' while adding an entry with length '2' bytes\n", 2},
	} {
		got := refusals(tc.body)
		if len(got) != tc.want {
			t.Errorf("%d refusals, want %d: %q", len(got), tc.want, got)
		}
		for _, r := range got {
			if strings.Contains(r, "errors like:") && !strings.Contains(r, forged) {
				t.Errorf("a group prefix left in %q", r)
			}
		}
	}
}

// Loki's older wording (capital M, Go time strings) is understood too.
func TestPartialRejectionOlderWording(t *testing.T) {
	old := time.Unix(0, 1377183104205667300).UTC()
	body := "entry for stream '" + labels + "' has timestamp too old: " + old.Format("2006-01-02 15:04:05.999999999 -0700 MST") + ", oldest acceptable timestamp is: 2026-11-25 00:00:00 +0000 UTC\n" +
		"Max entry size '60' bytes exceeded for stream '" + labels + "' while adding an entry with length '100' bytes\n"
	c, rec, dropped := setup(t, Config{}, status(400, body))
	streams := batch(old.UnixNano(), 1800000000e9)
	streams[0].Entries = append(streams[0].Entries, Entry{Time: time.Unix(1800000001, 0), Line: []byte(strings.Repeat("é", 50))})
	if err := c.Send(context.Background(), streams); err != nil {
		t.Fatal(err)
	}
	// The distributor's words alone: the entry they do not name is stored,
	// not sent again.
	resent := rec.requests[1].Streams[0].Entries
	if len(resent) != 2 {
		t.Fatalf("%d entries sent again, want the 2 named", len(resent))
	}
	if !resent[0].Timestamp.Equal(time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("too-old entry resent at %v", resent[0].Timestamp)
	}
	if l := resent[1].Line; !strings.HasSuffix(l, TruncatedMarker) || len(l) > 60 {
		t.Errorf("over-long entry resent as %q", l)
	}
	if len(dropped) != 0 {
		t.Errorf("dropped %v", dropped)
	}
}

func TestRejectedIsDroppedAndCounted(t *testing.T) {
	c, _, dropped := setup(t, Config{}, status(422, "error at least one valid stream is required for ingestion"))
	if err := c.Send(context.Background(), batch(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if dropped["rejected_422"] != 3 {
		t.Errorf("dropped %v", dropped)
	}
	// A 400 that names no entry: none of the batch can be proven stored.
	c, rec0, dropped2 := setup(t, Config{}, status(400, "error at insertion: stream has 20 labels, limit 15"))
	c.Send(context.Background(), batch(1, 2))
	if dropped2["rejected_400"] != 2 || len(rec0.requests) != 1 {
		t.Errorf("an unknown 400 reason: %d requests, dropped %v", len(rec0.requests), dropped2)
	}
	// Rejected again after every repair (Loki's window keeps moving): after
	// maxRepairs rounds the entry is dropped as too old; the other one is
	// stored (the distributor's words alone come only when the ingester took
	// every entry that reached it) and is not sent again.
	again := func(pr *push.PushRequest) (int, string) {
		ts := pr.Streams[0].Entries[0].Timestamp.UTC()
		return 400, "entry for stream '" + labels + "' has timestamp too old: " + ts.Format(time.RFC3339) +
			", oldest acceptable timestamp is: " + ts.Add(time.Hour).Format(time.RFC3339)
	}
	var answers []func(*push.PushRequest) (int, string)
	for range maxRepairs + 2 {
		answers = append(answers, again)
	}
	c, rec, dropped3 := setup(t, Config{}, answers...)
	c.Send(context.Background(), batch(5, 1799999999e9))
	if len(rec.requests) != maxRepairs+2 || dropped3[contract.DropTooOld] != 1 || dropped3[contract.DropUnconfirmed] != 0 || c.last.Stored[labels] != 1 {
		t.Errorf("%d requests, dropped %v, stored %v", len(rec.requests), dropped3, c.last.Stored)
	}
	// A repair that changes nothing is not sent again.
	c, rec, dropped4 := setup(t, Config{}, again)
	c.now = func() time.Time { return time.Unix(0, 5) } // the re-stamp lands on the same time
	c.Send(context.Background(), batch(5))
	if len(rec.requests) != 1 || dropped4[contract.DropTooOld] != 1 {
		t.Errorf("no progress: %d requests, dropped %v", len(rec.requests), dropped4)
	}
}

// Redirects are never followed: a 301 (which would turn the POST into a
// GET) and a 307 from https to http (which would resend the credentials in
// clear text) are failures, retried at the configured URL, never at the
// Location.
func TestRedirectsAreNeverFollowed(t *testing.T) {
	var elsewhere int
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere++; w.WriteHeader(204) }))
	defer other.Close()
	for _, code := range []int{301, 307, 308} {
		dir := t.TempDir()
		pw := filepath.Join(dir, "pw")
		os.WriteFile(pw, []byte("s3cret"), 0o600)
		redirect := func(*push.PushRequest) (int, string) { return code, "" }
		c, rec, dropped := setup(t, Config{Loki: endpoint.Loki{BasicAuth: endpoint.BasicAuth{Username: "u", PasswordFile: pw}}}, redirect, redirect, status(204, ""))
		var logs bytes.Buffer
		c.cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
		if err := c.Send(context.Background(), batch(1)); err != nil {
			t.Fatal(err)
		}
		if len(rec.requests) != 3 || elsewhere != 0 || len(dropped) != 0 {
			t.Errorf("%d: %d requests here, %d elsewhere, dropped %v", code, len(rec.requests), elsewhere, dropped)
		}
		if !strings.Contains(logs.String(), "never followed") {
			t.Errorf("%d: not logged: %s", code, logs.String())
		}
	}
}

// Failures are loud but bounded: the first one at once, a summary at most
// every FailureLogEvery, the recovery; 401 names the credentials.
func TestFailuresAreLogged(t *testing.T) {
	unauthorized := status(401, "invalid credentials")
	c, _, _ := setup(t, Config{}, unauthorized, unauthorized, unauthorized, unauthorized, status(204, ""))
	var logs bytes.Buffer
	c.cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
	c.cfg.FailureLogEvery = time.Hour
	clock := time.Unix(1800000000, 0)
	c.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	if err := c.Send(context.Background(), batch(1)); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if strings.Count(out, "push failed") != 1 || !strings.Contains(out, "rejected the credentials (401)") ||
		!strings.Contains(out, "next_retry_in") || !strings.Contains(out, "accepts pushes again") || !strings.Contains(out, "failed_attempts=4") {
		t.Errorf("logs:\n%s", out)
	}
	if since, _ := c.FailingSince(); !since.IsZero() {
		t.Error("still failing after a delivery")
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
	c, rec, _ := setup(t, Config{Loki: endpoint.Loki{BasicAuth: endpoint.BasicAuth{Username: "winobs", PasswordFile: pw}}})
	c.Send(context.Background(), batch(1))
	if u, p, ok := (&http.Request{Header: rec.headers[0]}).BasicAuth(); !ok || u != "winobs" || p != "s3cret" {
		t.Errorf("basic auth %q %q %v", u, p, ok)
	}
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("abc\n"), 0o600)
	c, rec, _ = setup(t, Config{Loki: endpoint.Loki{BearerTokenFile: tok}})
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

// What stands in front of Loki refuses a request in its own words for
// reasons that pass: the batch is retried and nothing is dropped. The
// bodies are what these proxies send (nginx's error pages, an AWS ALB's,
// Go's net/http for a request it cannot read, Envoy's local replies).
func TestProxyAnswersAreRetriedNeverDropped(t *testing.T) {
	nginx400 := "<html>\r\n<head><title>400 Bad Request</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
	alb408 := "<html>\r\n<head><title>408 Request Time-out</title></head>\r\n<body>\r\n<center><h1>408 Request Time-out</h1></center>\r\n</body>\r\n</html>\r\n"
	for _, tc := range []struct {
		name string
		code int
		body string
	}{
		{"nginx 400 page", 400, nginx400},
		{"nginx 499", 499, ""},
		{"ALB 408", 408, alb408},
		{"ALB 409", 409, ""},
		{"Envoy 421", 421, "Misdirected Request"},
		{"Envoy 425", 425, "Too Early"},
		{"net/http 400", 400, "400 Bad Request"},
		{"an empty 400", 400, ""},
		{"an HTML 422", 422, "<html><body>Unprocessable Entity</body></html>"},
		{"405", 405, "Method Not Allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rec, dropped := setup(t, Config{}, status(tc.code, tc.body), status(tc.code, tc.body))
			if err := c.Send(context.Background(), batch(1, 2, 3)); err != nil {
				t.Fatal(err)
			}
			if len(dropped) != 0 || len(rec.requests) != 3 || c.last.Stored[labels] != 3 {
				t.Errorf("%d requests, dropped %v, stored %v", len(rec.requests), dropped, c.last.Stored)
			}
		})
	}
}

// Loki's own refusals keep their meaning: a 400 in its words is read
// entry by entry, a 422 in its words drops the request.
func TestLokiRefusalIsLokisWords(t *testing.T) {
	for _, tc := range []struct {
		contentType, body string
		want              bool
	}{
		{"text/plain; charset=utf-8", string(fixture.Read(t, "loki", "400-too-old.txt")), true},
		{"text/plain; charset=utf-8", string(fixture.Read(t, "loki", "400-too-new.txt")), true},
		{"text/plain; charset=utf-8", string(fixture.Read(t, "loki", "400-max-entry-size.txt")), true},
		{"text/plain; charset=utf-8", string(fixture.Read(t, "loki", "400-label-too-long.txt")), true},
		{"text/plain; charset=utf-8", string(fixture.Read(t, "loki", "400-too-far-behind-12-of-13.txt")), true},
		{"text/plain; charset=utf-8", "entry for stream '{a=\"b\"}' has 16 label names; limit 15\n", true},
		{"text/plain; charset=utf-8", "error at insertion: no streams\n", true},
		// Gateways and WAFs in front of Loki: never Loki's words.
		{"application/json", `{"error":"Request blocked","code":400}`, false},
		{"text/plain", `{"message":"Invalid request body"}`, false},
		{"text/plain", "Request Rejected\nThe requested URL was rejected. Please consult with your administrator.\nYour support ID is: 1234567890\n", false},
		{"text/plain", "invalid request: entry for stream '{a=\"b\"}' has timestamp too old\n", false},
		{"text/plain; charset=utf-8", string(fixture.Read(t, "loki", "400-too-old.txt")) + "Request blocked by policy\n", false},
		{"", "Bad Request: missing header X-Tenant\n", false},
		{"text/plain; charset=utf-8", "400 Bad Request", false},
		{"text/plain; charset=utf-8", "Bad Request\n", false},
		{"text/html; charset=utf-8", "entry for stream", false},
		{"", "   \n", false},
	} {
		if got := lokiRefusal(tc.contentType, tc.body); got != tc.want {
			t.Errorf("%q %.40q: %v", tc.contentType, tc.body, got)
		}
	}
}

// A batch of many streams (a collector's computers) goes one stream a
// request, each stream's entries in time order, sendParallel requests in
// flight and no more; the report adds up every stream's.
func TestSendOneStreamPerRequest(t *testing.T) {
	var inFlight, most atomic.Int32
	barrier := make(chan struct{}) // the first sendParallel requests wait for each other
	var arrived atomic.Int32
	answer := func(pr *push.PushRequest) (int, string) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if a := arrived.Add(1); a == sendParallel {
			close(barrier)
		} else if a < sendParallel {
			select {
			case <-barrier:
			case <-time.After(fixture.Patience):
			}
		}
		time.Sleep(20 * time.Millisecond) // room for a request beyond the bound to show
		return 204, ""
	}
	const streams = 20
	var answers []func(*push.PushRequest) (int, string)
	for range streams {
		answers = append(answers, answer)
	}
	c, rec, dropped := setup(t, Config{}, answers...)
	var batch []Stream
	for i := range streams {
		s := Stream{Labels: FormatLabels(map[string]string{"job": "windows-events", "computer": fmt.Sprint("PC", i)})}
		for k := range 5 { // newest first
			s.Entries = append(s.Entries, Entry{Time: time.Unix(1800000000-int64(k), 0), Line: []byte(fmt.Sprint(i, k))})
		}
		batch = append(batch, s)
	}
	if err := c.Send(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if got := most.Load(); got != sendParallel {
		t.Errorf("at most %d requests in flight, want %d", got, sendParallel)
	}
	if len(rec.requests) != streams || len(dropped) != 0 {
		t.Fatalf("%d requests for %d streams, dropped %v", len(rec.requests), streams, dropped)
	}
	for _, r := range rec.requests {
		if len(r.Streams) != 1 || !slices.IsSortedFunc(r.Streams[0].Entries, func(a, b push.Entry) int { return a.Timestamp.Compare(b.Timestamp) }) {
			t.Errorf("a request of %d streams, or out of time order: %+v", len(r.Streams), r.Streams)
		}
	}
	for _, s := range batch {
		if c.last.Stored[s.Labels] != 5 {
			t.Errorf("%s: %d stored, want 5", s.Labels, c.last.Stored[s.Labels])
		}
	}
	if !batch[0].Entries[0].Time.Equal(time.Unix(1800000000, 0)) {
		t.Error("Send reordered the caller's entries")
	}
}

// Issue 67: a Loki that refuses structured metadata (the 400 a real Loki
// 3.7.6 answers with allow_structured_metadata false, testdata/loki) is
// Loki's word that no entry can be repaired and none may be dropped: every
// attempt is retried with the reason disallowed_structured_metadata, the
// error names the setting and both fixes, and once Loki allows it the same
// entries are stored, none lost.
func TestDisallowedMetadataWaitsNamingTheSetting(t *testing.T) {
	body := string(fixture.Read(t, "loki", "400-disallowed-structured-metadata.txt"))
	// Several entries refused alike: grouped, as the distributor words it
	// (the real Loki's answer in tests/lokirules_test.go's pushes).
	grouped := "2 errors like: " + body
	c, rec, dropped := setup(t, Config{}, status(400, body), status(400, grouped), status(400, body), status(204, ""))
	var reasons []string
	c.Observe = func(_ int, reason string, _ time.Duration, retry bool) {
		if !retry && reason != "" {
			t.Errorf("reason %s not retried", reason)
		}
		reasons = append(reasons, reason)
	}
	if err := c.Send(context.Background(), batch(1e9, 2e9)); err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 0 || len(rec.requests) != 4 || c.last.Stored[labels] != 2 {
		t.Errorf("dropped %v, %d requests, stored %v", dropped, len(rec.requests), c.last.Stored)
	}
	want := []string{contract.PushDisallowedMetadata, contract.PushDisallowedMetadata, contract.PushDisallowedMetadata, ""}
	if !slices.Equal(reasons, want) {
		t.Errorf("reasons %q, want %q", reasons, want)
	}
	// The error of a refused attempt, as the log and /readyz say it.
	c2, _, _ := setup(t, Config{}, status(400, body))
	r := c2.Push(context.Background(), batch(1e9)[0])
	why := fmt.Sprint(r.Err)
	if r.Outcome != Retry || r.Reason != contract.PushDisallowedMetadata ||
		!strings.Contains(why, "limits_config.allow_structured_metadata is false") || !strings.Contains(why, "loki.structuredMetadata: false") {
		t.Errorf("outcome %v reason %q: %s", r.Outcome, r.Reason, why)
	}
	// Another Loki 400 keeps no reason.
	c3, _, _ := setup(t, Config{}, status(400, string(fixture.Read(t, "loki", "400-too-old.txt"))))
	if r := c3.Push(context.Background(), batch(1e9)[0]); r.Reason != "" || r.Outcome != Partial {
		t.Errorf("too old: %v %q", r.Outcome, r.Reason)
	}
}
