package shipper_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/lokitest"
	"github.com/winobs/winobs/shipper/loki"
	"github.com/winobs/winobs/shipper/shipconfig"
)

// Regression tests through the real binary for the paths users take that
// the first suite did not walk: backfill behind a live stream, dumps
// rotated and replaced while followed, wrong clocks, Loki's shard rule with
// the old defaults, and a hostile node.

// liveLabels is the stream the harness's dumps land in for computer c.
func liveLabels(c string) string {
	return fmt.Sprintf(`{class="node", computer=%q, job="windows-events", node="reliability"}`, c)
}

// pushLive stores one entry "now" in a stream, as a live agent on the node
// would, so the stream's newest entry is newer than a backfill.
func pushLive(t *testing.T, recv *lokitest.Receiver, labels string) {
	t.Helper()
	body := loki.Body([]loki.Stream{{Labels: labels, Entries: []loki.Entry{{Time: time.Now(), Line: []byte(fmt.Sprintf(`{"live":%q}`, labels))}}}})
	resp, err := http.Post(recv.URL(), "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("live push: %d", resp.StatusCode)
	}
}

// Backfill 3 h old into streams that already hold a live event: Loki
// ignores every entry too far behind, naming ten per answer and answering
// for the last stream of a request only (a 204 there hides the ignored
// entries of the others: the shipper sends one stream a request); all are
// re-stamped inside its window, stored, counted as sent and as re-stamped,
// and a rerun sends nothing. Forwarded events bring many computers, so many
// streams, into one batch.
func TestReliabilityBackfillBehindALiveStream(t *testing.T) {
	for _, computers := range []int{1, 8} {
		t.Run(fmt.Sprintf("%d streams", computers), func(t *testing.T) {
			n := scale(3000, 30000)
			// One stream per computer, the one the live writer holds: lanes
			// would put part of the backfill into streams of its own.
			h := newHarness(t, 1, "limits: {maxLanes: 1}\n")
			h.lines = editedDump(t, h.dump, n, time.Now().UTC().Add(-3*time.Hour), func(i int, ev string) string {
				return replaceBetween(ev, "<Computer>", "</Computer>", fmt.Sprintf("WINNODE%02d", i%computers))
			})
			for c := range computers {
				pushLive(t, h.recv, liveLabels(fmt.Sprintf("WINNODE%02d", c)))
			}
			textfile := h.withTextfile()
			h.mustComplete(scale(2*time.Minute, 10*time.Minute))
			h.counts(textfile, map[string]int{"sent": n, "dropped": 0})
			if got, _ := metricSum(mustRead(t, textfile), "winobs_shipper_events_restamped_total", `reason="too_far_behind"`); got != float64(n) {
				t.Errorf("re-stamped too_far_behind %v, want %d", got, n)
			}
			before := h.recv.Stats().Requests
			h.mustComplete(time.Minute)
			if after := h.recv.Stats().Requests; after != before {
				t.Errorf("a rerun sent %d requests", after-before)
			}
			h.verify(fmt.Sprintf("backfill 3 h behind live streams (%d in one batch): re-stamped into Loki's window", computers), 1)
		})
	}
}

// One event from a clock in the year 9999 and one in 2200 among thousands:
// both are re-stamped to their stream's newest time (timeCreated stays in
// the line), no push is refused, and every other event is stored at its own
// TimeCreated, so replays still deduplicate.
func TestReliabilityWrongClocks(t *testing.T) {
	n := scale(3000, 30000)
	h := newHarness(t, 1, "")
	base := time.Now().UTC().Add(-2 * time.Hour)
	future := map[int]string{n / 2: "9999-12-31T23:59:59.0000000Z", n/2 + 7: "2200-01-01T00:00:00.0000000Z"}
	h.lines = editedDump(t, h.dump, n, base, func(i int, ev string) string {
		ev = replaceBetween(ev, "<Computer>", "</Computer>", "WINNODE01")
		if ts, ok := future[i]; ok {
			ev = replaceBetween(ev, "SystemTime='", "'", ts)
		}
		return ev
	})
	textfile := h.withTextfile()
	h.mustComplete(scale(2*time.Minute, 10*time.Minute))
	h.counts(textfile, map[string]int{"sent": n, "dropped": 0, "push_errors_400": 0})
	if got, _ := metricSum(mustRead(t, textfile), "winobs_shipper_events_restamped_total", `reason="too_new"`); got != 2 {
		t.Errorf("re-stamped too_new %v, want 2", got)
	}
	for i, l := range h.lines {
		want := base.Add(time.Duration(i) * eventSpacing).Truncate(100 * time.Nanosecond) // TimeCreated's precision
		if _, wrong := future[i]; wrong {
			continue
		}
		if at := h.recv.At(l); len(at) != 1 || !at[0].Equal(want) {
			t.Fatalf("event %d stored at %v, want its TimeCreated %v", i, at, want)
		}
	}
	h.verify("events from clocks in 9999 and 2200: re-stamped, the stream untouched", 1)
}

