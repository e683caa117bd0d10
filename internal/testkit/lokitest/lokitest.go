// Package lokitest is a Loki-protocol receiver for tests, on 127.0.0.1,
// modelled on a real Loki's measured behaviour (its default limits, its
// exact 400 bodies, stream sharding with dedupe only within a shard) rather
// than on what a client expects, and able to inject the failures a shipper
// must survive.
package lokitest

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/golang/snappy"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/winobs/winobs/shipper/loki"
)

// Fault is what the receiver does with one request.
type Fault int

const (
	// Accept handles the request as Loki would.
	Accept Fault = iota
	// RateLimited answers 429, storing nothing.
	RateLimited
	// Unavailable answers 503, storing nothing.
	Unavailable
	// InternalError answers 500, storing nothing.
	InternalError
	// Blocked answers 260 (ingestion blocked): a 2xx that stores nothing.
	Blocked
	// Reset closes the connection without an answer, storing nothing.
	Reset
	// StoreThenReset stores the entries, then closes the connection: the
	// client cannot know they arrived.
	StoreThenReset
	// Slow waits SlowFor, then accepts.
	Slow
	// Redirect answers 301 to another path, storing nothing.
	Redirect
	// Unauthorized answers 401, storing nothing.
	Unauthorized
	// Unprocessable answers 422 (Loki's answer to a push it cannot take at
	// all), storing nothing.
	Unprocessable
	// TooManyLabels answers the 400 Loki gives a stream over its label
	// limit, which names no entry, storing nothing.
	TooManyLabels
	// ProxyBadRequest answers nginx's own 400 page (a proxy in front of
	// Loki refusing the request), storing nothing.
	ProxyBadRequest
	// ProxyTimeout answers an AWS ALB's 408 page, storing nothing.
	ProxyTimeout
	// ClientClosed answers nginx's 499 with no body, storing nothing.
	ClientClosed
)

// Behaviour injects faults. Set may change it while requests are served.
type Behaviour struct {
	// Decide picks the fault for request n (from 0); nil accepts all. It is
	// called from the server's goroutines.
	Decide func(n int) Fault
	// SlowFor is the delay of Slow.
	SlowFor time.Duration
	// AnswerDelay holds every answer back after the entries are stored, as
	// a loaded Loki does: a client killed meanwhile replays stored entries.
	AnswerDelay time.Duration
}

// Limits are Loki's, with its defaults from Default.
type Limits struct {
	MaxLineBytes int           // max_line_size: 256KB
	MaxAge       time.Duration // reject_old_samples_max_age: 7d
	FutureGrace  time.Duration // creation_grace_period: 10m
	MaxLag       time.Duration // max_chunk_age/2: 1h behind the stream's newest entry
	// ShardRate is shard_streams.desired_rate (1536KB): a push is split
	// into shards when the stream's smoothed rate plus the push's bytes
	// (weighted by its smoothed pushes per second, at most 1) passes it, and
	// dedupe works only within a shard.
	ShardRate int
	// MaxLabelNames, MaxLabelNameBytes and MaxLabelValueBytes are
	// max_label_names_per_series (15) and max_label_name_length/
	// max_label_value_length (1024/2048): a stream over them is refused whole.
	MaxLabelNames, MaxLabelNameBytes, MaxLabelValueBytes int
	// TenantRate and TenantBurst are ingestion_rate_mb/_burst_size_mb (4/6
	// MB): above them the whole request is a 429.
	TenantRate, TenantBurst int
	// Now is the receiver's clock.
	Now func() time.Time
}

// Default is a default Loki's limits (the team's push-API reference).
func Default() Limits {
	return Limits{MaxLineBytes: 256 << 10, MaxAge: 7 * 24 * time.Hour, FutureGrace: 10 * time.Minute, MaxLag: time.Hour,
		ShardRate: 1536 << 10, MaxLabelNames: 15, MaxLabelNameBytes: 1024, MaxLabelValueBytes: 2048,
		TenantRate: 4 << 20, TenantBurst: 6 << 20, Now: time.Now}
}

// stored is one entry Loki holds, in a stream or one of its shards.
type stored struct {
	stream string // labels plus __stream_shard__ when sharded
	ts     int64
}

// streamState is what the ingester keeps per stream (or shard).
type streamState struct {
	newest  int64
	entries map[[2]string]bool // {ts, line}: Loki's dedupe
}

