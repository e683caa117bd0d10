// Package azuremonitor renders what Azure Monitor managed Prometheus (AKS)
// needs of winobs, which reads no PrometheusRule: every record and alert as
// Microsoft.AlertsManagement/prometheusRuleGroups (api-version 2023-03-01)
// in an ARM template, and the ama-metrics settings that keep every metric
// the rules and dashboards read. The exporter's monitor itself is
// package exporters' (in ama-metrics' azmonitoring.coreos.com group).
package azuremonitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
)

// Files renders the rule groups' template and the ama-metrics settings into
// the service's folder (outside kustomization.yaml: the template goes to Azure
// Resource Manager, the settings to kube-system).
func Files(v view.Managed, groups rulefmt.RuleGroups) ([]render.File, error) {
	tmpl, err := Template(v, groups)
	if err != nil {
		return nil, err
	}
	// Expressions keep their > and &: Go escapes them for HTML by default.
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(tmpl); err != nil {
		return nil, err
	}
	settings, err := Settings(v, groups)
	if err != nil {
		return nil, err
	}
	return []render.File{
		{Path: v.Service.Dir + "prometheus-rule-groups.json", Raw: raw.Bytes()},
		{Path: v.Service.Dir + "ama-metrics-settings-configmap.yaml", Raw: settings},
	}, nil
}

// The ARM template: one resource a rule group (the REST API's
// PrometheusRuleGroupResource, properties as in PrometheusRuleGroups.json).
type (
	// ARMTemplate is a deployment template for az deployment group create.
	ARMTemplate struct {
		Schema         string      `json:"$schema"`
		ContentVersion string      `json:"contentVersion"`
		Resources      []RuleGroup `json:"resources"`
	}
	// RuleGroup is one Microsoft.AlertsManagement/prometheusRuleGroups.
	RuleGroup struct {
		Type       string          `json:"type"`
		APIVersion string          `json:"apiVersion"`
		Name       string          `json:"name"`
		Location   string          `json:"location"`
		Properties GroupProperties `json:"properties"`
	}
	// GroupProperties are a rule group's properties.
	GroupProperties struct {
		Description string   `json:"description,omitempty"`
		Scopes      []string `json:"scopes"`
		Enabled     bool     `json:"enabled"`
		ClusterName string   `json:"clusterName,omitempty"`
		Interval    string   `json:"interval"`
		Rules       []Rule   `json:"rules"`
	}
	// Rule is a recording or an alerting rule.
	Rule struct {
		Record               string            `json:"record,omitempty"`
		Alert                string            `json:"alert,omitempty"`
		Expression           string            `json:"expression"`
		Enabled              bool              `json:"enabled"`
		For                  string            `json:"for,omitempty"`
		Labels               map[string]string `json:"labels,omitempty"`
		Annotations          map[string]string `json:"annotations,omitempty"`
		Severity             *int              `json:"severity,omitempty"`
		ResolveConfiguration *Resolve          `json:"resolveConfiguration,omitempty"`
		Actions              []Action          `json:"actions,omitempty"`
	}
	// Resolve is an alert's resolveConfiguration.
	Resolve struct {
		AutoResolved  bool   `json:"autoResolved"`
		TimeToResolve string `json:"timeToResolve"`
	}
	// Action notifies an action group.
	Action struct {
		ActionGroupID string `json:"actionGroupId"`
	}
)

// The template's and the resource's fixed values.
const (
	TemplateSchema = "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#"
	ResourceType   = "Microsoft.AlertsManagement/prometheusRuleGroups"
	APIVersion     = "2023-03-01"
	// Interval is the rules' evaluation interval, a ruler's default, which
	// the rules' tests evaluate at.
	Interval = "PT1M"
	// TimeToResolve is Azure's default: an alert whose condition has
	// cleared resolves 5 minutes later.
	TimeToResolve = "PT5M"
)

// Severities are Azure Monitor's severities (0 Critical, 1 Error, 2
// Warning, 3 Informational, 4 Verbose) for winobs's severity label.
var Severities = map[string]int{"critical": 0, "warning": 2, "info": 3}

// MaxRulesPerGroup is Azure Monitor's limit: "You can add rules up to the
// limit of 20 rules in a single group" (Azure Monitor's rule-group
// documentation, "Configure the rules in the group"); every group Azure
// itself ships holds at most 19.
const MaxRulesPerGroup = 20

// groupName is the API's ruleGroupName pattern.
var groupName = regexp.MustCompile(`^[^:@/#{}%&+*<>?]+$`)

// GroupName is the name of the rule group resource holding the rules'
// group g: g's name, then the cluster's when one is set, so several
// clusters' groups share a resource group, as Azure's own do
// (NodeRecordingRulesRuleGroup-Win-<cluster>).
func GroupName(v view.Managed, g string) string {
	if !v.Cluster.Multi() {
		return g
	}
	return g + "-" + v.Cluster.Name
}

// Template is every record and alert of groups as Azure rule groups of at
// most MaxRulesPerGroup rules (rules.Split), in their order: the records'
// groups before the alerts' groups that read them. Azure runs the rules of
// a group in sequence but its groups independently of one another ("Rules
// are run sequentially in the order they are defined in the group"), so
// an alert reads a record as of the record group's last evaluation: at
// most one interval (PT1M) old, as in any Prometheus that loads the two
// groups.
func Template(v view.Managed, groups rulefmt.RuleGroups) (ARMTemplate, error) {
	a := v.Azure
	scopes := []string{a.Workspace}
	if a.Cluster != "" {
		scopes = append(scopes, a.Cluster) // the cluster-centric form
	}
	tmpl := ARMTemplate{Schema: TemplateSchema, ContentVersion: "1.0.0.0"}
	split := rules.Split(groups, MaxRulesPerGroup)
	for i, grp := range split.Groups {
		name := GroupName(v, grp.Name)
		if !groupName.MatchString(name) || len(name) > 260 {
			return ARMTemplate{}, fmt.Errorf("rule group name %q: Azure refuses any of : @ / # { } %% & + * < > ? (cluster.name gives its end)", name)
		}
		g := RuleGroup{Type: ResourceType, APIVersion: APIVersion, Name: name, Location: a.Location,
			Properties: GroupProperties{
				Description: fmt.Sprintf("winobs: Windows node and container records and alerts (commit memory, services, disks, network, time, containers), group %d of %d", i+1, len(split.Groups)),
				Scopes:      scopes, Enabled: true, ClusterName: v.Cluster.Name, Interval: Interval,
			}}
		for _, r := range grp.Rules {
			out := Rule{Record: r.Record, Alert: r.Alert, Expression: r.Expr, Enabled: true, Labels: r.Labels, Annotations: r.Annotations}
			if r.Alert != "" {
				sev, ok := Severities[r.Labels["severity"]]
				if !ok {
					return ARMTemplate{}, fmt.Errorf("alert %s: severity %q has no Azure severity", r.Alert, r.Labels["severity"])
				}
				out.Severity = &sev
				out.For = ISODuration(r.For)
				out.ResolveConfiguration = &Resolve{AutoResolved: true, TimeToResolve: TimeToResolve}
				for _, id := range a.ActionGroups {
					out.Actions = append(out.Actions, Action{ActionGroupID: id})
				}
			}
			g.Properties.Rules = append(g.Properties.Rules, out)
		}
		tmpl.Resources = append(tmpl.Resources, g)
	}
	return tmpl, nil
}
