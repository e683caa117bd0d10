package loki

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/endpoint"

	"github.com/winobs/winobs/shipper/backoff"
	"github.com/winobs/winobs/shipper/ratelog"
)

// Config configures a Client. Secrets are file paths, read on every request
// so a rotated Secret takes effect without a restart.
type Config struct {
	// The endpoint, as the shipper's config describes it.
	endpoint.Loki
	Timeout   time.Duration
	UserAgent string
	// MinBackoff and MaxBackoff bound the jittered exponential backoff.
	MinBackoff, MaxBackoff time.Duration
	// Log receives the first failure of a streak, a summary at most every
	// FailureLogEvery while it lasts, and the recovery; nil discards.
	Log *slog.Logger
	// FailureLogEvery is the minimum interval between failure summaries
	// (default one minute).
	FailureLogEvery time.Duration
}

// Client pushes batches to Loki.
type Client struct {
	cfg  Config
	http *http.Client
	now  func() time.Time
	// Observe, if set, is told about every attempt: its HTTP status (0 for a
	// network error), the refusal it names (Result.Reason), its duration,
	// and whether it will be retried.
	Observe func(status int, reason string, took time.Duration, retry bool)

	logs *ratelog.Limiter

	mu      sync.Mutex
	streak  int       // failed attempts since the last delivery
	since   time.Time // first failure of the streak
	why     string    // the last failed attempt's error
	lastLog time.Time
}

// NewClient checks cfg and builds the HTTP client (endpoint.NewHTTPClient:
// TLS always verified, against CAFile when set; a redirect is a delivery
// failure, never followed).
func NewClient(cfg Config) (*Client, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = 500 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 5 * time.Minute
	}
	hc, err := endpoint.NewHTTPClient(cfg.TLS(), cfg.Timeout)
	if err != nil {
		return nil, err
	}
	if tr, ok := hc.Transport.(*http.Transport); ok {
		tr.MaxIdleConnsPerHost = sendParallel // Send's streams in flight keep their connections
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.FailureLogEvery == 0 {
		cfg.FailureLogEvery = time.Minute
	}
	return &Client{cfg: cfg, http: hc, now: time.Now, logs: ratelog.New(cfg.Log, cfg.FailureLogEvery)}, nil
}

// Outcome classifies one push attempt.
type Outcome int

const (
	// Delivered: Loki answered 204 and stored the batch, or a
	// Loki-compatible receiver answered 200 (older VictoriaLogs, gateways;
	// Alloy takes any 2xx).
	Delivered Outcome = iota
	// Retry: 429, 5xx, a network error, a 2xx other than 200 and 204 (Loki
	// answers 260 when ingestion is blocked and stores nothing), a redirect (never
	// followed), an error that a fixed configuration or credential resolves
	// (401, 403, 404), and every answer that is not Loki's own refusal: what
	// stands in front of Loki answers 408, 409, 421, 425, 499 or a 400 page
	// of its own for reasons that pass. Only Loki's words drop an entry.
	Retry
	// Partial: a 400 in Loki's words, listing rejected entries; the others
	// were stored.
	Partial
	// TooLarge: 413, the batch must be split.
	TooLarge
	// Rejected: 422, Loki's refusal of a request it cannot take at all.
	Rejected
)

// Result is the outcome of one attempt.
type Result struct {
	Outcome Outcome
	Status  int
	Err     error
	Body    string // the start of Loki's answer, for logs
	// Reason names a refusal of Loki's that no entry can repair and the
	// user must act on (contract.PushDisallowedMetadata), or "".
	Reason string
}

// disallowedMetadata is the start of Loki's 400 to a push that carries
// structured metadata where limits_config.allow_structured_metadata is false
// (pkg/validation/validate.go, DisallowedStructuredMetadataErrorMsg: "stream
// '%s' includes structured metadata, but this feature is disallowed. Please
// see `limits_config.allow_structured_metadata` …"; testdata/loki holds the
// answer of a real Loki 3.7.6), alone or, for several entries, grouped
// ("20 errors like: stream …", pkg/util/errors.go).
var disallowedMetadata = regexp.MustCompile(`^(?:\d+ errors like: )?stream '\{.*\}' includes structured metadata, but this feature is disallowed\.`)

