package shipper_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/lokiproc"
)

// Issue 67: a node's Application backlog (its newest an hour old) ships
// behind a live System channel of the same class, so every Application
// entry is re-stamped against the stream's moving newest (limits.
// maxStreamLag), and the shipper is SIGKILLed during that backfill and
// restarted on the same state, as a pod restart during a node's catch-up
// does, each kill while a push is stored and not yet answered. On a real
// Loki 3.7.6: none lost, and none stored twice, as Loki's log queries show
// them and as its metric queries (the detections') count them; the
// control without kills the same. Each replayed entry is stamped as its
// first copy was (the push's pin), and the restarted shipper asks Loki
// which of them it holds before it sends them (Loki drops an identical
// entry only in the chunk that holds the first copy: where a chunk was cut
// between the two, it keeps both, which a metric query counts).
func TestReliabilityBackfillBehindLiveChannelRealLoki(t *testing.T) {
	t.Parallel() // beside the ruler test's waiting; each run its own Loki
	for _, kills := range []int{0, 4} {
		t.Run(fmt.Sprintf("kills=%d", kills), func(t *testing.T) {
			t.Parallel()
			backfillBehindLive(t, kills)
		})
	}
}

func backfillBehindLive(t *testing.T, kills int) {
	// A series an event id in the count below: 40,000 at full length.
	loki := lokiproc.Start(t, lokiproc.Options{Limits: map[string]string{"max_query_series": "100000", "max_entries_limit_per_query": "200000"}})
	// Loki's answers reach the shipper 300 ms after Loki stored the push
	// (a slow network, a busy gateway): each kill lands in that window,
	// where a push is stored and not acknowledged, and the restart replays
	// it.
	stored := make(chan struct{}, 64)
	target, _ := url.Parse(loki.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.StatusCode == http.StatusNoContent {
			select {
			case stored <- struct{}{}:
			default:
			}
			time.Sleep(300 * time.Millisecond)
		}
		return nil
	}
	front := httptest.NewServer(proxy)
	defer front.Close()
	bin := buildShipper(t)
	dir := t.TempDir()
	n := scale(3000, 40000)
	now := time.Now().UTC()
	newest := now.Add(-time.Hour)
	app := filepath.Join(dir, "application.xml")
	editedDump(t, app, n, newest, func(i int, ev string) string {
		ev = replaceBetween(ev, "<Computer>", "</Computer>", "WINNODE01")
		ev = replaceBetween(ev, "<Channel>", "</Channel>", "Application")
		return replaceBetween(ev, "SystemTime='", "'", newest.Add(-time.Duration(n-i)*100*time.Millisecond).Format("2006-01-02T15:04:05.0000000Z"))
	})
	// The live System channel: an event now, then one every 100 ms, as a
	// followed dump grows.
	sys := filepath.Join(dir, "system.xml")
	template := string(fixture.Read(t, fixture.EventLog, "scm-7036-print-spooler.xml"))
	live := func(id int) string {
		ev := replaceBetween(template, "<Computer>", "</Computer>", "WINNODE01")
		ev = replaceBetween(ev, "<EventRecordID>", "</EventRecordID>", fmt.Sprint(id))
		return replaceBetween(ev, "SystemTime='", "'", time.Now().UTC().Format("2006-01-02T15:04:05.0000000Z"))
	}
	writeDump(t, sys, [][]byte{[]byte(live(1))})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f, err := os.OpenFile(sys, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		for id := 2; ; id++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var buf []byte
			for _, u := range utf16.Encode([]rune(live(id) + "\r\n")) {
				buf = append(buf, byte(u), byte(u>>8))
			}
			f.Write(buf)
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	cfg := fmt.Sprintf("loki: {url: %q, minBackoff: 50ms, maxBackoff: 1s}\nlabels: {job: windows-events}\nlabelsFromEnv: {node: NODE_NAME}\n"+
		"dumps:\n  - {path: %q, channel: Application}\n  - {path: %q, channel: System, follow: true}\nstateDir: %q\nlisten: 127.0.0.1:0\n"+
		"", front.URL+"/loki/api/v1/push", app, sys, filepath.Join(dir, "state"))
	path := filepath.Join(dir, "shipper.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() (*exec.Cmd, chan error, *strings.Builder) {
		cmd := exec.Command(bin, "--config", path)
		cmd.Env = append(cmd.Environ(), "NODE_NAME=winnode01")
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return cmd, done, out
	}
	// How many times Loki's log queries show each Application event, read
	// by record id, 500 ids a query: one answer of a single-binary Loki
	// travels between its querier and its frontend as one gRPC message,
	// bounded to 4 MiB by default (server.grpc_server_max_send_msg_size),
	// and the 40,000 events of make reliability in one answer never came;
	// paging by time cannot split the thousands of entries a pin gives one
	// time.
	shown := func() map[string]int {
		counts := map[string]int{}
		const ids = 500
		for low := 100000; low < 100000+n; low += ids { // editedDump numbers the records from 100000
			query := fmt.Sprintf(`{job="windows-events", class="node"} | channel="Application" | json id="eventRecordID" | id >= %d and id < %d`, low, low+ids)
			for _, line := range loki.LinesUpTo(t, "", query, now.Add(-3*time.Hour), time.Now().Add(time.Minute), 3*ids) {
				var l struct {
					ID int `json:"eventRecordID"`
				}
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Fatalf("%v: %s", err, line)
				}
				counts[strconv.Itoa(l.ID)]++
			}
		}
		return counts
	}
	// How many times a metric query counts each, by its record id.
	ids := func() map[string]int {
		counts := map[string]int{}
		samples, _ := loki.Instant(t, "", `sum by (eventRecordID) (count_over_time({job="windows-events", class="node"} | channel="Application" | json eventRecordID="eventRecordID" [3h]))`, time.Now().Add(time.Minute))
		for _, s := range samples {
			counts[s.Metric["eventRecordID"]] = int(s.Value)
		}
		return counts
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 67))
	for k := range kills {
		cmd, done, out := start()
		// Kill after some stored pushes, as one is stored and unanswered.
		for range 1 + rng.IntN(3) {
			for len(stored) > 0 {
				<-stored
			}
			select {
			case <-stored:
			case err := <-done:
				t.Fatalf("kill %d: the shipper stopped: %v\n%s", k, err, out)
			case <-time.After(fixture.Patience):
				t.Fatalf("kill %d: no push stored\n%s", k, out)
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		if got := len(ids()); got >= n {
			t.Fatalf("kill %d: the backlog was delivered before it (make it longer)\n%s", k, out)
		}
	}
	cmd, done, out := start()
	defer func() { cmd.Process.Kill(); <-done }()
	var counts map[string]int
	for deadline := time.Now().Add(fixture.Patience + time.Duration(n)*time.Millisecond); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if counts = ids(); len(counts) >= n {
			break
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("the shipper stopped: %v\n%s", err, out)
		default:
		}
	}
	more := func(counts map[string]int) int {
		twice := 0
		for _, c := range counts {
			if c > 1 {
				twice++
			}
		}
		return twice
	}
	lines := shown()
	t.Logf("%d kills: %d of %d Application events stored; shown by log queries more than once: %d ids; counted by metric queries more than once: %d ids",
		kills, len(counts), n, more(lines), more(counts))
	if len(counts) != n || len(lines) != n || more(lines) != 0 || more(counts) != 0 {
		t.Errorf("%d kills: %d of %d stored, %d shown and %d counted more than once\n%s", kills, len(lines), n, more(lines), more(counts), out)
	}
}
