// Package shipper is the eventlog-shipper: it reads Windows event log
// channels (or wevtutil dumps), formats each event as Grafana Alloy's
// windowsevent line, pushes batches to Loki within Loki's limits, and moves
// a channel's checkpoint only past what Loki stored or refused with a
// counted reason. cmd/eventlog-shipper wires it; the stages are its
// subpackages (source, eventxml, loki, checkpoint, pace).
package shipper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/lanes"
	"github.com/winobs/winobs/shipper/loki"
	"github.com/winobs/winobs/shipper/pace"
	"github.com/winobs/winobs/shipper/ratelog"
	"github.com/winobs/winobs/shipper/shipconfig"
	"github.com/winobs/winobs/shipper/state"
)

// Shipper wires the stages of ARCHITECTURE.md's shipper line: sources (dump
// files, live channels) → formatter and batcher → the Loki client → the
// acker, which owns the checkpoints. Each stage sees only what it needs.
type Shipper struct {
	cfg     *shipconfig.Config
	log     *slog.Logger
	acker   *acker
	client  *loki.Client
	m       *metrics
	budget  *budget
	sources []source
	format  *formatter
	pacer   *pace.Pacer
	now     func() time.Time
	ready   atomic.Bool
	status  *sourceStatus
}

// New builds a shipper from a validated config.
func New(cfg *shipconfig.Config, log *slog.Logger) (*Shipper, error) {
	store, err := state.Open(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if cfg.Textfile != "" {
		// The exporter's textfile directory may not exist yet on a new
		// node; the exporter reads it as SYSTEM, and no one else may
		// write metrics into it under the shipper's name.
		if err := state.SecureDir(filepath.Dir(cfg.Textfile)); err != nil {
			return nil, fmt.Errorf("textfile directory: %w", err)
		}
	}
	client, err := loki.NewClient(loki.Config{
		Loki: cfg.Loki.Endpoint, Timeout: time.Duration(cfg.Loki.Timeout.Model()), UserAgent: "winobs-eventlog-shipper",
		MinBackoff: time.Duration(cfg.Loki.MinBackoff.Model()), MaxBackoff: time.Duration(cfg.Loki.MaxBackoff.Model()),
		Log: log,
	})
	if err != nil {
		return nil, err
	}
	var sources []source
	var lookups eventxml.Lookups
	for _, d := range cfg.Dumps {
		sources = append(sources, &dumpSource{d: d, maxEventBytes: cfg.MaxEventBytes})
	}
	for _, ch := range cfg.Channels {
		if newLiveSource == nil {
			return nil, fmt.Errorf("channel %s: live event log subscriptions need Windows (ship wevtutil dumps with the dumps setting)", ch.Name)
		}
		src, lk, err := newLiveSource(cfg, ch)
		if err != nil {
			return nil, err
		}
		sources, lookups = append(sources, src), lk
	}
	var channels []string
	for _, src := range sources {
		channels = append(channels, src.channel())
	}
	m := newMetrics(channels)
	store.OnUntrusted(func(msg string) {
		log.Error("STATE FILE IGNORED: the channel starts as if it had none", "problem", msg)
		m.stateIgnored.Inc()
	})
	bud := newBudget(int64(cfg.MaxInFlightBytes))
	ack := newAcker(store, cfg.OnCorruptCheckpoint, bud, m, log)
	s := &Shipper{cfg: cfg, log: log, client: client, m: m, budget: bud, sources: sources, now: time.Now, acker: ack,
		format: newFormatter(cfg, m, log, newLanes(cfg, ack, m, log)),
		pacer:  pace.New(cfg.Limits.StreamBytesPerSecond, cfg.Limits.BytesPerSecond), status: newSourceStatus(m, time.Now)}
	s.format.lookups = lookups
	client.Observe = func(status int, reason string, took time.Duration, retry bool) {
		s.m.pushDuration.Observe(took.Seconds())
		if !loki.Stored(status) {
			s.m.pushErrors.WithLabelValues(strconv.Itoa(status), reason).Inc()
		}
		if retry {
			s.m.retries.Inc()
		}
	}
	return s, nil
}

// newLanes is the controller that splits a busy stream over lanes, its
// plans saved in the state directory beside the checkpoints.
func newLanes(cfg *shipconfig.Config, ack *acker, m *metrics, log *slog.Logger) *lanes.Controller {
	logs := ratelog.New(log, time.Minute)
	return &lanes.Controller{PerLane: float64(cfg.Limits.StreamBytesPerSecond), Max: cfg.Limits.Lanes(), Now: time.Now,
		Save: ack.savePlans,
		Acked: func(ch string) uint64 {
			cp, _ := ack.acked(ch)
			return cp.RecordID
		},
		Changed: func(ch, stream string, k, most int) {
			m.lanes.WithLabelValues(ch).Set(float64(most))
			log.Info("lanes changed", "channel", ch, "computer", stream, "lanes", k)
		},
		Failed: func(ch string, err error) {
			logs.Warn("lanes_not_saved", "cannot save the channel's lane plan; its lanes stay as they are", "channel", ch, "error", err)
		}}
}

// newLiveSource subscribes to a channel and returns the lookups that fill
// the line's process and user names; set on Windows only.
var newLiveSource func(cfg *shipconfig.Config, ch shipconfig.Channel) (source, eventxml.Lookups, error)

// Run ships until every finite source is delivered, or until ctx is
// cancelled: then reading stops, what was read is pushed within the shutdown
// grace period, and checkpoints are saved. Events not delivered by then are
// read again on the next start.
func (s *Shipper) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.Listen, err)
	}
	srv := newMetricsServer(s.handler())
	go srv.Serve(netutil.LimitListener(ln, maxConnections))
	defer srv.Close()

	s.resume()
	records, errs := s.startSources(ctx)
	batches := make(chan *batch, 1)
	bt := &batcher{format: s.format, maxBytes: s.cfg.Batch.MaxBytes, maxWait: time.Duration(s.cfg.Batch.MaxWait.Model())}
	go bt.run(records, batches)
	if s.cfg.Textfile != "" {
		stopTextfile := s.writeTextfile()
		defer stopTextfile()
	}
	s.ready.Store(true)
	stopHealth := s.writeHealth()
	defer stopHealth()

	if !s.deliver(ctx, batches) {
		return nil // the grace period ended: what was not delivered is read again
	}
	select {
	case err := <-errs:
		return err
	default:
	}
	s.acker.flush()
	if u := s.acker.saveFailure(); u != nil {
		return fmt.Errorf("everything was delivered, but checkpoints could not be saved since %s (%w): the next start resends from the last saved position", u.since.UTC().Format(time.RFC3339), u.err)
	}
	return nil
}

