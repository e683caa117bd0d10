package shipper

import (
	"log/slog"
	"maps"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/eventfilter"
	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/lanes"
	"github.com/winobs/winobs/shipper/loki"
	"github.com/winobs/winobs/shipper/ratelog"
	"github.com/winobs/winobs/shipper/shipconfig"
	"github.com/winobs/winobs/shipper/state"
)

// Loki's label limits (max_label_name_length, max_label_value_length): a
// stream over them is refused whole, so a longer value is cut.
const maxLabelValueBytes = contract.LokiMaxLabelValueBytes

// maxStreams bounds what the formatter remembers per stream (labels, the
// newest time, the oldest time Loki takes): a node writing events with ever
// new Computer values must not grow the shipper without end. Forgetting a
// stream only costs a lookup or an estimate.
const maxStreams = 1024

// formatter turns records into Loki entries: Alloy's event line, Alloy's
// stream labels, and a timestamp Loki will take. Every record ends in an
// entry or a counted drop.
type formatter struct {
	cfg     *shipconfig.Config
	lookups eventxml.Lookups
	m       *metrics
	log     *ratelog.Limiter
	now     func() time.Time
	labels  map[streamKey]string
	meta    map[string][]loki.Label
	// queries are the dumps' event queries, by channel: a dump is filtered
	// here as Windows filters a subscription.
	queries map[string]*eventfilter.Query
	// lanes picks each event's lane among its stream's.
	lanes *lanes.Controller
	// last is the last event formatted per channel, so a checkpoint after
	// a skipped record still names the last real event.
	last map[string]state.Checkpoint
	// sent is, per channel, how far the last push before a restart reached.
	sent map[string]sentMark
	// newest is the newest timestamp formatted per stream, to keep each
	// stream within Loki's too-far-behind window.
	newest map[string]time.Time
	floors floorBook
}

// floorBook holds, per stream, the oldest time Loki said the stream takes:
// learned from the pusher's reports (rarely), read for every event by the
// formatter. The map is never changed once published: learn copies it, so
// a read is one atomic load.
type floorBook struct {
	m atomic.Pointer[map[string]floor]
}

type floor struct{ at, learned time.Time }

// streamKey is what a stream's labels are made of besides the static ones.
type streamKey struct {
	// channel is set only where the channel is a stream label
	// (StructuredMetadata false).
	class, channel, computer string
	lane                     int
}

func newFormatter(cfg *shipconfig.Config, m *metrics, log *slog.Logger, lc *lanes.Controller) *formatter {
	f := &formatter{cfg: cfg, m: m, log: ratelog.New(log, time.Minute), now: time.Now, labels: map[streamKey]string{}, meta: map[string][]loki.Label{},
		last: map[string]state.Checkpoint{}, newest: map[string]time.Time{}, sent: map[string]sentMark{}, lanes: lc,
		queries: map[string]*eventfilter.Query{}}
	for _, d := range cfg.Dumps {
		if q, err := eventfilter.Parse(d.Query); d.Query != "" && err == nil { // Validate refused any other
			f.queries[d.Channel] = q
		}
	}
	return f
}

// resume starts a channel from its last delivered event.
func (f *formatter) resume(cp state.Checkpoint) { f.last[cp.Channel] = cp }

// replaying marks the events of a channel up to sent, the position the
// last push before a restart reached, as possibly stored already.
func (f *formatter) replaying(sent state.Checkpoint) {
	upTo, _ := time.Parse(time.RFC3339Nano, sent.TimeCreated) // once, not per event
	m := sentMark{Checkpoint: sent, upTo: upTo}
	for _, p := range sent.Pins {
		at, _ := time.Parse(time.RFC3339Nano, p.At) // empty: the push moved none
		m.pins = append(m.pins, pinAt{p, at})
	}
	f.sent[sent.Channel] = m
}

// sentMark is a channel's sent mark, the newest event time it held, and
// the timestamps its pushes gave (state.Pin).
type sentMark struct {
	state.Checkpoint
	upTo time.Time
	pins []pinAt
}

type pinAt struct {
	state.Pin
	at time.Time
}

