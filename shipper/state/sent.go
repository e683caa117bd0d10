package state

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
)

// sentPath is where a channel's sent mark is kept, beside its checkpoint.
func (s *Store) sentPath(channel string) string {
	return strings.TrimSuffix(s.Path(channel), ".checkpoint") + ".sent"
}

// SaveSent records, before a push, the position of the newest event it
// holds: after a crash, the events from the checkpoint up to this mark may
// be in Loki already (the push may have been stored and not acknowledged),
// and the next run treats them so, and changes a channel's lanes only
// after it (a replay must land in the stream its first copy went to).
//
// So it must still be written when the disk is full, as the checkpoint may
// not be: it lives in a file of two fixed slots, created once and then
// overwritten in place, which needs no new block (NTFS, ext4, tmpfs). Each
// slot is numbered and checksummed and the newer valid one counts; a write
// goes to the older, so a torn write damages only a mark whose push has not
// begun. A disk that refuses even that (read-only, failing, copy-on-write
// and full) makes the save fail, which the caller reports.
func (s *Store) SaveSent(cp Checkpoint) error {
	cp.Bookmark = "" // a replay is recognised by record id; keeps the slot small
	path := s.sentPath(cp.Channel)
	f, slots, err := openSent(path)
	if err != nil {
		return fmt.Errorf("the sent mark: %w", err)
	}
	if f == nil { // none yet, or one from before the slots: made once
		data, err := s.encodeSlot(sentRecord{Seq: 1, Checkpoint: cp})
		if err != nil {
			return err
		}
		data = append(data, make([]byte, sentSlot)...)
		if err := CreateNew(path+".tmp", data); err != nil {
			return fmt.Errorf("creating the sent mark: %w", err)
		}
		return os.Rename(path+".tmp", path)
	}
	defer f.Close()
	older, seq := 0, uint64(0)
	for i, r := range slots {
		seq = max(seq, r.Seq)
		if r.Seq < slots[older].Seq {
			older = i
		}
	}
	data, err := s.encodeSlot(sentRecord{Seq: seq + 1, Checkpoint: cp})
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, int64(older*sentSlot)); err != nil {
		return fmt.Errorf("writing the sent mark: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing the sent mark: %w", err)
	}
	return f.Close()
}

// Sent returns the channel's sent mark, if a valid one exists.
func (s *Store) Sent(channel string) (Checkpoint, bool) {
	path := s.sentPath(channel)
	data, err := s.readRaw(path)
	if err != nil {
		return Checkpoint{}, false
	}
	if len(data) != sentSlot*sentSlots { // a mark from before the slots
		cp, err := decode(data, path, channel)
		return cp, err == nil
	}
	best, ok := sentRecord{}, false
	for _, r := range parseSlots(data) {
		if r.Seq > best.Seq && r.Channel == channel {
			best, ok = r, true
		}
	}
	return best.Checkpoint, ok
}

// The sent mark's file: sentSlots slots of sentSlot bytes.
const (
	sentSlot  = 4096
	sentSlots = 2
)

// sentRecord is a sent mark in its slot; Seq orders the slots (0: empty or
// damaged).
type sentRecord struct {
	Seq uint64 `json:"seq"`
	Checkpoint
}

// encodeSlot is r as its slot holds it, padded with zeros.
func (s *Store) encodeSlot(r sentRecord) ([]byte, error) {
	r.Saved = s.now().UTC()
	data, err := seal(r)
	if err != nil {
		return nil, err
	}
	if len(data) > sentSlot {
		return nil, fmt.Errorf("the sent mark of %s takes %d bytes, more than its slot's %d (a dump path that long?)", r.Channel, len(data), sentSlot)
	}
	return append(data, make([]byte, sentSlot-len(data))...), nil
}

// parseSlots reads every slot; a damaged one reads as Seq 0.
func parseSlots(data []byte) []sentRecord {
	slots := make([]sentRecord, sentSlots)
	for i := range slots {
		var r sentRecord
		if err := verify(bytes.TrimRight(data[i*sentSlot:(i+1)*sentSlot], "\x00"), "", &r); err == nil {
			slots[i] = r
		}
	}
	return slots
}

// openSent opens the sent mark's file for writing in place, and reads its
// slots. It returns a nil file when there is none to write in place (none
// yet, or one from before the slots).
func openSent(path string) (*os.File, []sentRecord, error) {
	f, err := OpenInPlace(path, sentSlot*sentSlots)
	if f == nil || err != nil {
		return nil, nil, err
	}
	data := make([]byte, sentSlot*sentSlots)
	if _, err := f.ReadAt(data, 0); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, parseSlots(data), nil
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)
