package shipper_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"

	"io"
	"net/http/httptest"

	"github.com/golang/snappy"
	"github.com/grafana/loki/pkg/push"

	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/shipper/eventxml"
)

// victoriaLogs starts the pinned VictoriaLogs (make test installs it in
// bin/) on a free loopback port with a fresh data directory.
func victoriaLogs(t testing.TB) string {
	t.Helper()
	bin, _ := filepath.Abs("../bin/victoria-logs")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("VictoriaLogs is not installed (%v): CI must run make test", err)
		}
		t.Skip("bin/victoria-logs missing: run make test (it installs VictoriaLogs)")
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "-httpListenAddr="+addr, "-storageDataPath="+t.TempDir(),
		"-retentionPeriod=100y", "-loggerLevel=WARN")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://" + addr
	for deadline := time.Now().Add(fixture.Patience); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("VictoriaLogs did not become healthy")
		}
	}
}

func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// buildShipper compiles the real binary into the test's directory.
func buildShipper(t testing.TB, env ...string) string {
	t.Helper()
	bin, err := build(t.TempDir(), env...)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func build(dir string, env ...string) (string, error) {
	bin := filepath.Join(dir, "eventlog-shipper")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "../cmd/eventlog-shipper")
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the shipper: %v\n%s", err, out)
	}
	return bin, nil
}

// syntheticDump writes n events derived from the real samples (each with its
// own record id and time) as wevtutil /uni:true does: UTF-16LE with a BOM,
// CRLF between events. It returns the lines Alloy would write for them.
func syntheticDump(t testing.TB, path string, n int) []string {
	return syntheticDumpAt(t, path, n, dumpBase)
}

// dumpBase is when synthetic dumps start: recent enough that a Loki with
// default limits takes every event as it is.
var dumpBase = time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)

// eventSpacing is the time between two events of a synthetic dump.
const eventSpacing = 1234567 * time.Microsecond / 10

// syntheticDumpAt is syntheticDump from base; with a computer, every event
// comes from it (one stream, as on one node).
func syntheticDumpAt(t testing.TB, path string, n int, base time.Time, computer ...string) []string {
	return editedDump(t, path, n, base, func(_ int, ev string) string {
		if len(computer) > 0 {
			ev = replaceBetween(ev, "<Computer>", "</Computer>", computer[0])
		}
		return ev
	})
}

