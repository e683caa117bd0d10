package lanes

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

func TestPlanLane(t *testing.T) {
	plan := Plan{{From: 100, K: 4}, {From: 200, K: 1}, {From: 300, K: 6}}
	for _, tc := range []struct {
		plan Plan
		id   uint64
		want int
	}{
		{nil, 12345, 0},
		{plan, 0, 0},  // no RecordID: the channel's own stream
		{plan, 99, 0}, // before the first change
		{plan, 100, 0},
		{plan, 101, 1},
		{plan, 199, 3},
		{plan, 201, 0}, // back to one lane
		{plan, 299, 0},
		{plan, 305, 5},
		{plan, 306, 0},
	} {
		if got := tc.plan.Lane(tc.id); got != tc.want {
			t.Errorf("%v.Lane(%d) = %d, want %d", tc.plan, tc.id, got, tc.want)
		}
	}
}

func TestPlanCheckAndSince(t *testing.T) {
	for _, bad := range []Plan{{{From: 5, K: 0}}, {{From: 5, K: 2}, {From: 5, K: 3}}, {{From: 9, K: 2}, {From: 5, K: 3}}} {
		if bad.Check() == nil {
			t.Errorf("%v passed Check", bad)
		}
	}
	plan := Plan{{From: 100, K: 4}, {From: 200, K: 1}, {From: 300, K: 6}}
	if err := plan.Check(); err != nil {
		t.Fatal(err)
	}
	for next, want := range map[uint64]Plan{
		50:  plan,
		150: plan,
		200: plan[1:],
		299: plan[1:],
		301: plan[2:],
	} {
		if got := plan.since(next); !reflect.DeepEqual(got, want) {
			t.Errorf("since(%d) = %v, want %v", next, got, want)
		}
	}
}

// sim drives a Controller on a simulated clock, as the shipper does: events
// of a fixed size arrive at a rate, and each is assigned a lane.
type sim struct {
	t      *testing.T
	c      *Controller
	clock  time.Time
	saved  Plans // what the store holds
	saves  int
	failed int
	next   uint64
	lanes  map[uint64]int // id -> lane it went to
	acked  uint64
	broken bool // the store refuses writes
}

const perLane = 512 << 10

func newSim(t *testing.T, maxLanes int) *sim {
	s := &sim{t: t, clock: time.Unix(1_700_000_000, 0), next: 1, lanes: map[uint64]int{}}
	s.c = s.controller(maxLanes)
	return s
}

func (s *sim) controller(maxLanes int) *Controller {
	return &Controller{PerLane: perLane, Max: maxLanes, Now: func() time.Time { return s.clock },
		Save: func(_ string, p Plans) error {
			if s.broken {
				return errors.New("no space left on device")
			}
			s.saved, s.saves = p, s.saves+1
			return nil
		},
		Acked:  func(string) uint64 { return s.acked },
		Failed: func(string, error) { s.failed++ }}
}

// run feeds seconds of events of size bytes at rate(k) bytes per second,
// where k is the channel's lane count (a paced channel fills its lanes). It
// checks that every lane comes from a plan already saved.
func (s *sim) run(seconds float64, size int, rate func(k int) float64) {
	end := s.clock.Add(time.Duration(seconds * float64(time.Second)))
	for s.clock.Before(end) {
		id := s.next
		s.next++
		lane := s.c.Assign("Security", node, node, id, size)
		if want := s.saved.Lane(node, id); lane != want {
			s.t.Fatalf("event %d went to lane %d, but the saved plans %v say %d", id, lane, s.saved, want)
		}
		s.lanes[id] = lane
		s.clock = s.clock.Add(time.Duration(float64(size) / rate(s.c.Lanes("Security")) * float64(time.Second)))
	}
}

func paced(k int) float64 { return float64(k) * perLane }

// node is the one computer whose events the sim's channel holds.
const node = "WINNODE01"

// plan is the sim's stream's saved plan.
func (s *sim) plan() Plan { return s.saved.For(node) }

// A channel held by its pace doubles its lanes each window up to the most
// allowed, and spreads its events over them.
func TestBusyChannelGetsLanes(t *testing.T) {
	s := newSim(t, 6)
	s.run(10, 700, paced)
	if k := s.c.Lanes("Security"); k != 6 {
		t.Fatalf("lanes = %d after 10 s at the pace, want 6 (saved %v)", k, s.saved)
	}
	p := s.plan()
	if got := []int{p[0].K, p[1].K, p[2].K}; !reflect.DeepEqual(got, []int{2, 4, 6}) {
		t.Errorf("lane counts %v, want 2, 4, 6", got)
	}
	seen := map[int]int{}
	for id := p[2].From; id < s.next; id++ {
		seen[s.lanes[id]]++
	}
	if len(seen) != 6 {
		t.Errorf("events after the last change went to lanes %v, want all of 0..5", seen)
	}
}

