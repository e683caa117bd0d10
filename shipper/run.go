package shipper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/winobs/winobs/shipper/shipconfig"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/winobs/winobs/shipper/checkpoint"
	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/loki"
	"github.com/winobs/winobs/shipper/pace"
)

// record is one event read from a source, with the checkpoint just past it.
// A record without XML only moves the position (an event that was skipped
// with a counted reason).
type record struct {
	channel string
	xml     []byte
	texts   *eventxml.Texts
	cp      checkpoint.Checkpoint
	drop    string // reason, for a skipped event
	size    int64  // bytes charged to the in-flight budget
}

// source reads one channel. run returns nil when a finite source is done.
type source interface {
	channel() string
	run(ctx context.Context, out chan<- record) error
}

// Shipper wires sources, formatting, batching, pushing and checkpoints.
type Shipper struct {
	cfg     *shipconfig.Config
	log     *slog.Logger
	store   *checkpoint.Store
	client  *loki.Client
	m       *metrics
	budget  *budget
	sources []source
	lookups eventxml.Lookups
	now     func() time.Time
	ready   atomic.Bool
	labels  map[[2]string]string // (channel, computer) -> stream labels
	// last is the last event formatted per channel (batcher only), so a
	// checkpoint after a skipped record still names the last real event.
	last map[string]checkpoint.Checkpoint
	// newest is the newest timestamp formatted per stream (batcher only),
	// to keep each stream within Loki's too-far-behind window.
	newest map[string]time.Time
	pacer  *pace.Pacer
	// drops counts, per channel, the entries of the batch in flight that
	// Loki would not take (written by the client's Dropped hook during Send).
	drops map[string]int
}

