// Package eventxml turns a Windows event, as EvtRender(EvtRenderEventXml) or
// `wevtutil qe /f:RenderedXml` writes it, into the JSON line Grafana Alloy's
// loki.source.windowsevent writes for it, byte for byte, so queries and
// dashboards work the same with either agent.
package eventxml

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/winobs/winobs/eventfilter"
)

// Event is the parsed XML of one event.
type Event struct {
	System        system         `xml:"System"`
	EventData     innerXML       `xml:"EventData"`
	UserData      innerXML       `xml:"UserData"`
	RenderingInfo *renderingInfo `xml:"RenderingInfo"`
}

type system struct {
	Provider struct {
		Name string `xml:"Name,attr"`
	} `xml:"Provider"`
	EventID     string `xml:"EventID"`
	Version     uint8  `xml:"Version"`
	Level       uint8  `xml:"Level"`
	Task        uint16 `xml:"Task"`
	Opcode      uint8  `xml:"Opcode"`
	Keywords    string `xml:"Keywords"`
	TimeCreated struct {
		SystemTime string `xml:"SystemTime,attr"`
	} `xml:"TimeCreated"`
	EventRecordID uint64 `xml:"EventRecordID"`
	Correlation   struct {
		ActivityID        string `xml:"ActivityID,attr"`
		RelatedActivityID string `xml:"RelatedActivityID,attr"`
	} `xml:"Correlation"`
	Execution struct {
		ProcessID uint32 `xml:"ProcessID,attr"`
		ThreadID  uint32 `xml:"ThreadID,attr"`
	} `xml:"Execution"`
	Channel  string `xml:"Channel"`
	Computer string `xml:"Computer"`
	Security struct {
		UserID string `xml:"UserID,attr"`
	} `xml:"Security"`
}

// innerXML keeps an element's content exactly as rendered.
type innerXML struct {
	Inner string `xml:",innerxml"`
}

// renderingInfo is present on forwarded events and in wevtutil's RenderedXml.
type renderingInfo struct {
	Message  string   `xml:"Message"`
	Level    string   `xml:"Level"`
	Task     string   `xml:"Task"`
	Opcode   string   `xml:"Opcode"`
	Keywords []string `xml:"Keywords>Keyword"`
}

// Texts are what EvtFormatMessage gives for an event on the node that logged
// it, in the configured locale. Events with RenderingInfo carry their own.
type Texts struct {
	Message, Level, Task, Opcode string
	Keywords                     []string
}

// Lookups resolve what Alloy looks up on the shipping host: the image name of
// the logging process and the account name of the user SID. Nil functions, or
// empty answers, leave the fields out, as Alloy does when a lookup fails.
type Lookups struct {
	ProcessName func(pid uint32) string
	UserName    func(sid string) string
}

// Parse decodes one event. A malformed document is an error: the caller
// counts it and decides whether to ship what it can. (The xml struct tags
// document the schema; encoding/xml is the reference the tests compare to.)
func Parse(raw []byte) (*Event, error) {
	e, err := parseFast(raw)
	if err != nil {
		return nil, fmt.Errorf("event XML: %w", err)
	}
	return e, nil
}

// line is Alloy's JSON structure: key order and omitempty as in Alloy's
// formatter (encoding/json gives the same bytes as its json-iterator,
// including the \u003c escapes of <, > and &).
type line struct {
	Source        string       `json:"source,omitempty"`
	Channel       string       `json:"channel,omitempty"`
	Computer      string       `json:"computer,omitempty"`
	EventID       int          `json:"event_id,omitempty"`
	Version       int          `json:"version,omitempty"`
	Level         int          `json:"level,omitempty"`
	Task          int          `json:"task,omitempty"`
	OpCode        int          `json:"opCode,omitempty"`
	LevelText     string       `json:"levelText,omitempty"`
	TaskText      string       `json:"taskText,omitempty"`
	OpCodeText    string       `json:"opCodeText,omitempty"`
	Keywords      string       `json:"keywords,omitempty"`
	TimeCreated   string       `json:"timeCreated,omitempty"`
	EventRecordID int          `json:"eventRecordID,omitempty"`
	Correlation   *correlation `json:"correlation,omitempty"`
	Execution     *execution   `json:"execution,omitempty"`
	Security      *security    `json:"security,omitempty"`
	UserData      string       `json:"user_data,omitempty"`
	EventData     string       `json:"event_data,omitempty"`
	Message       string       `json:"message,omitempty"`
}