// Receiver holds what a Loki would hold.
type Receiver struct {
	limits   Limits
	mu       sync.Mutex
	behave   Behaviour
	requests int
	received int
	byLine   map[string]map[stored]bool // line -> where it is stored
	streams  map[string]*streamState
	rates    map[string]*rate // per stream (all its shards together)
	tokens   float64          // tenant bucket
	// peakScore is the highest shard score seen, as a fraction of ShardRate.
	peakScore float64
	refilled  time.Time
	srv       *http.Server
	ln        net.Listener
	addr      string
}

// rate is what Loki's rate store knows of a stream: the ingesters count its
// bytes and pushes in tumbling one-second windows, and the distributor
// smooths each window into an exponential moving average (factor 0.4).
type rate struct {
	window        time.Time // start of the current window
	bytes, pushes int       // in the current window
	bps, pps      float64   // smoothed bytes and pushes per second
	known         bool      // at least one window was polled
}

// emaFactor is the weight of a new sample in Loki's smoothed rates.
const emaFactor = 0.4

// advance closes every window that ended by now.
func (r *rate) advance(now time.Time) {
	if r.window.IsZero() {
		r.window = now
		return
	}
	n := int(now.Sub(r.window) / time.Second)
	if n <= 0 {
		return
	}
	r.bps = emaFactor*float64(r.bytes) + (1-emaFactor)*r.bps
	r.pps = emaFactor*float64(r.pushes) + (1-emaFactor)*r.pps
	decay := math.Pow(1-emaFactor, float64(n-1)) // the empty windows since
	r.bps, r.pps = r.bps*decay, r.pps*decay
	r.bytes, r.pushes, r.known = 0, 0, true
	r.window = r.window.Add(time.Duration(n) * time.Second)
}

// New starts a receiver with a default Loki's limits on a free loopback port.
func New() (*Receiver, error) { return NewWithLimits(Default()) }

// NewWithLimits starts a receiver with the given limits.
func NewWithLimits(l Limits) (*Receiver, error) {
	if l.Now == nil {
		l.Now = time.Now
	}
	r := &Receiver{limits: l, byLine: map[string]map[stored]bool{}, streams: map[string]*streamState{},
		rates: map[string]*rate{}, tokens: float64(l.TenantBurst)}
	return r, r.Start()
}

// Set replaces the receiver's fault behaviour for the requests that follow.
func (r *Receiver) Set(b Behaviour) {
	r.mu.Lock()
	r.behave = b
	r.mu.Unlock()
}

// URL is the push URL.
func (r *Receiver) URL() string { return "http://" + r.addr + "/loki/api/v1/push" }

// Start listens (again, on the same port after Stop).
func (r *Receiver) Start() error {
	addr := r.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	var err error
	for range 50 { // the old socket may linger briefly after Stop
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.ln, r.addr = ln, ln.Addr().String()
	r.srv = &http.Server{Handler: r}
	srv := r.srv
	r.mu.Unlock()
	go srv.Serve(ln)
	return nil
}

// Stop closes the listener and every connection: the receiver is down.
func (r *Receiver) Stop() {
	r.mu.Lock()
	srv := r.srv
	r.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Stats is what the receiver holds.
type Stats struct {
	Requests int
	Received int // entries that passed validation, repeats included
	Distinct int // distinct lines stored
	// Duplicates are lines stored more than once (under two timestamps, or
	// in two shards of a stream): the repeats a query shows.
	Duplicates int
	// Sharded is the number of stored entries that went to a shard.
	Sharded int
	// Streams is the number of streams holding entries (a shard counts as
	// a stream, as it does against Loki's stream limits).
	Streams int
	// PeakShardScore is the highest (rate + push bytes × pushes/s) any push
	// scored, as a fraction of the shard threshold: above 1 it was sharded.
	PeakShardScore float64
}

// Stats returns the counts so far.
func (r *Receiver) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Stats{Requests: r.requests, Received: r.received, PeakShardScore: r.peakScore, Streams: len(r.streams)}
	for _, where := range r.byLine {
		s.Distinct++
		if len(where) > 1 {
			s.Duplicates++
		}
		for st := range where {
			if strings.Contains(st.stream, "__stream_shard__") {
				s.Sharded++
			}
		}
	}
	return s
}

// Has reports whether line is stored in any stream.
func (r *Receiver) Has(line string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byLine[line]) > 0
}

// At returns the timestamps line is stored at, in any stream.
func (r *Receiver) At(line string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for st := range r.byLine[line] {
		out = append(out, time.Unix(0, st.ts).UTC())
	}
	return out
}

