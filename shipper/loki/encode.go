// Package loki pushes log entries to Loki's push API: protobuf + snappy
// encoding, and a client that tells delivered from retryable from rejected.
package loki

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/golang/snappy"
	"google.golang.org/protobuf/encoding/protowire"
)

// Entry is one log line with its timestamp and structured metadata.
type Entry struct {
	Time time.Time
	Line []byte
	// Metadata is the entry's structured metadata (the event's channel):
	// Loki keeps it beside the line, not in the stream's labels, so it
	// adds no stream.
	Metadata []Label
	// Owner is what the Report counts the entry under (the shipper's
	// channel, when several channels share a stream); the stream's labels
	// when empty.
	Owner string
	// MaybeStored: an earlier request may have stored this entry (it is
	// replayed after a restart, or an answer left it in doubt). Loki checks
	// "too far behind" before it drops an identical entry, so such an entry
	// is never re-stamped: that would store it a second time.
	MaybeStored bool
	// StoredUpTo, with MaybeStored, is the newest timestamp that earlier
	// request may have stored in the stream (a replayed batch can be a part
	// of the one Loki stored).
	StoredUpTo time.Time
	// Moved: the shipper moved its time from the event's before the push
	// (into Loki's window), already counted as re-stamped.
	Moved bool
	// aboveFloor: an earlier answer of this Send showed the entry reached
	// Loki's ingester at or above its stream's too-far-behind floor.
	aboveFloor bool
}

// Size is the bytes Loki's rate limits count for the entry: its line and
// its structured metadata's names and values.
func (e *Entry) Size() int {
	n := len(e.Line)
	for _, m := range e.Metadata {
		n += len(m.Name) + len(m.Value)
	}
	return n
}

// Label is one name and value of an entry's structured metadata.
type Label struct{ Name, Value string }

// Stream is entries sharing one label set.
type Stream struct {
	Labels  string // as FormatLabels writes it
	Entries []Entry
}

// FormatLabels writes a label set the way Loki's clients do:
// {a="b", c="d"}, sorted by name, values quoted.
func FormatLabels(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// Field numbers of logproto's PushRequest, Stream, Entry and Timestamp.
const (
	fieldStreams        = 1
	fieldStreamLabels   = 1
	fieldStreamEntries  = 2
	fieldEntryTimestamp = 1
	fieldEntryLine      = 2
	fieldEntryMetadata  = 3
	fieldPairName       = 1
	fieldPairValue      = 2
	fieldSeconds        = 1
	fieldNanos          = 2
)

// AppendPushRequest appends the protobuf encoding of a PushRequest. It is
// byte-identical to github.com/grafana/loki/pkg/push's Marshal (tested),
// without linking gogo/protobuf and gRPC into the shipper.
func AppendPushRequest(b []byte, streams []Stream) []byte {
	size := 0
	for i := range streams {
		size += protowire.SizeTag(fieldStreams) + protowire.SizeBytes(streamSize(&streams[i]))
	}
	b = slices.Grow(b, size)
	for _, s := range streams {
		b = protowire.AppendTag(b, fieldStreams, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(streamSize(&s)))
		b = protowire.AppendTag(b, fieldStreamLabels, protowire.BytesType)
		b = protowire.AppendString(b, s.Labels)
		for _, e := range s.Entries {
			b = protowire.AppendTag(b, fieldStreamEntries, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(entrySize(&e)))
			b = protowire.AppendTag(b, fieldEntryTimestamp, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(timestampSize(e.Time)))
			if sec := e.Time.Unix(); sec != 0 {
				b = protowire.AppendTag(b, fieldSeconds, protowire.VarintType)
				b = protowire.AppendVarint(b, uint64(sec))
			}
			if ns := e.Time.Nanosecond(); ns != 0 {
				b = protowire.AppendTag(b, fieldNanos, protowire.VarintType)
				b = protowire.AppendVarint(b, uint64(ns))
			}
			if len(e.Line) > 0 {
				b = protowire.AppendTag(b, fieldEntryLine, protowire.BytesType)
				b = protowire.AppendBytes(b, e.Line)
			}
			for _, m := range e.Metadata {
				b = protowire.AppendTag(b, fieldEntryMetadata, protowire.BytesType)
				b = protowire.AppendVarint(b, uint64(pairSize(m)))
				if m.Name != "" {
					b = protowire.AppendTag(b, fieldPairName, protowire.BytesType)
					b = protowire.AppendString(b, m.Name)
				}
				if m.Value != "" {
					b = protowire.AppendTag(b, fieldPairValue, protowire.BytesType)
					b = protowire.AppendString(b, m.Value)
				}
			}
		}
	}
	return b
}

func pairSize(m Label) int {
	n := 0
	if m.Name != "" {
		n += protowire.SizeTag(fieldPairName) + protowire.SizeBytes(len(m.Name))
	}
	if m.Value != "" {
		n += protowire.SizeTag(fieldPairValue) + protowire.SizeBytes(len(m.Value))
	}
	return n
}

func timestampSize(t time.Time) int {
	n := 0
	if sec := t.Unix(); sec != 0 {
		n += protowire.SizeTag(fieldSeconds) + protowire.SizeVarint(uint64(sec))
	}
	if ns := t.Nanosecond(); ns != 0 {
		n += protowire.SizeTag(fieldNanos) + protowire.SizeVarint(uint64(ns))
	}
	return n
}

func entrySize(e *Entry) int {
	ts := timestampSize(e.Time)
	n := protowire.SizeTag(fieldEntryTimestamp) + protowire.SizeBytes(ts)
	if len(e.Line) > 0 {
		n += protowire.SizeTag(fieldEntryLine) + protowire.SizeBytes(len(e.Line))
	}
	for _, m := range e.Metadata {
		n += protowire.SizeTag(fieldEntryMetadata) + protowire.SizeBytes(pairSize(m))
	}
	return n
}

func streamSize(s *Stream) int {
	n := protowire.SizeTag(fieldStreamLabels) + protowire.SizeBytes(len(s.Labels))
	for i := range s.Entries {
		n += protowire.SizeTag(fieldStreamEntries) + protowire.SizeBytes(entrySize(&s.Entries[i]))
	}
	return n
}

// Body returns the snappy block-compressed push request (Loki's default
// encoding for application/x-protobuf).
func Body(streams []Stream) []byte {
	return snappy.Encode(nil, AppendPushRequest(nil, streams))
}

// ParseLabels reads a label string as Loki prints it ({a="b", c="d"}, values
// Go-quoted); what it cannot read is left out.
func ParseLabels(s string) map[string]string {
	out := map[string]string{}
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	for s != "" {
		s = strings.TrimLeft(s, ", ")
		name, rest, ok := strings.Cut(s, "=")
		if !ok {
			break
		}
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			break
		}
		v, _ := strconv.Unquote(q)
		out[strings.TrimSpace(name)] = v
		s = rest[len(q):]
	}
	return out
}
