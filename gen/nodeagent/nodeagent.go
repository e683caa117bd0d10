// Package nodeagent builds what every winobs node agent shares: the namespace
// they run in (rendered at the Pod Security level HostProcess pods need), the
// HostProcess DaemonSet around each agent's pod (Windows placement, security
// context, the pods' extra settings), the node name from the downward API,
// resources, the Loki Secret mount, and the node label that gives each
// Windows node exactly one log agent. Its input is view.Agents.
package nodeagent

import (
	"maps"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/meta"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/view"
)

// SystemAccount is the account winobs's HostProcess containers run as; each
// builder says why it needs it.
const SystemAccount = `NT AUTHORITY\SYSTEM`

// NodeNameEnv is set from spec.nodeName: the Windows hostname is upper-case
// and differs from the Node object's name.
const NodeNameEnv = "NODE_NAME"

// Meta is the object metadata of one node agent's objects.
func Meta(a view.Agents, name, component string) metav1.ObjectMeta {
	return meta.Object(a.Namespace, name, component, nil)
}

// PodSecurityLevel is the Pod Security Admission level HostProcess pods
// need: every lower level forbids hostProcess and hostNetwork.
const PodSecurityLevel = "privileged"

// NamespaceFiles renders the namespace, when the config asks for it, with
// the Pod Security labels (enforce, audit and warn) that admit HostProcess
// pods.
func NamespaceFiles(a view.Agents) ([]render.File, error) {
	if !a.CreateNamespace {
		return nil, nil
	}
	ns := &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: meta.Object("", a.Namespace, meta.ComponentNamespace, map[string]string{
			"pod-security.kubernetes.io/enforce": PodSecurityLevel,
			"pod-security.kubernetes.io/audit":   PodSecurityLevel,
			"pod-security.kubernetes.io/warn":    PodSecurityLevel,
		}),
	}
	return []render.File{{Path: "namespace.yaml", Objects: []any{ns}}}, nil
}

// DaemonSet wraps a pod spec into a HostProcess DaemonSet on the Windows
// nodes: host network, the given account, rolling updates one node at a time.
func DaemonSet(a view.Agents, name, component, account string, pod corev1.PodSpec) *appsv1.DaemonSet {
	pod.OS = &corev1.PodOS{Name: corev1.Windows}
	pod.NodeSelector = map[string]string(a.Nodes.Selector)
	pod.Tolerations = tolerations(a.Nodes.Tolerations)
	pod.HostNetwork = true
	pod.PriorityClassName = a.Pods.PriorityClassName
	for _, name := range a.Pods.ImagePullSecrets {
		pod.ImagePullSecrets = append(pod.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
	}
	labels := meta.Labels(name, component)
	for k, v := range a.Pods.Labels {
		labels[k] = v // validated: never an app.kubernetes.io/ label
	}
	var annotations map[string]string
	if len(a.Pods.Annotations) > 0 {
		annotations = maps.Clone(a.Pods.Annotations)
	}
	pod.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
		HostProcess: ptr(true), RunAsUserName: ptr(account),
	}}
	maxUnavailable := intstr.FromInt32(1)
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: Meta(a, name, component),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: meta.Selector(name)},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec:       pod,
			},
		},
	}
}

// MountLokiSecret adds the Loki Secret, when one is named, to the pod and
// read-only to its first container: the log agents read the Loki
// credentials from it.
func MountLokiSecret(a view.Agents, pod *corev1.PodSpec) {
	if a.LokiSecret.Name == "" {
		return
	}
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "loki-credentials", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: a.LokiSecret.Name},
	}})
	c := &pod.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "loki-credentials", MountPath: a.LokiSecret.MountPath, ReadOnly: true})
}

func tolerations(ts []config.Toleration) []corev1.Toleration {
	out := make([]corev1.Toleration, len(ts))
	for i, t := range ts {
		out[i] = corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)}
	}
	return out
}

// NodeNameVar reads the node name from the downward API.
func NodeNameVar() corev1.EnvVar {
	return corev1.EnvVar{Name: NodeNameEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}
}

// Resources converts validated quantities.
func Resources(r config.Resources) corev1.ResourceRequirements {
	list := func(m map[string]string) corev1.ResourceList {
		if len(m) == 0 {
			return nil
		}
		out := corev1.ResourceList{}
		for k, v := range m {
			out[corev1.ResourceName(k)] = resource.MustParse(v)
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: list(r.Requests), Limits: list(r.Limits)}
}

// AgentAffinity selects the nodes whose log agent is agent. The default agent
// takes every node not labelled for another agent (NotIn also matches an
// absent label); the other takes only nodes labelled for it. For any value
// of the label, at most one agent matches, and an unlabelled node gets the
// default. Without the shipper, Alloy takes every node: nil.
func AgentAffinity(a view.Agents, agent string) *corev1.Affinity {
	if !a.ShipperDeployed {
		return nil
	}
	req := corev1.NodeSelectorRequirement{Key: a.LogAgent.NodeLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{agent}}
	if agent == a.LogAgent.Default {
		var others []string
		for _, other := range []string{config.AgentAlloy, config.AgentShipper} {
			if other != agent {
				others = append(others, other)
			}
		}
		sort.Strings(others)
		req = corev1.NodeSelectorRequirement{Key: a.LogAgent.NodeLabel, Operator: corev1.NodeSelectorOpNotIn, Values: others}
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{req}}},
		},
	}}
}

func ptr[T any](v T) *T { return &v }
