package shipper_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/winobs/winobs/internal/testkit/lokitest"
)

// BenchmarkShipperBinary runs the real binary on one core (GOMAXPROCS=1):
// a 50,000-event UTF-16 dump goes XML -> line -> batch -> encode -> push to
// a loopback receiver that accepts everything. It reports events per second,
// the peak RSS of the shipper process and the size of the Windows binary.
func BenchmarkShipperBinary(b *testing.B) {
	const events = 50000
	dir := b.TempDir()
	dumpPath := filepath.Join(dir, "System.xml")
	syntheticDump(b, dumpPath, events)
	bin := buildShipper(b)
	winBin := buildShipper(b, "GOOS=windows", "GOARCH=amd64")
	st, err := os.Stat(winBin)
	if err != nil {
		b.Fatal(err)
	}

	var received atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decodePush(r)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, s := range req.Streams {
			received.Add(int64(len(s.Entries)))
		}
		w.WriteHeader(204)
	}))
	defer srv.Close()

	var elapsed time.Duration
	var peakRSS int64
	runs := 0
	for b.Loop() {
		received.Store(0)
		run := filepath.Join(dir, "run")
		os.MkdirAll(run, 0o755)
		// The rate caps are Loki policy, not processing cost: off here.
		cfg := writeConfig(b, run, srv.URL, dumpPath, "limits: {streamBytesPerSecond: 0, bytesPerSecond: 0}\n")
		cmd := exec.Command(bin, "--config", cfg)
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "NODE_NAME=bench")
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		// ru_maxrss of a child started with vfork counts the parent's pages:
		// poll the child's own high-water mark instead.
		stop := make(chan struct{})
		hwm := make(chan int64)
		go func() { hwm <- pollHWM(cmd.Process.Pid, stop) }()
		err := cmd.Wait()
		elapsed += time.Since(start)
		close(stop)
		peakRSS = max(peakRSS, <-hwm)
		if err != nil {
			b.Fatal(err)
		}
		runs++
		if n := received.Load(); n != events {
			b.Fatalf("receiver got %d events, want %d", n, events)
		}
		os.RemoveAll(run) // the next run ships everything again
	}
	b.ReportMetric(float64(events*runs)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(peakRSS)/(1<<20), "peak_RSS_MiB")
	b.ReportMetric(float64(st.Size())/1e6, "windows_binary_MB")
}

// pollHWM reads VmHWM (peak resident set) of pid until stop, in bytes.
func pollHWM(pid int, stop <-chan struct{}) int64 {
	var peak int64
	path := fmt.Sprintf("/proc/%d/status", pid)
	for {
		if b, err := os.ReadFile(path); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
					kb, _ := strconv.ParseInt(f[1], 10, 64)
					peak = max(peak, kb*1024)
				}
			}
		}
		select {
		case <-stop:
			return peak
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// BenchmarkShipperIntoLoki runs the real binary with the default rate caps
// on one channel and on a node's two channels, into the Loki model (default
// limits and its shard rule) and into VictoriaLogs: events per second per
// channel and per node, and how many entries Loki would have put in a shard
// (where a replay stops being deduplicated).
func BenchmarkShipperIntoLoki(b *testing.B) {
	const events = 120000 // two minutes at one stream's cap; the first seconds are the lanes' ramp
	bin := buildShipper(b)
	for _, tc := range []struct {
		name     string
		channels int
		victoria bool
	}{
		{"loki-model/channels=1", 1, false},
		{"loki-model/channels=2", 2, false},
		{"victorialogs/channels=1", 1, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var perNode, lineBytes float64
			sharded, streams := 0, 0
			for b.Loop() {
				dir := b.TempDir()
				var dumps strings.Builder
				for _, ch := range []string{"System", "Application"}[:tc.channels] {
					p := filepath.Join(dir, ch+".xml")
					// One stream a channel, as on a node: the events' own
					// channel and computer (stream labels) made the same.
					lines := editedDump(b, p, events, dumpBase, func(_ int, ev string) string {
						return replaceBetween(replaceBetween(ev, "<Channel>", "</Channel>", ch), "<Computer>", "</Computer>", "BENCH")
					})
					lineBytes = 0
					for _, l := range lines {
						lineBytes += float64(len(l)) / events
					}
					fmt.Fprintf(&dumps, "  - {path: %q, channel: %s}\n", p, ch)
				}
				var url string
				var recv *lokitest.Receiver
				if tc.victoria {
					url = victoriaLogs(b) + "/insert/loki/api/v1/push?disable_message_parsing=1"
				} else {
					var err error
					if recv, err = lokitest.New(); err != nil {
						b.Fatal(err)
					}
					b.Cleanup(recv.Stop)
					url = recv.URL()
				}
				cfg := filepath.Join(dir, "shipper.yaml")
				os.WriteFile(cfg, []byte(fmt.Sprintf("loki: {url: %q}\nlabels: {job: windows-events}\nlabelsFromEnv: {node: NODE_NAME}\ndumps:\n%sstateDir: %q\nlisten: %s\n",
					url, dumps.String(), filepath.Join(dir, "state"), freeAddr(b))), 0o644)
				cmd := exec.Command(bin, "--config", cfg)
				cmd.Env = append(os.Environ(), "NODE_NAME=bench")
				start := time.Now()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				perNode = float64(events*tc.channels) / time.Since(start).Seconds()
				if recv != nil {
					st := recv.Stats()
					if st.Received < events*tc.channels {
						b.Fatalf("the Loki model took %d entries of %d", st.Received, events*tc.channels)
					}
					sharded, streams = st.Sharded, st.Streams
				}
			}
			b.ReportMetric(perNode/float64(tc.channels), "events/s/channel")
			b.ReportMetric(perNode/float64(tc.channels)*lineBytes/(1<<10), "KiB/s/channel")
			b.ReportMetric(lineBytes, "bytes/line")
			b.ReportMetric(perNode, "events/s/node")
			if !tc.victoria {
				b.ReportMetric(float64(sharded), "sharded_entries")
				b.ReportMetric(float64(streams), "streams")
			}
		})
	}
}