// editedDump is syntheticDumpAt with every event passed through edit (its
// index, its XML) before it is written.
func editedDump(t testing.TB, path string, n int, base time.Time, edit func(int, string) string) []string {
	var templates []string
	for _, f := range fixture.Glob(t, 6, fixture.EventLog, "*.xml") {
		templates = append(templates, string(fixture.Read(t, fixture.EventLog, filepath.Base(f))))
	}
	var text strings.Builder
	var lines []string
	for i := range n {
		ev := templates[i%len(templates)]
		ev = replaceBetween(ev, "<EventRecordID>", "</EventRecordID>", fmt.Sprint(100000+i))
		ts := base.Add(time.Duration(i) * eventSpacing).Format("2006-01-02T15:04:05.0000000Z")
		ev = edit(i, replaceBetween(ev, "SystemTime='", "'", ts))
		text.WriteString(ev + "\r\n")
		e, err := eventxml.Parse([]byte(ev))
		if err != nil {
			t.Fatal(err)
		}
		line := e.Line(nil, eventxml.Lookups{})
		lines = append(lines, string(line))
	}
	units := utf16.Encode([]rune(text.String()))
	buf := []byte{0xFF, 0xFE}
	for _, u := range units {
		buf = append(buf, byte(u), byte(u>>8))
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	return lines
}

func replaceBetween(s, open, close, value string) string {
	i := strings.Index(s, open) + len(open)
	j := i + strings.Index(s[i:], close)
	return s[:i] + value + s[j:]
}

// query runs a LogsQL query and returns the result rows.
func query(t *testing.T, base, q string) []map[string]string {
	resp, err := http.PostForm(base+"/select/logsql/query", url.Values{"query": {q}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rows []map[string]string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row map[string]string
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%v: %s", err, sc.Bytes())
		}
		rows = append(rows, row)
	}
	return rows
}

// writeConfig is the shipper's config for a dump into VictoriaLogs at base.
func writeConfig(t testing.TB, dir, base, dumpPath string, extra string) string {
	return writeConfigURL(t, dir, base+"/insert/loki/api/v1/push?disable_message_parsing=1", dumpPath, extra)
}

// writeConfigURL is the shipper's config for a dump pushed to push.
func writeConfigURL(t testing.TB, dir, push, dumpPath string, extra string) string {
	cfg := fmt.Sprintf(`loki:
  minBackoff: 50ms
  maxBackoff: 1s
  url: %s
labels:
  job: windows-events
labelsFromEnv:
  node: NODE_NAME
dumps:
  - {path: %q, channel: System}
stateDir: %q
listen: %s
batch: {maxBytes: 262144, maxWait: 200ms}
%s`, push, dumpPath, filepath.Join(dir, "state"), freeAddr(t), extra)
	p := filepath.Join(dir, "shipper.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEndToEndVictoriaLogs ships a dump of 5000 events through the real
// binary into a real Loki-protocol receiver and reads every line back.
func TestEndToEndVictoriaLogs(t *testing.T) {
	base := victoriaLogs(t)
	bin := buildShipper(t)
	dir := t.TempDir()
	dumpPath := filepath.Join(dir, "System.xml")
	want := syntheticDump(t, dumpPath, 5000)

	cmd := exec.Command(bin, "--config", writeConfig(t, dir, base, dumpPath, ""))
	cmd.Env = append(os.Environ(), "NODE_NAME=k8s-lab-win-1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Run() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shipper failed: %v\n%s", err, stderr.String())
		}
	case <-ctx.Done():
		cmd.Process.Kill()
		t.Fatalf("shipper did not finish the dump\n%s", stderr.String())
	}

	var rows []map[string]string
	for deadline := time.Now().Add(fixture.Patience); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		rows = query(t, base, `{job="windows-events"}`)
		if len(rows) >= len(want) {
			break
		}
	}
	if len(rows) != len(want) {
		t.Fatalf("VictoriaLogs holds %d entries, want %d", len(rows), len(want))
	}
	var got []string
	for _, r := range rows {
		got = append(got, r["_msg"])
		if r["node"] != "k8s-lab-win-1" || r["channel"] != "System" || r["computer"] == "" {
			t.Fatalf("labels of %v", r)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("line %d:\n got  %s\n want %s", i, got[i], want[i])
		}
	}
	// The entry time is the event's TimeCreated.
	sample := rows[0]
	var line struct {
		TimeCreated string `json:"timeCreated"`
	}
	json.Unmarshal([]byte(sample["_msg"]), &line)
	tc, _ := time.Parse(time.RFC3339Nano, line.TimeCreated)
	vt, _ := time.Parse(time.RFC3339Nano, sample["_time"])
	if !tc.Equal(vt) {
		t.Errorf("_time %s, timeCreated %s", sample["_time"], line.TimeCreated)
	}

	// A second run resumes from the checkpoint: nothing is sent again.
	again := exec.Command(bin, "--config", filepath.Join(dir, "shipper.yaml"))
	again.Env = cmd.Env
	out, err := again.CombinedOutput()
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	time.Sleep(1500 * time.Millisecond)
	if n := len(query(t, base, `{job="windows-events"}`)); n != len(want) {
		t.Errorf("after a restart VictoriaLogs holds %d entries, want %d (no replay)", n, len(want))
	}
}

