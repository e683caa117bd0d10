package azuremonitor_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/winobs/winobs/gen/bundle"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/dashboards"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/managed/azuremonitor"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/managedrules"
)

const (
	sub       = "/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333"
	workspace = sub + "/resourceGroups/rg-monitor/providers/Microsoft.Monitor/accounts/amw-prod"
	cluster   = sub + "/resourceGroups/rg-aks/providers/Microsoft.ContainerService/managedClusters/aks-prod"
	actions   = sub + "/resourceGroups/rg-monitor/providers/Microsoft.Insights/actionGroups/oncall"
)

// azureConfig is the default config on Azure Monitor, for the AKS
// cluster aks-prod, validated and resolved as config.Load does.
func azureConfig(t *testing.T, clusterName string) *config.Config {
	t.Helper()
	return azureAliased(t, clusterName, false)
}

// azureAliased is azureConfig with prometheus.azure.clusterAlias.
func azureAliased(t *testing.T, clusterName string, alias bool) *config.Config {
	t.Helper()
	c := config.Default()
	c.Cluster.Name = clusterName
	c.Prometheus.Managed = managed.AzureMonitor
	c.Prometheus.Azure = config.AzureMonitor{Workspace: workspace, Location: "westeurope", Cluster: cluster, ActionGroups: []string{actions}, ClusterAlias: alias}
	if probs := config.Validate(c); len(probs) > 0 {
		t.Fatal(probs)
	}
	config.Resolve(c)
	return c
}

func template(t *testing.T, c *config.Config) (azuremonitor.ARMTemplate, []byte) {
	t.Helper()
	files, err := bundle.Managed(view.Of(c).Managed)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == "azure-monitor/prometheus-rule-groups.json" {
			var tmpl azuremonitor.ARMTemplate
			if err := json.Unmarshal(f.Raw, &tmpl); err != nil {
				t.Fatal(err)
			}
			return tmpl, f.Raw
		}
	}
	t.Fatal("no template rendered")
	return azuremonitor.ARMTemplate{}, nil
}

// Every record and alert of the default render is in the Azure rule groups
// once, in the render's order (records before the alerts that read them),
// with the same expression, `for` (ISO 8601, read back to the same
// duration), labels and annotations; each alert has an Azure severity from
// its label, auto-resolution and the action groups. No group holds more
// than Azure's 20 rules, and an alert reads only records of a group before
// its own (Azure evaluates groups independently: one interval's lag).
func TestEveryRuleOnceAsRendered(t *testing.T) {
	c := azureConfig(t, "aks-prod")
	tmpl, _ := template(t, c)
	groups, err := rules.Build(view.Of(c).Rules)
	if err != nil {
		t.Fatal(err)
	}
	back, err := managedrules.ReadBack(managed.AzureMonitor, view.Of(c).Managed)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range managedrules.Diff(groups, back) {
		t.Error(d)
	}
	var got []azuremonitor.Rule
	var names []string
	recordGroup := map[string]int{} // record → its group's index
	for i, res := range tmpl.Resources {
		names = append(names, res.Name)
		if n := len(res.Properties.Rules); n == 0 || n > azuremonitor.MaxRulesPerGroup {
			t.Errorf("group %s holds %d rules", res.Name, n)
		}
		for _, r := range res.Properties.Rules {
			got = append(got, r)
			if r.Record != "" {
				recordGroup[r.Record] = i
				continue
			}
			for rec, j := range recordGroup {
				if strings.Contains(r.Expression, rec) && j >= i {
					t.Errorf("alert %s reads %s of its own group", r.Alert, rec)
				}
			}
		}
		p := res.Properties
		if p.ClusterName != "aks-prod" || p.Interval != "PT1M" || !slices.Equal(p.Scopes, []string{workspace, cluster}) || res.Location != "westeurope" {
			t.Errorf("group %s: %+v", res.Name, p)
		}
	}
	if want := []string{"winobs-windows-records-aks-prod", "winobs-windows-alerts-aks-prod", "winobs-windows-alerts-2-aks-prod"}; !slices.Equal(names, want) {
		t.Errorf("groups %v, want %v", names, want)
	}
	n := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if n >= len(got) {
				t.Fatalf("only %d rules in the Azure groups", len(got))
			}
			a := got[n]
			n++
			name := r.Record + r.Alert
			if !a.Enabled {
				t.Errorf("rule %d (%s) is not enabled", n, name)
			}
			if r.Alert == "" {
				if a.Severity != nil || a.For != "" || a.Actions != nil || a.ResolveConfiguration != nil {
					t.Errorf("record %s carries alert fields", name)
				}
				continue
			}
			if a.Severity == nil || *a.Severity != azuremonitor.Severities[r.Labels["severity"]] {
				t.Errorf("%s: severity %v for label %q", name, a.Severity, r.Labels["severity"])
			}
			if a.ResolveConfiguration == nil || !a.ResolveConfiguration.AutoResolved || len(a.Actions) != 1 || a.Actions[0].ActionGroupID != actions {
				t.Errorf("%s: resolve %+v, actions %+v", name, a.ResolveConfiguration, a.Actions)
			}
		}
	}
	if n < 30 || n != len(got) {
		t.Errorf("%d rules rendered, %d in the groups", n, len(got))
	}
}