// A channel under its one stream's pace is never split: not even a plan is
// written.
func TestQuietChannelStaysOneStream(t *testing.T) {
	s := newSim(t, 6)
	s.run(30, 700, func(int) float64 { return 0.75 * perLane })
	for id, lane := range s.lanes {
		if lane != 0 {
			t.Fatalf("event %d went to lane %d", id, lane)
		}
	}
	if s.saves != 0 {
		t.Errorf("%d plans saved for a quiet channel", s.saves)
	}
}

// After a burst the lanes go when the rate stays low for downAfter windows,
// to what the rate needs; an idle gap counts its windows.
func TestLanesShrinkAfterTheBurst(t *testing.T) {
	s := newSim(t, 6)
	s.run(10, 700, paced)
	s.run(4.5, 700, func(int) float64 { return 1.2 * perLane }) // under half of 6 lanes, not yet long enough
	if k := s.c.Lanes("Security"); k != 6 {
		t.Fatalf("lanes = %d after 4 low windows, want 6", k)
	}
	s.run(3, 700, func(int) float64 { return 1.2 * perLane })
	if k := s.c.Lanes("Security"); k != 2 {
		t.Fatalf("lanes = %d at 1.2 lanes' rate, want 2", k)
	}
	s.clock = s.clock.Add(time.Minute) // quiet; the next event sees it
	s.run(1.5, 700, func(int) float64 { return 0.1 * perLane })
	if k := s.c.Lanes("Security"); k != 1 {
		t.Fatalf("lanes = %d after an idle minute, want 1", k)
	}
}

// No change starts at or below the floor (what an earlier run may have
// pushed under the plan it saved), nor when the plan cannot be saved.
func TestNoChangeOverPushedOrUnsavedEvents(t *testing.T) {
	s := newSim(t, 6)
	s.c.Resume("Security", Plans{}, 20000)
	s.run(5, 700, paced) // ~3,700 events, all at or below the floor
	if s.saves != 0 || s.c.Lanes("Security") != 1 {
		t.Fatalf("a change at or below the floor: %v", s.saved)
	}
	s.next = 20001
	s.run(2, 700, paced)
	if s.saves == 0 || s.plan()[0].From <= 20000 {
		t.Fatalf("plan %v: want a change past the floor", s.saved)
	}

	s = newSim(t, 6)
	s.broken = true
	s.run(5, 700, paced)
	if s.c.Lanes("Security") != 1 || s.failed == 0 {
		t.Fatalf("lanes %d with a store refusing writes (%d failures reported), want 1", s.c.Lanes("Security"), s.failed)
	}
}

// The property the lanes exist for: however a run ends (a kill at any
// point, a full state disk, another rate setting or lane limit at the
// restart), every event a restart replays goes to the lane it went to
// before, as long as the next run resumes with the saved plan and the sent
// mark as its floor: the newest event any run handed to Loki, which a full
// disk still takes (state.Store.SaveSent writes it in place) and a
// replay never lowers (the shipper's acker).
func TestReplaysLandInTheSameLane(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		s := newSim(t, 1+rng.IntN(8))
		var pushed uint64 // the sent mark: the newest event handed to Loki
		for run := range 6 {
			first := s.acked + 1
			s.next = first
			if run > 0 {
				s.c = s.controller(1 + rng.IntN(8)) // the restart may allow another number of lanes
				s.c.Resume("Security", s.saved, pushed)
			}
			s.broken = rng.IntN(4) == 0
			before := map[uint64]int{}
			for id := first; id <= pushed; id++ {
				before[id] = s.lanes[id]
			}
			load := []float64{0.1, 0.6, 1, 1}[rng.IntN(4)] // of the lanes' pace, for this run
			s.run(rng.Float64()*20, 300+rng.IntN(2000), func(k int) float64 { return load * paced(k) })
			for id, lane := range before {
				if s.lanes[id] != lane {
					t.Fatalf("trial %d run %d: replayed event %d went to lane %d, first to lane %d (plan %v)", trial, run, id, s.lanes[id], lane, s.saved)
				}
			}
			pushed = max(pushed, s.next-1)
			if pushed > s.acked && !s.broken { // a full state disk saves no checkpoint either
				s.acked += uint64(rng.IntN(int(pushed-s.acked) + 1)) // Loki acknowledged part of it before the kill
			}
		}
	}
}

