package config

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/winobs/winobs/gen/managed"
	"go.yaml.in/yaml/v3"
)

// Site holds the values that differ from one cluster to the next, as
// `gen init` takes them; an empty one keeps the example's value, which the
// render then warns about.
type Site struct {
	Namespace   string
	ClusterName string
	// Release is the kube-prometheus-stack Helm release whose Prometheus
	// must select the rules and the monitor (its "release" label).
	Release     string
	LokiURL     string
	LokiTenant  string
	APIHost     string
	APIPort     int
	ScrapeFrom  []string
	ServiceCIDR string
	// CreateNamespace asks the render to create Namespace, which is
	// otherwise taken as shared unless it is winobs's own.
	CreateNamespace bool
	// Prometheus is where the rules run (prometheus.platform): "" or
	// managed.AzureMonitor, with Azure's workspace, region and cluster.
	Prometheus                                  string
	AzureWorkspace, AzureLocation, AzureCluster string
	AzureActionGroups                           []string
	AMPWorkspace, AMPRegion                     string
	// Distribution names a Kubernetes distribution's preset (Distributions: aks, eks, gke, kubeadm): the
	// API port and Service CIDR not given above.
	Distribution string
}

// Starter returns a commented configuration file holding every per-cluster
// value, each explained, and validates it. Values are YAML nodes encoded by
// the yaml package, never text pasted into a template, so no input can add
// a key or a document.
func Starter(s Site) ([]byte, Problems, error) {
	lab := defaultValues()
	or := func(v, example string) string {
		if v == "" {
			return example
		}
		return v
	}
	release := or(s.Release, lab.Prometheus.RuleLabels["release"])
	port, cidr, distributionNote := lab.APIServer.Port, lab.ServiceCIDR, ""
	if s.Distribution != "" {
		p, ok := Distributions[s.Distribution]
		if !ok {
			return nil, nil, fmt.Errorf("unknown Kubernetes distribution %q (--platform): one of %s", s.Distribution, strings.Join(DistributionNames(), ", "))
		}
		port, cidr, distributionNote = p.APIPort, p.ServiceCIDR, p.Note
	}
	if s.APIPort != 0 {
		port = s.APIPort
	}
	cidr = or(s.ServiceCIDR, cidr)
	scrape := s.ScrapeFrom
	if len(scrape) == 0 {
		scrape = lab.WindowsExporter.Firewall.AllowFrom
	}
	// Only winobs's own namespace is created by the render, or one the user
	// asks for (--create-namespace); any other is shared, the user's to
	// label: gen cannot know every shared namespace's name.
	ns := or(s.Namespace, lab.Namespace)
	create := ns == lab.Namespace || s.CreateNamespace
	root := mapping(
		field("namespace", ns,
			"Namespace of the rendered objects: winobs's own. HostProcess pods need it at Pod Security level\n"+
				"\"privileged\", which then admits any privileged pod in it; kube-prometheus-stack's default selectors\n"+
				"find the rules, the monitor and the dashboards in any namespace."),
		field("createNamespace", create,
			"true: the render creates the namespace at \"privileged\", which the uninstall leaves (winobs's own, or one\n"+
				"you asked for with --create-namespace). false for a namespace that exists or that other systems share\n"+
				"(kube-prometheus-stack's, say): label it yourself, and every pod in it may then run privileged."),
		field("cluster", mapping(
			field("name", s.ClusterName, "This cluster's name, when several clusters share one Prometheus, Mimir or Loki; empty for one cluster."),
		), ""),
		field("prometheus", prometheusFields(s, release), ""),
		field("windowsExporter", mapping(
			field("monitorLabels", map[string]string{"release": release}, "Labels that make your Prometheus select the exporter's PodMonitor (podMonitorSelector)."),
			field("firewall", mapping(
				field("allowFrom", scrape,
					"Addresses allowed to scrape port 9182 on the Windows nodes: the nodes your Prometheus pods run on\n"+
						"(CNIs such as Calico SNAT pod traffic to the node address), as IPs or CIDRs."),
			), ""),
		), ""),
		field("apiServer", mapping(
			field("host", or(s.APIHost, lab.APIServer.Host),
				"The API server as the Windows nodes reach it (HostProcess pods resolve no cluster DNS and reach no\n"+
					"Service IP): a load balancer's or a control-plane node's DNS name or IP."),
			field("port", port, distributionNote),
		), ""),
		field("serviceCIDR", cidr, "The cluster's Service CIDR, so an address the nodes cannot reach is refused. "+distributionHint),
		field("loki", mapping(
			field("url", or(s.LokiURL, lab.Loki.URL),
				"Loki's push URL as the Windows nodes reach it: HostProcess pods reach no Service name or ClusterIP, so a\n"+
					"NodePort, an internal load balancer or an ingress (see apiServer.host)."),
			field("tenant", s.LokiTenant, "X-Scope-OrgID, for a multi-tenant Loki."),
			field("basicAuth", mapping(
				field("username", "", ""),
				field("passwordFile", "", ""),
			), "Credentials are files the agents read (passwordFile, bearerTokenFile), on the node or from lokiSecret.\n"+
				"Over plain http they are refused unless allowInsecureCredentials: true."),
			field("bearerTokenFile", "", ""),
		), ""),
		field("lokiSecret", mapping(
			field("name", "", ""),
		), "Or a Secret in the namespace holding the credentials, mounted read-only into the log agents at\n"+
			lab.LokiSecret.MountPath+": then passwordFile: "+lab.LokiSecret.MountPath+"\\password (docs/upgrade.md)."),
		field("eventLog", mapping(
			field("sets", lab.EventLog.Sets,
				"Event sets forwarded beside the channels (config/default.yaml's eventLog.channels, or yours), each with\n"+
					"its Loki detections: node-operations and security. Writing your own eventLog.channels keeps them on; [] for\n"+
					"none. An exclusion in your channels (\"-4697\") applies to the sets' filters too (docs/events.md)."),
		), ""),
	)
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root},
		HeadComment: "winobs configuration: the values that differ per cluster. Every other value keeps the built-in\n" +
			"default (config/default.yaml documents them all); add any of them here to change it.\n" +
			"Render with: go run ./cmd/gen --config THIS_FILE --out out"}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, nil, fmt.Errorf("encoding the starter config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, nil, err
	}
	cfg, parsed, _, err := parse("(init)", b.Bytes())
	if err != nil {
		return nil, nil, err
	}
	// init speaks of the values it wrote: the example lab's among them.
	var labValues Problems
	for _, w := range Warnings(cfg) {
		if slices.ContainsFunc(ExampleFields, func(f exampleField) bool { return f.Path == w.Path }) {
			labValues = append(labValues, w)
		}
	}
	return b.Bytes(), parsed.Locate(labValues), nil
}