// The ARM template's resources hold to the REST API specification's
// PrometheusRuleGroupResource (testdata/azure, 2023-03-01), strictly, and
// to what its descriptions say: the interval 1 to 15 minutes, severity 0
// to 4, the name's pattern. A workspace-wide render (no AKS cluster named,
// no cluster.name) renders too, with no clusterName.
func TestTemplateHoldsToTheSpecification(t *testing.T) {
	var spec struct {
		Pattern     string             `json:"ruleGroupNamePattern"`
		Definitions map[string]*schema `json:"definitions"`
	}
	if err := json.Unmarshal(fixture.Read(t, "azure", "PrometheusRuleGroups.definitions.json"), &spec); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"aks-prod", ""} {
		c := azureConfig(t, name)
		if name == "" {
			c.Prometheus.Azure.Cluster, c.Cluster.Name = "", ""
		}
		_, raw := template(t, c)
		var tmpl struct {
			Schema         string           `json:"$schema"`
			ContentVersion string           `json:"contentVersion"`
			Resources      []map[string]any `json:"resources"`
		}
		if err := json.Unmarshal(raw, &tmpl); err != nil {
			t.Fatal(err)
		}
		if tmpl.Schema != azuremonitor.TemplateSchema || tmpl.ContentVersion != "1.0.0.0" || len(tmpl.Resources) == 0 {
			t.Fatalf("template: %+v", tmpl)
		}
		for _, res := range tmpl.Resources {
			// type, apiVersion and name are the template's, not the body's.
			if res["type"] != azuremonitor.ResourceType || res["apiVersion"] != "2023-03-01" ||
				!regexp.MustCompile(spec.Pattern).MatchString(fmt.Sprint(res["name"])) {
				t.Errorf("resource %v %v %v", res["type"], res["apiVersion"], res["name"])
			}
			delete(res, "type")
			delete(res, "apiVersion")
			delete(res, "name")
			for _, p := range validate(spec.Definitions, spec.Definitions["PrometheusRuleGroupResource"], res, "resource") {
				t.Error(p)
			}
			props := res["properties"].(map[string]any)
			if d, err := azuremonitor.ParseISODuration(props["interval"].(string)); err != nil || d < model.Duration(time.Minute) || d > model.Duration(15*time.Minute) {
				t.Errorf("interval %v: between PT1M and PT15M", props["interval"])
			}
			if _, ok := props["clusterName"]; ok != (name != "") {
				t.Errorf("clusterName %v for cluster.name %q", props["clusterName"], name)
			}
			for _, r := range props["rules"].([]any) {
				if s, ok := r.(map[string]any)["severity"].(float64); ok && (s < 0 || s > 4) {
					t.Errorf("severity %v", s)
				}
			}
		}
	}
	// The validator itself refuses what the specification does.
	bad := map[string]any{"location": "westeurope", "properties": map[string]any{"rules": []any{map[string]any{"record": "x", "for": "5m", "expresion": "up"}}}}
	probs := validate(spec.Definitions, spec.Definitions["PrometheusRuleGroupResource"], bad, "resource")
	want := []string{"resource.properties: scopes is required", "resource.properties.rules[0]: expression is required",
		`resource.properties.rules[0].expresion: not in the specification`, `resource.properties.rules[0].for: "5m" is not an ISO 8601 duration`}
	for _, w := range want {
		if !slices.Contains(probs, w) {
			t.Errorf("the validator misses %q: %q", w, probs)
		}
	}
}