// A followed dump truncated and rewritten, rotated (moved away, a new file
// at the path), and replaced by a smaller file while the shipper is down:
// every event of every file arrives.
func TestReliabilityFollowedDumpRotatedAndReplaced(t *testing.T) {
	n := scale(300, 3000)
	h := newHarness(t, 1, "")
	os.WriteFile(h.cfg, []byte(strings.Replace(mustRead(t, h.cfg), "channel: System}", "channel: System, follow: true}", 1)), 0o644)
	at := func(k int) time.Time { return time.Now().UTC().Add(time.Duration(k-8) * 10 * time.Minute) }
	var all []string
	arrived := func(lines []string) {
		t.Helper()
		for deadline := time.Now().Add(fixture.Patience); ; time.Sleep(50 * time.Millisecond) {
			missing := 0
			for _, l := range lines {
				if !h.recv.Has(l) {
					missing++
				}
			}
			if missing == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d events did not arrive", missing, len(lines))
			}
		}
	}
	all = append(all, syntheticDumpAt(t, h.dump, n, at(0), "WINNODE01")...)
	textfile := h.withTextfile()
	cmd, done, out := h.start()
	arrived(all)
	// Truncated and rewritten in place, shorter.
	step := syntheticDumpAt(t, h.dump, n/3, at(1), "WINNODE01")
	all = append(all, step...)
	arrived(step)
	// Rewritten in place, longer than what was read.
	step = syntheticDumpAt(t, h.dump, 2*n, at(2), "WINNODE01")
	all = append(all, step...)
	arrived(step)
	// Rotated: moved away, a new file at the path.
	os.Rename(h.dump, h.dump+".1")
	step = syntheticDumpAt(t, h.dump, n, at(3), "WINNODE01")
	all = append(all, step...)
	arrived(step)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	firstRun := mustRead(t, textfile)
	// Replaced by a smaller file before the restart.
	step = syntheticDumpAt(t, h.dump, n/2, at(4), "WINNODE01")
	all = append(all, step...)
	cmd, done, out = h.start()
	arrived(step)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for reason, want := range map[string]float64{"truncated": 1, "replaced": 1, "rotated": 1} {
		if got, _ := metricSum(firstRun, "winobs_shipper_dump_reopens_total", `reason="`+reason+`"`); got != want {
			t.Errorf("first run: reopens{reason=%s} = %v, want %v", reason, got, want)
		}
	}
	if got, _ := metricSum(mustRead(t, textfile), "winobs_shipper_dump_reopens_total", `reason="truncated"`); got != 1 {
		t.Errorf("restart onto a smaller file: reopens{reason=truncated} = %v, want 1", got)
	}
	h.lines = all
	h.verify("followed dump truncated, rewritten, rotated, and replaced before a restart", 4)
}

// Loki's shard rule counts each push's bytes as well as the stream's rate:
// with the old caps (1 MiB/s per stream in 1 MiB batches, one stream a
// channel) a catch-up is
// sharded as a real Loki 3.7.6 sharded it; with the defaults it never is,
// and its highest score stays well under the threshold.
func TestReliabilityShardRuleOldAndNewDefaults(t *testing.T) {
	// The measurement on a real Loki: 300,000 events, 12 SIGKILLs with 5 s
	// restart delays (make reliability); shorter here.
	events, kills := scale(20000, 300000), scale(1, 12)
	defaultWait := func(c string) string { return strings.Replace(c, "maxWait: 200ms", "maxWait: 1s", 1) }
	old := catchUpAfterKillsWith(t, "limits: {streamBytesPerSecond: 1048576, maxLanes: 1}\n", func(c string) string {
		return defaultWait(strings.Replace(c, "maxBytes: 262144", "maxBytes: 1048576", 1))
	}, events, kills)
	st := old.recv.Stats()
	t.Logf("old defaults: %d of %d entries sharded, peak score %.2f", st.Sharded, events, st.PeakShardScore)
	// The long run reproduces the real Loki's share (196,071 of 300,000);
	// the short one, on a loaded machine, only that sharding happens.
	if st.Sharded < scale(events/10, events/2) || st.PeakShardScore <= 1 {
		t.Errorf("old defaults: %d of %d entries sharded (peak score %.2f): the model no longer shards as a real Loki did", st.Sharded, events, st.PeakShardScore)
	}
	cur := catchUpAfterKillsWith(t, "", defaultWait, events, kills)
	st = cur.recv.Stats()
	t.Logf("defaults: %d of %d entries sharded, peak score %.2f", st.Sharded, events, st.PeakShardScore)
	if st.Sharded != 0 || st.PeakShardScore > 0.75 {
		t.Errorf("defaults: %d entries sharded, peak score %.2f (want 0 and at most 0.75 of the threshold)", st.Sharded, st.PeakShardScore)
	}
	cur.verify(fmt.Sprintf("%d SIGKILLs at catch-up with the defaults: peak shard score %.2f of Loki's threshold", kills, st.PeakShardScore), kills)
}

