// Package dump reads event log dumps written by
// `wevtutil qe <channel> /f:RenderedXml [/uni:true]`: <Event> documents back
// to back with no root element, UTF-8 or UTF-16LE (with or without a BOM).
// Each event comes with the file offset just past it, the checkpoint to
// resume from. It runs on every OS: for backfill, tests and benchmarks.
package dump

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/winobs/winobs/conffile"
)

// Record is one event of a dump.
type Record struct {
	XML    []byte // the <Event> document, UTF-8
	Offset int64  // file offset just after it
}

// Reader reads records from a dump file. At the end of the file Next returns
// io.EOF and keeps any partial event, so a file that is still being written
// can be read again later from where it stopped.
type Reader struct {
	f       *os.File
	info    os.FileInfo // the file opened, to tell it from one that replaced it
	fp      string
	utf16   bool
	align   int64  // in UTF-16: the parity of the file offsets code units start at
	buf     []byte // undecoded bytes from file offset base
	base    int64
	maxSize int
	// skipping: an oversized event is being skipped and its end is not in
	// the file yet (it is still being written).
	skipping bool
	// scanned counts the bytes searched for markers, for the test that
	// holds reading linear.
	scanned int
}

// fingerprintBytes is how much of a file's start identifies it: the first
// event's header (channel, record id, time) at least.
const fingerprintBytes = 4096

// Fingerprint identifies a file by its first bytes, as "<n>:<sha256 hex>":
// a file appended to keeps it, one truncated and rewritten or replaced by
// another dump does not. Files shorter than n bytes get their length.
func Fingerprint(f io.ReaderAt) (string, error) {
	buf := make([]byte, fingerprintBytes)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return fingerprintOf(buf[:n]), nil
}

func fingerprintOf(b []byte) string {
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%d:%x", len(b), sum[:16])
}

// SameStart reports whether the file at path begins as the file with
// fingerprint fp did: false when it is shorter, or its first bytes differ.
func SameStart(path, fp string) (bool, error) {
	n, _, ok := strings.Cut(fp, ":")
	size, err := strconv.Atoi(n)
	if !ok || err != nil || size < 0 || size > fingerprintBytes {
		return false, fmt.Errorf("fingerprint %q is not of this package", fp)
	}
	f, err := conffile.OpenRegular(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, size)
	m, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return m == size && fingerprintOf(buf) == fp, nil
}

// patterns are the markers an encoding writes: an event's start and end
// tags, and the sections whose text may hold "</Event>" without ending it.
type patterns struct {
	start, end, cdata, cdataEnd, comment, commentEnd []byte
}

func encoded(enc func(string) []byte) patterns {
	return patterns{enc("<Event"), enc("</Event>"), enc("<![CDATA["), enc("]]>"), enc("<!--"), enc("-->")}
}

var (
	utf8Patterns  = encoded(func(s string) []byte { return []byte(s) })
	utf16Patterns = encoded(utf16le)
	// maxStart is the longest start tag of either encoding: the bytes kept
	// at the end of the buffer while looking for the next event.
	maxStart = len(utf16Patterns.start)
)

func utf16le(s string) []byte {
	b := make([]byte, 0, 2*len(s))
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}

// ErrTooLarge reports an event larger than the reader's limit; the reader
// skips it so one oversized record cannot stall the stream.
var ErrTooLarge = errors.New("event exceeds the size limit")

// Open opens path and positions it at offset (0, or a saved checkpoint).
// maxEvent bounds the size of one event in the file.
func Open(path string, offset int64, maxEvent int) (*Reader, error) {
	// A device or pipe would never end (or block): only files are dumps.
	f, err := conffile.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	fp, err := Fingerprint(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	r := &Reader{f: f, info: info, fp: fp, maxSize: maxEvent}
	// The encoding is decided by the start of the file, whatever the offset.
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	r.utf16 = bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || (len(head) >= 2 && head[1] == 0 && head[0] != 0)
	if offset == 0 && bytes.HasPrefix(head, []byte{0xFF, 0xFE}) {
		offset = 2
	}
	if offset == 0 && bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}) {
		offset = 3
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	r.base = offset
	return r, nil
}

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// Fingerprint is the opened file's, taken when it was opened.
func (r *Reader) Fingerprint() string { return r.fp }

// Refingerprint extends a fingerprint taken while the file was shorter than
// fingerprintBytes to the file's longer start (the caller has checked that
// the start is unchanged).
func (r *Reader) Refingerprint() {
	if n, _, _ := strings.Cut(r.fp, ":"); n != strconv.Itoa(fingerprintBytes) {
		if fp, err := Fingerprint(r.f); err == nil {
			r.fp = fp
		}
	}
}

// Info describes the opened file (for os.SameFile).
func (r *Reader) Info() os.FileInfo { return r.info }

// Read is how far into the file the reader has read, partial events
// included.
func (r *Reader) Read() int64 { return r.base + int64(len(r.buf)) }