// Push makes one attempt to store one stream, in a request of its own (Send
// says why).
func (c *Client) Push(ctx context.Context, s Stream) Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(Body([]Stream{s})))
	if err != nil {
		return Result{Outcome: Rejected, Err: err}
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.cfg.UserAgent != "" {
		req.Header.Set("User-Agent", c.cfg.UserAgent)
	}
	if c.cfg.Tenant != "" {
		req.Header.Set("X-Scope-OrgID", c.cfg.Tenant)
	}
	if err := c.authorize(req); err != nil {
		return Result{Outcome: Retry, Err: err} // a missing secret may appear
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Result{Outcome: Retry, Err: err}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	r := Result{Status: resp.StatusCode, Body: string(body)}
	switch s := resp.StatusCode; {
	case Stored(s):
		r.Outcome = Delivered
	case s == http.StatusBadRequest && disallowedMetadata.MatchString(r.Body):
		// Every entry of the stream carries its channel as metadata: none
		// can be repaired, and none is dropped. The events wait in the
		// event log until Loki allows it or winobs renders the layout
		// without (loki.structuredMetadata: false).
		r.Outcome, r.Reason = Retry, contract.PushDisallowedMetadata
	case s == http.StatusBadRequest && lokiRefusal(resp.Header.Get("Content-Type"), r.Body):
		r.Outcome = Partial
	case s == http.StatusRequestEntityTooLarge:
		r.Outcome = TooLarge
	case s == http.StatusUnprocessableEntity && lokiRefusal(resp.Header.Get("Content-Type"), r.Body):
		r.Outcome = Rejected
	default:
		r.Outcome = Retry
	}
	switch {
	case r.Outcome == Delivered:
	case r.Status/100 == 3:
		r.Err = fmt.Errorf("loki answered a redirect (%d to %q), which is never followed: set loki.url to the final address", r.Status, resp.Header.Get("Location"))
	case r.Reason == contract.PushDisallowedMetadata:
		r.Err = fmt.Errorf("loki refuses structured metadata (limits_config.allow_structured_metadata is false for this tenant): no event is dropped, all wait; "+
			"allow it (Loki 3.0+ on schema v13 and tsdb), or render winobs with loki.structuredMetadata: false (docs/loki.md): %s", firstLine(r.Body))
	case r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden:
		r.Err = fmt.Errorf("loki rejected the credentials (%d): check the tenant, basicAuth or bearerTokenFile: %s", r.Status, firstLine(r.Body))
	default:
		r.Err = fmt.Errorf("loki answered %d: %s", resp.StatusCode, firstLine(r.Body))
	}
	return r
}

// Stored reports whether a push answered with status was stored: Loki's 204,
// or the 200 of a Loki-compatible receiver (older VictoriaLogs, gateways).
// Any other 2xx is not: Loki answers 260 when ingestion is blocked.
func Stored(status int) bool { return status == http.StatusNoContent || status == http.StatusOK }

// lokiRefusal reports whether a 400 or 422 body is Loki's own words: Loki
// answers with http.Error (text/plain), its refusals a line each or grouped
// on one (refusals), each in one of the shapes of its validation messages
// (lokiLine). Anything else (a proxy's HTML page, a gateway's or WAF's JSON
// or text, an empty body, a bare reason phrase) is not Loki's: nothing is
// dropped for it, and the batch is retried and counted.
func lokiRefusal(contentType, body string) bool {
	if strings.Contains(strings.ToLower(contentType), "html") || strings.Contains(strings.ToLower(contentType), "json") {
		return false
	}
	rs := refusals(body)
	for _, r := range rs {
		if !lokiLine.MatchString(r) {
			return false
		}
	}
	return len(rs) > 0
}

// lokiLine matches one line of Loki's push refusals (pkg/validation and the
// ingester, as testdata/loki holds them): an entry or a stream named,
// an entry too large (older Loki wrote "Max entry size"), an ingester's
// too-far-behind list and its summary, and the 422 of a request without
// streams.
var lokiLine = regexp.MustCompile(`^(?i:max entry size '\d+' bytes exceeded for stream ')|^(entry for stream '\{.*\}' |stream '\{.*\}' has |entry with timestamp .* ignored, reason: '|user '[^']*', total ignored: \d+ out of \d+ for stream: \{|error at insertion: |error at least one valid stream is required)`)

// authorize sets the request's credentials, read from their files now.
func (c *Client) authorize(req *http.Request) error { return c.cfg.Credentials().Authorize(req) }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 256 {
		s = s[:256] + "…"
	}
	return s
}