// Bad config: all problems at once, exit 2.
func TestShipperBadConfig(t *testing.T) {
	bin := buildShipper(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.yaml")
	os.WriteFile(p, []byte("loki: {url: ftp://x}\nstartAt: yesterday\nbatch: {maxBytes: 10}\nbogus: 1\n"+
		"listen: 0.0.0.0:9498\nlabelsFromEnv: {node: \"NODE-NAME\"}\nlimits: {tooOld: keep}\n"), 0o644)
	cmd := exec.Command(bin, "--config", p)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2\n%s", err, out)
	}
	for _, want := range []string{p + ":1: loki.url", p + ":2: startAt", p + ":3: batch.maxBytes", p + ":4: bogus: unknown field",
		"configure at least one channel or dump", p + ":5: listen: must be a loopback", p + ":6: labelsFromEnv.node: must name an environment variable",
		p + ":7: limits.tooOld"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Credentials: never in the URL (and never echoed), token and basic auth exclusive.
	os.WriteFile(p, []byte("loki: {url: \"https://bob:hunter2@loki.example/loki/api/v1/push\", basicAuth: {username: u, passwordFile: /p}, bearerTokenFile: /t}\ndumps: [{path: x, channel: S}]\n"), 0o644)
	out, _ = exec.Command(bin, "--config", p).CombinedOutput()
	if !strings.Contains(string(out), "loki.url: must not carry credentials") || strings.Contains(string(out), "hunter2") ||
		!strings.Contains(string(out), "loki.bearerTokenFile: use either") {
		t.Errorf("credential checks:\n%s", out)
	}
}

// countingReceiver accepts pushes after a delay and counts each line.
type countingReceiver struct {
	mu    sync.Mutex
	lines map[string]int
	delay time.Duration
	first chan struct{}
	once  sync.Once
}

// decodePush reads a protobuf+snappy push request, with Loki's own types.
func decodePush(r *http.Request) (*push.PushRequest, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	body, err := snappy.Decode(nil, raw)
	if err != nil {
		return nil, err
	}
	var req push.PushRequest
	return &req, req.Unmarshal(body)
}

func (c *countingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	time.Sleep(c.delay)
	req, err := decodePush(r)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	c.mu.Lock()
	for _, s := range req.Streams {
		for _, e := range s.Entries {
			c.lines[e.Line]++
		}
	}
	c.mu.Unlock()
	c.once.Do(func() { close(c.first) })
	w.WriteHeader(204)
}

// SIGTERM mid-stream: reading stops, what was read is delivered, checkpoints
// are saved and the exit status is 0; the next start delivers the rest, and
// with a clean stop nothing arrives twice.
func TestSIGTERMDeliversThenResumes(t *testing.T) {
	rec := &countingReceiver{lines: map[string]int{}, delay: 30 * time.Millisecond, first: make(chan struct{})}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	bin := buildShipper(t)
	dir := t.TempDir()
	dumpPath := filepath.Join(dir, "System.xml")
	want := syntheticDump(t, dumpPath, 3000)
	// Small batches and a small in-flight budget: reading is held back, so
	// the stop lands mid-stream.
	cfg := writeConfig(t, dir, srv.URL, dumpPath, "maxInFlightBytes: 131072\nmaxEventBytes: 65536\n")
	os.WriteFile(cfg, []byte(strings.Replace(mustRead(t, cfg), "maxBytes: 262144", "maxBytes: 65536", 1)), 0o644)

	cmd := exec.Command(bin, "--config", cfg)
	cmd.Env = append(os.Environ(), "NODE_NAME=n1")
	var out bytes.Buffer
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-rec.first:
	case err := <-exited:
		t.Fatalf("the shipper exited before its first push: %v\n%s", err, out.String())
	case <-time.After(fixture.Patience):
		cmd.Process.Kill()
		t.Fatalf("no push within %v\n%s", fixture.Patience, out.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, out.String())
		}
	case <-time.After(fixture.Patience):
		cmd.Process.Kill()
		t.Fatalf("no exit within %v of SIGTERM", fixture.Patience)
	}
	rec.mu.Lock()
	delivered := len(rec.lines)
	rec.mu.Unlock()
	if delivered == 0 || delivered >= len(want) {
		t.Fatalf("delivered %d of %d before the stop: the test did not stop mid-stream", delivered, len(want))
	}

	again := exec.Command(bin, "--config", cfg)
	again.Env = cmd.Env
	if out, err := again.CombinedOutput(); err != nil {
		t.Fatalf("restart: %v\n%s", err, out)
	}
	for _, l := range want {
		if n := rec.lines[l]; n != 1 {
			t.Fatalf("an event arrived %d times", n)
		}
	}
	if len(rec.lines) != len(want) {
		t.Fatalf("%d distinct lines, want %d", len(rec.lines), len(want))
	}
}

func mustRead(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
