// Package lanes splits a busy channel over several Loki streams ("lanes")
// so that it can go faster than one stream may without being sharded, and
// still have every replayed event land in the stream its first copy did.
//
// Loki shards a stream pushed above its shard rate, and its dedupe does not
// reach across shards: a replay after a crash would stay visible twice. So
// each stream is paced under that rate (limits.streamBytesPerSecond), and a
// channel that keeps its streams at that pace is given more of them: event
// RecordID r goes to lane r mod K. K is decided per channel by a Plan, a list
// of changes ("from RecordID From on, K lanes") that is saved before any
// event is pushed under it. A replay reads the same plan and makes the same
// choice. Lane 0 is the channel's stream as it always was, so a quiet
// channel stays one stream and an upgrade changes no stream.
package lanes

import (
	"fmt"
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

// Check reports a plan that could not have been written by this package:
// changes out of order or a lane count below one.
func (p Plan) Check() error {
	for i, c := range p {
		if c.K < 1 {
			return fmt.Errorf("change %d: %d lanes", i, c.K)
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

// Controller decides each channel's lane count from the rate at which its
// events are formatted (with a full in-flight budget, the rate its lanes are
// paced at): a channel that fills its lanes gets twice as many, up to Max; a
// channel well under them for a while gets fewer. A change is saved before
// it is used; a change that cannot be saved is not made. One goroutine uses
// a Controller.
type Controller struct {
	// PerLane is the bytes per second one lane is paced at.
	PerLane float64
	// Max is the most lanes a channel gets.
	Max int
	// Save stores a channel's plan durably; Acked is the RecordID of the
	// channel's last delivered event, so saved plans drop what no replay
	// needs.
	Save  func(channel string, p Plan) error
	Acked func(channel string) uint64
	// Changed is told of every change made, Failed of one that could not
	// be saved (either may be nil).
	Changed func(channel string, k int)
	Failed  func(channel string, err error)
	Now     func() time.Time

	ch map[string]*channel
}

type channel struct {
	plan Plan
	// floor: no change may start at or below it. A replay after a restart
	// covers events up to the last run's sent mark, which the last run
	// pushed under its own plan.
	floor uint64
	start time.Time
	bytes int
	low   int
}

func (c *Controller) state(name string) *channel {
	if c.ch == nil {
		c.ch = map[string]*channel{}
	}
	st := c.ch[name]
	if st == nil {
		st = &channel{}
		c.ch[name] = st
	}
	return st
}

// Resume gives a channel the plan it was saved with and the newest RecordID
// an earlier run may have pushed.
func (c *Controller) Resume(name string, p Plan, floor uint64) {
	st := c.state(name)
	st.plan, st.floor = p, floor
}

// Lanes is the channel's current lane count.
func (c *Controller) Lanes(name string) int {
	k, _ := c.state(name).plan.last()
	return k
}

// Assign returns the lane of a channel's event with this RecordID and n
// bytes of line, first reconsidering the channel's lane count once a window
// has passed.
func (c *Controller) Assign(name string, id uint64, n int) int {
	st := c.state(name)
	now := c.Now()
	if st.start.IsZero() {
		st.start = now
	}
	if elapsed := now.Sub(st.start); elapsed >= Window && id != 0 {
		c.reconsider(name, st, id, elapsed)
		st.start, st.bytes = now, 0
	}
	st.bytes += n
	return st.plan.Lane(id)
}

// reconsider changes the channel's lane count from event id on if its rate
// over the window calls for it and the change can be saved.
func (c *Controller) reconsider(name string, st *channel, id uint64, elapsed time.Duration) {
	k, from := st.plan.last()
	want := c.want(st, k, float64(st.bytes)/elapsed.Seconds(), int(elapsed/Window))
	if want == k || id <= st.floor || id <= from {
		return
	}
	p := append(st.plan.since(c.Acked(name)+1), Change{From: id, K: want})
	if err := c.Save(name, p); err != nil {
		if c.Failed != nil {
			c.Failed(name, err)
		}
		return
	}
	st.plan, st.low = p, 0
	if c.Changed != nil {
		c.Changed(name, want)
	}
}

// want is the lane count a rate calls for, given k lanes now and the
// windows the rate was measured over.
func (c *Controller) want(st *channel, k int, rate float64, windows int) int {
	maxK := max(1, c.Max)
	if c.PerLane <= 0 {
		return min(k, maxK)
	}
	joint := float64(k) * c.PerLane
	switch {
	case k > maxK:
		return maxK // a restart with fewer lanes allowed
	case rate >= up*joint && k < maxK:
		st.low = 0
		return min(maxK, 2*k)
	case k > 1 && rate < down*joint:
		if st.low += windows; st.low < downAfter {
			return k
		}
		return max(1, min(k-1, int(math.Ceil(rate/(up*c.PerLane)))))
	}
	st.low = 0
	return k
}