// pinned is the timestamp the push that may have stored record r (of a
// replay) gave it, so the replay stamps it the same: its event time, moved
// up to that push's pin. false: no pin covers it (a mark of an older
// version), and it is stamped as a new entry.
func (f *formatter) pinned(r record, id uint64, created time.Time) (time.Time, bool) {
	sent := f.sent[r.channel]
	for _, p := range sent.pins {
		covers := id != 0 && id <= p.RecordID
		if sent.Source != "" || r.cp.Source != "" {
			covers = r.cp.Offset <= p.Offset
		}
		if covers {
			if created.Before(p.at) {
				return p.at, true
			}
			return created, true
		}
	}
	return time.Time{}, false
}

// maybeStored: the record was in a push of an earlier run (at or before the
// channel's sent mark, in the same dump file or the same live channel);
// upTo is the newest event time that push held.
func (f *formatter) maybeStored(r record, id uint64) (maybe bool, upTo time.Time) {
	sent, ok := f.sent[r.channel]
	if !ok {
		return false, time.Time{}
	}
	if sent.Source != "" || r.cp.Source != "" {
		maybe = sent.Source == r.cp.Source && sent.Fingerprint == r.cp.Fingerprint && r.cp.Offset <= sent.Offset
	} else {
		maybe = id != 0 && id <= sent.RecordID
	}
	if !maybe {
		return false, time.Time{}
	}
	return true, sent.upTo
}

// learn records the oldest times Loki named in a push's answers (the push
// loop is its only caller).
func (f *formatter) learn(floors map[string]time.Time) {
	if len(floors) == 0 {
		return
	}
	now := f.now()
	m := map[string]floor{}
	if old := f.floors.m.Load(); old != nil {
		maps.Copy(m, *old)
	}
	for stream, at := range floors {
		if old, ok := m[stream]; !ok || at.After(old.at) {
			m[stream] = floor{at: at, learned: now}
		}
	}
	evict(m)
	f.floors.m.Store(&m)
}

// floor is the oldest time stream takes now, if Loki named one: the stream's
// newest entry, and with it that time, may have moved on since with the
// clock, so it is assumed to have.
func (f *formatter) floor(stream string, now time.Time) (time.Time, bool) {
	m := f.floors.m.Load()
	if m == nil {
		return time.Time{}, false
	}
	fl, ok := (*m)[stream]
	if !ok {
		return time.Time{}, false
	}
	return fl.at.Add(loki.BehindMargin + now.Sub(fl.learned)), true
}

// evict forgets arbitrary entries of a map over maxStreams.
func evict[K comparable, V any](m map[K]V) {
	if len(m) <= maxStreams {
		return // the common case: no map iteration started
	}
	for k := range m {
		if len(m) <= maxStreams {
			return
		}
		delete(m, k)
	}
}

// entry is a formatted record, ready to be added to a batch.
type entry struct {
	r      record
	labels string
	e      loki.Entry
	ok     bool // false: the record only moves the position (dropped or skipped)
	id     uint64
	tc     string // the event's TimeCreated
	// movedUp: its timestamp was moved up into Loki's window (too old, or
	// behind its stream), which the push pins (batch.pin).
	movedUp bool
}

// add formats one record into the batch.
func (f *formatter) add(b *batch, r record) { f.commit(b, f.prepare(r)) }

