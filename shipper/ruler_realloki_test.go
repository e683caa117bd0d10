package shipper_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/rulefmt"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/lokiproc"
	"github.com/winobs/winobs/internal/testkit/lokirules"
	"github.com/winobs/winobs/shipper/eventxml"
)

// Issue 67: the Loki rules in Loki's own ruler, as each documented path
// delivers them: the ConfigMap the Loki chart's rules sidecar writes into
// the ruler's directory (loki/), and the ruler/loki namespace as
// lokitool leaves it in the ruler's store (a namespace of its name; the
// upload itself is lokitool's). Every event a Loki rule test fires an
// alert with (tests/loki/windows-events.yaml: its Event XML, its
// replacements) goes through the real shipper, the pod lines through a
// push as Alloy's pipeline makes them, into each tenant; Loki's alerts API
// must then show every rendered detection firing with the labels its test
// expects, its annotations rendered by the ruler (no "<no value>", no
// template error). The time from the last push to each alert's activation
// is logged: the detection latency a user gets at the ruler's interval.
func TestLokiRulerFiresEveryDetectionRealLoki(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the ruler's `for` (2m)")
	}
	t.Parallel() // most of it is waiting
	var cm corev1.ConfigMap
	if err := sigyaml.Unmarshal([]byte(mustRead(t, "../manifests/loki/winobs-windows-events.yaml")), &cm); err != nil || len(cm.Data) != 1 {
		t.Fatalf("the rendered ConfigMap: %v", err)
	}
	var ns struct {
		Namespace string              `yaml:"namespace"`
		Groups    []rulefmt.RuleGroup `yaml:"groups"`
	}
	if err := yaml.Unmarshal([]byte(mustRead(t, "../manifests/ruler/loki/winobs-windows-events.yaml")), &ns); err != nil || ns.Namespace == "" {
		t.Fatalf("the rendered namespace: %v", err)
	}
	groups, err := yaml.Marshal(map[string]any{"groups": ns.Groups})
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]map[string][]byte{"configmap": {}, "namespace": {ns.Namespace + ".yaml": groups}}
	for key, data := range cm.Data {
		rules["configmap"][key] = []byte(data)
	}
	const interval = 5 * time.Second
	loki := lokiproc.Start(t, lokiproc.Options{Tenants: true, Rules: rules, RulerInterval: interval})

	// What the rule tests fire alerts with.
	f, rendered, err := lokirules.Load("../tests/loki/windows-events.yaml")
	if err != nil {
		t.Fatal(err)
	}
	byChannel := map[string][][]byte{}
	var podLines []lokirules.Entry
	want := map[string][]map[string]string{} // alert -> the labels its tests expect
	for _, test := range f.Tests {
		fires := false
		for _, at := range test.AlertTests {
			for _, a := range at.ExpAlerts {
				fires = true
				want[at.Alertname] = append(want[at.Alertname], a.ExpLabels)
			}
		}
		if !fires {
			continue
		}
		for _, in := range test.InputStreams {
			for _, e := range in.Entries {
				if e.Line != "" {
					podLines = append(podLines, e)
					continue
				}
				x, err := f.EventXML(e)
				if err != nil {
					t.Fatal(err)
				}
				ev, err := eventxml.Parse(x)
				if err != nil {
					t.Fatal(err)
				}
				for range max(e.Times, 1) {
					byChannel[ev.Channel()] = append(byChannel[ev.Channel()], x)
				}
			}
		}
	}
	var alerts []string
	hold := map[string]time.Duration{}
	for _, r := range rendered {
		hold[r.Alert] = time.Duration(r.For)
		if !slices.Contains(alerts, r.Alert) {
			alerts = append(alerts, r.Alert)
		}
		if len(want[r.Alert]) == 0 {
			t.Errorf("%s: no rule test fires it", r.Alert)
		}
	}

	bin := buildShipper(t)
	dir := t.TempDir()
	var dumps strings.Builder
	for channel, events := range byChannel {
		path := filepath.Join(dir, strings.ReplaceAll(channel, "/", "_")+".xml")
		writeDump(t, path, events)
		fmt.Fprintf(&dumps, "  - {path: %q, channel: %q}\n", path, channel)
	}
	lastPush := map[string]time.Time{}
	for tenant := range rules {
		cfg := fmt.Sprintf("loki: {url: %q, tenant: %q, minBackoff: 50ms, maxBackoff: 1s}\nlabels: {job: windows-events}\nlabelsFromEnv: {node: NODE_NAME}\n"+
			"dumps:\n%sstateDir: %q\nlisten: 127.0.0.1:0\ntimestamp: read\n", loki.URL+"/loki/api/v1/push", tenant, dumps.String(), filepath.Join(dir, tenant))
		path := filepath.Join(dir, tenant+".yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--config", path)
		cmd.Env = append(cmd.Environ(), "NODE_NAME=akswin000001")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("shipper for %s: %v\n%s", tenant, err, out)
		}
		// The pod lines as Alloy's pod pipeline pushes them.
		var values []any
		for k, e := range podLines {
			values = append(values, []any{strconv.FormatInt(time.Now().Add(time.Duration(k)*time.Millisecond).UnixNano(), 10), e.Line, e.Metadata})
		}
		body, _ := json.Marshal(map[string]any{"streams": []any{map[string]any{
			"stream": map[string]string{"job": "windows-pods", "node": "akswin000001", "namespace": "shop", "pod": "web-7d9f", "container": "iis"},
			"values": values}}})
		if code, answer := loki.Push(t, tenant, "application/json", body); code != http.StatusNoContent {
			t.Fatalf("pod lines: %d %s", code, answer)
		}
		lastPush[tenant] = time.Now()
	}

	// Every detection firing in each tenant, within the `for` (2m) and a
	// few evaluations.
	for tenant := range rules {
		firing := map[string][]lokiproc.Alert{}
		deadline := time.Now().Add(2*time.Minute + 10*interval + fixture.Patience)
		for ; time.Now().Before(deadline); time.Sleep(interval) {
			firing = map[string][]lokiproc.Alert{}
			for _, a := range loki.Alerts(t, tenant) {
				if a.State == "firing" {
					firing[a.Labels["alertname"]] = append(firing[a.Labels["alertname"]], a)
				}
			}
			if len(firing) == len(alerts) {
				break
			}
		}
		for _, name := range alerts {
			got := firing[name]
			if len(got) == 0 {
				t.Errorf("%s: %s never fired in Loki's ruler", tenant, name)
				continue
			}
			matched := false
			for _, a := range got {
				for k, v := range a.Annotations {
					if strings.Contains(v, "<no value>") || strings.Contains(v, "error") && strings.Contains(v, "template") {
						t.Errorf("%s: %s's annotation %s as the ruler renders it: %q", tenant, name, k, v)
					}
				}
				for _, w := range want[name] {
					ok := true
					for k, v := range w {
						ok = ok && a.Labels[k] == v
					}
					matched = matched || ok
				}
			}
			if !matched {
				t.Errorf("%s: %s fires with %v, none with the labels its tests expect (%v)", tenant, name, got[0].Labels, want[name])
			}
			first := got[0].ActiveAt
			for _, a := range got {
				if a.ActiveAt.Before(first) {
					first = a.ActiveAt
				}
			}
			// Pending at the first evaluation that sees the events, firing
			// its `for` later.
			t.Logf("%s: %-36s pending %5.1f s, firing %5.1f s after the last push (for %v, ruler every %v)", tenant, name,
				first.Sub(lastPush[tenant]).Seconds(), (first.Sub(lastPush[tenant]) + hold[name]).Seconds(), hold[name], interval)
		}
	}
}
