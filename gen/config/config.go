// Package config holds the one typed configuration every winobs artifact is
// built from: an embedded default (the reference lab) overridden field by field
// by a user file, validated completely before anything is rendered.
package config

import (
	"bytes"
	_ "embed"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/winobs/winobs"
	"github.com/winobs/winobs/conffile"
	"github.com/winobs/winobs/endpoint"
	"github.com/winobs/winobs/eventfilter"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the embedded default configuration, comments included.
func DefaultYAML() []byte { return bytes.Clone(defaultYAML) }

// Config is the root of the configuration tree.
type Config struct {
	// Namespace the rendered objects are created in.
	Namespace string `yaml:"namespace"`
	// CreateNamespace renders the namespace with the Pod Security labels
	// HostProcess pods need (level privileged).
	CreateNamespace  bool             `yaml:"createNamespace"`
	Cluster          Cluster          `yaml:"cluster"`
	Prometheus       Prometheus       `yaml:"prometheus"`
	Ruler            Ruler            `yaml:"ruler"`
	WindowsExporter  WindowsExporter  `yaml:"windowsExporter"`
	KubeStateMetrics KubeStateMetrics `yaml:"kubeStateMetrics"`
	Nodes            Nodes            `yaml:"nodes"`
	APIServer        APIServer        `yaml:"apiServer"`
	ServiceCIDR      string           `yaml:"serviceCIDR"`
	Loki             Loki             `yaml:"loki"`
	LokiSecret       LokiSecret       `yaml:"lokiSecret"`
	EventLog         EventLog         `yaml:"eventLog"`
	LogAgent         LogAgent         `yaml:"logAgent"`
	Alloy            Alloy            `yaml:"alloy"`
	Shipper          Shipper          `yaml:"shipper"`
	Pods             Pods             `yaml:"pods"`
	Logs             Logs             `yaml:"logs"`
	Dashboards       Dashboards       `yaml:"dashboards"`
	LokiRules        LokiRules        `yaml:"lokiRules"`
	Alerts           Alerts           `yaml:"alerts"`
}

// Logs names the Loki streams the agents write and the dashboards read.
type Logs struct {
	EventsJob  string `yaml:"eventsJob"`
	PodLogsJob string `yaml:"podLogsJob"`
	// StructuredMetadata: the Loki takes structured metadata (3.0+ on
	// schema v13, limits_config.allow_structured_metadata true), and a
	// node's events share two streams with their channel as metadata, the
	// pod logs carry LogMonitor's fields as metadata. False renders the
	// layout a Loki without it takes: the channel a stream label (a stream
	// a channel of a node), no metadata anywhere, LogMonitor's fields read
	// from the line at query time.
	StructuredMetadata bool `yaml:"structuredMetadata"`
}

// Dashboards controls how dashboards are published to Grafana.
type Dashboards struct {
	Folder            string   `yaml:"folder"`
	Tags              []string `yaml:"tags"`
	SidecarLabel      string   `yaml:"sidecarLabel"`
	SidecarLabelValue string   `yaml:"sidecarLabelValue"`
	FolderAnnotation  string   `yaml:"folderAnnotation"`
	// V2 also renders the dashboards as Grafana 13 dashboard.grafana.app/v2
	// resources (dashboards-v2/).
	V2 bool `yaml:"v2"`
}

// LokiRules renders the Loki alerts as a ConfigMap for the Loki Helm
// chart's rules sidecar (sidecar.rules), so they arrive with kubectl apply -k.
type LokiRules struct {
	ConfigMap bool `yaml:"configMap"`
	// Namespace the sidecar searches (the chart's searchNamespace; by
	// default Loki's own); empty means the bundle's namespace.
	Namespace  string `yaml:"namespace"`
	Label      string `yaml:"label"`
	LabelValue string `yaml:"labelValue"`
}

// Cluster names the label that separates clusters in a shared backend.
type Cluster struct {
	Label string `yaml:"label"`
	Name  string `yaml:"name"`
}

// Multi reports whether a cluster name is configured: then the log agents
// add it as an external label and the dashboards select on it.
func (c Cluster) Multi() bool { return c.Name != "" }

// Prometheus holds what the Prometheus that evaluates the rules needs.
type Prometheus struct {
	// RuleLabels go on every PrometheusRule (the ruleSelector of kps).
	RuleLabels Labels `yaml:"ruleLabels"`
	// Managed is where the rules run (the key prometheus.platform): "" for
	// a Prometheus that loads PrometheusRule objects, or a managed
	// Prometheus service, a name of package managed's table.
	Managed string `yaml:"platform"`
	// Azure is Azure Monitor managed Prometheus, for managed.AzureMonitor.
	Azure AzureMonitor `yaml:"azure"`
	// AMP is Amazon Managed Service for Prometheus, for managed.AMP.
	AMP AMP `yaml:"amp"`
	// GMP is Google Cloud Managed Service for Prometheus, for managed.GMP.
	GMP GMP `yaml:"gmp"`
}

// AMP names the workspace the rule groups namespace is uploaded to.
type AMP struct {
	WorkspaceID string `yaml:"workspaceId"`
	Region      string `yaml:"region"`
}

// GMP says how widely the rules evaluate: "cluster" (ClusterRules: this
// cluster's series, as the rule evaluator scopes them) or "global"
// (GlobalRules: every project's and cluster's).
type GMP struct {
	Scope string `yaml:"scope"`
}

// GMP rule scopes.
const (
	GMPScopeCluster = "cluster"
	GMPScopeGlobal  = "global"
)

// AzureMonitor names the Azure resources the rule groups are made in and
// scoped to, each by its resource id.
type AzureMonitor struct {
	Workspace    string   `yaml:"workspace"`
	Location     string   `yaml:"location"`
	Cluster      string   `yaml:"cluster"`
	ActionGroups []string `yaml:"actionGroups"`
	// ClusterAlias writes cluster.name as ama-metrics' cluster_alias, which
	// renames the cluster label of every series of the cluster (to its
	// rewritten form: AzureClusterLabel); false leaves the label ama-metrics
	// writes by default, the AKS resource name.
	ClusterAlias bool `yaml:"clusterAlias"`
}

// Ruler names the rules loaded into a horizontally scaled ruler (Mimir,
// Cortex, Loki) with mimirtool, cortextool or lokitool.
type Ruler struct {
	// NamespacePrefix starts every ruler namespace winobs renders, so
	// `rules sync --namespaces-regex '^<prefix>-'` touches only winobs's rules.
	NamespacePrefix string `yaml:"namespacePrefix"`
}

// WindowsExporter describes how windows_exporter is scraped and, with
// Deploy, how winobs runs it.
type WindowsExporter struct {
	Job            string    `yaml:"job"`
	Deploy         bool      `yaml:"deploy"`
	Image          string    `yaml:"image"`
	Monitor        string    `yaml:"monitor"`
	MonitorLabels  Labels    `yaml:"monitorLabels"`
	ScrapeInterval Duration  `yaml:"scrapeInterval"`
	Services       Services  `yaml:"services"`
	Firewall       Firewall  `yaml:"firewall"`
	Resources      Resources `yaml:"resources"`
}

// Monitor kinds for WindowsExporter.Monitor.
const (
	PodMonitor     = "PodMonitor"
	ServiceMonitor = "ServiceMonitor"
)

// Firewall scopes the inbound rule for the exporter's port.
type Firewall struct {
	Enabled   bool     `yaml:"enabled"`
	AllowFrom []string `yaml:"allowFrom"`
}

// Resources are container requests and limits as Kubernetes quantities.
type Resources struct {
	Requests map[string]string `yaml:"requests"`
	Limits   map[string]string `yaml:"limits"`
}

// Nodes says how Windows workloads are placed on Windows nodes.
type Nodes struct {
	Selector    Labels       `yaml:"selector"`
	Tolerations []Toleration `yaml:"tolerations"`
}

// Toleration is a Kubernetes toleration.
type Toleration struct {
	Key      string `yaml:"key"`
	Operator string `yaml:"operator"`
	Value    string `yaml:"value"`
	Effect   string `yaml:"effect"`
}

// APIServer is the Kubernetes API as the node network reaches it.
type APIServer struct {
	Host string `yaml:"host"`
	Port int    `yaml:"port"`
}

// Loki is the push endpoint both log agents write to: the one type gen, the
// shipper's config and its client share.
type Loki = endpoint.Loki

// LokiSecret mounts a Kubernetes Secret holding the Loki credentials into
// the Alloy and shipper pods, read-only at MountPath (containerd 2 binds a
// HostProcess container's volumes at their path on the node), so
// loki.basicAuth.passwordFile, loki.bearerTokenFile and loki.caFile can
// name MountPath\<key> instead of a file put on every node by hand.
type LokiSecret struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
}