// fleet drives a Controller with one channel's events from many computers,
// as ForwardedEvents on an event collector holds them: each event's stream
// is pick(i) for the i-th event, events of size bytes arrive at rate()
// bytes per second, and every lane is checked against the plans saved. It
// returns the streams Loki would see.
func (s *sim) fleet(seconds float64, size int, pick func(i uint64) string, rate func() float64) map[string]bool {
	streams := map[string]bool{}
	end := s.clock.Add(time.Duration(seconds * float64(time.Second)))
	for s.clock.Before(end) {
		id := s.next
		s.next++
		stream := pick(id)
		lane := s.c.Assign("ForwardedEvents", stream, stream, id, size)
		if want := s.saved.Lane(stream, id); lane != want {
			s.t.Fatalf("event %d of %s went to lane %d, but the saved plans say %d", id, stream, lane, want)
		}
		streams[fmt.Sprintf("%s/%d", stream, lane)] = true
		s.clock = s.clock.Add(time.Duration(float64(size) / rate() * float64(time.Second)))
	}
	return streams
}

// A channel of many computers, together far over one stream's pace but
// each far under it, adds no stream: 800 computers stay 800 streams. (Was:
// the channel's rate was measured, and every computer's stream was split
// seven ways: 5,600 streams, over a default tenant's 5,000.)
func TestManyQuietComputersAddNoStream(t *testing.T) {
	for _, computers := range []uint64{200, 800} {
		s := newSim(t, 7)
		streams := s.fleet(20, 700, func(i uint64) string { return fmt.Sprintf("WEC-SOURCE-%04d", i%computers) },
			func() float64 { return 6 * perLane }) // the node's whole budget
		if len(streams) != int(computers) || s.saves != 0 || s.c.Lanes("ForwardedEvents") != 1 {
			t.Errorf("%d computers at 6 lanes' rate together: %d streams, %d plans saved, most lanes %d; want %d, 0, 1",
				computers, len(streams), s.saves, s.c.Lanes("ForwardedEvents"), computers)
		}
	}
}

// Among 200 quiet computers, the one that keeps its stream at the pace is
// split, and only it: 200 streams plus its extra lanes.
func TestOnlyTheBusyComputerIsSplit(t *testing.T) {
	s := newSim(t, 7)
	// Every other event is the busy computer's; the rest spread over 200.
	pick := func(i uint64) string {
		if i%2 == 0 {
			return "BUSY"
		}
		return fmt.Sprintf("QUIET-%03d", i%400/2)
	}
	// BUSY fills its lanes: the channel goes at twice their pace.
	streams := s.fleet(15, 700, pick, func() float64 { return 2 * paced(s.c.state("ForwardedEvents").plans.For("BUSY").at(math.MaxUint64)) })
	busy := s.saved.For("BUSY")
	if k, _ := busy.last(); k != 7 || len(s.saved.Streams) != 1 {
		t.Fatalf("plans %v: want 7 lanes for BUSY and no other plan", s.saved)
	}
	if want := 200 + 7; len(streams) != want {
		t.Errorf("%d streams, want %d (200 computers, BUSY's 6 extra lanes)", len(streams), want)
	}
}

// Plans a version that split whole channels saved cover every stream of
// the channel: replays up to the floor follow them; the first window past
// the floor ends them, and a quiet stream goes back to one lane.
func TestWholeChannelPlanEnds(t *testing.T) {
	s := newSim(t, 7)
	old := Plan{{From: 10, K: 7}}
	s.saved = Plans{All: old}
	s.c.Resume("ForwardedEvents", s.saved, 500)
	pick := func(i uint64) string { return fmt.Sprintf("HOST-%d", i%50) }
	replayed := map[uint64]int{}
	for id := uint64(1); id <= 500; id++ {
		replayed[id] = s.c.Assign("ForwardedEvents", pick(id), pick(id), id, 700)
		if want := old.Lane(id); replayed[id] != want {
			t.Fatalf("replayed event %d went to lane %d, first to %d", id, replayed[id], want)
		}
	}
	s.next = 501
	s.clock = s.clock.Add(2 * Window)
	streams := s.fleet(5, 700, pick, func() float64 { return 0.5 * perLane })
	if k, from := s.saved.All.last(); k != 1 || from <= 500 {
		t.Errorf("the channel's plan %v was not ended past the floor", s.saved.All)
	}
	if len(streams) > 50+6 { // the first window still follows the old plan
		t.Errorf("%d streams", len(streams))
	}
	if after := s.fleet(5, 700, pick, func() float64 { return 0.5 * perLane }); len(after) != 50 {
		t.Errorf("%d streams after the old plan ended, want the 50 computers' own", len(after))
	}
}