// prepare formats one record: the line, its stream and a timestamp Loki
// takes, or a counted drop.
func (f *formatter) prepare(r record) entry {
	out := entry{r: r}
	if r.xml == nil {
		if r.drop != "" {
			f.m.dropped.WithLabelValues(r.channel, r.drop).Inc()
		}
		return out
	}
	e, err := eventxml.Parse(r.xml)
	if err == nil {
		// Windows matches a Select's Path against the log read, not the
		// event's own <Channel>: a ForwardedEvents dump holds Security's.
		fields := e.FilterFields()
		fields.Channel = r.channel
		if q := f.queries[r.channel]; q != nil && !q.Match(fields) {
			return out // left out as Windows leaves it out of a subscription: never read
		}
	}
	f.m.read.WithLabelValues(r.channel).Inc()
	if err != nil {
		f.m.renderErrors.WithLabelValues(r.channel).Inc()
		f.m.dropped.WithLabelValues(r.channel, contract.DropMalformed).Inc()
		f.log.Warn("malformed_xml", "skipping an event that is not well-formed XML", "channel", r.channel, "offset", r.cp.Offset, "error", err)
		return out
	}
	now := f.now()
	ts := now
	created, terr := e.Timestamp()
	if maxAge := time.Duration(f.cfg.MaxAge.Model()); maxAge > 0 && terr == nil && created.Before(now.Add(-maxAge)) {
		f.m.dropped.WithLabelValues(r.channel, contract.DropOlderThanMax).Inc()
		return out
	}
	if f.cfg.Timestamp == shipconfig.EventTime && terr == nil {
		ts = created
	}
	line := e.AppendLine(nil, r.texts, f.lookups)
	if max := f.cfg.Limits.MaxLineBytes; len(line) > max {
		line = loki.Truncate(line, max)
		f.m.truncated.WithLabelValues(r.channel).Inc()
	}
	computer := e.Computer()
	// The channel (metadata) and the stream's class are the event's own
	// channel's, as Alloy names them (loki.source.windowsevent): the
	// config may spell a channel otherwise ("security"), and a collector's
	// ForwardedEvents holds other channels' events, which the detections
	// select by their own channel.
	channel, stream := e.Channel(), cutLabel(computer)
	if channel == "" {
		channel = r.channel
	}
	class, labelled := contract.EventClass(channel), ""
	if !f.cfg.StructuredMetadata {
		labelled = channel // a stream of its own, the channel its label
	}
	shared := class + "\x00" + labelled + "\x00" + stream // the Loki stream, which a class's channels share with metadata
	if channel != r.channel {
		stream = channel + "\x00" + stream // lanes are planned per stream of the config's channel
	}
	labels := f.streamLabels(streamKey{class, labelled, computer, f.lanes.Assign(r.channel, stream, shared, e.RecordID(), len(line))})
	maybe, upTo := f.maybeStored(r, e.RecordID())
	pinned := false
	if maybe && f.cfg.Timestamp == shipconfig.EventTime && terr == nil {
		// A replay of a push that may be stored: the timestamp it had, so
		// Loki drops the copy (a fresh re-stamp against a stream that
		// moved on would store it twice).
		ts, pinned = f.pinned(r, e.RecordID(), created)
	}
	if pinned {
		f.sawNewest(labels, ts)
	} else {
		var ok bool
		if ts, out.movedUp, ok = f.withinLokiWindow(r.channel, labels, ts, now); !ok {
			f.m.dropped.WithLabelValues(r.channel, contract.DropTooOld).Inc()
			return out
		}
	}
	out.labels, out.e, out.ok = labels, loki.Entry{Time: ts, Line: line, Metadata: f.metadata(channel), MaybeStored: maybe, StoredUpTo: upTo, Moved: out.movedUp}, true
	out.id, out.tc = e.RecordID(), e.System.TimeCreated.SystemTime
	return out
}

// commit adds a prepared entry to the batch and moves the batch's position
// for the record's channel past it.
func (f *formatter) commit(b *batch, p entry) {
	r := p.r
	cp := r.cp
	prev := f.last[r.channel]
	cp.RecordID, cp.TimeCreated = prev.RecordID, prev.TimeCreated
	b.positions[r.channel] = cp
	b.charge += r.size
	if !p.ok {
		return
	}
	b.append(r.channel, p.labels, p.e)
	if p.movedUp && !p.e.MaybeStored {
		b.raise(r.channel, p.e.Time)
	}
	if p.id != 0 {
		cp.RecordID, cp.TimeCreated = p.id, p.tc
		b.positions[r.channel] = cp
		f.last[r.channel] = cp
	}
	f.m.pending.WithLabelValues(r.channel).Inc()
}

