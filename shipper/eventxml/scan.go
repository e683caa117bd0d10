package eventxml

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A hand-written scanner for the event schema. encoding/xml needs ~80 µs
// per event; this needs a few. It accepts the XML that EvtRender and wevtutil
// write (elements, single- or double-quoted attributes, the predefined and
// numeric character references, comments, CDATA, processing instructions)
// and gives the same results as encoding/xml for it: tests compare both.

var errTruncated = errors.New("unexpected end of event XML")

// Pseudo-tags for what is not an element.
var (
	cdataTag = []byte("#cdata")
	skipTag  = []byte("#skip")
)

func (t tag) is(name string) bool { return string(t.name) == name }

// other is a comment, processing instruction or CDATA section.
func (t tag) other() bool { return len(t.name) > 0 && t.name[0] == '#' }

type scanner struct {
	src []byte
	pos int
}

type tag struct {
	name      []byte // local name, without a namespace prefix
	attrs     []byte // raw attribute text
	end       bool   // </name>
	selfClose bool   // <name/>
}

// next returns the next tag, and in text the character data before it.
func (s *scanner) next() (t tag, text []byte, err error) {
	i := bytes.IndexByte(s.src[s.pos:], '<')
	if i < 0 {
		return tag{}, s.src[s.pos:], errTruncated
	}
	text = s.src[s.pos : s.pos+i]
	s.pos += i
	rest := s.src[s.pos:]
	switch {
	case bytes.HasPrefix(rest, []byte("<!--")):
		return s.skipTo("<!--", "-->", text)
	case bytes.HasPrefix(rest, []byte("<?")):
		return s.skipTo("<?", "?>", text)
	case bytes.HasPrefix(rest, []byte("<![CDATA[")):
		end := bytes.Index(rest, []byte("]]>"))
		if end < 0 {
			return tag{}, nil, errTruncated
		}
		// CDATA is text: return it as a pseudo-tag the caller appends.
		s.pos += end + 3
		return tag{name: cdataTag, attrs: rest[len("<![CDATA["):end]}, text, nil
	case bytes.HasPrefix(rest, []byte("<!")):
		return s.skipDirective(text)
	}
	end := tagEnd(rest)
	if end < 0 {
		return tag{}, nil, errTruncated
	}
	body := rest[1:end]
	s.pos += end + 1
	if len(body) > 0 && body[0] == '/' {
		t.end = true
		body = body[1:]
	}
	if len(body) > 0 && body[len(body)-1] == '/' {
		t.selfClose = true
		body = body[:len(body)-1]
	}
	n := 0
	for n < len(body) && !isSpace(body[n]) {
		n++
	}
	if n == 0 {
		return tag{}, nil, fmt.Errorf("empty tag name at offset %d", s.pos-end-1)
	}
	t.name = localName(body[:n])
	t.attrs = body[n:]
	return t, text, nil
}

// inTag marks the bytes that end a run inside a tag.
var inTag = [256]bool{'"': true, '\'': true, '<': true, '>': true}

// tagEnd finds the '>' closing a tag, skipping quoted attribute values.
func tagEnd(b []byte) int {
	for i := 1; i < len(b); i++ {
		for i < len(b) && !inTag[b[i]] {
			i++
		}
		if i == len(b) {
			return -1
		}
		switch c := b[i]; c {
		case '>':
			return i
		case '<':
			return -1
		default: // a quoted value
			end := bytes.IndexByte(b[i+1:], c)
			if end < 0 {
				return -1
			}
			i += end + 1
		}
	}
	return -1
}

// skipDirective skips <!DOCTYPE ...> and the like as encoding/xml reads
// them: the byte after "<!" is content whatever it is, quoted '>' and nested
// '<' ... '>' pairs do not end the directive.
func (s *scanner) skipDirective(text []byte) (tag, []byte, error) {
	b := s.src[s.pos:]
	if len(b) < 3 {
		return tag{}, nil, errTruncated
	}
	var quote byte
	depth := 0
	for i := 3; i < len(b); i++ {
		c := b[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '>' && depth == 0:
			s.pos += i + 1
			return tag{name: skipTag}, text, nil
		case c == '\'' || c == '"':
			quote = c
		case c == '>':
			depth--
		case c == '<':
			depth++
		}
	}
	return tag{}, nil, errTruncated
}

// skipTo skips a comment or processing instruction that starts with open
// and ends with marker.
func (s *scanner) skipTo(open, marker string, text []byte) (tag, []byte, error) {
	// The end is looked for after the opening: "<!-->" does not close
	// itself, nor "<?>".
	end := bytes.Index(s.src[s.pos+len(open):], []byte(marker))
	if end < 0 {
		return tag{}, nil, errTruncated
	}
	s.pos += len(open) + end + len(marker)
	return tag{name: skipTag}, text, nil
}

