// Package gmp renders what Google Cloud Managed Service for Prometheus
// (GKE) needs of winobs, which loads no PrometheusRule: the records and
// alerts as one monitoring.googleapis.com/v1 ClusterRules (this cluster's
// series) or GlobalRules (every cluster's), built from the published CRD
// schemas (prometheus-engine's Go module is not served here).
//
// GMP's rule evaluator scopes a ClusterRules' every selector to the
// cluster (project_id, location, cluster matchers added, and set on the
// result) and refuses a rule that sets one of those labels itself. winobs's
// container records aggregate across namespaces and write a namespace
// label from the exporter's, which a namespaced Rules would force: so no
// rule is a Rules, and none sets a scoping label (ScopingLabels).
package gmp

import (
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/meta"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
)

// APIVersion is the rules objects' API.
const APIVersion = "monitoring.googleapis.com/v1"

// ScopingLabels are the labels GMP's rule evaluator sets on a
// ClusterRules' results and refuses in a rule's labels (prometheus-engine
// pkg/operator/rules_config.go); a GlobalRules is scoped by none.
var ScopingLabels = []string{"project_id", "location", "cluster"}

// Interval is the groups' evaluation interval, the rules tests' own.
const Interval = model.Duration(time.Minute)

// Rules is a ClusterRules or GlobalRules object.
type Rules struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              Spec `json:"spec"`
}

// Spec holds the rule groups.
type Spec struct {
	Groups []Group `json:"groups"`
}

// Group is a rule group as the CRD takes it: interval required.
type Group struct {
	Name     string `json:"name"`
	Interval string `json:"interval"`
	Rules    []Rule `json:"rules"`
}

// Rule is one recording or alerting rule.
type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Files renders the rules object into the service's folder; it is a
// Kubernetes object, applied (and deleted) with the rest by kubectl -k.
func Files(v view.Managed, groups rulefmt.RuleGroups) ([]render.File, error) {
	obj, err := Object(v, groups)
	if err != nil {
		return nil, err
	}
	return []render.File{{Path: v.Service.Dir + obj.Name + ".yaml", Objects: []any{obj}}}, nil
}

// Object is the groups as one ClusterRules (scope cluster) or GlobalRules
// (scope global), in their order; a rule that sets a scoping label is an
// error, as GMP would refuse the object.
func Object(v view.Managed, groups rulefmt.RuleGroups) (*Rules, error) {
	kind := "ClusterRules"
	if v.GMP.Scope == config.GMPScopeGlobal {
		kind = "GlobalRules"
	}
	obj := &Rules{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: kind},
		ObjectMeta: meta.Object("", rules.MetricsNamespace(v.Rules.Ruler), meta.ComponentRules, nil),
	}
	for _, g := range groups.Groups {
		out := Group{Name: g.Name, Interval: Interval.String()}
		if g.Interval != 0 {
			out.Interval = g.Interval.String()
		}
		for _, r := range g.Rules {
			for k := range r.Labels {
				if kind == "ClusterRules" && slices.Contains(ScopingLabels, k) {
					return nil, fmt.Errorf("%s sets the label %s, which GMP's rule evaluator sets on a ClusterRules' results and refuses", r.Record+r.Alert, k)
				}
			}
			rule := Rule{Record: r.Record, Alert: r.Alert, Expr: r.Expr, Labels: r.Labels, Annotations: r.Annotations}
			if r.For != 0 {
				rule.For = r.For.String()
			}
			out.Rules = append(out.Rules, rule)
		}
		obj.Spec.Groups = append(obj.Spec.Groups, out)
	}
	return obj, nil
}
