package eventxml

import (
	"strconv"
	"unicode/utf8"
)

// appendLine writes l as encoding/json writes the line struct (same keys,
// order, omissions and escaping) without reflection. Tests hold it to
// encoding/json's output, including on fuzzed input.
func appendLine(b []byte, l *line) []byte {
	b = append(b, '{')
	first := true
	key := func(k string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			b = appendJSONString(b, v)
		}
	}
	num := func(k string, v uint64) {
		if v != 0 {
			key(k)
			b = strconv.AppendUint(b, v, 10)
		}
	}
	str("source", l.Source)
	str("channel", l.Channel)
	str("computer", l.Computer)
	if l.EventID != 0 {
		key("event_id")
		b = strconv.AppendInt(b, int64(l.EventID), 10)
	}
	num("version", uint64(l.Version))
	num("level", uint64(l.Level))
	num("task", uint64(l.Task))
	num("opCode", uint64(l.OpCode))
	str("levelText", l.LevelText)
	str("taskText", l.TaskText)
	str("opCodeText", l.OpCodeText)
	str("keywords", l.Keywords)
	str("timeCreated", l.TimeCreated)
	num("eventRecordID", uint64(l.EventRecordID))
	if c := l.Correlation; c != nil {
		key("correlation")
		b, first = append(b, '{'), true
		str("activityID", c.ActivityID)
		str("relatedActivityID", c.RelatedActivityID)
		b, first = append(b, '}'), false
	}
	if x := l.Execution; x != nil {
		key("execution")
		b, first = append(b, '{'), true
		num("processId", uint64(x.ProcessID))
		num("threadId", uint64(x.ThreadID))
		str("processName", x.ProcessName)
		b, first = append(b, '}'), false
	}
	if s := l.Security; s != nil {
		key("security")
		b, first = append(b, '{'), true
		str("userId", s.UserID)
		str("userName", s.UserName)
		b, first = append(b, '}'), false
	}
	str("user_data", l.UserData)
	str("event_data", l.EventData)
	str("message", l.Message)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// jsonSafe marks the ASCII bytes copied as they are.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString quotes s as encoding/json does with HTML escaping on.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		for i < len(s) && s[i] < utf8.RuneSelf && jsonSafe[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