// Rest returns what is left at the end of a file that will not grow any
// more: an event cut short (its bytes, for the caller to count as
// malformed), or an oversized event whose end never came (ErrTooLarge).
// The returned offset is the end of what was read.
func (r *Reader) Rest() (Record, error) {
	s := r.nextStart(0, len(r.buf))
	var raw []byte
	if s >= 0 {
		raw = r.text(r.buf[s:])
	}
	r.advance(len(r.buf))
	switch {
	case r.skipping:
		r.skipping = false
		return Record{Offset: r.base}, fmt.Errorf("%w (%d bytes, cut short)", ErrTooLarge, r.maxSize)
	case s >= 0:
		return Record{XML: raw, Offset: r.base}, nil
	}
	return Record{Offset: r.base}, io.EOF
}

// text is a copy of raw file bytes as UTF-8.
func (r *Reader) text(raw []byte) []byte {
	if r.utf16 {
		return decodeUTF16(raw)
	}
	return bytes.Clone(raw)
}

// Next returns the next complete event, io.EOF when none is complete yet, or
// ErrTooLarge (the record is skipped; the returned offset is past it).
func (r *Reader) Next() (Record, error) { return r.NextContext(context.Background()) }

// NextContext is Next, returning ctx's error as soon as ctx is done, even
// in the middle of a long stretch without events.
func (r *Reader) NextContext(ctx context.Context) (Record, error) {
	for {
		if r.skipping {
			// The oversized event's end may still be being written: it is
			// counted when it comes (or when the file ends without it).
			if err := r.skipPast(ctx, r.pats().end); err != nil {
				return Record{}, err
			}
			r.skipping = false
			return Record{Offset: r.base}, fmt.Errorf("%w (%d bytes)", ErrTooLarge, r.maxSize)
		}
		if s := r.nextStart(0, len(r.buf)); s >= 0 {
			if stop := r.eventEnd(s); stop >= 0 {
				raw := r.buf[s:stop]
				r.advance(stop)
				if r.maxSize > 0 && len(raw) > r.maxSize {
					return Record{Offset: r.base}, fmt.Errorf("%w (%d bytes)", ErrTooLarge, r.maxSize)
				}
				return Record{XML: r.text(raw), Offset: r.base}, nil
			}
			if r.maxSize > 0 && len(r.buf)-s > r.maxSize {
				// Drop the oversized event up to its end, wherever that is.
				r.advance(len(r.buf))
				r.skipping = true
				continue
			}
		} else if len(r.buf) > maxStart {
			// Nothing but separators so far: drop them.
			r.advance(len(r.buf) - maxStart)
		}
		if err := ctx.Err(); err != nil {
			return Record{}, err
		}
		if err := r.fill(); err != nil {
			return Record{}, err
		}
	}
}

func (r *Reader) advance(n int) {
	r.buf = r.buf[n:]
	r.base += int64(n)
}

// fill reads more of the file into the buffer's spare capacity; io.EOF when
// there is nothing more now.
func (r *Reader) fill() error {
	// An event not yet whole is searched again after each read: reads that
	// grow with it keep that linear in its size.
	chunk := max(64<<10, len(r.buf))
	if cap(r.buf)-len(r.buf) < chunk {
		// Move the unread tail to a fresh buffer with room: the old one may
		// hold megabytes of consumed events in front of it.
		nb := make([]byte, len(r.buf), len(r.buf)+2*chunk)
		copy(nb, r.buf)
		r.buf = nb
	}
	n, err := r.f.Read(r.buf[len(r.buf):cap(r.buf)])
	r.buf = r.buf[:len(r.buf)+n]
	if n > 0 {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return io.EOF
	}
	return err
}

// pats are the current encoding's markers.
func (r *Reader) pats() *patterns {
	if r.utf16 {
		return &utf16Patterns
	}
	return &utf8Patterns
}

// find returns the index of pat in the buffer at or after from; in UTF-16
// only at code unit boundaries (file offsets of the current alignment).
func (r *Reader) find(pat []byte, from int) int { return r.findBefore(pat, from, len(r.buf)) }

// findBefore is find for a pat that ends at or before limit.
func (r *Reader) findBefore(pat []byte, from, limit int) int {
	for from <= limit {
		i := bytes.Index(r.buf[from:limit], pat)
		r.searched(i, from, limit, pat)
		if i < 0 {
			return -1
		}
		if !r.utf16 || (r.base+int64(from+i)-r.align)&1 == 0 {
			return from + i
		}
		from += i + 1
	}
	return -1
}

// searched counts what a search looked at: up to its match, or all of
// [from, limit).
func (r *Reader) searched(i, from, limit int, pat []byte) {
	if i < 0 {
		r.scanned += limit - from
	} else {
		r.scanned += i + len(pat)
	}
}

