package shipper_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/eventfilter"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/lokiproc"
)

// One channel holding 800 computers' events (a Windows Event Collector's
// ForwardedEvents, a dump of many hosts), shipped at the node's rate into a
// real Loki with its default limits: every event arrives, in the 800
// streams the computers make and not one more, and the tenant can still
// open a new stream for another application. (Was: the channel's rate was
// measured, every computer's stream split up to seven ways, and with 800
// computers the tenant hit max_global_streams_per_user (5,000): pushes
// stalled on 429 at 14,828 of 40,000, and another application's new stream
// was refused too.)
func TestFleetChannelIntoRealLoki(t *testing.T) {
	loki := lokiproc.Start(t, lokiproc.Options{Limits: map[string]string{"max_query_series": "5000"}})
	bin := buildShipper(t)
	dir := t.TempDir()
	dump := filepath.Join(dir, "ForwardedEvents.xml")
	const events, computers = 40000, 800
	base := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	editedDump(t, dump, events, base, func(i int, ev string) string {
		return replaceBetween(ev, "<Computer>", "</Computer>", fmt.Sprintf("WEC-SOURCE-%04d", i%computers))
	})
	cmd := exec.Command(bin, "--config", writeConfigURL(t, dir, loki.URL+"/loki/api/v1/push", dump, ""))
	cmd.Env = append(cmd.Environ(), "NODE_NAME=wec-1")
	done := make(chan error, 1)
	var out strings.Builder
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shipper: %v\n%s", err, out.String())
		}
		t.Logf("%d events of %d computers delivered in %v", events, computers, time.Since(start).Round(100*time.Millisecond))
	case <-time.After(fixture.Patience):
		cmd.Process.Kill()
		t.Fatalf("the shipper did not deliver the dump within %v\n%s", fixture.Patience, out.String())
	}
	if strings.Contains(out.String(), `"status":429`) { // not a port number that holds 429
		t.Errorf("Loki refused pushes:\n%s", out.String())
	}
	sel := `{job="windows-events"}`
	if got := lokiScalar(t, loki, `sum(count_over_time(`+sel+`[3h]))`); got != events {
		t.Errorf("Loki holds %d events, want %d", got, events)
	}
	streams := fmt.Sprintf(`count(count by (%s, %s) (count_over_time(%s[3h])))`, contract.LabelComputer, contract.LabelLane, sel)
	if got := lokiScalar(t, loki, streams); got != computers {
		t.Errorf("%d streams, want %d: one per computer, none split", got, computers)
	}
	// Another application's new stream is still taken.
	body := fmt.Sprintf(`{"streams":[{"stream":{"job":"another-app"},"values":[["%d","hello"]]}]}`, time.Now().UnixNano())
	if code, answer := loki.Push(t, "", "application/json", []byte(body)); code != http.StatusNoContent {
		t.Errorf("another application's new stream: %d %s", code, answer)
	}
}

// lokiScalar is the one sample of an instant LogQL metric query, now.
func lokiScalar(t testing.TB, l *lokiproc.Loki, query string) int {
	return lokiScalarAs(t, l, "", query)
}

// lokiScalarAs is lokiScalar as tenant ("": none).
func lokiScalarAs(t testing.TB, l *lokiproc.Loki, tenant, query string) int {
	t.Helper()
	samples, _ := l.Instant(t, tenant, query, time.Time{})
	if len(samples) != 1 {
		t.Fatalf("%s: %d samples", query, len(samples))
	}
	return int(samples[0].Value)
}

// The security filter of the issue that asked for filters as code, as gen
// compiles it, applied by the shipper to a dump of Security and System
// events into a real Loki: exactly the events it names arrive (4738, which
// it excludes, and the 4624 logon flood do not), with the usual stream
// labels; the event id and account are in the line.
func TestDumpQueryIntoRealLoki(t *testing.T) {
	loki := lokiproc.Start(t, lokiproc.Options{})
	bin := buildShipper(t)
	dir := t.TempDir()
	dump := filepath.Join(dir, "Security.xml")
	var xmls [][]byte
	for _, f := range fixture.Glob(t, 12, fixture.Events, "*.xml") {
		xmls = append(xmls, fixture.Read(t, fixture.Events, filepath.Base(f)))
	}
	writeDump(t, dump, xmls)
	q, err := eventfilter.Compile("Security", []eventfilter.Filter{{Events: []string{"4625", "4740", "4720-4767", "-4738", "1102"}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeConfigURL(t, dir, loki.URL+"/loki/api/v1/push", dump, "")
	conf := strings.Replace(mustRead(t, cfg), "channel: System}", fmt.Sprintf("channel: Security, query: %q}", q), 1)
	os.WriteFile(cfg, []byte(conf+"timestamp: read\n"), 0o644) // the fixtures' times may be past Loki's 7 days
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Env = append(cmd.Environ(), "NODE_NAME=akswin000001")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("shipper: %v\n%s", err, out)
	}
	got := lokiLines(t, loki, `{job="windows-events", class="security"} | channel="Security" | json | line_format "{{.event_id}}"`)
	want := []string{"1102", "4625", "4720", "4732", "4732", "4740"}
	if !slices.Equal(got, want) {
		t.Errorf("event ids in Loki %v, want %v (query %s)", got, want, q)
	}
}

// writeDump writes events as wevtutil's /f:RenderedXml dump does: UTF-16LE
// with a BOM, one event a line.
func writeDump(t testing.TB, path string, events [][]byte) {
	t.Helper()
	var text strings.Builder
	for _, e := range events {
		text.Write(e)
		text.WriteString("\r\n")
	}
	buf := []byte{0xFF, 0xFE}
	for _, u := range utf16.Encode([]rune(text.String())) {
		buf = append(buf, byte(u), byte(u>>8))
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lokiLines are the lines a LogQL log query finds in the last 3 days,
// sorted, once it finds any.
func lokiLines(t *testing.T, l *lokiproc.Loki, query string) []string {
	t.Helper()
	var lines []string
	for deadline := time.Now().Add(fixture.Patience); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		if lines = l.Lines(t, "", query, time.Now().Add(-72*time.Hour), time.Now()); len(lines) > 0 {
			break
		}
	}
	slices.Sort(lines)
	return lines
}
