package loki

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/winobs/winobs/conffile"
	"github.com/winobs/winobs/endpoint"

	"github.com/winobs/winobs/shipper/backoff"
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
	// network error), its duration, and whether it will be retried.
	Observe func(status int, took time.Duration, retry bool)
	// Dropped, if set, is told about entries of a stream given up on, with
	// a reason. It is called from Send, before Send returns.
	Dropped func(stream, reason string, n int)

	mu      sync.Mutex
	streak  int       // failed attempts since the last delivery
	since   time.Time // first failure of the streak
	lastLog time.Time
}

// NewClient checks cfg and builds the HTTP client; TLS certificates are
// always verified, against CAFile when set.
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
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile != "" {
		pem, err := readSecret(cfg.CAFile, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("reading CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", cfg.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.FailureLogEvery == 0 {
		cfg.FailureLogEvery = time.Minute
	}
	hc := &http.Client{Transport: tr, Timeout: cfg.Timeout,
		// A redirect is a delivery failure, never followed: a 301 would turn
		// the POST into a body-less GET, and a 307 to http:// would resend
		// the batch and the credentials in clear text.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Client{cfg: cfg, http: hc, now: time.Now}, nil
}

// Outcome classifies one push attempt.
type Outcome int

const (
	// Delivered: Loki answered 204 and stored the batch.
	Delivered Outcome = iota
	// Retry: 429, 5xx, a network error, a 2xx other than 204 (Loki answers
	// 260 when ingestion is blocked and stores nothing), a redirect (never
	// followed), or an error that a fixed configuration or credential
	// resolves (401, 403, 404).
	Retry
	// Partial: a 400 that lists rejected entries; the others were stored.
	Partial
	// TooLarge: 413, the batch must be split.
	TooLarge
	// Rejected: any other 4xx; retrying the same batch cannot succeed.
	Rejected
)

// Result is the outcome of one attempt.
type Result struct {
	Outcome Outcome
	Status  int
	Err     error
	Body    string // the start of Loki's answer, for logs
}

// Push makes one attempt.
func (c *Client) Push(ctx context.Context, streams []Stream) Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(Body(streams)))
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
	case s == http.StatusNoContent:
		r.Outcome = Delivered
	case s == http.StatusTooManyRequests || s >= 500 || s/100 == 2 || s/100 == 3 ||
		s == http.StatusUnauthorized || s == http.StatusForbidden || s == http.StatusNotFound:
		r.Outcome = Retry
	case s == http.StatusBadRequest:
		r.Outcome = Partial
	case s == http.StatusRequestEntityTooLarge:
		r.Outcome = TooLarge
	default:
		r.Outcome = Rejected
	}
	switch {
	case r.Outcome == Delivered:
	case r.Status/100 == 3:
		r.Err = fmt.Errorf("loki answered a redirect (%d to %q), which is never followed: set loki.url to the final address", r.Status, resp.Header.Get("Location"))
	case r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden:
		r.Err = fmt.Errorf("loki rejected the credentials (%d): check the tenant, basicAuth or bearerTokenFile: %s", r.Status, firstLine(r.Body))
	default:
		r.Err = fmt.Errorf("loki answered %d: %s", resp.StatusCode, firstLine(r.Body))
	}
	return r
}

// maxSecret bounds a token or password file: a real one is far smaller.
const maxSecret = 64 << 10