// FailingSince is when the current streak of failed attempts began (zero
// when the last attempt delivered, or none was made), and the last failed
// attempt's error.
func (c *Client) FailingSince() (time.Time, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.since, c.why
}

// record tracks the failure streak and logs loudly but boundedly: the first
// failure, then a summary at most every FailureLogEvery, then the recovery.
func (c *Client) record(r Result, next time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if r.Outcome == Delivered {
		if c.streak > 0 {
			c.cfg.Log.Info("loki accepts pushes again", "failed_attempts", c.streak, "failing_for", now.Sub(c.since).Round(time.Second).String())
		}
		c.streak, c.since, c.why = 0, time.Time{}, ""
		return
	}
	if r.Err != nil {
		c.why = r.Err.Error()
	}
	if c.streak == 0 {
		c.since = now
	}
	c.streak++
	msg := "push failed; retrying"
	if next < 0 {
		msg = "push failed; not retrying"
	}
	if c.streak == 1 || now.Sub(c.lastLog) >= c.cfg.FailureLogEvery {
		c.lastLog = now
		attrs := []any{"status", r.Status, "error", r.Err, "failed_attempts", c.streak, "failing_for", now.Sub(c.since).Round(time.Second).String()}
		if next >= 0 {
			attrs = append(attrs, "next_retry_in", next.Round(time.Millisecond).String())
		}
		c.cfg.Log.Warn(msg, attrs...)
	}
}

// maxRepairs bounds the rounds of repair a stream gets beyond its first: its
// newest entry may move between rounds, and an ingester's answer hides the
// distributor's refusals of the same request until the next round.
const maxRepairs = 5

// Send delivers streams (of distinct labels), one request per stream, each
// stream's entries in time order, retrying with backoff for as long as ctx
// allows: the event log is the buffer, and the checkpoint does not move
// meanwhile. It returns once every entry is stored or given up on with a
// reason, and the report says which; with ctx's error if cancelled first
// (nothing may then be assumed). Only a 204 proves a request stored: a partial 400 is repaired
// and the stream sent again (Loki drops the entries it already holds as
// identical) until Loki answers 204 or nothing more can be repaired.
//
// One stream a request, because Loki answers a request with what befell its
// last stream only (v3.7.6 pkg/ingester/instance.go, Push: "the returned
// error only reflects what happened to the last stream in the request"): a
// 204 for several streams can hide entries an earlier one had ignored, and
// was measured to (150 of 300 lost with two streams behind a live writer).
// In time order, because then Loki's too-far-behind floor is the same for
// every entry of the request (its stream's newest entry before it, less
// max_chunk_age/2), so the entries it ignored are exactly those under it.
//
// Up to sendParallel streams are in flight at once, so a batch of many
// (ForwardedEvents on a collector: a stream per computer) is not as slow as
// its requests one after another.
func (c *Client) Send(ctx context.Context, streams []Stream) (Report, error) {
	if len(streams) == 1 { // a node's channel, most often: no goroutine, no merge
		rep := newReport()
		err := c.sendStream(ctx, streams[0], &rep)
		return rep, err
	}
	reps, errs := make([]Report, len(streams)), make([]error, len(streams))
	slots := make(chan struct{}, sendParallel)
	var wg sync.WaitGroup
	for i, s := range streams {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			reps[i] = newReport()
			errs[i] = c.sendStream(ctx, s, &reps[i])
		})
	}
	wg.Wait()
	rep := newReport()
	for _, r := range reps {
		rep.add(r)
	}
	return rep, errors.Join(errs...)
}

// sendParallel bounds the requests one Send has in flight.
const sendParallel = 4

// sendStream delivers one stream in a request of its own, in time order;
// the entries of a replay that Loki already holds (held) are counted
// stored, not sent again.
func (c *Client) sendStream(ctx context.Context, s Stream, rep *Report) error {
	s = c.dropHeld(ctx, s, rep)
	if len(s.Entries) == 0 {
		return nil
	}
	return c.send(ctx, newWork(inTimeOrder(s)), rep)
}