// withinLokiWindow returns the timestamp to push an entry at so that Loki
// takes it, each change counted by reason:
//   - further ahead than limits.maxFuture (Loki refuses entries past its
//     creation grace period): the stream's newest time, so one wrong clock
//     neither is refused nor drags the stream's later entries up;
//   - older than limits.maxEntryAge: that age (or refused, with tooOld: drop);
//   - further behind its stream's newest entry than limits.maxStreamLag:
//     moved up to that lag;
//   - older than the oldest time Loki named for the stream (another writer
//     holds newer entries): moved up to it.
func (f *formatter) withinLokiWindow(channel, stream string, ts, now time.Time) (_ time.Time, movedUp, ok bool) {
	lim := f.cfg.Limits
	newest, known := f.newest[stream]
	if !known {
		// Loki holds at least the last event of the channel.
		if t, err := time.Parse(time.RFC3339Nano, f.last[channel].TimeCreated); err == nil {
			newest, known = t, true
		}
	}
	if ts.After(now.Add(time.Duration(lim.MaxFuture.Model()))) {
		ts = now
		if known && newest.Before(now) {
			ts = newest
		}
		f.m.restamped.WithLabelValues(channel, contract.RestampTooNew).Inc()
	}
	if cutoff := now.Add(-time.Duration(lim.MaxEntryAge.Model())); ts.Before(cutoff) {
		if lim.TooOld == shipconfig.Drop {
			return ts, false, false
		}
		ts, movedUp = cutoff, true
		f.m.restamped.WithLabelValues(channel, contract.RestampTooOld).Inc()
	}
	behind := false
	if floor := newest.Add(-time.Duration(lim.MaxStreamLag.Model())); known && ts.Before(floor) {
		ts, behind = floor, true
	}
	if floor, ok := f.floor(stream, now); ok && ts.Before(floor) {
		ts, behind = floor, true
		if ts.After(now) {
			ts = now
		}
	}
	if behind {
		movedUp = true
		f.m.restamped.WithLabelValues(channel, contract.RestampTooFarBehind).Inc()
	}
	if ts.After(newest) {
		newest = ts
	}
	f.newest[stream] = newest
	evict(f.newest)
	return ts, movedUp, true
}

// sawNewest notes an entry of stream at ts: the stream's newest time, as
// far as the formatter knows it.
func (f *formatter) sawNewest(stream string, ts time.Time) {
	if newest, ok := f.newest[stream]; !ok || ts.After(newest) {
		f.newest[stream] = ts
		evict(f.newest)
	}
}

// metadata is an event's structured metadata: its channel, as Alloy's
// pipeline moves the channel label there (one slice a channel, shared by
// its entries), cut as a label value is: a hostile dump's 100 KB <Channel>
// must not pass Loki's structured-metadata limit (64 KB) and be refused. An
// event without a channel has none.
func (f *formatter) metadata(channel string) []loki.Label {
	if channel == "" || !f.cfg.StructuredMetadata {
		return nil
	}
	if m, ok := f.meta[channel]; ok {
		return m
	}
	m := []loki.Label{{Name: contract.LabelChannel, Value: cutLabel(channel)}}
	f.meta[channel] = m
	evict(f.meta)
	return m
}

// streamLabels are the static labels plus the event's class and computer,
// as Alloy sets them (the computer only when not empty, cut to Loki's
// limit), and its lane unless that is 0.
func (f *formatter) streamLabels(key streamKey) string {
	if l, ok := f.labels[key]; ok {
		return l
	}
	computer := key.computer
	m := map[string]string{}
	for k, v := range f.cfg.Labels {
		m[k] = v
	}
	m[contract.LabelClass] = key.class
	if key.channel != "" {
		m[contract.LabelChannel] = cutLabel(key.channel)
	}
	if computer != "" {
		if len(computer) > maxLabelValueBytes {
			f.log.Warn("label_cut", "an event's Computer is longer than Loki takes in a label; the label is cut (the line keeps it whole)", "class", key.class, "bytes", len(computer))
		}
		m[contract.LabelComputer] = cutLabel(computer)
	}
	if key.lane != 0 {
		m[contract.LabelLane] = strconv.Itoa(key.lane)
	}
	l := loki.FormatLabels(m)
	f.labels[key] = l
	evict(f.labels)
	return l
}

// cutLabel shortens a label value to Loki's limit at a UTF-8 boundary.
func cutLabel(v string) string {
	if len(v) <= maxLabelValueBytes {
		return v
	}
	cut := maxLabelValueBytes
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut]
}