type correlation struct {
	ActivityID        string `json:"activityID,omitempty"`
	RelatedActivityID string `json:"relatedActivityID,omitempty"`
}

type execution struct {
	ProcessID   uint32 `json:"processId,omitempty"`
	ThreadID    uint32 `json:"threadId,omitempty"`
	ProcessName string `json:"processName,omitempty"`
}

type security struct {
	UserID   string `json:"userId,omitempty"`
	UserName string `json:"userName,omitempty"`
}

// Line renders the Alloy line. texts is used only when the event carries no
// RenderingInfo (a live event formatted on this node); without either, the
// texts are absent and keywords stay the raw hex mask, as in Alloy.
func (e *Event) Line(texts *Texts, look Lookups) []byte {
	return e.AppendLine(nil, texts, look)
}

// AppendLine appends the Alloy line to b.
func (e *Event) AppendLine(b []byte, texts *Texts, look Lookups) []byte {
	l := e.line(texts, look)
	return appendLine(b, &l)
}

func (e *Event) line(texts *Texts, look Lookups) line {
	s := &e.System
	eventID, _ := strconv.Atoi(strings.TrimSpace(s.EventID))
	l := line{
		Source:        s.Provider.Name,
		Channel:       s.Channel,
		Computer:      s.Computer,
		EventID:       eventID,
		Version:       int(s.Version),
		Level:         int(s.Level),
		Task:          int(s.Task),
		OpCode:        int(s.Opcode),
		Keywords:      s.Keywords,
		TimeCreated:   s.TimeCreated.SystemTime,
		EventRecordID: int(s.EventRecordID),
		UserData:      e.UserData.Inner,
		EventData:     e.EventData.Inner,
	}
	if r := e.RenderingInfo; r != nil {
		texts = &Texts{Message: r.Message, Level: r.Level, Task: r.Task, Opcode: r.Opcode, Keywords: r.Keywords}
	}
	if texts != nil {
		l.LevelText, l.TaskText, l.OpCodeText = texts.Level, texts.Task, texts.Opcode
		l.Message = strings.TrimRight(texts.Message, "\x00")
		if len(texts.Keywords) > 0 {
			l.Keywords = strings.Join(texts.Keywords, ",")
		}
	}
	if c := s.Correlation; c.ActivityID != "" || c.RelatedActivityID != "" {
		l.Correlation = &correlation{ActivityID: c.ActivityID, RelatedActivityID: c.RelatedActivityID}
	}
	if x := s.Execution; x.ProcessID != 0 {
		l.Execution = &execution{ProcessID: x.ProcessID, ThreadID: x.ThreadID}
		if look.ProcessName != nil {
			l.Execution.ProcessName = look.ProcessName(x.ProcessID)
		}
	}
	if sid := s.Security.UserID; sid != "" {
		l.Security = &security{UserID: sid}
		if look.UserName != nil {
			l.Security.UserName = look.UserName(sid)
		}
	}
	return l
}

// Timestamp is TimeCreated as a time: the entry timestamp that makes a replay
// produce identical Loki entries, which Loki then deduplicates.
func (e *Event) Timestamp() (time.Time, error) {
	st := e.System.TimeCreated.SystemTime
	if st == "" {
		return time.Time{}, errors.New("event has no TimeCreated")
	}
	return time.Parse(time.RFC3339Nano, st)
}

// Channel is the channel the event was logged to.
func (e *Event) Channel() string { return e.System.Channel }

// Computer is the name of the computer that logged the event.
func (e *Event) Computer() string { return e.System.Computer }

// RecordID is the event's record number in its channel.
func (e *Event) RecordID() uint64 { return e.System.EventRecordID }

// FilterFields are the event's fields an event query tests.
func (e *Event) FilterFields() eventfilter.Fields {
	id, _ := strconv.Atoi(strings.TrimSpace(e.System.EventID))
	kw, _ := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(e.System.Keywords), "0x"), 16, 64)
	return eventfilter.Fields{Channel: e.System.Channel, Provider: e.System.Provider.Name, EventID: id, Level: int(e.System.Level), Keywords: kw}
}