// BasicAuth reads its password from a file on the node.
type BasicAuth = endpoint.BasicAuth

// EventLog lists the event log channels to forward.
type EventLog struct {
	Channels []Channel `yaml:"channels"`
	// Sets are event sets picked by name (EventSets), added to Channels.
	Sets   []string `yaml:"sets"`
	Locale int      `yaml:"locale"`
}

// Channel is one event log channel and the events forwarded from it.
type Channel struct {
	Name               string `yaml:"name"`
	eventfilter.Filter `yaml:",inline"`
}

// Subscription is one channel as both agents subscribe to it: every filter
// the channels and sets give it, compiled into one query (an XPath or a
// structured <QueryList>).
type Subscription struct {
	Name, Query string
}

// ComponentLabel is the Alloy component label and bookmark name of the
// subscription's channel.
func (s Subscription) ComponentLabel() string { return Channel{Name: s.Name}.ComponentLabel() }

// ChannelNames are the channels the event log forwards (Channels, then
// each set's), each once, as Windows spells them.
func (e EventLog) ChannelNames() []string {
	var out []string
	e.sources(func(_ string, ch Channel) {
		if name := CanonicalChannel(ch.Name); !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, name) }) {
			out = append(out, name)
		}
	})
	return out
}

// Subscriptions are the channels to subscribe to, in the order they are
// first named (Channels, then each set's), each with its one query. A
// filter named twice for a channel counts once.
func (e EventLog) Subscriptions() ([]Subscription, error) {
	var order []string
	names := map[string]string{}
	filters := map[string][]eventfilter.Filter{}
	add := func(ch Channel) {
		key := strings.ToLower(ch.Name)
		if _, ok := names[key]; !ok {
			order, names[key] = append(order, key), CanonicalChannel(ch.Name)
		}
		if !slices.ContainsFunc(filters[key], func(f eventfilter.Filter) bool { return reflect.DeepEqual(f, ch.Filter) }) {
			filters[key] = append(filters[key], ch.Filter)
		}
	}
	e.sources(func(_ string, ch Channel) { add(ch) })
	subs := make([]Subscription, 0, len(order))
	for _, key := range order {
		q, err := eventfilter.Compile(names[key], filters[key])
		if err != nil {
			return nil, err
		}
		subs = append(subs, Subscription{Name: names[key], Query: q})
	}
	return subs, nil
}