// dropHeld is s without the replayed entries (MaybeStored) that Loki
// answers it holds, each counted stored. Loki drops an identical entry only
// where it holds the first copy in the same chunk (its head block, or the
// stream's last line): a replay whose first copy sits in a chunk cut since
// is stored a second time, which a log query hides and a metric query
// counts. So a replay asks first, over the time its entries were stamped
// with (their first push's pin). A Loki that cannot be asked (no query API
// at the push URL's base, no right to read) leaves the entries to be sent:
// identical, dropped where Loki can.
func (c *Client) dropHeld(ctx context.Context, s Stream, rep *Report) Stream {
	var from, to time.Time
	n := 0
	for _, e := range s.Entries {
		if !e.MaybeStored {
			continue
		}
		if n == 0 || e.Time.Before(from) {
			from = e.Time
		}
		if e.Time.After(to) {
			to = e.Time
		}
		n++
	}
	if n == 0 {
		return s
	}
	held, err := c.held(ctx, s.Labels, from, to)
	if err != nil {
		c.logs.Warn("held_query", "cannot ask Loki which replayed entries it holds: they are sent again, identical (Loki drops them where it still can)", "error", err)
		return s
	}
	kept := make([]Entry, 0, len(s.Entries))
	for _, e := range s.Entries {
		if e.MaybeStored && held[heldKey{e.Time.UnixNano(), string(e.Line)}] {
			rep.stored(s.owner(e), "")
			rep.Held[s.owner(e)]++
			continue
		}
		kept = append(kept, e)
	}
	s.Entries = kept
	return s
}

type heldKey struct {
	ns   int64
	line string
}

