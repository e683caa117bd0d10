package shipper

import (
	"github.com/winobs/winobs/shipper/checkpoint"
	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/loki"
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

// batch is one push request and what delivering it acknowledges.
type batch struct {
	streams   []loki.Stream
	index     map[string]int
	positions map[string]checkpoint.Checkpoint
	counts    map[string]int // entries per channel
	events    int
	bytes     int
	charge    int64
}

func newBatch() *batch {
	return &batch{index: map[string]int{}, positions: map[string]checkpoint.Checkpoint{}, counts: map[string]int{}}
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
