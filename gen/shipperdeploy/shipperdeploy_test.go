package shipperdeploy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/winobs/winobs/shipper/shipconfig"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/view"
)

// The rendered config is one the shipper accepts, and it ships what Alloy
// ships: the same channels, levels, locale, job, node and cluster labels.
func TestShipperAcceptsRenderedConfig(t *testing.T) {
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster.Name = "eu$1"
	cfg.Logs.EventsJob = "$JOB"
	raw, err := ShipperConfig(view.Of(cfg).Shipper)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "shipper.yaml")
	os.WriteFile(p, raw, 0o644)
	t.Setenv("NODE_NAME", "k8s-lab-win-1")
	sc, err := shipconfig.Load(p)
	if err != nil {
		t.Fatalf("the shipper rejects the rendered config: %v\n%s", err, raw)
	}
	if sc.Labels["job"] != "$JOB" || sc.Labels["node"] != "k8s-lab-win-1" || sc.Labels["cluster"] != "eu$1" {
		t.Errorf("labels %v", sc.Labels)
	}
	// Every value round-trips: what gen built is what the shipper loads
	// (plus the node label it reads from the environment).
	built, err := Shipper(view.Of(cfg).Shipper)
	if err != nil {
		t.Fatal(err)
	}
	built.Labels["node"] = "k8s-lab-win-1"
	if !reflect.DeepEqual(built, sc) {
		t.Errorf("rendered and loaded configs differ:\n built  %+v\n loaded %+v", built, sc)
	}
	subs, err := cfg.EventLog.Subscriptions()
	if err != nil {
		t.Fatal(err)
	}
	var want []shipconfig.Channel
	for _, sub := range subs {
		want = append(want, shipconfig.Channel{Name: sub.Name, Query: sub.Query})
	}
	if !reflect.DeepEqual(sc.Channels, want) || len(want) != 5 {
		t.Errorf("channels %+v, want the 5 subscriptions %+v", sc.Channels, want)
	}
	if sc.Loki.Endpoint.URL != cfg.Loki.URL || sc.Locale != 1033 || !strings.HasSuffix(sc.Textfile, `\textfile\eventlog-shipper.prom`) {
		t.Errorf("config %+v", sc)
	}
	if sc.Listen != "127.0.0.1:9498" || sc.StartAt != shipconfig.Newest || sc.OnCorruptCheckpoint != shipconfig.Oldest {
		t.Errorf("listen %s, startAt %s, onCorruptCheckpoint %s", sc.Listen, sc.StartAt, sc.OnCorruptCheckpoint)
	}
}

// The pod's termination grace period is derived from the shipper's own
// shutdownGrace (plus the margin to exit), never kept in step by hand.
func TestGracePeriodFollowsTheShipper(t *testing.T) {
	cfg := config.Default()
	sc, err := Shipper(view.Of(cfg).Shipper)
	if err != nil {
		t.Fatal(err)
	}
	ds := daemonSet(view.Of(cfg).Shipper, sc).(*appsv1.DaemonSet)
	want := int64((time.Duration(sc.ShutdownGrace.Model()) + graceMargin).Seconds())
	if got := ds.Spec.Template.Spec.TerminationGracePeriodSeconds; got == nil || *got != want || want <= int64(time.Duration(sc.ShutdownGrace.Model()).Seconds()) {
		t.Errorf("grace %v, want %d", got, want)
	}
}
