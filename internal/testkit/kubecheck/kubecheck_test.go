package kubecheck_test

import (
	"strings"
	"testing"

	"github.com/winobs/winobs/gen/bundle"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/kubecheck"
)

// rendered returns the default render's document of the given kind from path.
func rendered(t *testing.T, path, kind string) string {
	t.Helper()
	files, err := bundle.Build(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := render.Encode(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range kubecheck.Split(out[path]) {
		if strings.Contains(string(doc), "\nkind: "+kind+"\n") {
			return string(doc)
		}
	}
	t.Fatalf("%s holds no %s", path, kind)
	return ""
}

// Each mutation of a real rendered object is one an API server refuses (or,
// for an unknown field, silently drops); the checker must report every one,
// naming the field, and pass the unmutated object.
func TestCheckerCatchesMutations(t *testing.T) {
	c, err := kubecheck.New(fixture.Path(t, "crds"))
	if err != nil {
		t.Fatal(err)
	}
	const exporter, alerts = "exporters/windows-exporter.yaml", "prometheus/winobs-windows-alerts.yaml"
	for _, tc := range []struct {
		name, path, kind, from, to, want string
	}{
		{"misspelt CRD field", exporter, "PodMonitor", "    interval: 30s", "    intervall: 30s", "intervall"},
		{"bad CRD enum", exporter, "PodMonitor", "action: labeldrop", "action: labeldropp", `spec.podMetricsEndpoints[0].relabelings[3].action: Unsupported value: "labeldropp"`},
		{"bad CRD duration pattern", exporter, "PodMonitor", "interval: 30s", "interval: 30 seconds", "spec.podMetricsEndpoints[0].interval"},
		{"invalid label value on a custom resource", exporter, "PodMonitor", "    release: kps", `    release: "has space: colon"`, "metadata.labels"},
		{"invalid label value on a core object", exporter, "DaemonSet", "  labels:\n", "  labels:\n    bad: \"-x-\"\n", "metadata.labels: Invalid value: \"-x-\""},
		{"label key with a bad prefix", exporter, "DaemonSet", "  labels:\n", "  labels:\n    a..b/x: y\n", "metadata.labels: Invalid value: \"a..b/x\""},
		{"misspelt core field", exporter, "DaemonSet", "hostNetwork: true", "hostNetwerk: true", "hostNetwerk"},
		{"toleration Exists with a value", exporter, "DaemonSet", "        operator: Exists\n", "        operator: Exists\n        value: windows\n", "value must be empty when `operator` is 'Exists'"},
		{"bad container name", exporter, "DaemonSet", "name: windows-exporter\n", "name: Windows_Exporter\n", "containers[0].name"},
		{"PrometheusRule group without a name", alerts, "PrometheusRule", "  - name: winobs-windows-alerts", "  - nam: winobs-windows-alerts", "spec.groups[0].name: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := rendered(t, tc.path, tc.kind)
			if errs := c.Document([]byte(doc)); len(errs) > 0 {
				t.Fatalf("the unmutated %s fails: %v", tc.kind, errs)
			}
			if !strings.Contains(doc, tc.from) {
				t.Fatalf("%s has no %q to mutate", tc.kind, tc.from)
			}
			errs := c.Document([]byte(strings.Replace(doc, tc.from, tc.to, 1)))
			if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Errorf("mutation %q -> %q: got %q, want a problem containing %q", tc.from, tc.to, errs, tc.want)
			}
		})
	}
}

func TestCheckerHasTheMonitoringCRDs(t *testing.T) {
	c, err := kubecheck.New(fixture.Path(t, "crds"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.Kinds(), ",")
	for _, k := range []string{"monitoring.coreos.com/v1 PrometheusRule", "monitoring.coreos.com/v1 PodMonitor", "monitoring.coreos.com/v1 ServiceMonitor"} {
		if !strings.Contains(got, k) {
			t.Errorf("no schema for %s (have %s)", k, got)
		}
	}
	if errs := c.Document([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n")); len(errs) == 0 {
		t.Error("a kind without a schema passed")
	}
}
