package loki

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/winobs/winobs/shipper/backoff"
)

// Config configures a Client. Secrets are file paths, read on every request
// so a rotated Secret takes effect without a restart.
type Config struct {
	URL             string
	Tenant          string
	Username        string
	PasswordFile    string
	BearerTokenFile string
	CAFile          string
	Timeout         time.Duration
	UserAgent       string
	// MinBackoff and MaxBackoff bound the jittered exponential backoff.
	MinBackoff, MaxBackoff time.Duration
}

// Client pushes batches to Loki.
type Client struct {
	cfg  Config
	http *http.Client
	now  func() time.Time
	// Observe, if set, is told about every attempt: its HTTP status (0 for a
	// network error), its duration, and whether it will be retried.
	Observe func(status int, took time.Duration, retry bool)
	// Dropped, if set, is told about entries given up on, with a reason.
	Dropped func(reason string, n int)
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
	return &Client{cfg: cfg, http: &http.Client{Transport: tr, Timeout: cfg.Timeout}, now: time.Now}, nil
}

// Outcome classifies one push attempt.
type Outcome int

const (
	// Delivered: Loki answered 204 and stored the batch.
	Delivered Outcome = iota
	// Retry: 429, 5xx, a network error, a 2xx other than 204 (Loki answers
	// 260 when ingestion is blocked and stores nothing), or an error that a
	// fixed configuration or credential resolves (401, 403, 404).
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
	case s == http.StatusTooManyRequests || s >= 500 || s/100 == 2 ||
		s == http.StatusUnauthorized || s == http.StatusForbidden || s == http.StatusNotFound:
		r.Outcome = Retry
	case s == http.StatusBadRequest:
		r.Outcome = Partial
	case s == http.StatusRequestEntityTooLarge:
		r.Outcome = TooLarge
	default:
		r.Outcome = Rejected
	}
	if r.Outcome != Delivered {
		r.Err = fmt.Errorf("loki answered %d: %s", resp.StatusCode, firstLine(r.Body))
	}
	return r
}

// maxSecret bounds a token or password file: a real one is far smaller.
const maxSecret = 64 << 10

// readSecret reads a regular file of at most max bytes, so a secret path
// pointing at a device or a huge file cannot exhaust memory.
func readSecret(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return b, err
}

func (c *Client) authorize(req *http.Request) error {
	switch {
	case c.cfg.BearerTokenFile != "":
		tok, err := readSecret(c.cfg.BearerTokenFile, maxSecret)
		if err != nil {
			return fmt.Errorf("reading bearer token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	case c.cfg.Username != "":
		pw, err := readSecret(c.cfg.PasswordFile, maxSecret)
		if err != nil {
			return fmt.Errorf("reading password: %w", err)
		}
		req.SetBasicAuth(c.cfg.Username, strings.TrimRight(string(pw), "\r\n"))
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 1024 {
		s = s[:1024]
	}
	return s
}

// Send delivers streams, retrying with backoff for as long as ctx allows:
// the event log is the buffer, and the checkpoint does not move meanwhile.
// It returns nil once every entry is stored or given up on with a counted
// reason, and ctx's error if cancelled first (nothing may then be assumed).
func (c *Client) Send(ctx context.Context, streams []Stream) error {
	attempt := 0
	for len(streams) > 0 {
		start := time.Now()
		r := c.Push(ctx, streams)
		retry := r.Outcome == Retry
		if c.Observe != nil {
			c.Observe(r.Status, time.Since(start), retry)
		}
		switch r.Outcome {
		case Delivered:
			return nil
		case Partial:
			streams = c.repair(streams, r.Body)
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
			c.drop("too_large", count(streams))
			return nil
		case Rejected:
			c.drop("rejected_"+strconv.Itoa(r.Status), count(streams))
			return nil
		}
		if err := backoff.Sleep(ctx, c.backoff().Delay(attempt)); err != nil {
			return err
		}
		attempt++
	}
	return nil
}

func (c *Client) drop(reason string, n int) {
	if c.Dropped != nil && n > 0 {
		c.Dropped(reason, n)
	}
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

// Loki's per-entry rejections (pkg/validation, pkg/ingester).
var (
	reTooOld    = regexp.MustCompile(`entry for stream '(.*?)' has timestamp too (?:old|new): (.+?)(?:, oldest acceptable timestamp is: .*)?$`)
	reBehind    = regexp.MustCompile(`entry with timestamp (.+?) ignored, reason: 'entry too far behind.*?', stream: (.*)$`)
	reTooLong   = regexp.MustCompile(`Max entry size '(\d+)' bytes exceeded for stream '(.*?)' while adding an entry with length '(\d+)' bytes`)
	lokiTimeFmt = "2006-01-02 15:04:05.999999999 -0700 MST"
)

// TruncatedMarker ends a line shortened to Loki's maximum line size.
const TruncatedMarker = "…[truncated by eventlog-shipper]"

// truncate shortens line to at most limit bytes, ending in the marker when
// it fits, and never splitting a UTF-8 sequence.
func truncate(line []byte, limit int) []byte {
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

type entryKey struct {
	labels string
	ns     int64
}

// repair turns a partial 400 into the batch to send again. Loki stored the
// entries it did not reject, but its answer may not name every reject (it
// can be cut short), so the whole batch goes again: stored entries are
// identical and Loki drops them; entries rejected for their timestamp get the
// reading time (timeCreated stays in the line); over-long lines are
// truncated with a marker. A 400 that names nothing this can fix drops the
// batch, counted, since sending it again cannot succeed.
func (c *Client) repair(streams []Stream, body string) []Stream {
	retime := map[entryKey]bool{}
	maxLen := map[string]int{} // stream -> Loki's line limit
	unknown := 0
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		l = strings.TrimSpace(l)
		if m := reTooOld.FindStringSubmatch(l); m != nil {
			if ts, err := time.Parse(lokiTimeFmt, m[2]); err == nil {
				retime[entryKey{m[1], ts.UnixNano()}] = true
				continue
			}
		}
		if m := reBehind.FindStringSubmatch(l); m != nil {
			if ts, err := time.Parse(lokiTimeFmt, m[1]); err == nil {
				retime[entryKey{m[2], ts.UnixNano()}] = true
				continue
			}
		}
		if m := reTooLong.FindStringSubmatch(l); m != nil {
			limit, _ := strconv.Atoi(m[1])
			maxLen[m[2]] = limit
			continue
		}
		if l != "" {
			unknown++
		}
	}
	now := c.now()
	fixed := 0
	out := make([]Stream, 0, len(streams))
	for _, s := range streams {
		ns := Stream{Labels: s.Labels, Entries: make([]Entry, 0, len(s.Entries))}
		limit, long := maxLen[s.Labels]
		for _, e := range s.Entries {
			switch {
			case retime[entryKey{s.Labels, e.Time.UnixNano()}]:
				e = Entry{Time: now, Line: e.Line}
				fixed++
			case long && len(e.Line) > limit:
				e = Entry{Time: e.Time, Line: truncate(e.Line, limit)}
				fixed++
			}
			ns.Entries = append(ns.Entries, e)
		}
		out = append(out, ns)
	}
	if fixed == 0 {
		c.drop("rejected_400", max(unknown, 1))
		return nil
	}
	return out
}