type entry struct {
	ts   int64
	line string
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	r.mu.Lock()
	n, b := r.requests, r.behave
	r.requests++
	r.mu.Unlock()
	fault := Accept
	if b.Decide != nil {
		fault = b.Decide(n)
	}
	if a, ok := cannedAnswers[fault]; ok {
		if a.code/100 == 3 {
			w.Header().Set("Location", "/elsewhere/loki/api/v1/push")
		}
		w.WriteHeader(a.code)
		io.WriteString(w, a.body)
		return
	}
	switch fault {
	case Reset:
		reset(w)
		return
	case Slow:
		time.Sleep(b.SlowFor)
	}
	if req.Method != http.MethodPost {
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	streams, order, err := decode(raw)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	code, body := r.push(streams, order)
	time.Sleep(b.AnswerDelay)
	switch {
	case fault == StoreThenReset:
		reset(w)
	case code == http.StatusNoContent:
		w.WriteHeader(code)
	default:
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// cannedAnswers are the faults answered without storing anything.
var cannedAnswers = map[Fault]struct {
	code int
	body string
}{
	RateLimited:   {http.StatusTooManyRequests, "Ingestion rate limit exceeded\n"},
	Unavailable:   {http.StatusServiceUnavailable, "ingester unavailable\n"},
	InternalError: {http.StatusInternalServerError, "rpc error\n"},
	Blocked:       {260, ""},
	Redirect:      {http.StatusMovedPermanently, ""},
	Unauthorized:  {http.StatusUnauthorized, "invalid credentials\n"},
	Unprocessable: {http.StatusUnprocessableEntity, "error at insertion: no streams\n"},
	TooManyLabels: {http.StatusBadRequest, "entry for stream '{a=\"b\"}' has 16 label names; limit 15\n"},
	ProxyBadRequest: {http.StatusBadRequest, "<html>\r\n<head><title>400 Bad Request</title></head>\r\n<body>\r\n" +
		"<center><h1>400 Bad Request</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"},
	ProxyTimeout: {http.StatusRequestTimeout, "<html>\r\n<head><title>408 Request Time-out</title></head>\r\n<body>\r\n" +
		"<center><h1>408 Request Time-out</h1></center>\r\n</body>\r\n</html>\r\n"},
	ClientClosed: {499, ""},
}

// push applies a request as Loki does: the tenant's rate limit (all or
// nothing), the distributor's per-entry validation (the valid entries go on,
// the rejects are listed), stream sharding by rate, then the ingester's
// too-far-behind check and dedupe per stream or shard.
func (r *Receiver) push(streams map[string][]entry, order []string) (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.limits.Now()
	if msg := r.rateLimit(streams, now); msg != "" {
		return http.StatusTooManyRequests, msg
	}
	var distributor []string
	var ingester string
	for _, labels := range order {
		named := lokiName(labels)
		if msg := r.labelProblem(labels, named); msg != "" {
			distributor = append(distributor, msg) // the whole stream is refused
			continue
		}
		valid, refused := r.validate(streams[labels], named, now)
		distributor = append(distributor, refused...)
		if len(valid) == 0 {
			continue
		}
		r.received += len(valid)
		// The ingester's answer is its last stream's (instance.Push sets
		// appendErr for every stream): an earlier stream's ignored
		// entries go unsaid when a later one is taken whole.
		ingester = r.ingest(labels, valid, r.shards(labels, valid, now))
	}
	switch {
	case ingester != "":
		// The ingester's error is returned in place of the distributor's
		// refusals (PushWithResolver: tracker.err before validationErr).
		return http.StatusBadRequest, ingester + "\n"
	case len(distributor) > 0:
		return http.StatusBadRequest, grouped(distributor) + "\n"
	}
	return http.StatusNoContent, ""
}

// grouped writes the distributor's refusals as Loki does (pkg/util/errors.go,
// GroupedErrors): one alone as it is; more than one on a single line, each
// distinct refusal once as "N errors like: <refusal>", joined by "; " (Loki
// in map order, here in the order first seen).
func grouped(refusals []string) string {
	if len(refusals) == 1 {
		return refusals[0]
	}
	count := map[string]int{}
	var order []string
	for _, r := range refusals {
		if count[r] == 0 {
			order = append(order, r)
		}
		count[r]++
	}
	parts := make([]string, len(order))
	for i, r := range order {
		parts[i] = fmt.Sprintf("%d errors like: %s", count[r], r)
	}
	return strings.Join(parts, "; ")
}

// rateLimit is the distributor's per-tenant token bucket over the whole
// push: the refusal's text, or "" when the push fits.
func (r *Receiver) rateLimit(streams map[string][]entry, now time.Time) string {
	if r.limits.TenantRate <= 0 {
		return ""
	}
	total, lines := 0, 0
	for _, es := range streams {
		for _, e := range es {
			total += len(e.line)
			lines++
		}
	}
	if !r.refilled.IsZero() {
		r.tokens = math.Min(float64(r.limits.TenantBurst), r.tokens+now.Sub(r.refilled).Seconds()*float64(r.limits.TenantRate))
	}
	r.refilled = now
	if float64(total) > r.tokens {
		return fmt.Sprintf("Ingestion rate limit exceeded for user fake (limit: %d bytes/sec) while attempting to ingest '%d' lines totaling '%d' bytes, reduce log volume or contact your Loki administrator to see if the limit can be increased\n", r.limits.TenantRate, lines, total)
	}
	r.tokens -= float64(total)
	return ""
}

// validate is the distributor's per-entry checks (size, too old, too new):
// the entries that pass, and one refusal for each that does not.
func (r *Receiver) validate(entries []entry, named string, now time.Time) (valid []entry, refused []string) {
	for _, e := range entries {
		t := time.Unix(0, e.ts).UTC()
		switch {
		case len(e.line) > r.limits.MaxLineBytes:
			refused = append(refused, fmt.Sprintf("max entry size '%d' bytes exceeded for stream '%s' while adding an entry with length '%d' bytes", r.limits.MaxLineBytes, named, len(e.line)))
		case t.Before(now.Add(-r.limits.MaxAge)):
			refused = append(refused, fmt.Sprintf("entry for stream '%s' has timestamp too old: %s, oldest acceptable timestamp is: %s", named, t.Format(time.RFC3339), now.Add(-r.limits.MaxAge).UTC().Format(time.RFC3339)))
		case t.After(now.Add(r.limits.FutureGrace)):
			refused = append(refused, fmt.Sprintf("entry for stream '%s' has timestamp too new: %s", named, t.Format(time.RFC3339)))
		default:
			valid = append(valid, e)
		}
	}
	return valid, refused
}

// ingest is the ingester, per stream (a shard is a stream of its own):
// entries too far behind the newest are ignored, at most 10 of them named,
// then the total; identical entries are dropped. It returns the last
// shard's ignored-entries error, as Loki does, or "" when that one took
// every entry.
func (r *Receiver) ingest(labels string, valid []entry, shards int) string {
	type ignoredIn struct {
		lines    []string
		n, total int
	}
	blocks := map[string]*ignoredIn{}
	var blockOrder []string
	for i, e := range valid {
		key := labels
		if shards > 1 {
			key = strings.TrimSuffix(labels, "}") + fmt.Sprintf(`, __stream_shard__="%d"}`, i%shards)
		}
		bl := blocks[key]
		if bl == nil {
			bl = &ignoredIn{}
			blocks[key] = bl
			blockOrder = append(blockOrder, key)
		}
		bl.total++
		st := r.streams[key]
		if st == nil {
			st = &streamState{entries: map[[2]string]bool{}}
			r.streams[key] = st
		}
		if floor := st.newest - int64(r.limits.MaxLag); e.ts < floor {
			if bl.n < maxNamedIgnored {
				t := time.Unix(0, e.ts).UTC()
				bl.lines = append(bl.lines, fmt.Sprintf("entry with timestamp %s ignored, reason: 'entry too far behind, entry timestamp is: %s, oldest acceptable timestamp is: %s',", t.String(), t.Format(time.RFC3339), time.Unix(0, floor).UTC().Format(time.RFC3339)))
			}
			bl.n++
			continue
		}
		st.newest = max(st.newest, e.ts)
		k := [2]string{fmt.Sprint(e.ts), e.line}
		if st.entries[k] {
			continue // Loki drops an identical entry
		}
		st.entries[k] = true
		if r.byLine[e.line] == nil {
			r.byLine[e.line] = map[stored]bool{}
		}
		r.byLine[e.line][stored{key, e.ts}] = true
	}
	// Each shard is a stream of the ingester's request, in shard order:
	// the last one's answer is the request's.
	msg := ""
	for _, key := range blockOrder {
		msg = ""
		if bl := blocks[key]; bl.n > 0 {
			msg = strings.Join(bl.lines, "\n") + fmt.Sprintf("\nuser 'fake', total ignored: %d out of %d for stream: %s", bl.n, bl.total, lokiName(key))
		}
	}
	return msg
}

// maxNamedIgnored is how many ignored entries Loki's ingester names in one
// answer per stream before it gives only the total.
const maxNamedIgnored = 10

// labelProblem is the distributor's answer to a stream over the label
// limits, in Loki's words; empty when the labels pass.
func (r *Receiver) labelProblem(labels, named string) string {
	m := loki.ParseLabels(labels)
	if r.limits.MaxLabelNames > 0 && len(m) > r.limits.MaxLabelNames {
		return fmt.Sprintf("entry for stream '%s' has %d label names; limit %d", named, len(m), r.limits.MaxLabelNames)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case r.limits.MaxLabelNameBytes > 0 && len(k) > r.limits.MaxLabelNameBytes:
			return fmt.Sprintf("stream '%s' has label name too long: '%s'", named, k)
		case r.limits.MaxLabelValueBytes > 0 && len(m[k]) > r.limits.MaxLabelValueBytes:
			return fmt.Sprintf("stream '%s' has label value too long: '%s'", named, m[k])
		}
	}
	return ""
}

// shards is how many shards Loki splits this push of a stream into, by the
// rule read in Loki v3.7.6's distributor: ceil((rate + pushBytes ×
// min(pushesPerSecond, 1)) / desired_rate), with the smoothed rates of the
// rate store; one while the stream has no rate yet (its first push).
func (r *Receiver) shards(labels string, es []entry, now time.Time) int {
	bytes := 0
	for _, e := range es {
		bytes += len(e.line)
	}
	st := r.rates[labels]
	if st == nil {
		st = &rate{}
		r.rates[labels] = st
	}
	st.advance(now)
	n := 1
	if st.known && r.limits.ShardRate > 0 {
		score := st.bps + float64(bytes)*math.Min(st.pps, 1)
		if peak := score / float64(r.limits.ShardRate); peak > r.peakScore {
			r.peakScore = peak
		}
		n = int(math.Ceil(score / float64(r.limits.ShardRate)))
	}
	st.bytes += bytes
	st.pushes++
	return max(1, min(n, len(es)))
}

// lokiName is the stream as Loki names it in errors: service_name added
// from job (discover_service_name), labels sorted.
func lokiName(labels string) string {
	m := loki.ParseLabels(labels)
	if _, ok := m["service_name"]; !ok && m["job"] != "" {
		m["service_name"] = m["job"]
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func reset(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0) // RST, not FIN
			}
			c.Close()
		}
	}
}

