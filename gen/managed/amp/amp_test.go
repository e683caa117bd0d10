package amp_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	_ "github.com/prometheus/prometheus/discovery/kubernetes" // registers kubernetes_sd_configs
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/winobs/winobs/gen/bundle"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/managed/amp"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/managedrules"
)

func ampView(t *testing.T, cluster string) view.Managed {
	t.Helper()
	c := config.Default()
	c.Cluster.Name = cluster
	managedrules.OnService(c, managed.AMP)
	if probs := config.Validate(c); len(probs) > 0 {
		t.Fatal(probs)
	}
	return view.Of(c).Managed
}

// Issue 60: the rule groups namespace is a rule file Prometheus' own
// rulefmt takes, holding every record and alert of the default render
// once, in order, with the same expression, `for`, labels and annotations;
// within AMP's quotas (20 rules a group: the 21 alerts are two groups; the
// namespace and a group's name 721 bytes together; 1 MiB).
func TestNamespaceFile(t *testing.T) {
	for _, cluster := range []string{"", "eks-prod"} {
		v := ampView(t, cluster)
		files, err := bundle.Managed(v)
		if err != nil {
			t.Fatal(err)
		}
		raw := files[0].Raw
		if files[0].Path != "amp/"+amp.NamespaceName(v)+".yaml" || len(raw) > amp.MaxFileBytes {
			t.Fatalf("%s, %d bytes", files[0].Path, len(raw))
		}
		got, errs := rulefmt.Parse(raw, false, model.LegacyValidation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		want, err := rules.Build(v.Rules)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, g := range got.Groups {
			if len(g.Rules) > amp.MaxRulesPerGroup || len(amp.NamespaceName(v))+len(g.Name) > amp.MaxNameBytes {
				t.Errorf("group %s: %d rules, name %d bytes", g.Name, len(g.Rules), len(g.Name))
			}
			n += len(g.Rules)
		}
		for _, d := range managedrules.Diff(want, *got) {
			t.Error(d)
		}
		if len(got.Groups) != 3 || n < 30 {
			t.Errorf("%d rules in %d groups, want every rule in 3", n, len(got.Groups))
		}
	}
}

// The scrape configuration loads as a Prometheus configuration (Prometheus'
// own config.Load), finds Windows nodes and scrapes port 9182 with the job,
// instance and node the rules read, and labels the cluster when one is
// named.
func TestScrapeConfigLoads(t *testing.T) {
	v := ampView(t, "eks-prod")
	files, err := bundle.Managed(v)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, f := range files {
		if f.Path == "amp/scrape-config.yaml" {
			raw = f.Raw
		}
	}
	cfg, err := promconfig.Load(string(raw), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GlobalConfig.ExternalLabels.Get("cluster") != "eks-prod" || len(cfg.ScrapeConfigs) != 2 {
		t.Fatalf("%+v", cfg.GlobalConfig)
	}
	win := cfg.ScrapeConfigs[0]
	if win.JobName != v.ExporterJob || !win.HonorLabels {
		t.Errorf("job %s honor %v", win.JobName, win.HonorLabels)
	}
	var relabels []string
	for _, r := range win.RelabelConfigs {
		var src []string
		for _, l := range r.SourceLabels {
			src = append(src, string(l))
		}
		relabels = append(relabels, strings.Join(src, ",")+">"+r.TargetLabel+":"+r.Replacement+":"+string(r.Action))
	}
	for _, w := range []string{"__meta_kubernetes_node_label_kubernetes_io_os>:$1:keep", "__meta_kubernetes_node_address_InternalIP>__address__:$1:9182:replace",
		"__meta_kubernetes_node_name>instance:$1:replace", "__meta_kubernetes_node_name>node:$1:replace"} {
		if !slices.Contains(relabels, w) {
			t.Errorf("relabelling lacks %s: %v", w, relabels)
		}
	}
}
