// Package lanes splits a busy stream over several Loki streams ("lanes")
// so that it can go faster than one stream may without being sharded, and
// still have every replayed event land in the stream its first copy did.
//
// Loki shards a stream pushed above its shard rate, and its dedupe does not
// reach across shards: a replay after a crash would stay visible twice. So
// each stream is paced under that rate (limits.streamBytesPerSecond), and a
// stream kept at that pace is given more lanes: event RecordID r goes to
// lane r mod K. A channel's events form one stream per computer (ForwardedEvents
// on an event collector holds hundreds), and Loki limits a tenant's streams
// (max_global_streams_per_user, 5,000), so K is decided per stream, from
// the rate of the Loki stream it is (the channels of a class share one):
// a channel of many quiet computers adds no stream.
// Each stream's K follows a Plan, a list of changes ("from RecordID From on,
// K lanes"), and a channel's Plans are saved before any event is pushed
// under them. A replay reads the same plans and makes the same choice. Lane
// 0 is the stream as it always was, so a quiet stream stays one stream and
// an upgrade changes no stream.
package lanes

import (
	"fmt"

	"github.com/winobs/winobs/contract"
	"math"
	"time"
)

// Change is one step of a plan: events with RecordID From or later go to K
// lanes, until the next change.
type Change struct {
	From uint64 `json:"from"`
	K    int    `json:"lanes"`
}

// Plan is a channel's changes, in increasing From. Its zero value is one
// lane.
type Plan []Change

// Lane is the lane of the event with this RecordID: RecordID mod K of the
// change that covers it; 0 before the first change, for K ≤ 1, and for an
// event without a RecordID.
func (p Plan) Lane(id uint64) int {
	k := p.at(id)
	if k <= 1 || id == 0 {
		return 0
	}
	return int(id % uint64(k))
}

// at is the lane count that covers id.
func (p Plan) at(id uint64) int {
	k := 1
	for _, c := range p {
		if c.From > id {
			break
		}
		k = c.K
	}
	return k
}

// last is the lane count of the newest change and where it starts.
func (p Plan) last() (k int, from uint64) {
	if len(p) == 0 {
		return 1, 0
	}
	c := p[len(p)-1]
	return c.K, c.From
}

// MaxLanes is the most lanes a stream may have (contract.MaxLanes).
const MaxLanes = contract.MaxLanes

// Check reports a plan that could not have been written by this package:
// changes out of order or a lane count out of 1..MaxLanes.
func (p Plan) Check() error {
	for i, c := range p {
		if c.K < 1 || c.K > MaxLanes {
			return fmt.Errorf("change %d: %d lanes (1 to %d)", i, c.K, MaxLanes)
		}
		if i > 0 && c.From <= p[i-1].From {
			return fmt.Errorf("change %d: from %d after %d", i, c.From, p[i-1].From)
		}
	}
	return nil
}

// since drops the changes a replay from RecordID next on no longer needs:
// all but the last one at or before next, and those after.
func (p Plan) since(next uint64) Plan {
	i := 0
	for i+1 < len(p) && p[i+1].From <= next {
		i++
	}
	return append(Plan(nil), p[i:]...)
}

// none: from RecordID next on, the plan sends every event to lane 0.
func (p Plan) none(next uint64) bool {
	p = p.since(next)
	return len(p) == 0 || len(p) == 1 && p[0].K == 1
}

// Plans are one channel's lane plans: one for each stream that was split,
// named by its computer label ("" for events without one), and All, the
// plan of a version that split whole channels, which the streams without a
// plan of their own follow (until the first new event ends it).
type Plans struct {
	All     Plan            `json:"all,omitempty"`
	Streams map[string]Plan `json:"streams,omitempty"`
}

// For is the plan a stream follows.
func (ps Plans) For(stream string) Plan {
	if p, ok := ps.Streams[stream]; ok {
		return p
	}
	return ps.All
}

// Lane is the lane of a stream's event with this RecordID.
func (ps Plans) Lane(stream string, id uint64) int { return ps.For(stream).Lane(id) }

