// Package meta gives every object winobs renders the same Kubernetes
// recommended labels, from one place.
package meta

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winobs/winobs"
)

// PartOf is the app.kubernetes.io/part-of value of every winobs object.
const PartOf = "winobs"

// Components: app.kubernetes.io/component values.
const (
	ComponentExporter   = "metrics-exporter"
	ComponentLogAgent   = "log-agent"
	ComponentRules      = "rules"
	ComponentDashboards = "dashboards"
	ComponentNamespace  = "namespace"
)

// Selector is the part of Labels that never changes between winobs
// versions: DaemonSet selectors are immutable, so they use only this.
func Selector(name string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": PartOf}
}

// Labels are the recommended labels of one object: name, instance,
// component, part-of, version and managed-by.
func Labels(name, component string) map[string]string {
	l := Selector(name)
	l["app.kubernetes.io/instance"] = PartOf
	l["app.kubernetes.io/component"] = component
	l["app.kubernetes.io/version"] = winobs.Pinned().Winobs
	l["app.kubernetes.io/managed-by"] = "winobs-gen"
	return l
}

// Object is the metadata of one object in namespace (empty for
// cluster-scoped objects), with Labels plus extra labels (which win).
func Object(namespace, name, component string, extra map[string]string) metav1.ObjectMeta {
	l := Labels(name, component)
	for k, v := range extra {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: l}
}