// schema is the subset of Swagger 2.0 schemas PrometheusRuleGroups.json uses.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 string             `json:"type"`
	Format               string             `json:"format"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	Items                *schema            `json:"items"`
	AdditionalProperties *schema            `json:"additionalProperties"`
	AllOf                []*schema          `json:"allOf"`
	ReadOnly             bool               `json:"readOnly"`
}

// validate returns every way v differs from s, each at its path.
func validate(defs map[string]*schema, s *schema, v any, path string) []string {
	if s.Ref != "" {
		return validate(defs, defs[strings.TrimPrefix(s.Ref, "#/definitions/")], v, path)
	}
	var out []string
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return []string{path + ": not an object"}
		}
		props := map[string]*schema{}
		required := slices.Clone(s.Required)
		for k, p := range s.Properties {
			props[k] = p
		}
		for _, a := range s.AllOf {
			for k, p := range defs[strings.TrimPrefix(a.Ref, "#/definitions/")].Properties {
				props[k] = p
			}
			required = append(required, defs[strings.TrimPrefix(a.Ref, "#/definitions/")].Required...)
		}
		for _, r := range required {
			if _, ok := m[r]; !ok {
				out = append(out, fmt.Sprintf("%s: %s is required", path, r))
			}
		}
		for k, val := range m {
			switch p, ok := props[k]; {
			case ok && p.ReadOnly:
				out = append(out, fmt.Sprintf("%s.%s: read-only", path, k))
			case ok:
				out = append(out, validate(defs, p, val, path+"."+k)...)
			case s.AdditionalProperties != nil:
				out = append(out, validate(defs, s.AdditionalProperties, val, path+"."+k)...)
			default:
				out = append(out, fmt.Sprintf("%s.%s: not in the specification", path, k))
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return []string{path + ": not an array"}
		}
		for i, item := range a {
			out = append(out, validate(defs, s.Items, item, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return []string{path + ": not a string"}
		}
		if s.Format == "duration" {
			if _, err := azuremonitor.ParseISODuration(str); err != nil {
				out = append(out, fmt.Sprintf("%s: %q is not an ISO 8601 duration", path, str))
			}
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return []string{path + ": not a boolean"}
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int32(f)) {
			return []string{path + ": not an int32"}
		}
	}
	return out
}

// ISO 8601 both ways, on the durations the rules use and the edges.
func TestISODuration(t *testing.T) {
	for d, iso := range map[time.Duration]string{
		0: "", time.Minute: "PT1M", 10 * time.Minute: "PT10M", 90 * time.Minute: "PT1H30M", 15 * time.Second: "PT15S",
		24 * time.Hour: "P1D", 26*time.Hour + 5*time.Minute: "P1DT2H5M", 1500 * time.Millisecond: "PT1.5S",
	} {
		if got := azuremonitor.ISODuration(model.Duration(d)); got != iso {
			t.Errorf("%v: %q, want %q", d, got, iso)
		}
		if iso == "" {
			continue
		}
		if back, err := azuremonitor.ParseISODuration(iso); err != nil || time.Duration(back) != d {
			t.Errorf("%s reads back as %v %v", iso, back, err)
		}
	}
	for _, bad := range []string{"5m", "P", "PT", "P1DT", "PT1Y", "P1M2D", "-PT1M", ""} {
		if _, err := azuremonitor.ParseISODuration(bad); err == nil {
			t.Errorf("%q read as a duration", bad)
		}
	}
}

// The keep-lists hold every metric name the rules and dashboards read,
// found here by their text (no parser: every windows_exporter 0.31.8,
// kube-state-metrics and shipper name that appears as a word in a query)
// where the render derives them with PromQL's parser; and the commit
// metrics that Azure's minimal profile drops are among them.
func TestKeepListsHoldEveryMetricRead(t *testing.T) {
	c := azureConfig(t, "")
	v := view.Of(c).Managed
	groups, err := rules.Build(v.Rules)
	if err != nil {
		t.Fatal(err)
	}
	k, err := azuremonitor.Keep(v, groups)
	if err != nil {
		t.Fatal(err)
	}
	queries, err := dashboards.PromQueries(v.Dashboards)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			queries = append(queries, r.Expr)
		}
	}
	word := regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	known := fixture.KnownMetrics(t)
	found := 0
	for _, q := range queries {
		for _, w := range word.FindAllString(q, -1) {
			source, ok := known[w]
			if !ok || strings.Contains(w, ":") || w == "up" { // up: made by the scrape, never dropped
				continue
			}
			list := k.WindowsExporter
			if strings.HasPrefix(w, "kube_") {
				list = k.KubeState
			}
			found++
			if !slices.Contains(list, w) {
				t.Errorf("%s (%s) is read by %q and missing from its keep-list", w, source, q)
			}
		}
	}
	if found < 50 {
		t.Errorf("only %d metric words found in the queries", found)
	}
	for _, m := range []string{"windows_memory_committed_bytes", "windows_memory_commit_limit"} {
		if !slices.Contains(k.WindowsExporter, m) {
			t.Errorf("%s is not kept", m)
		}
	}
}

// The settings are one strict ConfigMap in kube-system whose sections ama-metrics'
// parser reads as TOML lines key = value: the Windows exporter's default
// target off (winobs's PodMonitor scrapes it with the node label the rules
// group by), the keep-lists as quoted regexes of the names Keep derives,
// the scrape interval, and cluster_alias only when asked for
// (prometheus.azure.clusterAlias), as its rewritten form: without it
// ama-metrics labels the series with the AKS resource name, which
// cluster.name then is.
func TestSettingsAreWhatAmaMetricsReads(t *testing.T) {
	for _, tc := range []struct {
		name      string
		alias     bool
		wantAlias string
	}{{"aks-prod", false, ""}, {"", false, ""}, {"prod-westeurope-01", true, "prod_westeurope_01"}} {
		c := azureAliased(t, tc.name, tc.alias)
		groups, err := rules.Build(view.Of(c).Rules)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := azuremonitor.Settings(view.Of(c).Managed, groups)
		if err != nil {
			t.Fatal(err)
		}
		var cm corev1.ConfigMap
		if err := sigyaml.UnmarshalStrict(raw, &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Name != "ama-metrics-settings-configmap" || cm.Namespace != "kube-system" || cm.Data["schema-version"] != "v1" || len(cm.Data["config-version"]) > 10 {
			t.Errorf("%s/%s %v", cm.Namespace, cm.Name, cm.Data)
		}
		toml := regexp.MustCompile(`^([a-z_-]+) = (true|false|"[^"\\]*")$`)
		settings := map[string]string{}
		for section, body := range cm.Data {
			if section == "schema-version" || section == "config-version" {
				continue
			}
			for _, line := range strings.Split(body, "\n") {
				m := toml.FindStringSubmatch(line)
				if m == nil {
					t.Fatalf("%s: %q is not a key = value line", section, line)
				}
				settings[section+"/"+m[1]] = strings.Trim(m[2], `"`)
			}
		}
		k, err := azuremonitor.Keep(view.Of(c).Managed, groups)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"default-scrape-settings-enabled/windowsexporter":          "false",
			"default-scrape-settings-enabled/kubestate":                "true",
			"default-targets-metrics-keep-list/windowsexporter":        strings.Join(k.WindowsExporter, "|"),
			"default-targets-metrics-keep-list/kubestate":              strings.Join(k.KubeState, "|"),
			"default-targets-scrape-interval-settings/windowsexporter": "30s",
		}
		if tc.wantAlias != "" {
			want["prometheus-collector-settings/cluster_alias"] = tc.wantAlias
		}
		if fmt.Sprint(settings) != fmt.Sprint(want) {
			t.Errorf("settings\n %v\nwant\n %v", settings, want)
		}
		for _, list := range []string{settings["default-targets-metrics-keep-list/windowsexporter"], settings["default-targets-metrics-keep-list/kubestate"]} {
			if _, err := regexp.Compile("^(" + list + ")$"); err != nil || list == "" {
				t.Errorf("keep-list %q: %v", list, err)
			}
		}
	}
}

