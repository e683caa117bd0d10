package promtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lokiFile is another format of promtool's shape: the header, then its own
// tests (as lokirules' File).
type lokiFile struct {
	Header    `yaml:",inline"`
	EventsDir string `yaml:"events_dir"`
}

// Read takes promtool's files (this repository's own, and one with every
// key winobs uses), fills the defaults, makes rule files relative to the
// working directory, and refuses an unknown or mistyped key at its line.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := write("full.yaml", `rule_files: [rules/a.yaml]
evaluation_interval: 30s
group_eval_order: [a]
tests:
  - name: one
    interval: 1m
    external_labels: {cluster: eu}
    input_series:
      - series: 'up{job="windows-exporter"}'
        values: '1x10'
    alert_rule_test:
      - eval_time: 5m
        alertname: WindowsExporterDown
        exp_alerts:
          - exp_labels: {severity: warning}
            exp_annotations: {summary: down}
    promql_expr_test:
      - expr: up
        eval_time: 1m
        exp_samples:
          - labels: 'up{job="windows-exporter"}'
            value: 1
`)
	var f File
	if err := Read(full, &f); err != nil {
		t.Fatal(err)
	}
	g := f.Tests[0]
	if f.EvaluationInterval != Duration(30*time.Second) || f.RuleFiles[0] != filepath.Join(dir, "rules/a.yaml") || f.GroupEvalOrder[0] != "a" ||
		g.ExternalLabels["cluster"] != "eu" || g.InputSeries[0].Values != "1x10" || g.AlertRuleTests[0].ExpAlerts[0].ExpAnnotations["summary"] != "down" ||
		g.PromqlExprTests[0].ExpSamples[0].Value != 1 || g.AlertRuleTests[0].LabelsOnly {
		t.Errorf("read %+v", f)
	}
	var l lokiFile
	if err := Read(write("loki.yaml", "rule_files: [r.yaml]\nevents_dir: events\n"), &l); err != nil || l.EvaluationInterval != DefaultEvaluationInterval ||
		l.RuleFiles[0] != filepath.Join(dir, "r.yaml") || l.EventsDir != "events" {
		t.Errorf("the inline header: %+v %v", l, err)
	}
	for name, tc := range map[string]struct{ src, want string }{
		"unknown key":    {"rule_files: [a]\ntests:\n  - name: x\n    fuzzy_compare: true\n", "line 4: field fuzzy_compare not found"},
		"mistyped value": {"evaluation_interval: soon\n", "line 1, column 22: \"soon\" is not a duration"},
		"runner's field": {"tests:\n  - alert_rule_test:\n      - labelsonly: true\n", "line 3: field labelsonly not found"},
	} {
		path := write(strings.ReplaceAll(name, " ", "-")+".yaml", tc.src)
		err := Read(path, &File{})
		if err == nil || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want an error naming %s and %q, got %v", name, path, tc.want, err)
		}
	}
}
