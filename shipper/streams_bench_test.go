package shipper_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/internal/fixture"
	"github.com/winobs/winobs/internal/lokiproc"
)

// fleetNodes is how many nodes BenchmarkFleetStreams ships from: enough to
// show streams grow per node, not per event.
const fleetNodes = 3

// BenchmarkFleetStreams measures what the event log costs a Loki tenant in
// streams, for each choice of the default event sets: fleetNodes nodes
// each ship one dump per channel the config subscribes to (the channel's
// real Event XML, through gen's query of it) with the real binary into a
// real Loki with its default limits, and Loki counts the streams it holds.
// Per node, they set the fleet size at max_global_streams_per_user.
func BenchmarkFleetStreams(b *testing.B) {
	loki := lokiproc.Start(b, lokiproc.Options{})
	bin := buildShipper(b)
	events := channelEvents(b)
	for _, sets := range [][]string{nil, {config.SetNodeOperations}, {config.SetSecurity}, {config.SetNodeOperations, config.SetSecurity}} {
		name := strings.Join(sets, "+")
		if name == "" {
			name = "none"
		}
		b.Run("sets="+name, func(b *testing.B) {
			el := config.Default().EventLog
			el.Sets = sets
			subs, err := el.Subscriptions()
			if err != nil {
				b.Fatal(err)
			}
			for i := range b.N {
				job := fmt.Sprintf("fleet-%s-%d", name, i)
				for n := range fleetNodes {
					shipNode(b, bin, loki.URL, job, fmt.Sprintf("akswin%06d", n), subs, events)
				}
				streams := lokiScalar(b, loki.URL, fmt.Sprintf(`count(count_over_time({%s=%q}[1h]))`, contract.LabelJob, job))
				perNode := float64(streams) / fleetNodes
				if streams%fleetNodes != 0 || perNode < float64(len(subs)) {
					b.Fatalf("%d streams from %d nodes subscribed to %d channels: every node's channel is a stream", streams, fleetNodes, len(subs))
				}
				b.ReportMetric(perNode, "streams/node")
				b.ReportMetric(math.Floor(contract.LokiMaxGlobalStreams/perNode), "nodes_at_stream_limit")
			}
		})
	}
}

// channelEvents are the fixtures' events by channel. Application has no
// captured event: the SCM's error 7000 stands in with its channel changed
// (a level-2 error, as Application Error 1000 is), which is all a stream
// count reads of it.
func channelEvents(t testing.TB) map[string][][]byte {
	out := map[string][][]byte{}
	add := func(dir, file string) {
		x := string(fixture.Read(t, dir, file))
		i := strings.Index(x, "<Channel>") + len("<Channel>")
		ch := x[i : i+strings.Index(x[i:], "</Channel>")]
		out[ch] = append(out[ch], []byte(x))
	}
	for _, f := range fixture.Glob(t, 12, fixture.Events, "*.xml") {
		add(fixture.Events, filepath.Base(f))
	}
	for _, f := range fixture.Glob(t, 6, fixture.EventLog, "*.xml") {
		add(fixture.EventLog, filepath.Base(f))
	}
	app := strings.Replace(string(fixture.Read(t, fixture.EventLog, "scm-7000-sql-server-file-not-found.xml")), "<Channel>System</Channel>", "<Channel>"+config.ChannelApplication+"</Channel>", 1)
	out[config.ChannelApplication] = [][]byte{[]byte(app)}
	return out
}

// shipNode runs the shipper once as node: a dump per subscription, the
// node's name as every event's computer, read-time timestamps (the
// fixtures may be older than Loki takes).
func shipNode(b *testing.B, bin, lokiURL, job, node string, subs []config.Subscription, events map[string][][]byte) {
	b.Helper()
	dir := b.TempDir()
	var dumps strings.Builder
	for _, s := range subs {
		xs := events[s.Name]
		if len(xs) == 0 {
			b.Fatalf("no fixture event of channel %s", s.Name)
		}
		var mine [][]byte
		for _, x := range xs {
			mine = append(mine, []byte(replaceBetween(string(x), "<Computer>", "</Computer>", node)))
		}
		path := filepath.Join(dir, s.ComponentLabel()+".xml")
		writeDump(b, path, mine)
		fmt.Fprintf(&dumps, "  - {path: %q, channel: %q, query: %q}\n", path, s.Name, s.Query)
	}
	cfg := fmt.Sprintf("loki: {url: %q, minBackoff: 50ms, maxBackoff: 1s}\nlabels: {job: %s}\nlabelsFromEnv: {node: NODE_NAME}\ndumps:\n%sstateDir: %q\nlisten: %s\ntimestamp: read\n",
		lokiURL+"/loki/api/v1/push", job, dumps.String(), filepath.Join(dir, "state"), freeAddr(b))
	path := filepath.Join(dir, "shipper.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", path)
	cmd.Env = append(cmd.Environ(), "NODE_NAME="+node)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("shipper as %s: %v\n%s", node, err, out)
	}
}