// Issue 66: no string of the template is an ARM expression, by
// construction. A template holding an expression-shaped value in every
// string field (a cluster name, a label, an annotation, an action group,
// the builders' own constants) encodes with each escaped ("[[…]", which
// ARM reads as the literal) and reads back to the same values; a key that
// would be an expression is refused; and the templates gen renders, the
// default's and a hostile config's, hold no expression anywhere.
func TestNoTemplateStringIsAnARMExpression(t *testing.T) {
	const expr = "[subscription().id]"
	steal := "[listKeys(concat(resourceGroup().id, base64ToString('Lw==')), '2021-01-01')]"
	sev := 2
	tmpl := azuremonitor.ARMTemplate{Schema: expr, ContentVersion: "[[1]", Resources: []azuremonitor.RuleGroup{{
		Type: expr, APIVersion: expr, Name: expr, Location: "[resourceGroup().location]",
		Properties: azuremonitor.GroupProperties{Description: "[x] y", Scopes: []string{expr, "[]"}, Enabled: true, ClusterName: steal, Interval: expr,
			Rules: []azuremonitor.Rule{{Alert: expr, Expression: steal, For: expr, Severity: &sev,
				Labels: map[string]string{"team": expr}, Annotations: map[string]string{"summary": "[[[x]]]"},
				ResolveConfiguration: &azuremonitor.Resolve{TimeToResolve: expr}, Actions: []azuremonitor.Action{{ActionGroupID: steal}}}}},
	}}}
	raw, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	values := azuremonitor.StringValues(raw)
	if len(values) < 18 {
		t.Fatalf("only %d string values in %s", len(values), raw)
	}
	for _, s := range values {
		if azuremonitor.IsARMExpression(s) {
			t.Errorf("%q is an ARM expression", s)
		}
	}
	var back azuremonitor.ARMTemplate
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, tmpl) {
		t.Errorf("read back as ARM reads it:\n%+v\nwant\n%+v", back, tmpl)
	}
	if !strings.Contains(string(raw), `"clusterName":"[`+steal+`"`) || !strings.Contains(string(raw), `"description":"[x] y"`) {
		t.Errorf("escaped as: %s", raw)
	}
	// A hand-written expression is refused on reading.
	if err := json.Unmarshal([]byte(`{"resources":[{"name":"[subscription().id]"}]}`), &back); err == nil {
		t.Error("an expression read back without error")
	}
	// A key never carries one.
	tmpl.Resources[0].Properties.Rules[0].Labels = map[string]string{expr: "x"}
	if _, err := json.Marshal(tmpl); err == nil || !strings.Contains(err.Error(), "would be an ARM expression") {
		t.Errorf("an expression as a key: %v", err)
	}

	// What gen renders: the cluster name is refused as a name, and
	// as an alias becomes one ARM cannot evaluate.
	c := config.Default()
	c.Cluster.Name = expr
	c.Prometheus.Managed, c.Prometheus.Azure = managed.AzureMonitor, config.AzureMonitor{Workspace: workspace, Location: "westeurope", Cluster: cluster}
	if probs := config.Validate(c); !strings.Contains(fmt.Sprint(probs), "cluster.name") {
		t.Errorf("cluster.name %q: %v", expr, probs)
	}
	for _, c := range []*config.Config{azureConfig(t, "aks-prod"), azureAliased(t, steal, true)} {
		_, raw := template(t, c)
		for _, s := range azuremonitor.StringValues(raw) {
			if azuremonitor.IsARMExpression(s) {
				t.Errorf("the render holds the ARM expression %q", s)
			}
		}
	}
}