// readSecret reads a secret file bounded (conffile.ReadFile: regular files
// only), so a path pointing at a device or a huge file cannot exhaust memory.
func readSecret(path string, max int64) ([]byte, error) {
	b, err := conffile.ReadFile(path, max)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

func (c *Client) authorize(req *http.Request) error {
	switch {
	case c.cfg.BearerTokenFile != "":
		tok, err := readSecret(c.cfg.BearerTokenFile, maxSecret)
		if err != nil {
			return fmt.Errorf("reading bearer token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	case c.cfg.BasicAuth.Username != "":
		pw, err := readSecret(c.cfg.BasicAuth.PasswordFile, maxSecret)
		if err != nil {
			return fmt.Errorf("reading password: %w", err)
		}
		req.SetBasicAuth(c.cfg.BasicAuth.Username, strings.TrimRight(string(pw), "\r\n"))
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 256 {
		s = s[:256] + "…"
	}
	return s
}

// FailingSince is when the current streak of failed attempts began; zero
// when the last attempt delivered (or none was made).
func (c *Client) FailingSince() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.since
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
		c.streak, c.since = 0, time.Time{}
		return
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

// Send delivers streams, retrying with backoff for as long as ctx allows:
// the event log is the buffer, and the checkpoint does not move meanwhile.
// It returns nil once every entry is stored or given up on with a counted
// reason, and ctx's error if cancelled first (nothing may then be assumed).
func (c *Client) Send(ctx context.Context, streams []Stream) error {
	attempt, retried := 0, false
	for len(streams) > 0 {
		start := time.Now()
		r := c.Push(ctx, streams)
		retry := r.Outcome == Retry
		if c.Observe != nil {
			c.Observe(r.Status, time.Since(start), retry)
		}
		switch r.Outcome {
		case Delivered:
			c.record(r, 0)
			return nil
		case Partial:
			c.record(r, 0)
			streams = c.repair(streams, r.Body, retried)
			retried = true
			attempt = 0
			continue
		case TooLarge:
			if a, b, ok := split(streams); ok {
				if err := c.Send(ctx, a); err != nil {
					return err
				}
				streams = b
				continue
			}
			c.record(r, -1)
			c.dropAll(streams, "too_large")
			return nil
		case Rejected:
			c.record(r, -1)
			c.dropAll(streams, "rejected_"+strconv.Itoa(r.Status))
			return nil
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

func (c *Client) drop(stream, reason string, n int) {
	if c.Dropped != nil && n > 0 {
		c.Dropped(stream, reason, n)
	}
}

func (c *Client) dropAll(streams []Stream, reason string) {
	for _, s := range streams {
		c.drop(s.Labels, reason, len(s.Entries))
	}
	c.cfg.Log.Error("dropping entries Loki will not take", "reason", reason, "entries", count(streams))
}

func (c *Client) backoff() backoff.Policy {
	return backoff.Policy{Min: c.cfg.MinBackoff, Max: c.cfg.MaxBackoff}
}

func count(streams []Stream) int {
	n := 0
	for _, s := range streams {
		n += len(s.Entries)
	}
	return n
}

// split halves a batch by entries.
func split(streams []Stream) (a, b []Stream, ok bool) {
	n := count(streams)
	if n < 2 {
		return nil, nil, false
	}
	half := n / 2
	for _, s := range streams {
		switch {
		case half <= 0:
			b = append(b, s)
		case len(s.Entries) <= half:
			a = append(a, s)
			half -= len(s.Entries)
		default:
			a = append(a, Stream{Labels: s.Labels, Entries: s.Entries[:half]})
			b = append(b, Stream{Labels: s.Labels, Entries: s.Entries[half:]})
			half = 0
		}
	}
	return a, b, true
}

// Loki's per-entry rejections (pkg/validation, pkg/ingester), matched the
// way Loki has worded them across releases: any case, timestamps in RFC 3339
// or Go's time.Time format, the ingester's message over two lines, and the
// stream as Loki names it (with labels of its own such as service_name).
var (
	reTooLong = regexp.MustCompile(`(?i)max entry size '(\d+)' bytes exceeded for stream '(\{.*?\})' while adding an entry with length '(\d+)' bytes`)
	reTooOld  = regexp.MustCompile(`(?i)entry for stream '(\{.*?\})' has timestamp too (?:old|new): (\d{4}-\d\d-\d\d[T ][0-9:.]+(?:Z| [+-]\d{4} \w+)?)(?:, oldest acceptable timestamp is: (\d{4}-\d\d-\d\d[T ][0-9:.]+(?:Z| [+-]\d{4} \w+)?))?`)
	reBehind  = regexp.MustCompile(`(?is)entry with timestamp (\d{4}-\d\d-\d\d[T ][0-9:.]+(?:Z| [+-]\d{4} \w+)?) ignored, reason: 'entry too far behind[^']*?(?:oldest acceptable timestamp is: (\d{4}-\d\d-\d\d[T ][0-9:.]+(?:Z| [+-]\d{4} \w+)?))?'.*?for stream: (\{[^\n]*?\})`)
)

// restampMargin puts a repaired entry this far inside the oldest time Loki
// said it accepts, so the resend is not too old again by the time it lands.
const restampMargin = time.Hour

// parseLokiTime reads a timestamp as Loki prints it; second precision when
// it is RFC 3339 without fraction.
func parseLokiTime(s string) (t time.Time, precision time.Duration, ok bool) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999 -0700 MST", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			if !strings.Contains(s, ".") {
				return t, time.Second, true
			}
			return t, time.Nanosecond, true
		}
	}
	return time.Time{}, 0, false
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

// rejection is one entry (or, at second precision, a range of them) Loki
// named in a 400.
type rejection struct {
	labels    map[string]string
	from, to  time.Time // timestamps [from, to); zero for a line-size reject
	restamp   time.Time // the new timestamp; zero: the reading time
	lineLimit int
}

// oldestPlus is Loki's oldest acceptable time plus margin, or zero.
func oldestPlus(s string, margin time.Duration) time.Time {
	if t, _, ok := parseLokiTime(s); ok {
		return t.Add(margin)
	}
	return time.Time{}
}

// matches reports whether Loki's stream is ours: every label we sent, with
// the same value (Loki may add its own).
func (r rejection) matches(ours map[string]string) bool {
	for k, v := range ours {
		if r.labels[k] != v {
			return false
		}
	}
	return len(ours) > 0
}

// repair turns a partial 400 into the batch to send again. Prevention before
// sending makes this rare; it stays as a fallback. Loki stored the entries
// it did not reject, so the whole batch goes again (stored entries are
// identical and Loki drops them), with the named entries fixed: a too-old or
// too-far-behind one is re-stamped just inside the oldest time Loki said it
// accepts (a too-new one at the reading time; timeCreated stays in the
// line), an over-long line is truncated with the marker. When Loki says
// something the client cannot attribute to entries, no other entry of the
// batch can be proven stored: those are counted as dropped (rejected_400)
// and only the repaired ones go again. Entries Loki rejects again after one
// repair are dropped too: sending them once more cannot succeed.
func (c *Client) repair(streams []Stream, body string, retried bool) []Stream {
	var rejects []rejection
	unattributed := map[string]int{} // the reject line -> count
	for _, m := range reBehind.FindAllStringSubmatch(body, -1) {
		if t, prec, ok := parseLokiTime(m[1]); ok {
			rejects = append(rejects, rejection{labels: ParseLabels(m[3]), from: t, to: t.Add(prec), restamp: oldestPlus(m[2], time.Second)})
		} else {
			unattributed[m[0]]++
		}
	}
	body = reBehind.ReplaceAllString(body, "")
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimSpace(l)
		if m := reTooLong.FindStringSubmatch(l); m != nil {
			limit, _ := strconv.Atoi(m[1])
			rejects = append(rejects, rejection{labels: ParseLabels(m[2]), lineLimit: limit})
			continue
		}
		if m := reTooOld.FindStringSubmatch(l); m != nil {
			if t, prec, ok := parseLokiTime(m[2]); ok {
				rejects = append(rejects, rejection{labels: ParseLabels(m[1]), from: t, to: t.Add(prec), restamp: oldestPlus(m[3], restampMargin)})
				continue
			}
		}
		if l != "" {
			unattributed[l]++
		}
	}
	now := c.now()
	fixed := map[string]int{}
	unproven := len(unattributed) > 0
	out := make([]Stream, 0, len(streams))
	for _, s := range streams {
		ours := ParseLabels(s.Labels)
		ns := Stream{Labels: s.Labels, Entries: make([]Entry, 0, len(s.Entries))}
		for _, e := range s.Entries {
			repaired := false
			for _, r := range rejects {
				if !r.matches(ours) {
					continue
				}
				switch {
				case r.lineLimit > 0 && len(e.Line) > r.lineLimit:
					e = Entry{Time: e.Time, Line: Truncate(e.Line, r.lineLimit)}
					repaired = true
				case r.lineLimit == 0 && !e.Time.Before(r.from) && e.Time.Before(r.to):
					ts := r.restamp
					if ts.IsZero() || ts.After(now) {
						ts = now
					}
					e = Entry{Time: ts, Line: e.Line}
					repaired = true
				}
			}
			switch {
			case repaired:
				fixed[s.Labels]++
				ns.Entries = append(ns.Entries, e)
			case unproven:
				c.drop(s.Labels, "rejected_400", 1)
			default:
				ns.Entries = append(ns.Entries, e) // stored: Loki drops the repeat
			}
		}
		if len(ns.Entries) > 0 {
			out = append(out, ns)
		}
	}
	if unproven {
		c.cfg.Log.Error("Loki rejected entries in words the shipper cannot attribute; the batch's other entries are counted as dropped",
			"reject_lines", len(unattributed), "first", firstLine(body))
	}
	if retried {
		// Rejected again after a repair: sending once more cannot succeed.
		for stream, n := range fixed {
			c.drop(stream, "rejected_400", n)
		}
		return nil
	}
	if len(fixed) == 0 {
		return nil
	}
	return out
}
