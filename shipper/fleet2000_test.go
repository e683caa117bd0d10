package shipper_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/eventfilter"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/lokiproc"
	"github.com/winobs/winobs/shipper/eventxml"
)

// fleetSize is the fleet TestFleetOfNodesIntoRealLoki ships from: issue
// 61's goal, 2,000 Windows nodes' event streams in one tenant with Loki's
// default limits and every default set on. WINOBS_FLEET_NODES sets another.
func fleetSize(t *testing.T) int {
	if s := os.Getenv("WINOBS_FLEET_NODES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("WINOBS_FLEET_NODES=%q: want a node count", s)
		}
		return n
	}
	return 2000
}

// A fleet of nodes, each running the real binary as its node's DaemonSet
// pod does (its own node name and state, Loki's push API, the default
// limits: its node's budget) with every channel of the default config and
// both default event sets, gen's query of each, into one tenant of a real
// Loki with its default limits: every event arrives once (0 lost, 0
// duplicates), each node's channels share its two streams (4,000 for
// 2,000 nodes, under max_global_streams_per_user's 5,000), no push is
// refused, and the tenant still opens another application's new stream, as
// another tenant does. Bounded in time: every node delivers within
// fixture.Patience.
func TestFleetOfNodesIntoRealLoki(t *testing.T) {
	if testing.Short() {
		t.Skip("a fleet of shipper processes: not in -short")
	}
	nodes := fleetSize(t)
	loki := lokiproc.Start(t, lokiproc.Options{Tenants: true, Limits: map[string]string{"max_query_series": "10000"}})
	bin := buildShipper(t)
	subs, err := config.Default().EventLog.Subscriptions()
	if err != nil {
		t.Fatal(err)
	}
	events := channelEvents(t)
	// What a node's subscriptions let through, by channel: the shipper
	// filters a dump as Windows filters a subscription.
	want := map[string]int{}
	perNode := 0
	for _, s := range subs {
		q, err := eventfilter.Parse(s.Query)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range events[s.Name] {
			e, err := eventxml.Parse(x)
			if err != nil {
				t.Fatal(err)
			}
			f := e.FilterFields()
			f.Channel = s.Name
			if q.Match(f) {
				want[s.Name]++
				perNode++
			}
		}
	}
	for _, s := range subs {
		if want[s.Name] == 0 {
			t.Fatalf("no fixture event passes channel %s's query: the fleet would not ship it", s.Name)
		}
	}
	const tenant = "fleet"
	start := time.Now()
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8) // processes at once: most of a run is waiting on Loki
	for n := range nodes {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			shipNodeAs(t, bin, loki.URL, tenant, "windows-events", fmt.Sprintf("akswin%06d", n), subs, events)
		})
	}
	wg.Wait()
	took := time.Since(start)
	t.Logf("%d nodes × %d channels (%d events a node) delivered in %v", nodes, len(subs), perNode, took.Round(time.Second))
	if took > fixture.Patience*time.Duration(max(1, nodes/100)) {
		t.Errorf("the fleet took %v", took)
	}

	sel := `{job="windows-events"}`
	byChannel := map[string]int{}
	samples, _ := loki.Instant(t, tenant, fmt.Sprintf(`sum by (%s) (count_over_time(%s[3h]))`, contract.LabelChannel, sel), time.Time{})
	for _, s := range samples {
		byChannel[s.Metric[contract.LabelChannel]] = int(s.Value)
	}
	for ch, n := range want {
		if byChannel[ch] != n*nodes {
			t.Errorf("channel %s: Loki holds %d events, want %d (%d nodes × %d)", ch, byChannel[ch], n*nodes, nodes, n)
		}
	}
	if len(byChannel) != len(want) {
		t.Errorf("channels in Loki %v, want %v", byChannel, want)
	}
	streams := lokiScalarAs(t, loki, tenant, fmt.Sprintf(`count(count by (%s, %s, %s, %s) (count_over_time(%s[3h])))`,
		contract.LabelNode, contract.LabelClass, contract.LabelComputer, contract.LabelLane, sel))
	t.Logf("%d streams for %d nodes (Loki's limit a tenant: %d)", streams, nodes, contract.LokiMaxGlobalStreams)
	if streams != 2*nodes {
		t.Errorf("%d streams, want %d: a node's two classes", streams, 2*nodes)
	}
	for _, push := range []struct{ tenant, job string }{{tenant, "another-app"}, {"another-tenant", "windows-events"}} {
		body := fmt.Sprintf(`{"streams":[{"stream":{"job":%q,"node":"new"},"values":[["%d","hello"]]}]}`, push.job, time.Now().UnixNano())
		if code, answer := loki.Push(t, push.tenant, "application/json", []byte(body)); code != http.StatusNoContent {
			t.Errorf("tenant %s, a new stream of %s: %d %s", push.tenant, push.job, code, answer)
		}
	}
}
