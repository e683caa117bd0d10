package eventxml

import (
	"strings"
	"testing"

	"github.com/winobs/winobs/internal/testkit/fixture"
)

// What EvtFormatMessage returns for the samples without RenderingInfo, in
// en-US (services.exe's message table; the 7000 text has the CRLF of %n).
var formatted = map[string]Texts{
	"scm-7036-windows-event-log-stopped.xml": {Level: "Information", Keywords: []string{"Classic"},
		Message: "The Windows Event Log service entered the stopped state."},
	"scm-7036-print-spooler.xml": {Level: "Information", Keywords: []string{"Classic"},
		Message: "The Print Spooler service entered the stopped state."},
	"scm-7000-sql-server-file-not-found.xml": {Level: "Error", Keywords: []string{"Classic"},
		Message: "The SQL Server (MSSQLSERVER) service failed to start due to the following error: \r\nThe system cannot find the file specified."},
	"scm-7031-windows-update-template.xml": {Level: "Error", Keywords: []string{"Classic"},
		Message: "The Windows Update service terminated unexpectedly.  It has done this 1 time(s).  The following corrective action will be taken in 60000 milliseconds: Restart the service."},
	"scm-7009-demo-service-template.xml": {Level: "Error", Keywords: []string{"Classic"},
		Message: "A timeout was reached (30000 milliseconds) while waiting for the Demo Service service to connect.\x00"},
}

// services.exe, as the expected lines assume (looked up on the shipping host).
var lookups = Lookups{ProcessName: func(uint32) string { return "services.exe" }}

func TestLinesMatchAlloy(t *testing.T) {
	for file, want := range fixture.ExpectedLines(t) {
		e, err := Parse(fixture.Read(t, fixture.EventLog, file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var texts *Texts
		if tx, ok := formatted[file]; ok {
			texts = &tx
		} else if e.RenderingInfo == nil {
			t.Fatalf("%s: no texts for an event without RenderingInfo", file)
		}
		got := e.Line(texts, lookups)
		if string(got) != want {
			t.Errorf("%s:\n got  %s\n want %s", file, got, want)
		}
	}
}

// Without publisher metadata Alloy keeps the raw keyword mask and has no texts.
func TestLineWithoutTexts(t *testing.T) {
	e, err := Parse(fixture.Read(t, fixture.EventLog, "scm-7036-print-spooler.xml"))
	if err != nil {
		t.Fatal(err)
	}
	got := e.Line(nil, Lookups{})
	s := string(got)
	if !strings.Contains(s, `"keywords":"0x8080000000000000"`) || strings.Contains(s, "levelText") ||
		strings.Contains(s, "message") || strings.Contains(s, "processName") || !strings.Contains(s, `"execution":{"processId":604,"threadId":4792}`) {
		t.Errorf("line = %s", s)
	}
}

func TestOptionalObjects(t *testing.T) {
	const ev = `<Event xmlns='http://schemas.microsoft.com/win/2004/08/events/event'><System><Provider Name='Microsoft-Windows-Security-Auditing'/>` +
		`<EventID>4624</EventID><Version>2</Version><Level>0</Level><Task>12544</Task><Opcode>0</Opcode><Keywords>0x8020000000000000</Keywords>` +
		`<TimeCreated SystemTime='2025-01-02T03:04:05.1234567Z'/><EventRecordID>99</EventRecordID>` +
		`<Correlation ActivityID='{7A1B2C3D-0000-0000-0000-000000000000}'/><Execution ProcessID='0' ThreadID='0'/>` +
		`<Channel>Security</Channel><Computer>WIN1</Computer><Security UserID='S-1-5-18'/></System>` +
		`<UserData><LogonEvent xmlns='x'><A>1 &amp; 2</A></LogonEvent></UserData></Event>`
	e, err := Parse([]byte(ev))
	if err != nil {
		t.Fatal(err)
	}
	got := e.Line(&Texts{Task: "Logon", Keywords: []string{"Audit Success"}}, Lookups{UserName: func(string) string { return `NT AUTHORITY\SYSTEM` }})
	want := `{"source":"Microsoft-Windows-Security-Auditing","channel":"Security","computer":"WIN1","event_id":4624,"version":2,"task":12544,` +
		`"taskText":"Logon","keywords":"Audit Success","timeCreated":"2025-01-02T03:04:05.1234567Z","eventRecordID":99,` +
		`"correlation":{"activityID":"{7A1B2C3D-0000-0000-0000-000000000000}"},"security":{"userId":"S-1-5-18","userName":"NT AUTHORITY\\SYSTEM"},` +
		`"user_data":"\u003cLogonEvent xmlns='x'\u003e\u003cA\u003e1 \u0026amp; 2\u003c/A\u003e\u003c/LogonEvent\u003e"}`
	if string(got) != want {
		t.Errorf("\n got  %s\n want %s", got, want)
	}
}

func TestTimestamp(t *testing.T) {
	for file, ns := range map[string]int64{
		"scm-7036-windows-event-log-stopped.xml": 1377183104205667300,
		"scm-7036-appxsvc-renderinginfo.xml":     1684766633167089500, // 7 fraction digits
	} {
		e, err := Parse(fixture.Read(t, fixture.EventLog, file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		ts, err := e.Timestamp()
		if err != nil || ts.UnixNano() != ns {
			t.Errorf("%s: %v (%d), want %d", file, err, ts.UnixNano(), ns)
		}
	}
	e, _ := Parse([]byte(`<Event><System><EventID>1</EventID></System></Event>`))
	if _, err := e.Timestamp(); err == nil {
		t.Error("no error for a missing TimeCreated")
	}
}

// BenchmarkParseLine: XML to line for a typical System event.
func BenchmarkParseLine(b *testing.B) {
	raw := fixture.Read(b, fixture.EventLog, "scm-7036-appxsvc-renderinginfo.xml")
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		e, err := Parse(raw)
		if err != nil {
			b.Fatal(err)
		}
		e.Line(nil, lookups)
	}
}