// Most is the most lanes any stream has now.
func (ps Plans) Most() int {
	k, _ := ps.All.last()
	for _, p := range ps.Streams {
		k = max(k, p.at(math.MaxUint64))
	}
	return k
}

// Check reports plans this package could not have written.
func (ps Plans) Check() error {
	if err := ps.All.Check(); err != nil {
		return fmt.Errorf("the channel's plan: %w", err)
	}
	for stream, p := range ps.Streams {
		if err := p.Check(); err != nil {
			return fmt.Errorf("stream %q: %w", stream, err)
		}
	}
	return nil
}

// since is a copy of the plans without what a replay from RecordID next on
// no longer needs: a stream whose plan sends all to lane 0 from there on
// keeps none (while no channel plan would take it over).
func (ps Plans) since(next uint64) Plans {
	out := Plans{Streams: map[string]Plan{}}
	if !ps.All.none(next) {
		out.All = ps.All.since(next)
	}
	for stream, p := range ps.Streams {
		if out.All == nil && p.none(next) {
			continue
		}
		out.Streams[stream] = p.since(next)
	}
	return out
}

// Window is how often a channel's rate is measured and its lane count
// reconsidered.
const Window = time.Second

// Thresholds of the controller, as fractions of the lanes' joint rate:
// above up a channel is held by its pace and gets twice the lanes; below
// down for downAfter windows in a row it gets as many as its rate needs.
const (
	up        = 0.8
	down      = 0.5
	downAfter = 5
)

// Controller decides each stream's lane count from the rate at which its
// events are formatted (with a full in-flight budget, the rate its lanes
// are paced at): a stream that fills its lanes gets twice as many, up to
// Max; a stream well under them for a while gets fewer. A change is saved
// before it is used; a change that cannot be saved is not made. One
// goroutine uses a Controller.
type Controller struct {
	// PerLane is the bytes per second one lane is paced at.
	PerLane float64
	// Max is the most lanes a stream gets.
	Max int
	// Save stores a channel's plans durably; Acked is the RecordID of the
	// channel's last delivered event, so saved plans drop what no replay
	// needs.
	Save  func(channel string, p Plans) error
	Acked func(channel string) uint64
	// Changed is told of every change made (the channel's most lanes of a
	// stream after it), Failed of one that could not be saved (either may
	// be nil).
	Changed func(channel, stream string, k, most int)
	Failed  func(channel string, err error)
	Now     func() time.Time

	ch map[string]*channel
	// sent counts the bytes assigned to each Loki stream (its lanes
	// together), whichever channels share it: a stream's rate is what its
	// pace holds, and two channels sharing one each see half of it.
	sent map[string]*uint64
}

type channel struct {
	plans Plans
	// floor: no change may start at or below it. A replay after a restart
	// covers events up to the last run's sent mark, which the last run
	// pushed under its own plans.
	floor uint64
	rates map[string]*window // by stream
}

// window is a stream's rate being measured: the bytes its Loki stream's
// counter held at start.
type window struct {
	start time.Time
	sent  *uint64
	from  uint64
	low   int
}

// maxWindows bounds the streams a channel measures at once: events with
// ever new computers must not grow the shipper without end. Forgetting an
// unsplit stream's window only restarts its measurement.
const maxWindows = 1024

func (c *Controller) state(name string) *channel {
	if c.ch == nil {
		c.ch = map[string]*channel{}
	}
	st := c.ch[name]
	if st == nil {
		st = &channel{rates: map[string]*window{}}
		c.ch[name] = st
	}
	return st
}

// window is the stream's window, made if new; unsplit streams' windows are
// forgotten when there are too many.
func (st *channel) window(stream string) *window {
	if w, ok := st.rates[stream]; ok {
		return w
	}
	if len(st.rates) >= maxWindows {
		for s := range st.rates {
			if st.plans.For(s).at(math.MaxUint64) == 1 && len(st.rates) >= maxWindows {
				delete(st.rates, s)
			}
		}
	}
	w := &window{}
	st.rates[stream] = w
	return w
}

