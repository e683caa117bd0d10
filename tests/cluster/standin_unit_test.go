package cluster

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/winobs/winobs/internal/testkit/fixture"
)

// The stand-ins speak what they stand in for, checked without the box (so
// make test runs it): every family parses as the text format, every name
// is windows_exporter 0.31.8's or kube-state-metrics v2.20.0's (and the
// latter's labels its own), and the container series follow the pods.
func TestStandInsSpeakTheRealNames(t *testing.T) {
	var o objects
	if err := json.Unmarshal([]byte(`{
"Nodes": [{"metadata": {"name": "win-1"}, "status": {"addresses": [{"type": "InternalIP", "address": "10.1.1.1"}],
  "nodeInfo": {"osImage": "Windows Server 2022 Datacenter", "kernelVersion": "10.0.20348.4052", "containerRuntimeVersion": "containerd://2.1.4", "kubeletVersion": "v1.37.2"}}}],
"Pods": [
 {"metadata": {"name": "web-1", "namespace": "shop", "uid": "u1", "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7d9c"}]},
  "spec": {"nodeName": "win-1", "containers": [{"name": "app", "image": "a", "resources": {"limits": {"memory": "512Mi"}}}, {"name": "side", "image": "b"}]},
  "status": {"phase": "Running", "podIP": "10.2.0.5", "hostIP": "10.1.1.1", "containerStatuses": [
   {"name": "app", "containerID": "containerd://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "state": {"running": {}}},
   {"name": "side", "containerID": "containerd://bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "state": {"running": {}}}]}},
 {"metadata": {"name": "winobs-eventlog-shipper-x", "namespace": "monitoring", "uid": "u2", "ownerReferences": [{"kind": "DaemonSet", "name": "winobs-eventlog-shipper"}]},
  "spec": {"nodeName": "win-1", "hostNetwork": true, "securityContext": {"windowsOptions": {"hostProcess": true}},
   "containers": [{"name": "eventlog-shipper", "image": "s", "resources": {"limits": {"memory": "128Mi"}}}]},
  "status": {"phase": "Running", "podIP": "10.1.1.1", "hostIP": "10.1.1.1", "containerStatuses": [
   {"name": "eventlog-shipper", "containerID": "containerd://cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "state": {"running": {}}}]}},
 {"metadata": {"name": "elsewhere", "namespace": "shop", "uid": "u3"},
  "spec": {"nodeName": "win-2", "containers": [{"name": "app", "image": "a"}]},
  "status": {"phase": "Running", "containerStatuses": [{"name": "app", "containerID": "containerd://dddd", "state": {"running": {}}}]}}]}`), &o); err != nil {
		t.Fatal(err)
	}
	sample := fixture.Read(t, "windows-exporter", "metrics-0.31.8.prom")
	names := fixture.Read(t, "windows-exporter", "metric-names-0.31.8.txt")
	exporter := parse(t, exporterExposition(string(sample), "win-1", o, 30*time.Second))
	for name := range exporter {
		if !strings.HasPrefix(name, "winobs_shipper_") && !slices.Contains(strings.Fields(string(names)), name) {
			t.Errorf("exporter family %s is not a windows_exporter 0.31.8 name", name)
		}
	}
	byContainer := func(family string) []string {
		var out []string
		for _, m := range exporter[family].GetMetric() {
			l := labelsOf(m)
			out = append(out, l["namespace"]+"/"+l["pod"]+"/"+l["container"]+" "+l["container_id"])
		}
		slices.Sort(out)
		return out
	}
	workload := []string{
		"shop/web-1/app containerd://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"shop/web-1/side containerd://bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
	}
	all := append(slices.Clone(workload), "monitoring/winobs-eventlog-shipper-x/eventlog-shipper containerd://cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc")
	slices.Sort(all)
	if got := byContainer("windows_container_available"); !slices.Equal(got, all) {
		t.Errorf("available for %v, want every running container on the node %v", got, all)
	}
	if got := byContainer("windows_container_memory_usage_commit_bytes"); !slices.Equal(got, workload) {
		t.Errorf("commit for %v, want the workload containers %v", got, workload)
	}
	if n := exporter["windows_container_count"].GetMetric()[0].GetGauge().GetValue(); n != 3 {
		t.Errorf("windows_container_count %v, want 3", n)
	}
	if _, ok := exporter["winobs_shipper_events_read_total"]; !ok {
		t.Error("no shipper counters on the node that runs the shipper")
	}
	if other := parse(t, exporterExposition(string(sample), "win-2", o, 0)); other["winobs_shipper_events_read_total"] != nil {
		t.Error("shipper counters on a node without the shipper")
	}

	// kube-state-metrics: names and labels from its v2.20.0 docs.
	list := fixture.Read(t, "windows-exporter", "kube-state-metrics-names.txt")
	ksmLabels := map[string][]string{}
	for _, l := range strings.Split(string(list), "\n") {
		if f := strings.Fields(l); len(f) == 3 && !strings.HasPrefix(l, "#") {
			ksmLabels[f[0]] = strings.Split(f[2], ",")
		}
	}
	ksm := parse(t, ksmExposition(t, o))
	for name, fam := range ksm {
		allowed, ok := ksmLabels[name]
		if !ok {
			t.Errorf("kube-state-metrics family %s is not in its v2.20.0 names", name)
			continue
		}
		for _, m := range fam.GetMetric() {
			for l := range labelsOf(m) {
				if !slices.Contains(allowed, l) {
					t.Errorf("%s has label %s, which kube-state-metrics does not set (%v)", name, l, allowed)
				}
			}
		}
	}
	if n := len(ksm["kube_pod_container_info"].GetMetric()); n != 4 {
		t.Errorf("%d kube_pod_container_info series, want one per container of every pod (4)", n)
	}
}

func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return fams
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
