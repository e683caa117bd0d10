package nodeagent

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/view"
)

// matches evaluates a required node affinity against a node's labels.
func matches(a *corev1.Affinity, labels map[string]string) bool {
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		ok := true
		for _, r := range term.MatchExpressions {
			v, has := labels[r.Key]
			switch r.Operator {
			case corev1.NodeSelectorOpIn:
				ok = ok && has && slices.Contains(r.Values, v)
			case corev1.NodeSelectorOpNotIn:
				ok = ok && (!has || !slices.Contains(r.Values, v))
			default:
				return false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// Whatever the node label says, exactly one agent ships the node's logs, and
// an unlabelled node gets the default.
func TestEveryNodeGetsExactlyOneLogAgent(t *testing.T) {
	for _, def := range []string{config.AgentAlloy, config.AgentShipper} {
		cfg, err := config.Load("")
		if err != nil {
			t.Fatal(err)
		}
		cfg.LogAgent.Default, cfg.Shipper.Deploy = def, true
		a := view.Of(cfg).Agents
		alloy, shipper := AgentAffinity(a, config.AgentAlloy), AgentAffinity(a, config.AgentShipper)
		for _, value := range []string{"", config.AgentAlloy, config.AgentShipper, "something-else"} {
			labels := map[string]string{"kubernetes.io/os": "windows"}
			if value != "" {
				labels[cfg.LogAgent.NodeLabel] = value
			}
			a, s := matches(alloy, labels), matches(shipper, labels)
			if a == s {
				t.Errorf("default %s, label %q: alloy %v, shipper %v", def, value, a, s)
			}
			if value == "" && (a && def != config.AgentAlloy || s && def != config.AgentShipper) {
				t.Errorf("default %s: an unlabelled node got the other agent", def)
			}
		}
	}
}

// Without the shipper, Alloy ships every Windows node's logs: a node label
// asking for the shipper would otherwise leave that node with no agent.
func TestWithoutTheShipperAlloyTakesEveryNode(t *testing.T) {
	cfg := config.Default()
	if cfg.Shipper.Deploy {
		t.Fatal("the shipper is deployed by default; its image is not published")
	}
	if a := AgentAffinity(view.Of(cfg).Agents, config.AgentAlloy); a != nil {
		t.Errorf("Alloy's affinity without the shipper: %+v", a)
	}
}

// Every DaemonSet's pods get the pull secrets, the priority class and the
// extra labels and annotations; the selector stays winobs's own.
func TestPodsSettings(t *testing.T) {
	cfg := config.Default()
	cfg.Pods = config.Pods{ImagePullSecrets: []string{"ghcr-pull"}, PriorityClassName: "system-node-critical",
		Labels: config.Labels{"team": "platform"}, Annotations: map[string]string{"example.com/owner": "ops\nteam"}}
	ds := DaemonSet(view.Of(cfg).Agents, "x", "agent", SystemAccount, corev1.PodSpec{})
	pod := ds.Spec.Template
	if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "ghcr-pull" || pod.Spec.PriorityClassName != "system-node-critical" {
		t.Errorf("%+v", pod.Spec)
	}
	if pod.Labels["team"] != "platform" || pod.Labels["app.kubernetes.io/name"] != "x" || pod.Annotations["example.com/owner"] != "ops\nteam" {
		t.Errorf("%v %v", pod.Labels, pod.Annotations)
	}
	if _, ok := ds.Spec.Selector.MatchLabels["team"]; ok {
		t.Error("an extra label reached the selector")
	}
	if def := DaemonSet(view.Of(config.Default()).Agents, "x", "agent", SystemAccount, corev1.PodSpec{}); def.Spec.Template.Annotations != nil || def.Spec.Template.Spec.PriorityClassName != "system-node-critical" || def.Spec.Template.Spec.ImagePullSecrets != nil {
		t.Error("the default's pod settings")
	}
}

// By default the agents tolerate every NoSchedule taint a Windows node may
// carry (as the upstream windows-exporter chart does), judged the way the
// scheduler judges a toleration against a taint.
func TestDefaultTolerationsAdmitTaintedWindowsNodes(t *testing.T) {
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	ts := tolerations(cfg.Nodes.Tolerations)
	for _, taint := range []corev1.Taint{
		{Key: "os", Value: "windows", Effect: corev1.TaintEffectNoSchedule},                                 // AKS/EKS guides
		{Key: "node.kubernetes.io/os", Value: "windows", Effect: corev1.TaintEffectNoSchedule},              // GKE
		{Key: "sku", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},                                    // a node pool's own
		{Key: "kubernetes.azure.com/scalesetpriority", Value: "spot", Effect: corev1.TaintEffectNoSchedule}, // AKS spot
		{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule},                     // a cordoned node
	} {
		if !slices.ContainsFunc(ts, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), &taint, false) }) {
			t.Errorf("no default toleration tolerates %s", taint.ToString())
		}
	}
	// NoExecute is not tolerated: a node being drained loses its agents.
	noExec := corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute}
	if slices.ContainsFunc(ts, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), &noExec, false) }) {
		t.Errorf("a default toleration tolerates %s", noExec.ToString())
	}
}
