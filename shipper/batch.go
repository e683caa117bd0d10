package shipper

import (
	"time"

	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/loki"
	"github.com/winobs/winobs/shipper/state"
)

// record is one event read from a source, with the checkpoint just past it.
// A record without XML only moves the position (an event that was skipped
// with a counted reason).
type record struct {
	channel string
	xml     []byte
	texts   *eventxml.Texts
	cp      state.Checkpoint
	drop    string // reason, for a skipped event
	size    int64  // bytes charged to the in-flight budget
}

// batch is one push request and what delivering it acknowledges.
type batch struct {
	streams   []loki.Stream
	index     map[string]int
	positions map[string]state.Checkpoint
	counts    map[string]int // entries per channel
	events    int
	bytes     int
	charge    int64
	// raised is, per channel, the latest time an entry was moved up to
	// (into Loki's window): the push's pin (pin, state.Pin).
	raised map[string]time.Time
}

func newBatch() *batch {
	return &batch{index: map[string]int{}, positions: map[string]state.Checkpoint{}, counts: map[string]int{}, raised: map[string]time.Time{}}
}

// raise notes an entry of channel moved up to at.
func (b *batch) raise(channel string, at time.Time) {
	if at.After(b.raised[channel]) {
		b.raised[channel] = at
	}
}

// pin gives every entry of a channel that is not a replay and older than
// the latest time one was moved up to that time, before the batch's sent
// mark is saved: the push is then one time a channel (state.Pin), its
// entries their event time moved up to it, which a replay after a crash
// reproduces (formatter.pinned). Still in Loki's window: the entry moved
// up last was, when it was formatted. It returns, per channel, how many
// entries it moved that kept their event time until then: each is sent
// with another time than its TimeCreated.
func (b *batch) pin() map[string]int {
	moved := map[string]int{}
	for i := range b.streams {
		for k := range b.streams[i].Entries {
			e := &b.streams[i].Entries[k]
			if at, ok := b.raised[e.Owner]; ok && !e.MaybeStored && e.Time.Before(at) {
				e.Time = at
				if !e.Moved {
					e.Moved = true
					moved[e.Owner]++
				}
			}
		}
	}
	return moved
}

// pinOf is channel's pin for the batch's sent mark, at its position.
func (b *batch) pinOf(channel string) state.Pin {
	cp := b.positions[channel]
	p := state.Pin{RecordID: cp.RecordID, Offset: cp.Offset}
	if at, ok := b.raised[channel]; ok {
		p.At = at.UTC().Format(time.RFC3339Nano)
	}
	return p
}

// append adds one entry to the stream with these labels.
func (b *batch) append(channel, labels string, e loki.Entry) {
	i, ok := b.index[labels]
	if !ok {
		i = len(b.streams)
		b.index[labels] = i
		b.streams = append(b.streams, loki.Stream{Labels: labels})
	}
	e.Owner = channel // the report counts it under its config channel
	b.streams[i].Entries = append(b.streams[i].Entries, e)
	b.counts[channel]++
	b.events++
	b.bytes += e.Size()
}

// streamBytes is the bytes per stream Loki's rates count.
func (b *batch) streamBytes() map[string]int {
	out := make(map[string]int, len(b.streams))
	for _, st := range b.streams {
		for _, e := range st.Entries {
			out[st.Labels] += e.Size()
		}
	}
	return out
}
