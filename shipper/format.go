package shipper

import (
	"log/slog"
	"time"

	"github.com/winobs/winobs/shipper/checkpoint"
	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/loki"
	"github.com/winobs/winobs/shipper/shipconfig"
)

// formatter turns records into Loki entries: Alloy's event line, Alloy's
// stream labels, and a timestamp Loki will take. Every record ends in an
// entry or a counted drop.
type formatter struct {
	cfg     *shipconfig.Config
	lookups eventxml.Lookups
	m       *metrics
	log     *slog.Logger
	now     func() time.Time
	labels  map[[2]string]string // (channel, computer) -> stream labels
	// last is the last event formatted per channel, so a checkpoint after
	// a skipped record still names the last real event.
	last map[string]checkpoint.Checkpoint
	// newest is the newest timestamp formatted per stream, to keep each
	// stream within Loki's too-far-behind window.
	newest map[string]time.Time
}

func newFormatter(cfg *shipconfig.Config, m *metrics, log *slog.Logger) *formatter {
	return &formatter{cfg: cfg, m: m, log: log, now: time.Now, labels: map[[2]string]string{},
		last: map[string]checkpoint.Checkpoint{}, newest: map[string]time.Time{}}
}

// resume starts a channel from its last delivered event.
func (f *formatter) resume(cp checkpoint.Checkpoint) { f.last[cp.Channel] = cp }

// add formats one record into the batch and moves the batch's position for
// the record's channel past it.
func (f *formatter) add(b *batch, r record) {
	cp := r.cp
	prev := f.last[r.channel]
	cp.RecordID, cp.TimeCreated = prev.RecordID, prev.TimeCreated
	b.positions[r.channel] = cp
	b.charge += r.size
	if r.xml == nil {
		if r.drop != "" {
			f.m.dropped.WithLabelValues(r.channel, r.drop).Inc()
		}
		return
	}
	f.m.read.WithLabelValues(r.channel).Inc()
	e, err := eventxml.Parse(r.xml)
	if err != nil {
		f.m.renderErrors.WithLabelValues(r.channel).Inc()
		f.m.dropped.WithLabelValues(r.channel, "malformed_xml").Inc()
		f.log.Warn("skipping an event that is not well-formed XML", "channel", r.channel, "offset", r.cp.Offset, "error", err)
		return
	}
	ts := f.now()
	created, terr := e.Timestamp()
	if maxAge := time.Duration(f.cfg.MaxAge.Model()); maxAge > 0 && terr == nil && created.Before(ts.Add(-maxAge)) {
		f.m.dropped.WithLabelValues(r.channel, "older_than_max_age").Inc()
		return
	}
	if f.cfg.Timestamp == shipconfig.EventTime && terr == nil {
		ts = created
	}
	line := e.AppendLine(nil, r.texts, f.lookups)
	if max := f.cfg.Limits.MaxLineBytes; len(line) > max {
		line = loki.Truncate(line, max)
		f.m.truncated.WithLabelValues(r.channel).Inc()
	}
	labels := f.streamLabels(r.channel, e.Computer())
	ts, ok := f.withinLokiWindow(r.channel, labels, ts)
	if !ok {
		f.m.dropped.WithLabelValues(r.channel, "too_old").Inc()
		return
	}
	b.append(r.channel, labels, loki.Entry{Time: ts, Line: line})
	if e.RecordID() != 0 {
		cp.RecordID, cp.TimeCreated = e.RecordID(), e.System.TimeCreated.SystemTime
		b.positions[r.channel] = cp
		f.last[r.channel] = cp
	}
	f.m.pending.WithLabelValues(r.channel).Inc()
}

// withinLokiWindow returns the timestamp to push an entry at so that Loki
// takes it: one older than limits.maxEntryAge is re-stamped to that age (or
// refused, with tooOld: drop), one further behind its stream's newest entry
// than limits.maxStreamLag is moved up to that lag. Both are counted.
func (f *formatter) withinLokiWindow(channel, stream string, ts time.Time) (time.Time, bool) {
	lim := f.cfg.Limits
	if cutoff := f.now().Add(-time.Duration(lim.MaxEntryAge.Model())); ts.Before(cutoff) {
		if lim.TooOld == shipconfig.Drop {
			return ts, false
		}
		ts = cutoff
		f.m.restamped.WithLabelValues(channel, "too_old").Inc()
	}
	newest, ok := f.newest[stream]
	if !ok {
		// Loki holds at least the last acknowledged event of the channel.
		if t, err := time.Parse(time.RFC3339Nano, f.last[channel].TimeCreated); err == nil {
			newest = t
		}
	}
	if floor := newest.Add(-time.Duration(lim.MaxStreamLag.Model())); ts.Before(floor) {
		ts = floor
		f.m.restamped.WithLabelValues(channel, "too_far_behind").Inc()
	}
	if ts.After(newest) {
		newest = ts
	}
	f.newest[stream] = newest
	return ts, true
}

// streamLabels are the static labels plus the event's channel and computer,
// as Alloy sets them (each only when not empty).
func (f *formatter) streamLabels(channel, computer string) string {
	key := [2]string{channel, computer}
	if l, ok := f.labels[key]; ok {
		return l
	}
	m := map[string]string{}
	for k, v := range f.cfg.Labels {
		m[k] = v
	}
	if channel != "" {
		m["channel"] = channel
	}
	if computer != "" {
		m["computer"] = computer
	}
	l := loki.FormatLabels(m)
	f.labels[key] = l
	return l
}
