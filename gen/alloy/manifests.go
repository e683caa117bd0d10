package alloy

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/meta"
	"github.com/winobs/winobs/gen/nodeagent"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/view"
)

// Name of every Alloy object.
const Name = "winobs-alloy-windows"

// configDir is where the ConfigMap appears on the node; a HostProcess
// container's volumes are bound into the host's file system.
const configDir = contract.AlloyConfigDir

// Files returns config.alloy (for reference), the Alloy objects, and a
// LogMonitor config matched to the pod pipeline, for Windows container
// images (docs/agents.md).
func Files(v view.Alloy) ([]render.File, error) {
	conf, err := Config(v)
	if err != nil {
		return nil, err
	}
	lm, err := LogMonitorConfig(v.EventLog.Channels)
	if err != nil {
		return nil, err
	}
	return []render.File{
		{Path: "alloy/config.alloy", Raw: conf},
		{Path: "alloy/alloy.yaml", Objects: Objects(v, conf)},
		{Path: LogMonitorConfigPath, Raw: lm},
	}, nil
}

// Objects are the ServiceAccount, least-privilege RBAC, ConfigMap and
// DaemonSet of Alloy on the Windows nodes assigned to it.
func Objects(v view.Alloy, conf []byte) []any {
	meta := nodeagent.Meta(v.Agents, Name, meta.ComponentLogAgent)
	sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta}
	// Discovery lists and watches this node's pods; nothing else.
	role := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: meta.Labels},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: meta.Labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: Name, Namespace: v.Agents.Namespace}},
	}
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta,
		Data: map[string]string{"config.alloy": spaceIndented(conf)},
	}
	return []any{sa, role, binding, cm, daemonSet(v)}
}

// readyProbe asks Alloy's /-/ready from inside the node: an HTTP probe of
// a HostProcess pod goes to the node's address and cannot reach Alloy's
// loopback listener, so the kubelet execs curl.exe (in System32 on Windows
// Server 2019 and later), with the validated loopback address as an
// argument, no shell.
func readyProbe(v view.Alloy, failures int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"curl.exe", "--fail", "--silent", "--show-error", "--max-time", "5", "--output", "NUL",
			"http://" + v.Alloy.ListenAddress + "/-/ready"},
	}}, InitialDelaySeconds: 10, PeriodSeconds: 20, TimeoutSeconds: 10, FailureThreshold: failures}
}

func daemonSet(v view.Alloy) any {
	grace := int64(30)
	container := corev1.Container{
		Name:    "alloy",
		Image:   v.Alloy.Image,
		Command: []string{contract.AlloyExe},
		Args: []string{
			"run", configDir + `\config.alloy`,
			"--storage.path=" + v.Alloy.StoragePath,
			// HostProcess pods share the node's network: loopback only.
			"--server.http.listen-addr=" + v.Alloy.ListenAddress,
		},
		Env: []corev1.EnvVar{
			nodeagent.NodeNameVar(),
			// The kubernetes Service address is not reachable from the node network.
			{Name: "KUBERNETES_SERVICE_HOST", Value: v.APIServer.Host},
			{Name: "KUBERNETES_SERVICE_PORT", Value: strconv.Itoa(v.APIServer.Port)},
		},
		Resources:    nodeagent.Resources(v.Alloy.Resources),
		VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: configDir}},
		// /-/ready: the config is loaded. Not /-/healthy, which fails while
		// any component does (Loki unreachable) and would restart Alloy in
		// a loop without fixing anything.
		ReadinessProbe: readyProbe(v, 3),
		LivenessProbe:  readyProbe(v, 6),
	}
	pod := corev1.PodSpec{
		ServiceAccountName: Name,
		Affinity:           nodeagent.AgentAffinity(v.Agents, config.AgentAlloy),
		// The storage path holds the bookmarks and positions: only SYSTEM
		// and Administrators may write it.
		InitContainers: []corev1.Container{nodeagent.SecureDirsContainer(v.Alloy.Image, v.Alloy.StoragePath)},
		Containers:     []corev1.Container{container},
		Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: Name}},
		}}},
		// Let the bookmark and positions flush on shutdown.
		TerminationGracePeriodSeconds: &grace,
	}
	nodeagent.MountLokiSecret(v.Agents, &pod)
	// SYSTEM: LocalService and NetworkService cannot read C:\var\log\pods.
	return nodeagent.DaemonSet(v.Agents, Name, Name, nodeagent.SystemAccount, pod)
}

// spaceIndented is conf with each leading tab as two spaces: the same Alloy
// config (its syntax ignores indentation; a string cannot span lines, so
// every leading tab is indentation), which YAML can hold as a readable
// literal block in the ConfigMap. With tabs, YAML encoders fall back to one
// double-quoted line that `kubectl get cm -o yaml` shows unreadable.
func spaceIndented(conf []byte) string {
	lines := strings.Split(string(conf), "\n")
	for i, l := range lines {
		body := strings.TrimLeft(l, "\t")
		lines[i] = strings.Repeat("  ", len(l)-len(body)) + body
	}
	return strings.Join(lines, "\n")
}