// A hostile or careless local user: 2 KB Computer values that differ per
// event (bounded caches and labels cut to Loki's limit), thousands of idle
// connections to the metrics port, two channels the old checkpoint names
// confused, a FIFO as the dump or the password file, a textfile directory
// that does not exist. The shipper stays within its memory limit, delivers
// everything it can, and refuses what it cannot read without blocking.
func TestReliabilityHostileNode(t *testing.T) {
	t.Run("distinct 2 KB computers", func(t *testing.T) {
		n := scale(4000, 20000)
		h := newHarness(t, 1, "")
		h.lines = editedDump(t, h.dump, n, time.Now().UTC().Add(-time.Hour), func(i int, ev string) string {
			return replaceBetween(ev, "<Computer>", "</Computer>", fmt.Sprintf("%06d%s", i, strings.Repeat("W", 2100)))
		})
		textfile := h.withTextfile()
		h.mustComplete(scale(3*time.Minute, 10*time.Minute))
		h.counts(textfile, map[string]int{"sent": n, "dropped": 0})
		h.verify(fmt.Sprintf("%d events with distinct 2 KB computers: labels cut to 2048 bytes, caches bounded", n), 1)
	})
	t.Run("idle connections to the metrics port", func(t *testing.T) {
		h := newHarness(t, scale(3000, 20000), small)
		h.slow(5 * time.Millisecond)
		// Followed, so the shipper runs on once the dump is delivered.
		os.WriteFile(h.cfg, []byte(strings.Replace(mustRead(t, h.cfg), "channel: System}", "channel: System, follow: true}", 1)), 0o644)
		listen := strings.TrimSpace(strings.SplitN(strings.SplitN(mustRead(t, h.cfg), "listen: ", 2)[1], "\n", 2)[0])
		cmd, done, out := h.start()
		for deadline := time.Now().Add(fixture.Patience); ; time.Sleep(20 * time.Millisecond) {
			if resp, err := http.Get("http://" + listen + "/healthz"); err == nil {
				resp.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the metrics listener never answered\n%s", out)
			}
		}
		var conns []net.Conn
		for range 3000 {
			c, err := net.DialTimeout("tcp", listen, time.Second)
			if err != nil {
				t.Fatalf("connection %d: %v", len(conns), err)
			}
			c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"))
			conns = append(conns, c)
		}
		// A thousand slow connections that send their headers a byte at a
		// time hold every slot the listener serves; the kubelet's probes
		// read the health file and pass, every time.
		for range 1000 {
			c, err := net.DialTimeout("tcp", listen, time.Second)
			if err != nil {
				t.Fatalf("slow connection %d: %v", len(conns), err)
			}
			c.Write([]byte("G"))
			conns = append(conns, c)
		}
		bin, _ := sharedBin()
		health := filepath.Join(h.dir, "state", shipconfig.HealthFile)
		for i := range 6 {
			for _, state := range []string{"live", "ready"} {
				if b, err := exec.Command(bin, "probe", health, state).CombinedOutput(); err != nil {
					t.Errorf("probe %d %s with %d connections held: %v %s", i, state, len(conns), err, b)
				}
			}
			time.Sleep(500 * time.Millisecond)
		}
		for _, c := range conns {
			c.Close()
		}
		h.fast()
		for deadline := time.Now().Add(fixture.Patience); h.recv.Stats().Distinct < len(h.lines) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		h.await(cmd, done, out, fixture.Patience)
		h.verify(fmt.Sprintf("%d connections held open to the metrics port (1000 of them slow) while shipping; 12 of 12 probes passed", len(conns)), 1)
	})
	t.Run("two channels the old checkpoint names confused", func(t *testing.T) {
		h := newHarness(t, 1, "")
		second := filepath.Join(h.dir, "sysmon2.xml")
		h.lines = append(syntheticDumpAt(t, h.dump, 200, dumpBase, "A"), syntheticDumpAt(t, second, 200, dumpBase.Add(time.Hour), "B")...)
		conf := strings.Replace(mustRead(t, h.cfg), "channel: System}", fmt.Sprintf("channel: Sysmon/Operational}\n  - {path: %q, channel: Sysmon_Operational}", second), 1)
		os.WriteFile(h.cfg, []byte(conf), 0o644)
		h.mustComplete(time.Minute)
		before := h.recv.Stats().Requests
		h.mustComplete(time.Minute)
		if after := h.recv.Stats().Requests; after != before {
			t.Errorf("a rerun re-shipped: %d requests", after-before)
		}
		if st := h.recv.Stats(); st.Distinct != 400 || st.Duplicates != 0 {
			t.Errorf("stats %+v", st)
		}
	})
	for _, tc := range []struct{ name, edit string }{
		{"a FIFO as the dump", "dump"},
		{"a FIFO as the password file", "password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 10, "")
			fifo := filepath.Join(h.dir, "fifo")
			if err := fixture.Mkfifo(fifo); err != nil {
				t.Skip(err)
			}
			conf := mustRead(t, h.cfg)
			if tc.edit == "dump" {
				conf = strings.Replace(conf, fmt.Sprintf("%q", h.dump), fmt.Sprintf("%q", fifo), 1)
			} else {
				conf = strings.Replace(conf, "  minBackoff: 50ms\n", fmt.Sprintf("  minBackoff: 50ms\n  basicAuth: {username: u, passwordFile: %q}\n  allowInsecureCredentials: true\n", fifo), 1) + "shutdownGrace: 2s\n"
			}
			os.WriteFile(h.cfg, []byte(conf), 0o644)
			cmd, done, out := h.start()
			select {
			case err := <-done: // the dump: refused at once
				var ee *exec.ExitError
				if tc.edit != "dump" || !errors.As(err, &ee) || !strings.Contains(out.String(), "not a regular file") {
					t.Fatalf("%v\n%s", err, out)
				}
				return
			case <-time.After(3 * time.Second):
			}
			// The password: pushes fail, loudly, and SIGTERM still ends it.
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(fixture.Patience):
				cmd.Process.Kill()
				t.Fatalf("SIGTERM did not end the shipper\n%s", out)
			}
			if !strings.Contains(out.String(), "not a regular file") {
				t.Errorf("the refused secret is not named:\n%s", out)
			}
		})
	}
	t.Run("thousands of malformed events", func(t *testing.T) {
		h := newHarness(t, 10, "")
		var dump strings.Builder
		dump.WriteString(string(fixture.Read(t, fixture.EventLog, "scm-7036-print-spooler.xml")) + "\r\n")
		cut := "<Event xmlns='http://schemas.microsoft.com/win/2004/08/events/event'><System><EventID>7036</Sys></Event>"
		for range 2000 {
			dump.WriteString(cut + "\r\n")
		}
		os.WriteFile(h.dump, []byte(dump.String()), 0o644)
		textfile := h.withTextfile()
		out, err := h.run(time.Minute)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if n := strings.Count(out, "not well-formed"); n > 2 {
			t.Errorf("%d log lines for 2,000 malformed events: want one per minute", n)
		}
		if got, _ := metricSum(mustRead(t, textfile), "winobs_shipper_events_dropped_total", `reason="malformed_xml"`); got != 2000 {
			t.Errorf("dropped malformed_xml %v, want 2000", got)
		}
	})
	t.Run("textfile directory missing", func(t *testing.T) {
		h := newHarness(t, 10, "")
		textfile := filepath.Join(h.dir, "not", "yet", "shipper.prom")
		os.WriteFile(h.cfg, []byte(mustRead(t, h.cfg)+"textfile: "+textfile+"\n"), 0o644)
		h.mustComplete(time.Minute)
		if _, err := os.Stat(textfile); err != nil {
			t.Errorf("no textfile: %v", err)
		}
	})
}