// The property of TestReplaysLandInTheSameLane, with a channel of several
// computers at different loads: each stream's replays land where they did.
func TestReplaysLandInTheSameLaneManyStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 100 {
		s := newSim(t, 1+rng.IntN(8))
		var pushed uint64
		busy := rng.IntN(3) + 1 // computers 0..busy-1 share the load
		pick := func(i uint64) string {
			if i%4 != 0 {
				return fmt.Sprintf("C%d", i%uint64(busy))
			}
			return fmt.Sprintf("Q%d", i%37)
		}
		first := map[uint64]int{}
		for run := range 6 {
			s.next = s.acked + 1
			if run > 0 {
				s.c = s.controller(1 + rng.IntN(8))
				s.c.Resume("ForwardedEvents", s.saved, pushed)
			}
			s.broken = rng.IntN(4) == 0
			load := []float64{0.1, 0.6, 1, 2}[rng.IntN(4)]
			end := s.clock.Add(time.Duration(rng.Float64() * 20 * float64(time.Second)))
			for s.clock.Before(end) {
				id := s.next
				s.next++
				lane := s.c.Assign("ForwardedEvents", pick(id), pick(id), id, 700)
				if was, ok := first[id]; ok && id <= pushed && was != lane {
					t.Fatalf("trial %d run %d: replayed event %d of %s went to lane %d, first to %d (plans %v)", trial, run, id, pick(id), lane, was, s.saved)
				}
				first[id] = lane
				s.clock = s.clock.Add(time.Duration(700 / (load * perLane) * float64(time.Second)))
			}
			pushed = max(pushed, s.next-1)
			if pushed > s.acked && !s.broken {
				s.acked += uint64(rng.IntN(int(pushed-s.acked) + 1))
			}
		}
	}
}

// Plans hold at most MaxLanes lanes a stream: a lane plan with a valid
// checksum and any count is refused.
func TestPlansCheck(t *testing.T) {
	for _, bad := range []Plans{
		{All: Plan{{From: 5, K: MaxLanes + 1}}},
		{Streams: map[string]Plan{"A": {{From: 5, K: 2}}, "B": {{From: 5, K: 1000}}}},
		{Streams: map[string]Plan{"A": {{From: 9, K: 2}, {From: 5, K: 3}}}},
	} {
		if bad.Check() == nil {
			t.Errorf("%v passed Check", bad)
		}
	}
	if err := (Plans{All: Plan{{From: 5, K: MaxLanes}}, Streams: map[string]Plan{"A": {{From: 7, K: 2}}}}).Check(); err != nil {
		t.Error(err)
	}
}

// Two channels whose events share one Loki stream (a node's class), paced
// together: each sees half the stream's rate, but the lanes follow the
// stream's rate, so both split as one busy channel would. (Was: measured
// per channel, neither reached the threshold, and a node's two channels
// caught up at one stream's pace: 1,018 events/s against 5,806.)
func TestChannelsSharingAStreamSplitTogether(t *testing.T) {
	s := newSim(t, 8)
	clock := s.clock
	id := map[string]uint64{}
	for end := clock.Add(10 * time.Second); clock.Before(end); {
		for _, ch := range []string{"System", "Application"} {
			id[ch]++
			s.c.Assign(ch, node, "node\x00"+node, id[ch], 700)
		}
		// The shared stream's lanes are paced together: the most lanes
		// either channel has, at perLane each.
		k := max(s.c.Lanes("System"), s.c.Lanes("Application"))
		clock = clock.Add(time.Duration(2 * 700 / paced(k) * float64(time.Second)))
		s.clock = clock
	}
	for _, ch := range []string{"System", "Application"} {
		if got := s.c.Lanes(ch); got != 8 {
			t.Errorf("%s: %d lanes after 10 s held by the shared stream's pace, want 8", ch, got)
		}
	}
}