// localName drops a namespace prefix as encoding/xml does: at the first
// colon, when neither side is empty.
func localName(b []byte) []byte {
	if i := bytes.IndexByte(b, ':'); i >= 1 && i <= len(b)-2 {
		return b[i+1:]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// attr returns the decoded value of the attribute with the given local
// name; of a name given twice (not well-formed, and never in Windows' XML),
// the last, as encoding/xml, and so Alloy, keeps it.
func attr(attrs []byte, name string) (string, error) {
	var found []byte
	for len(attrs) > 0 {
		i := 0
		for i < len(attrs) && isSpace(attrs[i]) {
			i++
		}
		attrs = attrs[i:]
		eq := bytes.IndexByte(attrs, '=')
		if eq < 0 {
			break
		}
		key := localName(bytes.TrimSpace(attrs[:eq]))
		rest := bytes.TrimLeft(attrs[eq+1:], " \t\r\n")
		if len(rest) == 0 || (rest[0] != '"' && rest[0] != '\'') {
			return "", errors.New("unquoted attribute value")
		}
		end := bytes.IndexByte(rest[1:], rest[0])
		if end < 0 {
			return "", errTruncated
		}
		if string(key) == name {
			found = rest[1 : 1+end]
		}
		attrs = rest[end+2:]
	}
	if found == nil {
		return "", nil
	}
	v, err := unescape(found)
	return string(v), err
}

// unescape decodes character references and turns CRLF and CR into LF, as
// encoding/xml (and so Alloy) does, in text and attributes alike.
func unescape(b []byte) ([]byte, error) {
	if bytes.IndexByte(b, '&') < 0 && bytes.IndexByte(b, '\r') < 0 {
		return b, nil
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				i++
			}
			out = append(out, '\n')
		case c == '&':
			semi := bytes.IndexByte(b[i:], ';')
			if semi < 0 {
				return nil, errors.New("unterminated character reference")
			}
			ref := string(b[i+1 : i+semi])
			i += semi
			switch ref {
			case "lt":
				out = append(out, '<')
			case "gt":
				out = append(out, '>')
			case "amp":
				out = append(out, '&')
			case "quot":
				out = append(out, '"')
			case "apos":
				out = append(out, '\'')
			default:
				r, err := charRef(ref)
				if err != nil {
					return nil, err
				}
				out = utf8.AppendRune(out, r)
			}
		default:
			out = append(out, c)
		}
	}
	return out, nil
}

func charRef(ref string) (rune, error) {
	var n uint64
	var err error
	switch {
	case strings.HasPrefix(ref, "#x"):
		n, err = strconv.ParseUint(ref[2:], 16, 32)
	case strings.HasPrefix(ref, "#"):
		n, err = strconv.ParseUint(ref[1:], 10, 32)
	default:
		return 0, fmt.Errorf("unknown entity &%s;", ref)
	}
	if err != nil || !isXMLChar(rune(n)) {
		return 0, fmt.Errorf("invalid character reference &%s;", ref)
	}
	return rune(n), nil
}

// isXMLChar is the XML 1.0 Char production, as encoding/xml checks it.
func isXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// element reads up to the end tag of the element just opened and returns its
// decoded text (the concatenated character data of its direct content) and
// its raw inner XML.
func (s *scanner) element(name []byte) (text, inner []byte, err error) {
	start := s.pos
	depth := 0
	var buf []byte
	pieces := 0
	add := func(p []byte) {
		if len(p) == 0 {
			return
		}
		if pieces++; pieces == 1 {
			buf = p // usually the only piece: no copy
			return
		}
		if pieces == 2 {
			buf = append([]byte(nil), buf...)
		}
		buf = append(buf, p...)
	}
	for {
		before := s.pos
		t, chunk, err := s.next()
		if err != nil {
			return nil, nil, err
		}
		if depth == 0 {
			d, err := unescape(chunk)
			if err != nil {
				return nil, nil, err
			}
			add(d)
			if t.is("#cdata") {
				add(t.attrs)
			}
		}
		switch {
		case t.other():
		case t.end:
			if depth == 0 {
				if string(t.name) != string(name) {
					return nil, nil, fmt.Errorf("element <%s> closed by </%s>", name, t.name)
				}
				return buf, s.src[start : before+len(chunk)], nil
			}
			depth--
		case !t.selfClose:
			depth++
		}
	}
}

// children calls fn with the start tag of each child element of parent,
// until parent's end tag; fn reads the child (s.element) unless it is
// self-closing.
func (s *scanner) children(parent string, fn func(t tag) error) error {
	for {
		t, _, err := s.next()
		if err != nil {
			return err
		}
		switch {
		case t.other():
			continue
		case t.end:
			if !t.is(parent) {
				return fmt.Errorf("element <%s> closed by </%s>", parent, t.name)
			}
			return nil
		}
		if err := fn(t); err != nil {
			return err
		}
	}
}