// Resume gives a channel the plans it was saved with and the newest
// RecordID an earlier run may have pushed.
func (c *Controller) Resume(name string, p Plans, floor uint64) {
	st := c.state(name)
	st.plans, st.floor = p, floor
}

// Lanes is the most lanes a stream of the channel has now.
func (c *Controller) Lanes(name string) int { return c.state(name).plans.Most() }

// Assign returns the lane of a stream's event with this RecordID and n
// bytes of line, first reconsidering the stream's lane count once a window
// has passed (and ending a whole-channel plan of an earlier version at the
// first new event). shared names the Loki stream the channel's stream is
// (several channels' streams may be one): its rate, all of theirs
// together, decides the lanes.
func (c *Controller) Assign(name, stream, shared string, id uint64, n int) int {
	st := c.state(name)
	w := st.window(stream)
	now := c.Now()
	if w.sent == nil {
		w.sent = c.counter(shared)
		w.from = *w.sent
	}
	if w.start.IsZero() {
		w.start = now
	}
	if elapsed := now.Sub(w.start); elapsed >= Window && id != 0 {
		if k, from := st.plans.All.last(); k > 1 && id > st.floor && id > from {
			next := st.plans.since(c.Acked(name) + 1)
			next.All = append(next.All, Change{From: id, K: 1})
			c.adopt(name, "", st, next)
		}
		c.reconsider(name, stream, st, w, id, elapsed)
		w.start, w.from = now, *w.sent
	}
	*w.sent += uint64(n)
	return st.plans.Lane(stream, id)
}

// counter is the byte counter of a Loki stream, made if new. Too many are
// forgotten arbitrarily: a window keeps its own, and a forgotten one only
// stops being shared with channels that measure it anew.
func (c *Controller) counter(shared string) *uint64 {
	if c.sent == nil {
		c.sent = map[string]*uint64{}
	}
	if p, ok := c.sent[shared]; ok {
		return p
	}
	if len(c.sent) >= maxWindows {
		for k := range c.sent {
			delete(c.sent, k)
			break
		}
	}
	p := new(uint64)
	c.sent[shared] = p
	return p
}

// reconsider changes the stream's lane count from event id on if its rate
// over the window calls for it and the change can be saved.
func (c *Controller) reconsider(name, stream string, st *channel, w *window, id uint64, elapsed time.Duration) {
	p := st.plans.For(stream)
	k, from := p.last()
	want := c.decide(w, k, float64(*w.sent-w.from)/elapsed.Seconds(), int(elapsed/Window))
	if want == k || id <= st.floor || id <= from {
		return
	}
	acked := c.Acked(name)
	next := st.plans.since(acked + 1)
	next.Streams[stream] = append(p.since(acked+1), Change{From: id, K: want})
	if c.adopt(name, stream, st, next) {
		w.low = 0
	}
}

// adopt saves the channel's next plans and uses them, or reports why not.
func (c *Controller) adopt(name, stream string, st *channel, next Plans) bool {
	if err := c.Save(name, next); err != nil {
		if c.Failed != nil {
			c.Failed(name, err)
		}
		return false
	}
	st.plans = next
	if c.Changed != nil {
		c.Changed(name, stream, next.For(stream).at(math.MaxUint64), next.Most())
	}
	return true
}

// decide is the lane count a stream's rate calls for, given k lanes now
// and the windows the rate was measured over; it counts the window's low
// windows towards a decrease (the one state it changes).
func (c *Controller) decide(w *window, k int, rate float64, windows int) int {
	maxK := max(1, c.Max)
	if c.PerLane <= 0 {
		return min(k, maxK)
	}
	joint := float64(k) * c.PerLane
	switch {
	case k > maxK:
		return maxK // a restart with fewer lanes allowed
	case rate >= up*joint && k < maxK:
		w.low = 0
		return min(maxK, 2*k)
	case k > 1 && rate < down*joint:
		if w.low += windows; w.low < downAfter {
			return k
		}
		return max(1, min(k-1, int(math.Ceil(rate/(up*c.PerLane)))))
	}
	w.low = 0
	return k
}
