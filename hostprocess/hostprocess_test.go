package hostprocess

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/winobs/winobs/config"
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
		cfg.LogAgent.Default = def
		alloy, shipper := AgentAffinity(cfg, config.AgentAlloy), AgentAffinity(cfg, config.AgentShipper)
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