type kv struct {
	key     string
	value   *yaml.Node
	comment string
}

func field(key string, value any, comment string) kv {
	n, ok := value.(*yaml.Node)
	if !ok {
		n = &yaml.Node{}
		if err := n.Encode(value); err != nil {
			panic(err) // only strings, ints, bools, lists and maps of them
		}
	}
	return kv{key, n, comment}
}

func mapping(fields ...kv) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, f := range fields {
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: f.key, HeadComment: f.comment}
		m.Content = append(m.Content, k, f.value)
	}
	return m
}

// prometheusFields is the starter's prometheus section: the rule labels for
// a Prometheus that loads PrometheusRules, or the managed Prometheus and its
// resource ids.
func prometheusFields(s Site, release string) *yaml.Node {
	switch s.Prometheus {
	case managed.AMP:
		return mapping(
			field("platform", managed.AMP, "Amazon Managed Service for Prometheus: the rules are rendered as a rule groups namespace (docs/platforms.md)."),
			field("amp", mapping(
				field("workspaceId", s.AMPWorkspace, "aws amp list-workspaces --query 'workspaces[].workspaceId'"),
				field("region", s.AMPRegion, "The workspace's region."),
			), ""),
		)
	case managed.GMP:
		return mapping(
			field("platform", managed.GMP, "Google Cloud Managed Service for Prometheus: the rules are rendered as ClusterRules (docs/platforms.md)."),
			field("gmp", mapping(field("scope", GMPScopeCluster, "cluster (ClusterRules) or global (GlobalRules, every cluster's series).")), ""),
		)
	}
	if s.Prometheus != managed.AzureMonitor {
		return mapping(field("ruleLabels", map[string]string{"release": release},
			"Labels that make your Prometheus load the PrometheusRules: kube-prometheus-stack's ruleSelector\n"+
				"(release: <its Helm release name> by default)."))
	}
	return mapping(
		field("platform", managed.AzureMonitor, "Azure Monitor managed Prometheus: the rules are rendered as prometheusRuleGroups (docs/platforms.md)."),
		field("azure", mapping(
			field("workspace", s.AzureWorkspace, "az monitor account show -n <workspace> -g <group> --query id"),
			field("location", s.AzureLocation, "The workspace's region."),
			field("cluster", s.AzureCluster, "az aks show -n <cluster> -g <group> --query id (optional: scopes the rule groups to it;\n"+
				"its name is the cluster label ama-metrics writes, which cluster.name must be)."),
			field("actionGroups", nonNil(s.AzureActionGroups), "Action groups' resource ids the alerts notify (az monitor action-group show --query id)."),
			field("clusterAlias", false, "true: write cluster.name as ama-metrics' cluster_alias, which renames the cluster label of\n"+
				"every series of the cluster to cluster.name, rewritten (docs/platforms.md#the-cluster-label)."),
		), ""),
	)
}

// nonNil is l, or an empty list where l is nil (written as [] rather than
// null).
func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
