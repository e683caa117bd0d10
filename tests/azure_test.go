package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/rulefmt"
	"go.yaml.in/yaml/v3"

	"github.com/winobs/winobs/azuremonitor"
	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/rules"
	"github.com/winobs/winobs/view"
)

// Issue 59: one test set proves both outputs. The Azure Monitor rule group
// gen renders is read back as Prometheus rules (expression → expr, ISO 8601
// `for` → a duration, Azure's severity dropped: the label stays) and every
// rule unit test runs on it, in the one group Azure evaluates in order:
// records, then the alerts that read them.
func TestAzureRulesPassTheRuleTests(t *testing.T) {
	for _, tc := range []struct{ config, rules string }{
		{"", "../manifests/rules/"},
		{"second/config.yaml", "second/bundle/rules/"},
	} {
		cfg, err := config.Load(tc.config)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Prometheus.Platform = config.PlatformAzureMonitor
		cfg.Prometheus.Azure = config.AzureMonitor{Location: "westeurope",
			Workspace: "/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/rg/providers/Microsoft.Monitor/accounts/amw"}
		v := view.Of(cfg).Managed
		groups, err := rules.Build(v.Rules)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := azuremonitor.Template(v, groups)
		if err != nil {
			t.Fatal(err)
		}
		back := rulefmt.RuleGroup{Name: tmpl.Resources[0].Name}
		for _, r := range tmpl.Resources[0].Properties.Rules {
			var hold rulefmt.Rule
			if r.For != "" {
				d, err := azuremonitor.ParseISODuration(r.For)
				if err != nil {
					t.Fatal(err)
				}
				hold.For = d
			}
			hold.Record, hold.Alert, hold.Expr, hold.Labels, hold.Annotations = r.Record, r.Alert, r.Expression, r.Labels, r.Annotations
			back.Rules = append(back.Rules, hold)
		}
		raw, err := yaml.Marshal(rulefmt.RuleGroups{Groups: []rulefmt.RuleGroup{back}})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "azure.yaml")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		ran, files := 0, 0
		for _, file := range testFiles(t) {
			tf := loadTestFile(t, file)
			if !slices.Equal(tf.RuleFiles, []string{tc.rules + rules.RecordsGroup + ".yaml", tc.rules + rules.AlertsGroup + ".yaml"}) {
				continue
			}
			files++
			tf.RuleFiles, tf.GroupEvalOrder = []string{path}, []string{back.Name}
			for i, tg := range tf.Tests {
				t.Run(fmt.Sprintf("%s/%d_%s", strings.TrimSuffix(file, ".yaml"), i, tg.Name), func(t *testing.T) {
					for _, err := range runGroup(tf, tg) {
						t.Error(err)
					}
				})
				ran++
			}
		}
		// alerts, node-health, records and rigour read the default render;
		// second.yaml the second configuration's.
		if want := map[string]int{"": 4, "second/config.yaml": 1}[tc.config]; files != want || ran < 3*files {
			t.Errorf("%s: ran %d test groups of %d files on the Azure rules, want every group of %d", tc.rules, ran, files, want)
		}
	}
}
