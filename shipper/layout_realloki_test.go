package shipper_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/lokiproc"
)

// Issue 67: a Loki that refuses structured metadata, configured as an
// upgraded install is (lokiproc.Options.Upgraded). The shipper in the
// metadata layout gets Loki's 400 for every push: it stores nothing, drops
// nothing, counts push_errors_total{reason="disallowed_structured_metadata"},
// /readyz names the setting, and no checkpoint moves; started again on the
// same state in the layout without metadata (logs.structuredMetadata:
// false), it delivers every event once, each channel a stream labelled
// with it, and the detections' selection (vocab, that layout) counts each
// channel's events exactly.
func TestLayoutWithoutMetadataRealLoki(t *testing.T) {
	t.Parallel() // beside the ruler test's waiting
	loki := lokiproc.Start(t, lokiproc.Options{Upgraded: true})
	bin := buildShipper(t)
	byChannel := fixtureEventsByChannel(t)
	dir := t.TempDir()
	var dumps strings.Builder
	total := 0
	for channel, events := range byChannel {
		path := filepath.Join(dir, channel+".xml")
		writeDump(t, path, events)
		fmt.Fprintf(&dumps, "  - {path: %q, channel: %q}\n", path, channel)
		total += len(events)
	}
	state := filepath.Join(dir, "state")
	run := func(metadata bool) (*exec.Cmd, string, chan error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listen := ln.Addr().String()
		ln.Close()
		cfg := fmt.Sprintf("loki: {url: %q, minBackoff: 50ms, maxBackoff: 500ms}\nlabels: {job: windows-events}\nlabelsFromEnv: {node: NODE_NAME}\n"+
			"structuredMetadata: %t\ndumps:\n%sstateDir: %q\nlisten: %s\ntimestamp: read\n", loki.URL+"/loki/api/v1/push", metadata, dumps.String(), state, listen)
		path := filepath.Join(dir, fmt.Sprintf("shipper-%t.yaml", metadata))
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--config", path)
		cmd.Env = append(cmd.Environ(), "NODE_NAME=upgraded")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { cmd.Process.Kill() })
		return cmd, "http://" + listen, done
	}
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// The metadata layout: refused, waiting, saying why.
	cmd, base, done := run(true)
	var ready, metrics string
	for deadline := time.Now().Add(fixture.Patience); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		code, body := get(base + "/readyz")
		_, metrics = get(base + "/metrics")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "allow_structured_metadata") {
			ready = body
			break
		}
	}
	if ready == "" || !strings.Contains(ready, "loki.structuredMetadata: false") {
		t.Fatalf("/readyz never named the setting and both fixes: %q", ready)
	}
	want := fmt.Sprintf(`%s{reason=%q,status="400"}`, contract.ShipperPushErrors, contract.PushDisallowedMetadata)
	if !strings.Contains(metrics, want) || strings.Contains(metrics, want+" 0\n") {
		t.Errorf("metrics lack a count of %s", want)
	}
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, contract.ShipperEventsDropped+"{") && !strings.HasSuffix(line, " 0") ||
			strings.HasPrefix(line, contract.ShipperEventsSent+"{") && !strings.HasSuffix(line, " 0") {
			t.Errorf("refused, yet: %s", line)
		}
	}
	if lines := loki.Lines(t, "", `{job="windows-events"}`, time.Now().Add(-time.Hour), time.Now()); len(lines) != 0 {
		t.Errorf("Loki stored %d lines it refused", len(lines))
	}
	cmd.Process.Kill()
	<-done

	// The layout without metadata, on the same state: everything, once.
	_, _, done = run(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the shipper without metadata: %v", err)
		}
	case <-time.After(fixture.Patience):
		t.Fatal("the shipper without metadata never delivered its dumps")
	}
	cfg := config.Default()
	cfg.Logs.StructuredMetadata = false
	terms := view.Of(cfg).Rules.Terms
	got := 0
	for channel, events := range byChannel {
		q := fmt.Sprintf(`sum(count_over_time(%s [1h]))`, terms.Channels(nil, channel))
		if !strings.Contains(q, `channel="`+channel+`"}`) {
			t.Errorf("%s: the channel is not matched as a stream label", q)
		}
		var n float64
		for deadline := time.Now().Add(fixture.Patience); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
			samples, _ := loki.Instant(t, "", q, time.Time{})
			if len(samples) == 1 {
				n = samples[0].Value
			}
			if int(n) >= len(events) {
				break
			}
		}
		if int(n) != len(events) {
			t.Errorf("%s: %v events in Loki, %d shipped", channel, n, len(events))
		}
		got += int(n)
	}
	if got != total || total < 10 {
		t.Errorf("%d of %d events stored", got, total)
	}
}
