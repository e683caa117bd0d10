package dump

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/winobs/winobs/internal/testkit/fixture"
)

func samples(t *testing.T) [][]byte {
	var out [][]byte
	for _, f := range fixture.Glob(t, 6, fixture.EventLog, "*.xml") {
		out = append(out, fixture.Read(t, fixture.EventLog, filepath.Base(f)))
	}
	return out
}

// wevtutil separates events with a line break (CRLF on Windows).
func dumpOf(events [][]byte, sep string) []byte {
	var b bytes.Buffer
	for _, e := range events {
		b.Write(e)
		b.WriteString(sep)
	}
	return b.Bytes()
}

func toUTF16(b []byte, bom bool) []byte {
	var out []byte
	if bom {
		out = append(out, 0xFF, 0xFE)
	}
	for _, u := range utf16.Encode([]rune(string(b))) {
		out = append(out, byte(u), byte(u>>8))
	}
	return out
}

func write(t *testing.T, data []byte) string {
	p := filepath.Join(t.TempDir(), "dump.xml")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readAll(t *testing.T, r *Reader) []Record {
	var out []Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

func TestReadsEveryEncoding(t *testing.T) {
	events := samples(t)
	plain := dumpOf(events, "\r\n")
	for name, data := range map[string][]byte{
		"utf8": plain, "utf8-bom": append([]byte{0xEF, 0xBB, 0xBF}, plain...),
		"utf16": toUTF16(plain, false), "utf16-bom": toUTF16(plain, true),
		"no separators": dumpOf(events, ""),
	} {
		r, err := Open(write(t, data), 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		recs := readAll(t, r)
		r.Close()
		if len(recs) != len(events) {
			t.Fatalf("%s: %d records, want %d", name, len(recs), len(events))
		}
		for i, rec := range recs {
			if !bytes.Equal(rec.XML, events[i]) {
				t.Errorf("%s: record %d differs", name, i)
			}
		}
		if last := recs[len(recs)-1].Offset; last > int64(len(data)) || int64(len(data))-last > 4 {
			t.Errorf("%s: last offset %d, file %d bytes", name, last, len(data))
		}
	}
}

// A saved offset resumes exactly after the last event read.
func TestResumeFromOffset(t *testing.T) {
	events := samples(t)
	path := write(t, toUTF16(dumpOf(events, "\r\n"), true))
	r, _ := Open(path, 0, 1<<20)
	first, _ := r.Next()
	second, _ := r.Next()
	r.Close()
	r, err := Open(path, first.Offset, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	again, err := r.Next()
	if err != nil || !bytes.Equal(again.XML, second.XML) || again.Offset != second.Offset {
		t.Errorf("resumed at %d: got %q (%d), want the second event (%d)", first.Offset, again.XML[:40], again.Offset, second.Offset)
	}
}

// An event still being written is returned once it is complete.
func TestGrowingFile(t *testing.T) {
	events := samples(t)
	path := write(t, events[0])
	r, _ := Open(path, 0, 1<<20)
	defer r.Close()
	if recs := readAll(t, r); len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	half := len(events[1]) / 2
	f.Write(append([]byte("\r\n"), events[1][:half]...))
	if recs := readAll(t, r); len(recs) != 0 {
		t.Fatalf("a partial event was returned")
	}
	f.Write(events[1][half:])
	f.Close()
	recs := readAll(t, r)
	if len(recs) != 1 || !bytes.Equal(recs[0].XML, events[1]) {
		t.Fatalf("the completed event was not returned")
	}
}

func TestOversizedEventIsSkipped(t *testing.T) {
	events := samples(t)
	huge := []byte("<Event><EventData><Data>" + strings.Repeat("x", 200<<10) + "</Data></EventData></Event>")
	// A limit below one read (64 KiB) and above it: the event is skipped
	// whether or not it arrives whole.
	for _, limit := range []int{40 << 10, 100 << 10} {
		testOversized(t, events, huge, limit)
	}
}

func testOversized(t *testing.T, events [][]byte, huge []byte, limit int) {
	r, _ := Open(write(t, dumpOf([][]byte{events[0], huge, events[1]}, "\n")), 0, limit)
	defer r.Close()
	var got []string
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, ErrTooLarge) {
			got = append(got, "too large")
			continue
		}
		got = append(got, string(rec.XML[:20]))
	}
	if len(got) != 3 || got[1] != "too large" {
		t.Errorf("limit %d: got %q", limit, got)
	}
}

func TestLoneSurrogateBecomesReplacement(t *testing.T) {
	data := toUTF16([]byte("<Event><RenderingInfo><Message>a"), true)
	data = append(data, 0x00, 0xD8) // a lone high surrogate
	data = append(data, toUTF16([]byte("b é中😀</Message></RenderingInfo></Event>"), false)...)
	r, _ := Open(write(t, data), 0, 1<<20)
	defer r.Close()
	rec, err := r.Next()
	if err != nil || !strings.Contains(string(rec.XML), "a\uFFFDb é中😀<") {
		t.Errorf("got %q, %v", rec.XML, err)
	}
}

// A truncated event costs only itself.
func TestTruncatedEventDoesNotSwallowTheNext(t *testing.T) {
	events := samples(t)
	cut := events[0][:len(events[0])/2]
	r, _ := Open(write(t, dumpOf([][]byte{cut, events[1], events[2]}, "\r\n")), 0, 1<<20)
	defer r.Close()
	recs := readAll(t, r)
	if len(recs) != 3 || !bytes.Equal(recs[1].XML, events[1]) || !bytes.Equal(recs[2].XML, events[2]) {
		t.Fatalf("got %d records", len(recs))
	}
	if !bytes.HasPrefix(recs[0].XML, cut[:40]) {
		t.Errorf("the truncated event was not returned alone")
	}
}

// A dump whose encoding changes part-way (PowerShell 5.1's >> appends
// UTF-16LE to a UTF-8 file; the reverse too), at either parity, with or
// without a BOM at the join, is read whole; a resume from any offset in the
// second part reads the rest.
func TestEncodingChangesPartWay(t *testing.T) {
	events := samples(t)
	a, b := dumpOf(events, "\r\n"), dumpOf(events[:3], "\r\n")
	for name, data := range map[string][]byte{
		"utf8 then utf16":            append(bytes.Clone(a), toUTF16(b, false)...),
		"utf8 then utf16 with BOM":   append(bytes.Clone(a), toUTF16(b, true)...),
		"utf8 (odd) then utf16":      append(append(bytes.Clone(a), 'x'), toUTF16(b, false)...),
		"utf16 then utf8":            append(toUTF16(a, true), b...),
		"utf16 then utf8 with BOM":   append(toUTF16(a, true), append([]byte{0xEF, 0xBB, 0xBF}, b...)...),
		"utf16 then utf8 then utf16": append(append(toUTF16(a, true), append(b, 'y')...), toUTF16(b, false)...),
	} {
		want := len(events) + 3
		if strings.Count(name, "then") == 2 {
			want += 3
		}
		r, err := Open(write(t, data), 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		recs := readAll(t, r)
		r.Close()
		if len(recs) != want {
			t.Fatalf("%s: %d records, want %d", name, len(recs), want)
		}
		for i, rec := range recs {
			if !bytes.Equal(rec.XML, events[i%len(events)]) && !bytes.Equal(rec.XML, events[(i-len(events))%3]) {
				t.Errorf("%s: record %d differs: %.60q", name, i, rec.XML)
			}
		}
		// Resume after every record: the rest is the same records.
		for i := range recs[:len(recs)-1] {
			r, _ := Open(write(t, data), recs[i].Offset, 1<<20)
			rest := readAll(t, r)
			r.Close()
			if len(rest) != len(recs)-i-1 || !bytes.Equal(rest[0].XML, recs[i+1].XML) {
				t.Errorf("%s: resumed after record %d: %d records", name, i, len(rest))
			}
		}
	}
}

// A UTF-16 dump torn by one byte (a code unit split) loses only the event
// the tear is in, handed on whole as a record that will not parse: the
// reader realigns at the next start tag.
func TestTornUTF16Realigns(t *testing.T) {
	events := samples(t)
	data := toUTF16(dumpOf(events, "\r\n"), true)
	second := bytes.Index(data[10:], utf16le("<Event xmlns")) + 10
	torn := append(bytes.Clone(data[:second+101]), data[second+102:]...) // one byte gone inside event 2
	r, _ := Open(write(t, torn), 0, 1<<20)
	recs := readAll(t, r)
	r.Close()
	if len(recs) != len(events) {
		t.Fatalf("%d records, want %d (the torn one included)", len(recs), len(events))
	}
	for i, rec := range recs {
		if ok := bytes.Equal(rec.XML, events[i]); ok == (i == 1) {
			t.Errorf("record %d intact %v: %.60q", i, ok, rec.XML)
		}
	}
}

// "</Event>" inside a CDATA section or a comment does not end the event;
// in both encodings.
func TestEndTagInCDATAOrComment(t *testing.T) {
	events := samples(t)
	odd := []byte(strings.Replace(string(events[0]), "</System>", "<!-- </Event> --></System>", 1))
	odd = []byte(strings.Replace(string(odd), "</EventData>", "<Data Name='x'><![CDATA[a </Event> <Event b]]></Data></EventData>", 1))
	if bytes.Equal(odd, events[0]) {
		t.Fatal("the sample has no System or EventData to edit")
	}
	list := [][]byte{events[1], odd, events[2]}
	for name, data := range map[string][]byte{"utf8": dumpOf(list, "\r\n"), "utf16": toUTF16(dumpOf(list, "\r\n"), true)} {
		r, _ := Open(write(t, data), 0, 1<<20)
		recs := readAll(t, r)
		r.Close()
		if len(recs) != 3 || !bytes.Equal(recs[1].XML, odd) || !bytes.Equal(recs[2].XML, events[2]) {
			t.Errorf("%s: %d records", name, len(recs))
		}
	}
}

// An event of thousands of comments or CDATA sections (under
// maxEventBytes) is read in one pass: the bytes searched grow with the
// dump, not with its square, in both encodings. (Was: each comment searched
// to the end tag again: 9k/18k/36k comments took 0.35/1.37/5.49 s.)
func TestManyCommentsReadInOnePass(t *testing.T) {
	events := samples(t)
	for _, kind := range []string{"<!-- c -->", "<![CDATA[c]]>", "<!-- </Event> -->"} {
		for _, n := range []int{9000, 36000} {
			odd := []byte(strings.Replace(string(events[0]), "</EventData>", strings.Repeat(kind, n)+"</EventData>", 1))
			list := [][]byte{events[1], odd, events[2]}
			for name, data := range map[string][]byte{"utf8": dumpOf(list, "\r\n"), "utf16": toUTF16(dumpOf(list, "\r\n"), true)} {
				r, _ := Open(write(t, data), 0, 4<<20)
				recs := readAll(t, r)
				r.Close()
				if len(recs) != 3 || !bytes.Equal(recs[1].XML, odd) {
					t.Fatalf("%s %d×%q: %d records", name, n, kind, len(recs))
				}
				// Each byte is looked at by a few searches (end, start,
				// CDATA, comment, their closes) and again as the buffer
				// grows: a constant, whatever n.
				if per := float64(r.scanned) / float64(len(data)); per > 20 {
					t.Errorf("%s %d×%q: %.0f bytes searched per byte of the dump", name, n, kind, per)
				}
			}
		}
	}
}