// Shipper configures the eventlog-shipper DaemonSet.
type Shipper struct {
	// Deploy renders the shipper's DaemonSet. Its image is built from this
	// repository (make image-shipper), not pulled from a publisher, so it is asked
	// for: nodes labelled for it or logAgent.default: shipper.
	Deploy      bool      `yaml:"deploy"`
	Image       string    `yaml:"image"`
	StateDir    string    `yaml:"stateDir"`
	TextfileDir string    `yaml:"textfileDir"`
	Listen      string    `yaml:"listen"`
	Resources   Resources `yaml:"resources"`
}

// Pods holds what every winobs DaemonSet's pods get: the exporter's,
// Alloy's and the shipper's.
type Pods struct {
	// ImagePullSecrets name Secrets in the namespace for a private
	// registry (the seed pulls from a private ghcr.io package).
	ImagePullSecrets []string `yaml:"imagePullSecrets"`
	// PriorityClassName, such as system-node-critical, keeps the node
	// agents scheduled on a full node.
	PriorityClassName string `yaml:"priorityClassName"`
	// Labels and Annotations are added to the pod templates (not to the
	// selectors, which stay fixed so an upgrade never orphans pods).
	Labels      Labels            `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// LogAgent assigns each Windows node to exactly one log agent.
type LogAgent struct {
	NodeLabel string `yaml:"nodeLabel"`
	Default   string `yaml:"default"`
}

// Log agents for LogAgent.Default and the node label's values.
const (
	AgentAlloy   = "alloy"
	AgentShipper = "shipper"
)

// Alloy configures the Alloy HostProcess DaemonSet.
type Alloy struct {
	Image         string    `yaml:"image"`
	StoragePath   string    `yaml:"storagePath"`
	ListenAddress string    `yaml:"listenAddress"`
	Resources     Resources `yaml:"resources"`
}

// KubeStateMetrics describes how kube-state-metrics is scraped.
type KubeStateMetrics struct {
	Job string `yaml:"job"`
}

// Alerts holds every alert threshold and hold time. Dashboards read the same
// values, so a threshold lives in exactly one place.
type Alerts struct {
	RunbookURL             string           `yaml:"runbookURL"`
	NodeCommit             NodeCommit       `yaml:"nodeCommit"`
	ContainerCommit        ContainerCommit  `yaml:"containerCommit"`
	ContainerNoMemoryLimit Sustained        `yaml:"containerNoMemoryLimit"`
	NodeOvercommit         NodeOvercommit   `yaml:"nodeOvercommit"`
	NodeServices           NodeServices     `yaml:"nodeServices"`
	UncordonedReboot       UncordonedReboot `yaml:"uncordonedReboot"`
	ExporterDown           Sustained        `yaml:"exporterDown"`
	CollectorFailing       Sustained        `yaml:"collectorFailing"`
	ExporterVersion        Sustained        `yaml:"exporterVersion"`
	CommitLimitMissing     Sustained        `yaml:"commitLimitMissing"`
	VolumeFree             VolumeFree       `yaml:"volumeFree"`
	VolumeFilling          VolumeFilling    `yaml:"volumeFilling"`
	VolumeLatency          VolumeLatency    `yaml:"volumeLatency"`
	NetworkErrors          Threshold        `yaml:"networkErrors"`
	CPUSaturation          Saturation       `yaml:"cpuSaturation"`
	MemorySaturation       Saturation       `yaml:"memorySaturation"`
	Pagefile               Threshold        `yaml:"pagefile"`
	Clock                  Clock            `yaml:"clock"`
}

// VolumeFree thresholds are free fractions of a volume with a drive letter:
// the kubelet starts image garbage collection at 85 % used (warning at 15 %
// free) and evicts pods at 10 % free (critical).
type VolumeFree struct {
	Warning  float64  `yaml:"warning"`
	Critical float64  `yaml:"critical"`
	For      Duration `yaml:"for"`
}

// VolumeFilling predicts a volume's free bytes Horizon ahead from the
// trend over Lookback, for volumes already below FreeBelow.
type VolumeFilling struct {
	Lookback  Duration `yaml:"lookback"`
	Horizon   Duration `yaml:"horizon"`
	FreeBelow float64  `yaml:"freeBelow"`
	For       Duration `yaml:"for"`
}

// VolumeLatency is the average time of a read or write, in seconds.
type VolumeLatency struct {
	Seconds float64  `yaml:"seconds"`
	For     Duration `yaml:"for"`
}

// Threshold is a ratio held for a while.
type Threshold struct {
	Ratio float64  `yaml:"ratio"`
	For   Duration `yaml:"for"`
}

// Saturation is a utilisation ratio held for a while; Enabled false leaves
// the alert out (busy batch nodes).
type Saturation struct {
	Enabled bool     `yaml:"enabled"`
	Ratio   float64  `yaml:"ratio"`
	For     Duration `yaml:"for"`
}

// Clock bounds the offset from the time source (MaxOffsetSeconds, held For)
// and how long a node may have no time source (NoSourceFor).
type Clock struct {
	MaxOffsetSeconds float64  `yaml:"maxOffsetSeconds"`
	For              Duration `yaml:"for"`
	NoSourceFor      Duration `yaml:"noSourceFor"`
}

// Sustained is an alert that only needs a hold time.
type Sustained struct {
	For Duration `yaml:"for"`
}

// NodeCommit thresholds are ratios of committed bytes to the commit limit.
type NodeCommit struct {
	Warning  float64  `yaml:"warning"`
	Critical float64  `yaml:"critical"`
	For      Duration `yaml:"for"`
}

// ContainerCommit is the ratio of a container's committed bytes to its limit.
type ContainerCommit struct {
	Warning float64  `yaml:"warning"`
	For     Duration `yaml:"for"`
}

// NodeOvercommit fires when commit exceeds physical memory by CommitToPhysical
// while the node pages more than PagesPerSecond.
type NodeOvercommit struct {
	CommitToPhysical float64  `yaml:"commitToPhysical"`
	PagesPerSecond   float64  `yaml:"pagesPerSecond"`
	For              Duration `yaml:"for"`
}

// NodeServices lists Windows services that must be running on every node.
type NodeServices struct {
	Services Services `yaml:"services"`
	For      Duration `yaml:"for"`
}

// UncordonedReboot looks for boots within Window that no cordon surrounded.
type UncordonedReboot struct {
	Window Duration `yaml:"window"`
}

// Labels is a label map that a user file replaces as a whole rather than
// merging into the default, so a default selector label can be dropped.
type Labels = conffile.Labels

// Problem, Problems and Duration are conffile's: config files of both
// binaries report problems the same way.
type (
	Problem  = conffile.Problem
	Problems = conffile.Problems
	Duration = conffile.Duration
)

// Default returns the embedded default configuration, validated; it panics
// only if the embedded file itself is broken, which its tests rule out.
func Default() *Config {
	cfg, err := Load("")
	if err != nil {
		panic(err)
	}
	return cfg
}

// Load returns the default configuration overridden by the file at path
// (none when path is empty), validated. On failure the error is a Problems
// listing every problem found, each with file, line and field path.
func Load(path string) (*Config, error) {
	cfg, _, err := Read(path)
	return cfg, err
}

// Read is Load that also returns the warnings: values that are legal but
// probably wrong (the example lab's addresses, a firewall open to every
// address), located like problems.
func Read(path string) (*Config, Problems, error) {
	cfg, doc, resolved, err := load(path)
	if err != nil {
		return nil, nil, err
	}
	warnings := append(append(resolved, Warnings(cfg)...), sharedNamespaceWarning(cfg, doc)...)
	return cfg, doc.Locate(warnings).Sorted(), nil
}

func load(path string) (*Config, *conffile.Document, Problems, error) {
	if path == "" {
		return parse("", nil)
	}
	src, err := conffile.ReadConfig(path, conffile.MaxFileSize)
	if err != nil {
		return nil, nil, nil, Problems{{File: path, Msg: err.Error()}}
	}
	return parse(path, src)
}

// parse overlays src (read from file; none when file is "") on the
// defaults, validates the result and resolves what its managed Prometheus decides
// (Resolve, whose warnings it returns).
func parse(file string, src []byte) (*Config, *conffile.Document, Problems, error) {
	cfg := pinnedDefaults()
	if _, probs := conffile.Decode("(default)", defaultYAML, &cfg); len(probs) > 0 {
		return nil, nil, nil, fmt.Errorf("embedded default config: %w", probs)
	}
	var doc *conffile.Document
	var probs Problems
	if file != "" {
		doc, probs = conffile.Decode(file, src, &cfg)
	}
	createOnlyOurs(&cfg, doc)
	probs = append(probs, doc.Locate(Validate(&cfg))...)
	if len(probs) > 0 {
		return nil, nil, nil, probs.Sorted()
	}
	// Loki's base URL or its push endpoint: the agents get the endpoint.
	cfg.Loki.URL, _ = endpoint.LokiPushURL(cfg.Loki.URL) // validated
	return &cfg, doc, Resolve(&cfg), nil
}

// createOnlyOurs keeps the default createNamespace: true for winobs's own
// namespace alone. A namespace the file names is someone's (gen cannot know
// every shared namespace's name: kube-prometheus-stack's is often not
// "monitoring") unless the file also writes createNamespace: true, so the
// render never makes another system's namespace privileged, nor an
// uninstall delete it.
func createOnlyOurs(cfg *Config, doc *conffile.Document) {
	if sharedUnlessAsked(cfg, doc) {
		cfg.CreateNamespace = false
	}
}

// sharedUnlessAsked: the file names a namespace other than winobs's own
// and says nothing of creating it.
func sharedUnlessAsked(cfg *Config, doc *conffile.Document) bool {
	return doc.Sets("namespace") && !doc.Sets("createNamespace") && cfg.Namespace != defaultValues().Namespace
}

// sharedNamespaceWarning says what a namespace the render does not create
// needs, with the cost, when the file did not choose it by writing
// createNamespace.
func sharedNamespaceWarning(cfg *Config, doc *conffile.Document) Problems {
	if !sharedUnlessAsked(cfg, doc) {
		return nil
	}
	return Problems{{Path: "namespace", Msg: fmt.Sprintf(
		"%q is not winobs's own namespace, so the render does not create it (createNamespace: false unless you write true): "+
			"create it if needed and label it once for the HostProcess pods, which then admits any privileged pod in it: %s",
		cfg.Namespace, LabelNamespaceCommand(cfg.Namespace))}}
}

// pinnedDefaults holds the defaults that come from versions.json rather than
// default.yaml, so an image version is pinned in one place.
func pinnedDefaults() Config {
	v := winobs.Pinned()
	var c Config
	c.WindowsExporter.Image = v.WindowsExporterImage
	c.Alloy.Image = v.AlloyImage
	c.Shipper.Image = v.EventlogShipperImage
	return c
}

// Services are Windows service key names (validated against the SCM's
// grammar).
type Services []string