// nextStart finds the next start tag <Event itself (not <EventID or
// <EventData: the name is followed by white space, '>' or '/') in either
// encoding, in [from, limit), and makes the reader read in that encoding
// from there. Encodings are decided event by event because a dump may
// change encoding part-way (PowerShell 5.1's >> appends UTF-16LE to a UTF-8
// file), and a UTF-16 start at the other parity realigns the reader after
// a torn code unit; neither encoding's tag can occur inside the other's text
// (one holds NUL bytes, the other never does).
func (r *Reader) nextStart(from, limit int) int {
	s8 := r.tagAt(utf8Patterns.start, 1, from, limit)
	s16 := r.tagAt(utf16Patterns.start, 2, from, limit)
	switch {
	case s8 >= 0 && (s16 < 0 || s8 < s16):
		r.utf16 = false
		return s8
	case s16 >= 0:
		r.utf16, r.align = true, (r.base+int64(s16))&1
		return s16
	}
	return -1
}

// tagAt finds the start tag pat (code units of unit bytes) at any offset
// in [from, limit).
func (r *Reader) tagAt(pat []byte, unit, from, limit int) int {
	for from < limit {
		i := bytes.Index(r.buf[from:limit], pat)
		r.searched(i, from, limit, pat)
		if i < 0 {
			return -1
		}
		i += from
		next := i + len(pat)
		if next+unit > len(r.buf) {
			return -1 // wait for the next byte
		}
		switch c := r.buf[next]; {
		case (c == ' ' || c == '>' || c == '/' || c == '\t' || c == '\r' || c == '\n') && (unit == 1 || r.buf[next+1] == 0):
			return i
		}
		from = i + 1
	}
	return -1
}

// eventEnd returns where the event that starts at s ends: just past its
// </Event>, passing over one inside a CDATA section or a comment; or at the
// next event's start when that comes first (the event was cut short: it is
// returned alone, to be counted as malformed, rather than swallow the next,
// good one). -1 while the end is not in the buffer yet.
func (r *Reader) eventEnd(s int) int {
	p := r.pats()
	utf16, align := r.utf16, r.align
	restore := func() { r.utf16, r.align = utf16, align } // nextStart below only looks
	defer restore()
	pos := s + len(p.start)
	// Where each marker next stands in [pos, end) (-1: not there). Found
	// ahead of pos, or not found before the same end, an answer still
	// holds as pos moves up: each marker is looked for again only once
	// passed, or when the end moved (it stood inside a comment), so an
	// event is read in one pass however many comments or CDATA sections
	// it holds (was: a search to the end tag for each, quadratic).
	type found struct{ at, before int }
	end := -2
	var start, cdata, comment found
	look := func(f *found, search func(from, limit int) int) int {
		if f.before != end || f.at >= 0 && f.at < pos {
			*f = found{search(pos, end), end}
		}
		return f.at
	}
	for {
		if end < pos {
			end = r.find(p.end, pos)
		}
		if end < 0 {
			// No end in this encoding and alignment (yet): a torn code
			// unit or a change of encoding hides it; the next start ends
			// the event.
			s2 := r.nextStart(pos, len(r.buf))
			restore()
			return s2
		}
		look(&start, func(from, limit int) int { defer restore(); return r.nextStart(from, limit) })
		look(&cdata, func(from, limit int) int { return r.findBefore(p.cdata, from, limit) })
		look(&comment, func(from, limit int) int { return r.findBefore(p.comment, from, limit) })
		// The earliest of what may stand before the end tag.
		first, kind := end, "end"
		for _, m := range []struct {
			at   int
			kind string
		}{{start.at, "start"}, {cdata.at, "cdata"}, {comment.at, "comment"}} {
			if m.at >= 0 && m.at < first {
				first, kind = m.at, m.kind
			}
		}
		switch kind {
		case "end":
			return end + len(p.end)
		case "start":
			return first
		}
		open, close := p.cdata, p.cdataEnd
		if kind == "comment" {
			open, close = p.comment, p.commentEnd
		}
		c := r.find(close, first+len(open))
		if c < 0 {
			return -1
		}
		pos = c + len(close)
	}
}

func (r *Reader) skipPast(ctx context.Context, end []byte) error {
	for {
		if e := r.find(end, 0); e >= 0 {
			r.advance(e + len(end))
			return nil
		}
		if len(r.buf) > len(end) {
			r.advance(len(r.buf) - len(end))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.fill(); err != nil {
			return err
		}
	}
}

// decodeUTF16 converts UTF-16LE to UTF-8; lone surrogates become U+FFFD.
func decodeUTF16(b []byte) []byte {
	out := make([]byte, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		u := rune(b[i]) | rune(b[i+1])<<8
		switch {
		case u < utf8.RuneSelf:
			out = append(out, byte(u))
			continue
		case utf16.IsSurrogate(u) && u < 0xDC00 && i+3 < len(b):
			if lo := rune(b[i+2]) | rune(b[i+3])<<8; lo >= 0xDC00 && lo <= 0xDFFF {
				u = utf16.DecodeRune(u, lo)
				i += 2
			} else {
				u = utf8.RuneError
			}
		case utf16.IsSurrogate(u):
			u = utf8.RuneError
		}
		out = utf8.AppendRune(out, u)
	}
	return out
}
