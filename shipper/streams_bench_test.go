package shipper_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/lokiproc"
	"github.com/winobs/winobs/shipper/eventxml"
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
				// By the stream labels: a metric query's series also carry
				// the entries' structured metadata (the channel).
				streams := lokiScalar(b, loki, fmt.Sprintf(`count(count by (%s, %s) (count_over_time({%s=%q}[1h])))`,
					strings.Join(contract.EventStreamLabels, ", "), contract.LabelLane, contract.LabelJob, job))
				perNode := float64(streams) / fleetNodes
				if classes := eventClasses(subs); streams != classes*fleetNodes {
					b.Fatalf("%d streams from %d nodes subscribed to %d channels, want %d: a node's channels share its class's stream", streams, fleetNodes, len(subs), classes*fleetNodes)
				}
				b.ReportMetric(perNode, "streams/node")
				b.ReportMetric(math.Floor(contract.LokiMaxGlobalStreams/perNode), "nodes_at_stream_limit")
			}
		})
	}
}

// eventClasses is how many stream classes the subscriptions' channels fall in.
func eventClasses(subs []config.Subscription) int {
	classes := map[string]bool{}
	for _, s := range subs {
		classes[contract.EventClass(s.Name)] = true
	}
	return len(classes)
}

// channelEvents are the fixtures' events by channel. Application has no
// captured event: the SCM's error 7000 stands in with its channel changed
// (a level-2 error, as Application Error 1000 is), which is all a stream
// count reads of it.
func channelEvents(t testing.TB) map[string][][]byte {
	out := map[string][][]byte{}
	add := func(dir, file string) {
		x := fixture.Read(t, dir, file)
		e, err := eventxml.Parse(x)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Channel()] = append(out[e.Channel()], x)
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

// shipNode ships, as node, a dump per subscription of the channel's events
// with the node's name as every event's computer.
func shipNode(b *testing.B, bin, lokiURL, job, node string, subs []config.Subscription, events map[string][][]byte) {
	shipNodeAs(b, bin, lokiURL, "", job, node, subs, events)
}

// shipNodeAs is shipNode pushing as tenant ("": none).
func shipNodeAs(b testing.TB, bin, lokiURL, tenant, job, node string, subs []config.Subscription, events map[string][][]byte) {
	b.Helper()
	var dumps []channelDump
	for _, s := range subs {
		if len(events[s.Name]) == 0 {
			b.Fatalf("no fixture event of channel %s", s.Name)
		}
		d := channelDump{channel: s.Name, query: s.Query}
		for _, x := range events[s.Name] {
			d.events = append(d.events, []byte(replaceBetween(string(x), "<Computer>", "</Computer>", node)))
		}
		dumps = append(dumps, d)
	}
	shipOnce(b, bin, lokiURL+"/loki/api/v1/push", tenant, job, node, dumps)
}

// channelDump is one dump of a shipper run: its channel, the query it is
// read through ("" for every event), and its events.
type channelDump struct {
	channel, query string
	events         [][]byte
}

// shipOnce runs the shipper once as node, its streams under job, until
// every dump is delivered; timestamps are read times (the fixtures may be
// older than Loki takes).
func shipOnce(t testing.TB, bin, push, tenant, job, node string, dumps []channelDump) {
	t.Helper()
	dir := t.TempDir()
	var list strings.Builder
	for i, d := range dumps {
		path := filepath.Join(dir, fmt.Sprintf("dump%d.xml", i))
		writeDump(t, path, d.events)
		fmt.Fprintf(&list, "  - {path: %q, channel: %q, query: %q}\n", path, d.channel, d.query)
	}
	cfg := fmt.Sprintf("loki: {url: %q, tenant: %q, minBackoff: 50ms, maxBackoff: 1s}\nlabels: {job: %s}\nlabelsFromEnv: {node: NODE_NAME}\ndumps:\n%sstateDir: %q\nlisten: %s\ntimestamp: read\n",
		push, tenant, job, list.String(), filepath.Join(dir, "state"), "127.0.0.1:0") // a port of its own: runs go in parallel
	path := filepath.Join(dir, "shipper.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", path)
	cmd.Env = append(cmd.Environ(), "NODE_NAME="+node)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("shipper as %s: %v\n%s", node, err, out)
	}
}