// New builds a shipper from a validated config.
func New(cfg *shipconfig.Config, log *slog.Logger) (*Shipper, error) {
	store, err := checkpoint.Open(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	client, err := loki.NewClient(loki.Config{
		URL: cfg.Loki.URL, Tenant: cfg.Loki.Tenant, Username: cfg.Loki.Username, PasswordFile: cfg.Loki.PasswordFile,
		BearerTokenFile: cfg.Loki.BearerTokenFile, CAFile: cfg.Loki.CAFile,
		Timeout: time.Duration(cfg.Loki.Timeout.Model()), UserAgent: "winobs-eventlog-shipper",
		MinBackoff: time.Duration(cfg.Loki.MinBackoff.Model()), MaxBackoff: time.Duration(cfg.Loki.MaxBackoff.Model()),
		Log: log,
	})
	if err != nil {
		return nil, err
	}
	var channels []string
	for _, d := range cfg.Dumps {
		channels = append(channels, d.Channel)
	}
	for _, ch := range cfg.Channels {
		channels = append(channels, ch.Name)
	}
	s := &Shipper{cfg: cfg, log: log, store: store, client: client, m: newMetrics(channels),
		budget: newBudget(int64(cfg.MaxInFlightBytes)), now: time.Now, labels: map[[2]string]string{},
		last: map[string]checkpoint.Checkpoint{}, newest: map[string]time.Time{}, drops: map[string]int{},
		pacer: pace.New(cfg.Limits.StreamBytesPerSecond, cfg.Limits.BytesPerSecond)}
	client.Dropped = func(stream, reason string, n int) {
		ch := loki.ParseLabels(stream)["channel"]
		s.drops[ch] += n
		s.m.dropped.WithLabelValues(ch, reason).Add(float64(n))
	}
	client.Observe = func(status int, took time.Duration, retry bool) {
		s.m.pushDuration.Observe(took.Seconds())
		if status != 204 {
			s.m.pushErrors.WithLabelValues(strconv.Itoa(status)).Inc()
		}
		if retry {
			s.m.retries.Inc()
		}
	}
	for _, d := range cfg.Dumps {
		s.sources = append(s.sources, &dumpSource{d: d, s: s})
	}
	for _, ch := range cfg.Channels {
		if newLiveSource == nil {
			return nil, fmt.Errorf("channel %s: live event log subscriptions need Windows (ship wevtutil dumps with the dumps setting)", ch.Name)
		}
		src, err := newLiveSource(s, ch)
		if err != nil {
			return nil, err
		}
		s.sources = append(s.sources, src)
	}
	return s, nil
}

// newLiveSource subscribes to a channel; set on Windows only.
var newLiveSource func(s *Shipper, ch shipconfig.Channel) (source, error)

// Run ships until every finite source is delivered, or until ctx is
// cancelled: then reading stops, what was read is pushed within the shutdown
// grace period, and checkpoints are saved. Events not delivered by then are
// read again on the next start.
func (s *Shipper) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.Listen, err)
	}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	for _, src := range s.sources {
		if cp, ok := s.store.Peek(src.channel()); ok {
			s.last[src.channel()] = cp
		}
	}
	records := make(chan record, 256)
	batches := make(chan *batch, 1)
	errs := make(chan error, len(s.sources))
	var wg sync.WaitGroup
	for _, src := range s.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := src.run(ctx, records); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Error("source stopped", "channel", src.channel(), "error", err)
				errs <- fmt.Errorf("channel %s: %w", src.channel(), err)
			}
		}()
	}
	go func() { wg.Wait(); close(records) }()
	go s.batcher(records, batches)
	if s.cfg.Textfile != "" {
		stopTextfile := s.writeTextfile()
		defer stopTextfile()
	}
	s.ready.Store(true)

	// Pushes outlive ctx by the grace period, so a shutdown delivers what it read.
	sendCtx, cancelSend := context.WithCancel(context.Background())
	defer cancelSend()
	go func() {
		<-ctx.Done()
		time.AfterFunc(time.Duration(s.cfg.ShutdownGrace.Model()), cancelSend)
	}()
	for b := range batches {
		if err := s.pacer.Wait(sendCtx, b.streamBytes()); err != nil {
			s.log.Warn("shutdown grace period over before delivery; undelivered events will be read again", "events", b.events)
			return nil
		}
		clear(s.drops)
		if err := s.client.Send(sendCtx, b.streams); err != nil {
			s.log.Warn("shutdown grace period over before delivery; undelivered events will be read again", "events", b.events)
			return nil
		}
		if err := s.ack(b); err != nil {
			return err
		}
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// ack records a delivered batch: every earlier batch was delivered before it
// (one batch is in flight at a time), so its positions are contiguous.
func (s *Shipper) ack(b *batch) error {
	for ch, cp := range b.positions {
		if err := s.store.Save(cp); err != nil {
			// Delivered but not recorded: a restart resends, Loki deduplicates.
			return fmt.Errorf("saving checkpoint of %s: %w", ch, err)
		}
		s.m.cpTime.WithLabelValues(ch).Set(float64(s.now().Unix()))
		if cp.RecordID != 0 {
			s.m.cpRecord.WithLabelValues(ch).Set(float64(cp.RecordID))
		}
	}
	// Every event ends in one counter: sent, or dropped with its reason.
	for ch, n := range b.counts {
		s.m.sent.WithLabelValues(ch).Add(float64(n - s.drops[ch]))
		s.m.pending.WithLabelValues(ch).Sub(float64(n))
	}
	s.m.bytesSent.Add(float64(b.bytes))
	s.budget.release(b.charge)
	s.m.inFlight.Set(float64(s.budget.inUse()))
	return nil
}

// batch is one push request and what delivering it acknowledges.
type batch struct {
	streams   []loki.Stream
	index     map[string]int
	positions map[string]checkpoint.Checkpoint
	counts    map[string]int
	events    int
	bytes     int
	charge    int64
}

// streamBytes is the line bytes per stream, what Loki's rates count.
func (b *batch) streamBytes() map[string]int {
	out := make(map[string]int, len(b.streams))
	for _, st := range b.streams {
		for _, e := range st.Entries {
			out[st.Labels] += len(e.Line)
		}
	}
	return out
}

func newBatch() *batch {
	return &batch{index: map[string]int{}, positions: map[string]checkpoint.Checkpoint{}, counts: map[string]int{}}
}

// batcher formats records into batches of at most batch.maxBytes, flushed
// at the latest batch.maxWait after their first record.
func (s *Shipper) batcher(records <-chan record, out chan<- *batch) {
	defer close(out)
	maxWait := time.Duration(s.cfg.Batch.MaxWait.Model())
	timer := time.NewTimer(maxWait)
	timer.Stop()
	b := newBatch()
	flush := func() {
		if len(b.positions) > 0 {
			out <- b
			b = newBatch()
		}
		timer.Stop()
	}
	for {
		select {
		case r, ok := <-records:
			if !ok {
				flush()
				return
			}
			if len(b.positions) == 0 {
				timer.Reset(maxWait)
			}
			s.add(b, r)
			// Lines or the XML they came from: a batch never holds more than
			// its share of the in-flight budget.
			if b.bytes >= s.cfg.Batch.MaxBytes || b.charge >= int64(s.cfg.Batch.MaxBytes) {
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}

// add formats one record into the batch.
func (s *Shipper) add(b *batch, r record) {
	cp := r.cp
	prev := s.last[r.channel]
	cp.RecordID, cp.TimeCreated = prev.RecordID, prev.TimeCreated
	b.positions[r.channel] = cp
	b.charge += r.size
	if r.xml == nil {
		if r.drop != "" {
			s.m.dropped.WithLabelValues(r.channel, r.drop).Inc()
		}
		return
	}
	s.m.read.WithLabelValues(r.channel).Inc()
	e, err := eventxml.Parse(r.xml)
	if err != nil {
		s.m.renderErrors.WithLabelValues(r.channel).Inc()
		s.m.dropped.WithLabelValues(r.channel, "malformed_xml").Inc()
		s.log.Warn("skipping an event that is not well-formed XML", "channel", r.channel, "offset", r.cp.Offset, "error", err)
		return
	}
	ts := s.now()
	created, terr := e.Timestamp()
	if maxAge := time.Duration(s.cfg.MaxAge.Model()); maxAge > 0 && terr == nil && created.Before(ts.Add(-maxAge)) {
		s.m.dropped.WithLabelValues(r.channel, "older_than_max_age").Inc()
		return
	}
	if s.cfg.Timestamp == shipconfig.EventTime && terr == nil {
		ts = created
	}
	line := e.AppendLine(nil, r.texts, s.lookups)
	if max := s.cfg.Limits.MaxLineBytes; len(line) > max {
		line = loki.Truncate(line, max)
		s.m.truncated.WithLabelValues(r.channel).Inc()
	}
	labels := s.streamLabels(r.channel, e.Computer())
	ts, ok := s.withinLokiWindow(r.channel, labels, ts)
	if !ok {
		s.m.dropped.WithLabelValues(r.channel, "too_old").Inc()
		return
	}
	i, ok := b.index[labels]
	if !ok {
		i = len(b.streams)
		b.index[labels] = i
		b.streams = append(b.streams, loki.Stream{Labels: labels})
	}
	b.streams[i].Entries = append(b.streams[i].Entries, loki.Entry{Time: ts, Line: line})
	b.counts[r.channel]++
	b.events++
	b.bytes += len(line)
	if e.RecordID() != 0 {
		cp.RecordID, cp.TimeCreated = e.RecordID(), e.System.TimeCreated.SystemTime
		b.positions[r.channel] = cp
		s.last[r.channel] = cp
	}
	s.m.pending.WithLabelValues(r.channel).Inc()
}

// withinLokiWindow returns the timestamp to push an entry at so that Loki
// takes it: one older than limits.maxEntryAge is re-stamped to that age (or
// refused, with tooOld: drop), one further behind its stream's newest entry
// than limits.maxStreamLag is moved up to that lag. Both are counted.
func (s *Shipper) withinLokiWindow(channel, stream string, ts time.Time) (time.Time, bool) {
	lim := s.cfg.Limits
	if cutoff := s.now().Add(-time.Duration(lim.MaxEntryAge.Model())); ts.Before(cutoff) {
		if lim.TooOld == shipconfig.Drop {
			return ts, false
		}
		ts = cutoff
		s.m.restamped.WithLabelValues(channel, "too_old").Inc()
	}
	newest, ok := s.newest[stream]
	if !ok {
		// Loki holds at least the last acknowledged event of the channel.
		if t, err := time.Parse(time.RFC3339Nano, s.last[channel].TimeCreated); err == nil {
			newest = t
		}
	}
	if floor := newest.Add(-time.Duration(lim.MaxStreamLag.Model())); ts.Before(floor) {
		ts = floor
		s.m.restamped.WithLabelValues(channel, "too_far_behind").Inc()
	}
	if ts.After(newest) {
		newest = ts
	}
	s.newest[stream] = newest
	return ts, true
}

// streamLabels are the static labels plus the event's channel and computer,
// as Alloy sets them (each only when not empty).
func (s *Shipper) streamLabels(channel, computer string) string {
	key := [2]string{channel, computer}
	if l, ok := s.labels[key]; ok {
		return l
	}
	m := map[string]string{}
	for k, v := range s.cfg.Labels {
		m[k] = v
	}
	if channel != "" {
		m["channel"] = channel
	}
	if computer != "" {
		m["computer"] = computer
	}
	l := loki.FormatLabels(m)
	s.labels[key] = l
	return l
}

// textfileInterval is how often the metrics file is rewritten.
const textfileInterval = 15 * time.Second

// writeTextfile keeps the metrics file current (written to a temporary file
// and renamed, so the exporter never reads half of it); the returned stop
// writes it a last time.
func (s *Shipper) writeTextfile() (stop func()) {
	write := func() {
		if err := prometheus.WriteToTextfile(s.cfg.Textfile, s.m.reg); err != nil {
			s.log.Warn("writing the metrics textfile", "path", s.cfg.Textfile, "error", err)
		}
	}
	write()
	t := time.NewTicker(textfileInterval)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-t.C:
				write()
			case <-done:
				return
			}
		}
	}()
	return func() { t.Stop(); close(done); write() }
}

// notReadyAfter is how long pushes may fail before /readyz says so: one
// 429 or a restarting Loki should not flap readiness.
const notReadyAfter = 10 * time.Second

func (s *Shipper) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(prometheus.Gatherers{s.m.reg, s.m.runtime}, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		if since := s.client.FailingSince(); !since.IsZero() && s.now().Sub(since) > notReadyAfter {
			http.Error(w, "cannot deliver to Loki since "+since.UTC().Format(time.RFC3339), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	return mux
}

// budget bounds the bytes read but not yet delivered: sources wait when it
// is spent, so a slow or absent Loki holds reading back instead of memory
// growing.
type budget struct {
	mu   sync.Mutex
	cond *sync.Cond
	used int64
	max  int64
}

func newBudget(max int64) *budget {
	b := &budget{max: max}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire waits until n bytes fit (one item larger than the budget is let
// through alone, so it cannot block forever).
func (b *budget) acquire(ctx context.Context, n int64) error {
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used > 0 && b.used+n > b.max {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b.cond.Wait()
	}
	b.used += n
	return nil
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
