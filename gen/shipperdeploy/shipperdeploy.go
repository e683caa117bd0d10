// Package shipperdeploy builds the eventlog-shipper's Kubernetes objects for gen:
// its config and a HostProcess DaemonSet on the Windows nodes assigned to it.
package shipperdeploy

import (
	"fmt"
	"strings"
	"time"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/meta"
	"github.com/winobs/winobs/shipper/shipconfig"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/nodeagent"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/view"
)

// Name of every shipper object.
const Name = contract.ShipperName

const configDir = contract.ShipperConfigDir

// Files returns the shipper's ConfigMap and DaemonSet, or none when
// shipper.deploy is off.
func Files(v view.Shipper) ([]render.File, error) {
	if !v.Agents.ShipperDeployed {
		return nil, nil
	}
	conf, err := ShipperConfig(v)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: nodeagent.Meta(v.Agents, Name, meta.ComponentLogAgent),
		Data:       map[string]string{"shipper.yaml": string(conf)},
	}
	sc, err := Shipper(v)
	if err != nil {
		return nil, err
	}
	return []render.File{{Path: "shipper/eventlog-shipper.yaml", Objects: []any{cm, daemonSet(v, sc)}}}, nil
}

// ShipperConfig is the shipper's config file for the bundle's config: the
// same channels, Loki endpoint, labels and locale as Alloy, so the two agents
// write identical streams. It is the shipper's own type, filled in over its
// own defaults and checked with its own validation, so what gen renders is
// what the shipper loads.
func ShipperConfig(v view.Shipper) ([]byte, error) {
	sc, err := Shipper(v)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(sc)
}

// Shipper is the shipper's configuration for the bundle's config.
func Shipper(v view.Shipper) (*shipconfig.Config, error) {
	sc, err := shipconfig.Default()
	if err != nil {
		return nil, err
	}
	sc.Loki.Endpoint = v.Loki
	sc.Labels = map[string]string{contract.LabelJob: v.EventsJob}
	if v.Cluster.Multi() {
		sc.Labels[v.Cluster.Label] = v.Cluster.Name // Alloy's external label
	}
	sc.LabelsFromEnv = map[string]string{contract.LabelNode: nodeagent.NodeNameEnv}
	sc.StructuredMetadata = v.StructuredMetadata
	subs, err := v.EventLog.Subscriptions()
	if err != nil {
		return nil, err
	}
	for _, sub := range subs {
		sc.Channels = append(sc.Channels, shipconfig.Channel{Name: sub.Name, Query: sub.Query})
	}
	sc.StateDir, sc.Locale, sc.Listen = v.Shipper.StateDir, v.EventLog.Locale, v.Shipper.Listen
	sc.Textfile = strings.TrimRight(v.Shipper.TextfileDir, `\`) + `\eventlog-shipper.prom`
	sc.StartAt, sc.OnCorruptCheckpoint = shipconfig.Newest, shipconfig.Oldest
	if probs := sc.Validate(); len(probs) > 0 {
		return nil, fmt.Errorf("the eventlog-shipper would refuse its rendered config: %w", probs)
	}
	return sc, nil
}

// graceMargin is what the pod's termination grace period leaves beyond the
// shipper's own shutdownGrace: the process exits, writes its last
// checkpoint and metrics, before the kubelet kills it.
const graceMargin = 10 * time.Second

func daemonSet(v view.Shipper, sc *shipconfig.Config) any {
	grace := int64((time.Duration(sc.ShutdownGrace.Model()) + graceMargin).Seconds())
	probe := func(state string) *corev1.Probe {
		// HTTP probes of a HostProcess pod go to the node's address and the
		// shipper listens on loopback; its probe mode reads the health file
		// it keeps in its state directory, which no connection held open
		// to the metrics port can starve.
		health := strings.TrimRight(v.Shipper.StateDir, `\`) + `\` + shipconfig.HealthFile
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
			Command: []string{`eventlog-shipper.exe`, "probe", health, state},
		}}, PeriodSeconds: 20, TimeoutSeconds: 10, FailureThreshold: 3}
	}
	container := corev1.Container{
		Name:           "eventlog-shipper",
		Image:          v.Shipper.Image,
		Command:        []string{`eventlog-shipper.exe`},
		Args:           []string{"--config", configDir + `\shipper.yaml`},
		Env:            []corev1.EnvVar{nodeagent.NodeNameVar()},
		Resources:      nodeagent.Resources(v.Shipper.Resources),
		VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: configDir}},
		LivenessProbe:  probe("live"),
		ReadinessProbe: probe("ready"),
	}
	pod := corev1.PodSpec{
		Affinity:   nodeagent.AgentAffinity(v.Agents, config.AgentShipper),
		Containers: []corev1.Container{container},
		Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: Name}},
		}}},
		TerminationGracePeriodSeconds: &grace,
		// No Kubernetes API access at all.
		AutomountServiceAccountToken: new(bool),
	}
	nodeagent.MountLokiSecret(v.Agents, &pod)
	// SYSTEM: reading the Security channel needs it (or membership of Event
	// Log Readers, which LocalService does not have by default), and it can
	// create the state directory and the textfile under C:\var\lib. The
	// shipper holds no API token and opens no port beyond loopback.
	return nodeagent.DaemonSet(v.Agents, Name, Name, nodeagent.SystemAccount, pod)
}
