package eventxml

import (
	"encoding/json"
	"encoding/xml"
	"reflect"
	"strings"
	"testing"

	"github.com/winobs/winobs/internal/testkit/fixture"
)

// parseStd is the reference parser: encoding/xml with the schema's tags.
func parseStd(raw []byte) (*Event, error) {
	var e Event
	return &e, xml.Unmarshal(raw, &e)
}

// stdLine is the reference encoder: encoding/json with HTML escaping.
func stdLine(e *Event, texts *Texts, look Lookups) string {
	l := e.line(texts, look)
	b, err := json.Marshal(&l)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func samples(t testing.TB) map[string][]byte {
	return fixture.EventSamples(t)
}

// Variants of valid XML the scanner must read as encoding/xml does.
var variants = map[string]string{
	"entities":   `<Event><System><Provider Name='A &amp; B &#x41;&#66;'/><EventID>7</EventID><Computer>&lt;pc&gt;</Computer></System><EventData><Data>x &amp; y</Data></EventData></Event>`,
	"cdata":      `<Event><RenderingInfo><Message>a <![CDATA[<b>&c]]> d</Message></RenderingInfo></Event>`,
	"comments":   `<?xml version='1.0'?><!-- c --><Event><!--x--><System><!-- y --><Channel>Sys<!--z-->tem</Channel></System></Event>`,
	"crlf":       "<Event><RenderingInfo Culture='en-US'><Message>line1\r\nline2\rline3\nline4</Message></RenderingInfo></Event>",
	"doubleq":    `<Event xmlns="http://schemas.microsoft.com/win/2004/08/events/event"><System><TimeCreated SystemTime="2024-01-01T00:00:00.1Z"/><Execution ProcessID="4" ThreadID="8"/></System></Event>`,
	"prefixed":   `<e:Event xmlns:e='urn:x'><e:System><e:Provider e:Name='P'/><e:Level>3</e:Level></e:System></e:Event>`,
	"pretty":     "<Event>\n  <System>\n    <Level> 2 </Level>\n    <EventRecordID>\n      42\n    </EventRecordID>\n  </System>\n  <EventData>\n    <Data Name='a'>b</Data>\n  </EventData>\n</Event>\n",
	"userdata":   `<Event><UserData><Ev xmlns='u'><A><B>1</B></A><C/></Ev></UserData><EventData/></Event>`,
	"keywords":   `<Event><RenderingInfo><Keywords><Keyword>Audit Success</Keyword><Keyword/><Keyword>Classic</Keyword></Keywords><Task>T</Task></RenderingInfo></Event>`,
	"unknown":    `<Event><Future a='1'><Deep><Deeper/></Deep></Future><System><Unknown>x</Unknown><Channel>C</Channel></System></Event>`,
	"attrspace":  "<Event><System><Provider Name='a\tb\nc'/></System></Event>",
	"controlchr": "<Event><RenderingInfo><Message>tab\there \u2028 \u00e9\u4e2d\U0001F600</Message></RenderingInfo></Event>",
}

func TestScannerMatchesEncodingXML(t *testing.T) {
	inputs := samples(t)
	for name, v := range variants {
		inputs[name] = []byte(v)
	}
	for name, raw := range inputs {
		want, err := parseStd(raw)
		if err != nil {
			t.Fatalf("%s: the reference parser rejects it: %v", name, err)
		}
		got, err := Parse(raw)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got  %+v\n want %+v", name, got, want)
		}
	}
}

func TestEncoderMatchesEncodingJSON(t *testing.T) {
	weird := []string{"", "plain", `q"b\s`, "<>&", "\x00\x01\x1f\x7f", "\b\f\n\r\t", "\xff\xfe bad utf8 \xc3", "\u2028\u2029", "é中😀", "</script>"}
	for _, s := range weird {
		l := line{Source: s, Message: s, EventData: s, Execution: &execution{ProcessID: 1, ProcessName: s}, Correlation: &correlation{RelatedActivityID: s}}
		std, _ := json.Marshal(&l)
		if got := appendLine(nil, &l); string(got) != string(std) {
			t.Errorf("%q:\n got  %s\n want %s", s, got, std)
		}
	}
}

// FuzzLine: for any input the scanner accepts, the line is what
// encoding/json makes of the same fields, and where encoding/xml also
// accepts the input, both parsers agree.
func FuzzLine(f *testing.F) {
	for _, raw := range samples(f) {
		f.Add(raw)
	}
	for _, v := range variants {
		f.Add([]byte(v))
	}
	look := Lookups{ProcessName: func(uint32) string { return "p.exe" }, UserName: func(s string) string { return s }}
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := Parse(raw)
		if err != nil {
			return
		}
		texts := &Texts{Message: "m\r\n", Level: "Error", Keywords: []string{"a", "b"}}
		got := string(e.AppendLine(nil, texts, look))
		if want := stdLine(e, texts, look); got != want {
			t.Fatalf("encoder differs:\n got  %s\n want %s", got, want)
		}
		if !json.Valid([]byte(got)) {
			t.Fatalf("invalid JSON: %s", got)
		}
		if ref, err := parseStd(raw); err == nil && !strings.Contains(string(raw), "<!DOCTYPE") && !reflect.DeepEqual(e, ref) {
			t.Fatalf("parsers differ:\n scan %+v\n std  %+v", e, ref)
		}
	})
}
