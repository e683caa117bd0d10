package vocab

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// defaults are the default config's names (view routes them; these tests
// hold the vocabulary to the text it writes).
var defaults = Settings{ClusterLabel: "cluster", ExporterJob: "windows-exporter", KSMJob: "kube-state-metrics",
	EventsJob: "windows-events", PodLogsJob: "windows-pods", StructuredMetadata: true}

// grafanaInterpolation is Grafana's own variable pattern (@grafana/scenes
// 8.19.0's VARIABLE_REGEX: $name, [[name]], [[name:format]], ${name},
// ${name.field}, ${name["key"]}, ${name[0]}, ${name:format}), applied to
// query text before a data source sees it; tests/grafana_test.go holds it to
// the scenes code.
var grafanaInterpolation = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)((?:\.[^:^{}\[\]]+|\["[^"]*"\]|\['[^']*'\]|\[[^\]"']*\])*)(?::([^}]+))?\}`)

// A literal reads back as the exact value in PromQL, and Grafana finds no
// variable in it, whatever the value holds.
func TestLiteral(t *testing.T) {
	for _, v := range []string{"windows-exporter", "eu$1", "$instance", "${__user.login}", "[[pod]]", "a[[[b]]]", "[A-Za-z]:",
		`(?i)(MSSQL\$X)`, "tab\there", "line\nbreak", `"quoted"`, "héllo", "\u202e"} {
		lit := Literal(v)
		if m := grafanaInterpolation.FindString(lit); m != "" {
			t.Errorf("Literal(%q) = %s: Grafana interpolates %q", v, lit, m)
		}
		e, err := parser.NewParser(parser.Options{}).ParseExpr(`up{job=` + lit + `}`)
		if err != nil {
			t.Errorf("Literal(%q) = %s: %v", v, lit, err)
			continue
		}
		for _, m := range parser.ExtractSelectors(e)[0] {
			if m.Name == "job" && m.Value != v {
				t.Errorf("Literal(%q) reads back as %q", v, m.Value)
			}
		}
		if plain := strconv.Quote(v); !strings.ContainsAny(v, "$[") && lit != plain {
			t.Errorf("Literal(%q) = %s, want the plain quoting %s", v, lit, plain)
		}
	}
}

// One form: job, then the cluster, then the extra matchers; the rules'
// selectors name no cluster, a multi-cluster config's dashboards select
// $cluster (PromQL: or series without the label; LogQL: exactly); With never
// changes the selector it extends.
func TestSelectors(t *testing.T) {
	multi := defaults
	multi.ClusterName, multi.ClusterLabel = "eu", "k8s_cluster"
	r, d := ForRules(multi), ForDashboards(multi)
	for got, want := range map[string]string{
		r.Exporter().String(): `{job="windows-exporter"}`,
		d.Exporter(Var("instance", "=~", "instance")).String():                   `{job="windows-exporter", k8s_cluster=~` + "`${cluster:regex}|`" + `, instance=~"$instance"}`,
		d.KSM(Eq("resource", "memory")).Of("kube_pod_container_resource_limits"): `kube_pod_container_resource_limits{job="kube-state-metrics", k8s_cluster=~` + "`${cluster:regex}|`" + `, resource="memory"}`,
		r.Cluster().Of(Records.ContainerInfo):                                    Records.ContainerInfo,
		d.Cluster(NotEq("pod", "")).Of(Records.ContainerInfo):                    Records.ContainerInfo + `{k8s_cluster=~` + "`${cluster:regex}|`" + `, pod!=""}`,
		d.Events(Var("node", "=~", "node")).String():                             `{job="windows-events", k8s_cluster="$cluster", node=~"$node"}`,
		d.AllEvents().String():                                                   `{job="windows-events"}`,
		r.By("instance", "node"):                                                 "k8s_cluster, instance, node",
		Volumes.String():                                                         `volume=~"[A-Za-z]:"`,
	} {
		if got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
	base := d.Exporter()
	a, b := base.With(Eq("a", "1")), base.With(Eq("b", "2"))
	if a.String() == b.String() || base.String() != d.Exporter().String() {
		t.Errorf("With aliased: %s %s %s", base, a, b)
	}
	if ForDashboards(defaults).Exporter().String() != `{job="windows-exporter"}` {
		t.Error("a single-cluster dashboard selects a cluster")
	}
}

// Placeholders expand to the vocabulary, the records and the template's own
// arguments, inserted as they are; an unknown placeholder, an argument that
// shadows a term and an unused argument are errors that name them.
func TestExpand(t *testing.T) {
	terms := ForRules(defaults)
	got, err := terms.Expand(`max by ($[cluster]) ($[NodeCommitRatio]{$[exporter], $[volumes]}) > $[threshold]`, Args{"threshold": "0.9 $[cluster]"})
	if err != nil || got != `max by (cluster) (`+Records.NodeCommitRatio+`{job="windows-exporter", volume=~"[A-Za-z]:"}) > 0.9 $[cluster]` {
		t.Errorf("%q %v", got, err)
	}
	for tmpl, args := range map[string]Args{
		"up{$[nope]}":     nil,
		"up > $[cluster]": {"cluster": "x"},
		"up":              {"unused": "1"},
	} {
		_, err := terms.Expand(tmpl, args)
		want := "nope"
		for name := range args {
			want = name
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s %v: want an error naming %s, got %v", tmpl, args, want, err)
		}
	}
}

// The boot time reads each exporter version's name, so the alert and the
// fleet table see a node whichever exporter it runs.
func TestBootTimeCoversEveryVersion(t *testing.T) {
	e := BootTime("instance", ForRules(defaults).Exporter())
	for _, name := range []string{"windows_system_boot_time_timestamp{", "windows_system_boot_time_timestamp_seconds{", "windows_system_system_up_time{"} {
		if !strings.Contains(e, name) {
			t.Errorf("%s lacks %s", e, name)
		}
	}
	if _, err := parser.NewParser(parser.Options{}).ParseExpr(e); err != nil {
		t.Error(err)
	}
}