// resume gives the formatter each channel's last acknowledged position,
// what was in flight at the last stop, so a replay is recognised, and the
// lane plan those events were pushed under, so a replay lands where they
// did.
func (s *Shipper) resume() {
	for _, src := range s.sources {
		ch := src.channel()
		var floor uint64
		if cp, ok := s.acker.acked(ch); ok {
			s.format.resume(cp)
			floor = cp.RecordID
		}
		if sent, ok := s.acker.sent(ch); ok {
			s.format.replaying(sent)
			floor = max(floor, sent.RecordID)
		}
		plan, note, err := s.acker.plans(ch)
		if note != "" || err != nil {
			s.log.Error("LANE PLAN PROBLEM: replayed events may land in another stream and show twice in Loki", "channel", ch, "note", note, "error", err)
		}
		s.format.lanes.Resume(ch, plan, floor)
		s.m.lanes.WithLabelValues(ch).Set(float64(s.format.lanes.Lanes(ch)))
	}
}

// startSources runs every source until ctx ends. Records flow through the
// in-flight budget (the back-pressure on reading); the channel closes when
// the last source stops; a source's failure arrives on errs.
func (s *Shipper) startSources(ctx context.Context) (<-chan record, <-chan error) {
	records := make(chan record, 256)
	errs := make(chan error, len(s.sources))
	env := sourceEnv{positions: s.acker, m: s.m, log: s.log, logs: ratelog.New(s.log, time.Minute), status: s.status, emit: func(ctx context.Context, r record) error {
		if err := s.budget.acquire(ctx, r.size); err != nil {
			return err
		}
		select {
		case records <- r:
			s.m.inFlight.Set(float64(s.budget.inUse()))
			return nil
		case <-ctx.Done():
			s.budget.release(r.size)
			return ctx.Err()
		}
	}}
	var wg sync.WaitGroup
	for _, src := range s.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := src.run(ctx, env); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Error("source stopped", "channel", src.channel(), "error", err)
				s.status.setDown(src.channel(), "stopped: "+err.Error())
				errs <- fmt.Errorf("channel %s: %w", src.channel(), err)
			}
		}()
	}
	go func() { wg.Wait(); close(records) }()
	return records, errs
}

// deliver paces and pushes every batch and acknowledges what Loki stored.
// Pushes outlive ctx by the grace period, so a shutdown delivers what it
// read; it reports false when the grace period ended first.
func (s *Shipper) deliver(ctx context.Context, batches <-chan *batch) bool {
	sendCtx, cancelSend := context.WithCancel(context.Background())
	defer cancelSend()
	stop := context.AfterFunc(ctx, func() {
		time.AfterFunc(time.Duration(s.cfg.ShutdownGrace.Model()), cancelSend)
	})
	defer stop()
	for b := range batches {
		var rep loki.Report
		err := s.pacer.Wait(sendCtx, b.streamBytes())
		if err == nil {
			for ch, n := range b.pin() { // before the sent mark records the pin
				s.m.restamped.WithLabelValues(ch, contract.RestampTooFarBehind).Add(float64(n))
			}
			s.acker.sending(b)
			rep, err = s.client.Send(sendCtx, b.streams)
		}
		if err != nil { // only the end of the grace period stops pacing and sending
			s.log.Warn("shutdown grace period over before delivery; undelivered events will be read again", "events", b.events)
			return false
		}
		s.format.learn(rep.Floors)
		s.acker.ack(b, rep)
	}
	return true
}

// maxConnections bounds the metrics listener's connections: any local
// process can connect to it, and the shipper runs with a small memory limit.
const maxConnections = 32

// newMetricsServer serves the probes and /metrics with every timeout set, so
// idle or slow connections cannot pile up (9,000 idle keep-alives once took
// the shipper from 12 to 183 MB).
func newMetricsServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10}
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
	stopWriting := every(textfileInterval, write)
	return func() { stopWriting(); write() }
}

// every runs f now and then every d until the returned stop, which waits
// for a run in progress to end.
func every(d time.Duration, f func()) (stop func()) {
	f()
	t := time.NewTicker(d)
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-t.C:
				f()
			case <-done:
				return
			}
		}
	}()
	return func() { t.Stop(); close(done); <-ended }
}

// notReadyAfter is how long pushes may fail before /readyz says so: one
// 429 or a restarting Loki should not flap readiness.
const notReadyAfter = 10 * time.Second

func (s *Shipper) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(prometheus.Gatherers{s.m.reg, s.m.runtime}, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if h := s.health(); !h.Ready {
			http.Error(w, h.Reason, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	return mux
}