// parseFast fills an Event from raw XML with the scanner.
func parseFast(raw []byte) (*Event, error) {
	s := &scanner{src: raw}
	e := &Event{}
	// Find the root <Event>.
	for {
		t, _, err := s.next()
		if err != nil {
			return nil, err
		}
		if t.other() {
			continue
		}
		if t.end || !t.is("Event") {
			return nil, fmt.Errorf("root element is <%s>, not <Event>", t.name)
		}
		if t.selfClose {
			return e, nil
		}
		break
	}
	err := s.children("Event", func(t tag) error {
		if t.selfClose {
			return nil
		}
		switch string(t.name) {
		case "System":
			return s.children("System", func(t tag) error {
				if err := s.systemField(&e.System, t); err != nil {
					//lint:ignore ST1005 the message starts with the XML path, whose element names are capitalised
					return fmt.Errorf("System/%s: %w", t.name, err)
				}
				return nil
			})
		case "EventData", "UserData":
			_, inner, err := s.element(t.name)
			if t.is("EventData") {
				e.EventData.Inner = string(inner)
			} else {
				e.UserData.Inner = string(inner)
			}
			return err
		case "RenderingInfo":
			e.RenderingInfo = &renderingInfo{}
			return s.renderingInfo(e.RenderingInfo)
		}
		_, _, err := s.element(t.name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (s *scanner) systemField(sys *system, t tag) error {
	var err error
	switch string(t.name) {
	case "Provider":
		sys.Provider.Name, err = attr(t.attrs, "Name")
	case "TimeCreated":
		sys.TimeCreated.SystemTime, err = attr(t.attrs, "SystemTime")
	case "Correlation":
		if sys.Correlation.ActivityID, err = attr(t.attrs, "ActivityID"); err == nil {
			sys.Correlation.RelatedActivityID, err = attr(t.attrs, "RelatedActivityID")
		}
	case "Execution":
		var pid, tid string
		if pid, err = attr(t.attrs, "ProcessID"); err == nil {
			tid, err = attr(t.attrs, "ThreadID")
		}
		if err == nil {
			sys.Execution.ProcessID, err = uintAttr(pid, 32)
		}
		if err == nil {
			sys.Execution.ThreadID, err = uintAttr(tid, 32)
		}
	case "Security":
		sys.Security.UserID, err = attr(t.attrs, "UserID")
	}
	if err != nil || t.selfClose {
		return err
	}
	text, _, err := s.element(t.name)
	if err != nil {
		return err
	}
	v := string(text)
	switch string(t.name) {
	case "EventID":
		sys.EventID = v
	case "Version":
		n, err := uintText(v, 8)
		sys.Version = uint8(n)
		return err
	case "Level":
		n, err := uintText(v, 8)
		sys.Level = uint8(n)
		return err
	case "Task":
		n, err := uintText(v, 16)
		sys.Task = uint16(n)
		return err
	case "Opcode":
		n, err := uintText(v, 8)
		sys.Opcode = uint8(n)
		return err
	case "Keywords":
		sys.Keywords = v
	case "EventRecordID":
		n, err := uintText(v, 64)
		sys.EventRecordID = n
		return err
	case "Channel":
		sys.Channel = v
	case "Computer":
		sys.Computer = v
	}
	return nil
}

// uintText parses element text as encoding/xml does: surrounding space
// trimmed, empty is zero.
func uintText(v string, bits int) (uint64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	return strconv.ParseUint(v, 10, bits)
}

func uintAttr(v string, bits int) (uint32, error) {
	n, err := uintText(v, bits)
	return uint32(n), err
}

func (s *scanner) renderingInfo(r *renderingInfo) error {
	return s.children("RenderingInfo", func(t tag) error {
		switch {
		case t.selfClose:
			return nil
		case t.is("Keywords"):
			return s.keywords(r)
		}
		text, _, err := s.element(t.name)
		switch string(t.name) {
		case "Message":
			r.Message = string(text)
		case "Level":
			r.Level = string(text)
		case "Task":
			r.Task = string(text)
		case "Opcode":
			r.Opcode = string(text)
		}
		return err
	})
}

func (s *scanner) keywords(r *renderingInfo) error {
	return s.children("Keywords", func(t tag) error {
		switch {
		case t.is("Keyword") && t.selfClose:
			r.Keywords = append(r.Keywords, "")
		case t.is("Keyword"):
			text, _, err := s.element(t.name)
			r.Keywords = append(r.Keywords, string(text))
			return err
		case !t.selfClose:
			_, _, err := s.element(t.name)
			return err
		}
		return nil
	})
}