// held is what Loki holds of stream between from and to (inclusive): each
// entry's time and line, read with a log query of the query API beside the
// push endpoint, as the push's tenant and credentials. An answer that may
// be cut short (its limit reached) is an error.
func (c *Client) held(ctx context.Context, labels string, from, to time.Time) (map[heldKey]bool, error) {
	const limit = 5000 // Loki's default max_entries_limit_per_query
	base, ok := strings.CutSuffix(c.cfg.URL, pushPath)
	if !ok {
		return nil, fmt.Errorf("the push URL %s does not end in %s: no query API to ask", c.cfg.URL, pushPath)
	}
	q := url.Values{"query": {labels}, "start": {strconv.FormatInt(from.UnixNano(), 10)}, "end": {strconv.FormatInt(to.UnixNano()+1, 10)},
		"limit": {strconv.Itoa(limit)}, "direction": {"forward"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/loki/api/v1/query_range?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	if c.cfg.Tenant != "" {
		req.Header.Set("X-Scope-OrgID", c.cfg.Tenant)
	}
	if err := c.authorize(req); err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the query API answered %d: %s", resp.StatusCode, firstLine(string(body)))
	}
	var r struct {
		Data struct {
			Result []struct {
				Values [][]json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("the query API's answer: %w", err)
	}
	out, count := map[heldKey]bool{}, 0
	for _, st := range r.Data.Result {
		for _, v := range st.Values {
			var ts, line string
			if len(v) < 2 || json.Unmarshal(v[0], &ts) != nil || json.Unmarshal(v[1], &line) != nil {
				return nil, fmt.Errorf("the query API's answer holds an entry that is not [time, line]")
			}
			ns, err := strconv.ParseInt(ts, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("the query API's answer: time %q", ts)
			}
			out[heldKey{ns, line}] = true
			count++
		}
	}
	if count >= limit {
		return nil, fmt.Errorf("the query API's answer reached its limit of %d entries", limit)
	}
	return out, nil
}

// pushPath is where Loki's push API is below its base URL.
const pushPath = "/loki/api/v1/push"

// inTimeOrder is s with its entries sorted by time (a copy when they were
// not; the order of equal times kept).
func inTimeOrder(s Stream) Stream {
	less := func(a, b Entry) int { return a.Time.Compare(b.Time) }
	if slices.IsSortedFunc(s.Entries, less) {
		return s
	}
	s.Entries = slices.Clone(s.Entries)
	slices.SortStableFunc(s.Entries, less)
	return s
}

func (c *Client) send(ctx context.Context, w work, rep *Report) error {
	attempt, repairs := 0, 0
	for len(w.Entries) > 0 {
		start := time.Now()
		r := c.Push(ctx, w.Stream)
		retry := r.Outcome == Retry
		if c.Observe != nil {
			c.Observe(r.Status, r.Reason, time.Since(start), retry)
		}
		switch r.Outcome {
		case Delivered:
			c.record(r, 0)
			rep.delivered(w)
			return nil
		case Partial:
			c.record(r, 0)
			v := judge(w.Stream, r.Body, c.now())
			if v.unattributed > 0 {
				c.logs.Error("unattributed_400", "Loki rejected entries in words the shipper cannot attribute; entries no later 204 confirms are counted as dropped ("+contract.DropUnconfirmed+")",
					"reject_lines", v.unattributed, "first", firstLine(r.Body))
			}
			next, progress := v.repair(w, rep)
			if !progress || repairs > maxRepairs {
				v.giveUp(w, rep)
				c.logs.Error("given_up_400", "Loki keeps rejecting entries that cannot be repaired; they are counted as dropped", "entries", len(w.Entries), "first", firstLine(r.Body))
				return nil
			}
			w = next
			repairs++
			attempt = 0
			continue
		case TooLarge:
			if a, b, ok := split(w); ok {
				if err := c.send(ctx, a, rep); err != nil {
					return err
				}
				w = b
				continue
			}
			c.record(r, -1)
			c.dropAll(w.Stream, contract.DropTooLarge, rep)
			return nil
		case Rejected:
			c.record(r, -1)
			c.dropAll(w.Stream, contract.DropRejected, rep)
			return nil
		}
		if mayHaveStored(r) {
			markMaybeStored(w)
		}
		delay := c.backoff().Delay(attempt)
		c.record(r, delay)
		if err := backoff.Sleep(ctx, delay); err != nil {
			return err
		}
		attempt++
	}
	return nil
}

// mayHaveStored: a retried attempt whose request Loki may have stored in
// part or whole: no answer (the connection broke, the client timed out),
// a 5xx (an ingester write may have succeeded), a 429 (the ingester's
// per-stream limit is partial), or a proxy's refusal after it forwarded
// the request (499). Redirects, 401/403/404 and 260 store nothing.
func mayHaveStored(r Result) bool {
	switch s := r.Status; {
	case s == 0, s >= 500, s == http.StatusTooManyRequests, s == 499:
		return true
	}
	return false
}

// markMaybeStored marks every entry of w as possibly stored already.
func markMaybeStored(w work) {
	for k := range w.Entries {
		w.Entries[k].MaybeStored = true
	}
}

func (c *Client) dropAll(s Stream, reason string, rep *Report) {
	for _, e := range s.Entries {
		rep.drop(s.owner(e), reason, 1)
	}
	c.logs.Error("drop_"+reason, "dropping entries Loki will not take", "reason", reason, "entries", len(s.Entries))
}

func (c *Client) backoff() backoff.Policy {
	return backoff.Policy{Min: c.cfg.MinBackoff, Max: c.cfg.MaxBackoff}
}

// split halves a stream by entries, the older half first.
func split(w work) (a, b work, ok bool) {
	half := len(w.Entries) / 2
	if half == 0 {
		return work{}, work{}, false
	}
	a = work{Stream: Stream{Labels: w.Labels, Entries: w.Entries[:half]}, why: w.why[:half]}
	b = work{Stream: Stream{Labels: w.Labels, Entries: w.Entries[half:]}, why: w.why[half:]}
	return a, b, true
}

// TruncatedMarker ends a line shortened to Loki's maximum line size.
const TruncatedMarker = "…[truncated by eventlog-shipper]"

// Truncate shortens line to at most limit bytes, ending in the marker when
// it fits, and never splitting a UTF-8 sequence.
func Truncate(line []byte, limit int) []byte {
	marker := TruncatedMarker
	if limit <= len(marker) {
		marker = ""
	}
	cut := limit - len(marker)
	for cut > 0 && cut < len(line) && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return append(append([]byte(nil), line[:cut]...), marker...)
}
