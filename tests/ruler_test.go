package tests

import (
	"bytes"
	"log/slog"
	"path"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"go.yaml.in/yaml/v3"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/logqlcheck"
)

// rulerFile is the rule file of mimirtool, cortextool and lokitool
// (`rules load|diff|sync`): a namespace and its groups, each group in
// Prometheus' rule-group format. Decoded strictly, as those tools do, so an
// unknown or misplaced key fails.
type rulerFile struct {
	Namespace string              `yaml:"namespace"`
	Groups    []rulefmt.RuleGroup `yaml:"groups"`
}

func decodeRulerFile(t *testing.T, name string, raw []byte) rulerFile {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var f rulerFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

// TestRulerFilesLoad renders the bundle for two clusters and checks every
// file under ruler/ as the ruler tools read it: one namespace per file, named
// after it and starting with the configured prefix; Prometheus groups that
// pass promtool's checks; the same groups as the plain rule files; LogQL
// groups equal to loki-rules/. Both clusters get byte-identical ruler files:
// the rules keep the cluster label, so one namespace serves every cluster.
func TestRulerFilesLoad(t *testing.T) {
	var rendered []map[string][]byte
	for _, cluster := range []string{"eu-1", "us-2"} {
		cfg, err := config.Load("")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Cluster.Name, cfg.Ruler.NamespacePrefix = cluster, "team-a.winobs"
		built, err := rules.Files(view.Of(cfg).Rules)
		if err != nil {
			t.Fatal(err)
		}
		files, _, err := render.Encode(built)
		if err != nil {
			t.Fatal(err)
		}
		rendered = append(rendered, files)

		plain := map[string]rulefmt.RuleGroup{}
		for name, raw := range files {
			if strings.HasPrefix(name, "rules/") || strings.HasPrefix(name, "loki-rules/") {
				var rg rulefmt.RuleGroups
				if err := yaml.Unmarshal(raw, &rg); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for _, g := range rg.Groups {
					plain[g.Name] = g
				}
			}
		}

		namespaces := map[string]string{}
		var mimir, loki int
		for name, raw := range files {
			if !strings.HasPrefix(name, "ruler/") {
				continue
			}
			f := decodeRulerFile(t, name, raw)
			if !strings.HasPrefix(f.Namespace, "team-a.winobs-") || path.Base(name) != f.Namespace+".yaml" {
				t.Errorf("%s: namespace %q: want the file named after it and the prefix team-a.winobs-", name, f.Namespace)
			}
			if other, dup := namespaces[f.Namespace]; dup {
				t.Errorf("%s and %s both hold namespace %s", name, other, f.Namespace)
			}
			namespaces[f.Namespace] = name
			if len(f.Groups) == 0 {
				t.Errorf("%s: no groups", name)
			}
			for _, g := range f.Groups {
				if want, ok := plain[g.Name]; !ok || !reflect.DeepEqual(g, want) {
					t.Errorf("%s: group %s differs from the plain rule files' group", name, g.Name)
				}
			}
			switch {
			case strings.HasPrefix(name, "ruler/mimir/"):
				mimir++
				// What Mimir's ruler checks on upload: Prometheus' rule-group
				// rules and PromQL (promtool check rules).
				groups, err := yaml.Marshal(rulefmt.RuleGroups{Groups: f.Groups})
				if err != nil {
					t.Fatal(err)
				}
				if _, errs := rulefmt.Parse(groups, false, model.LegacyValidation, promqlParser, slog.New(slog.DiscardHandler)); len(errs) > 0 {
					t.Errorf("%s: %v", name, errs)
				}
			case strings.HasPrefix(name, "ruler/loki/"):
				loki++
				for _, g := range f.Groups {
					for _, r := range g.Rules {
						logqlcheck.Check(t, cfg, name+"/"+r.Alert, r.Expr)
					}
				}
			default:
				t.Errorf("%s: unexpected ruler directory", name)
			}
		}
		if mimir != 1 || loki != 1 {
			t.Errorf("cluster %s: %d Mimir and %d Loki namespace files, want one of each", cluster, mimir, loki)
		}
		if got, want := namespaces[rules.MetricsNamespace(cfg.Ruler)], "ruler/mimir/"+rules.MetricsNamespace(cfg.Ruler)+".yaml"; got != want {
			t.Errorf("metrics namespace file %q, want %q", got, want)
		}
	}
	for name, raw := range rendered[0] {
		if strings.HasPrefix(name, "ruler/") && !bytes.Equal(raw, rendered[1][name]) {
			t.Errorf("%s differs between the two clusters", name)
		}
	}
}

// TestRulerNamespacePrefixIsChecked: the prefix becomes a URL path segment
// and a directory name, so anything else is refused with its field named.
func TestRulerNamespacePrefixIsChecked(t *testing.T) {
	for _, bad := range []string{"", "Winobs", "a/b", "..", "-x", "x-", "winobs windows", strings.Repeat("a", 49)} {
		cfg, err := config.Load("")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Ruler.NamespacePrefix = bad
		probs := config.Validate(cfg)
		if len(probs) != 1 || probs[0].Path != "ruler.namespacePrefix" {
			t.Errorf("prefix %q: problems %v, want one for ruler.namespacePrefix", bad, probs)
		}
	}
}

// TestLokiRulesUseEventLineFields applies the same check to the Loki ruler's
// event log alerts.
func TestLokiRulesUseEventLineFields(t *testing.T) {
	cfg := config.Default()
	for _, r := range lokiRules(t, cfg) {
		logqlcheck.Check(t, cfg, r.Alert+"/"+r.Labels["service"], r.Expr)
	}
}