// decode reads a snappy-compressed logproto PushRequest: entries by stream,
// and the streams in request order.
func decode(raw []byte) (map[string][]entry, []string, error) {
	b, err := snappy.Decode(nil, raw)
	if err != nil {
		return nil, nil, err
	}
	out := map[string][]entry{}
	var order []string
	err = fields(b, func(num protowire.Number, v []byte) error {
		if num != 1 {
			return nil
		}
		var labels string
		var entries []entry
		err := fields(v, func(num protowire.Number, v []byte) error {
			switch num {
			case 1:
				labels = string(v)
			case 2:
				var e entry
				err := fields(v, func(num protowire.Number, v []byte) error {
					switch num {
					case 1:
						var sec, ns int64
						err := varints(v, func(num protowire.Number, x uint64) {
							if num == 1 {
								sec = int64(x)
							} else if num == 2 {
								ns = int64(x)
							}
						})
						e.ts = sec*1e9 + ns
						return err
					case 2:
						e.line = string(v)
					}
					return nil
				})
				entries = append(entries, e)
				return err
			}
			return nil
		})
		if _, seen := out[labels]; !seen {
			order = append(order, labels)
		}
		out[labels] = append(out[labels], entries...)
		return err
	})
	return out, order, err
}

// each calls fn with every field of a message: its number, type and
// encoded value.
func each(b []byte, fn func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return protowire.ParseError(m)
		}
		if err := fn(num, typ, b[:m]); err != nil {
			return err
		}
		b = b[m:]
	}
	return nil
}

// fields calls fn for each length-delimited field of a message.
func fields(b []byte, fn func(protowire.Number, []byte) error) error {
	return each(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		v, _ = protowire.ConsumeBytes(v)
		return fn(num, v)
	})
}

// varints calls fn for each varint field of a message.
func varints(b []byte, fn func(protowire.Number, uint64)) error {
	return each(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ == protowire.VarintType {
			x, _ := protowire.ConsumeVarint(v)
			fn(num, x)
		}
		return nil
	})
}
