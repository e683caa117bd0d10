package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/prometheus/common/model"
)

var (
	dnsLabel  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	// A Kubernetes label or annotation key: optional DNS prefix, then a name.
	qualifiedName = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	// Service key names as the Service Control Manager accepts them.
	serviceName = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)
)

// Validate checks the whole configuration and returns every problem, each with
// its field path (File and Line are filled in by Load).
func Validate(c *Config) Problems {
	v := &validator{}
	v.check("namespace", len(c.Namespace) <= 63 && dnsLabel.MatchString(c.Namespace),
		"must be a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters), got %q", c.Namespace)
	v.labelName("cluster.label", c.Cluster.Label)
	for k := range c.Prometheus.RuleLabels {
		v.labelName("prometheus.ruleLabels."+k, k)
	}
	v.nonEmpty("windowsExporter.job", c.WindowsExporter.Job)
	v.nonEmpty("kubeStateMetrics.job", c.KubeStateMetrics.Job)

	validateExporter(v, &c.WindowsExporter)
	validateAgents(v, c)
	v.nonEmpty("logs.eventsJob", c.Logs.EventsJob)
	v.nonEmpty("logs.podLogsJob", c.Logs.PodLogsJob)
	v.check("logs.podLogsJob", c.Logs.PodLogsJob != c.Logs.EventsJob, "must differ from logs.eventsJob")
	v.nonEmpty("dashboards.folder", c.Dashboards.Folder)
	v.check("dashboards.sidecarLabel", qualifiedName.MatchString(c.Dashboards.SidecarLabel),
		"must be a Kubernetes label key, got %q", c.Dashboards.SidecarLabel)
	v.check("dashboards.folderAnnotation", qualifiedName.MatchString(c.Dashboards.FolderAnnotation),
		"must be a Kubernetes annotation key, got %q", c.Dashboards.FolderAnnotation)

	a := &c.Alerts
	if u, err := url.Parse(a.RunbookURL); err != nil || u.Scheme == "" || u.Host == "" || u.Fragment != "" {
		v.add("alerts.runbookURL", "must be an absolute URL without a #fragment (the alert name is appended as the anchor), got %q", a.RunbookURL)
	}
	v.ratio("alerts.nodeCommit.warning", a.NodeCommit.Warning)
	v.ratio("alerts.nodeCommit.critical", a.NodeCommit.Critical)
	v.check("alerts.nodeCommit.critical", !validRatio(a.NodeCommit.Warning) || a.NodeCommit.Critical >= a.NodeCommit.Warning,
		"must not be below alerts.nodeCommit.warning (%g), got %g", a.NodeCommit.Warning, a.NodeCommit.Critical)
	v.hold("alerts.nodeCommit.for", a.NodeCommit.For)
	v.ratio("alerts.containerCommit.warning", a.ContainerCommit.Warning)
	v.hold("alerts.containerCommit.for", a.ContainerCommit.For)
	v.hold("alerts.containerNoMemoryLimit.for", a.ContainerNoMemoryLimit.For)
	v.check("alerts.nodeOvercommit.commitToPhysical", a.NodeOvercommit.CommitToPhysical > 0,
		"must be a positive ratio of committed bytes to physical memory, got %g", a.NodeOvercommit.CommitToPhysical)
	v.check("alerts.nodeOvercommit.pagesPerSecond", a.NodeOvercommit.PagesPerSecond > 0,
		"must be a positive rate of pages per second, got %g", a.NodeOvercommit.PagesPerSecond)
	v.hold("alerts.nodeOvercommit.for", a.NodeOvercommit.For)
	v.check("alerts.nodeServices.services", len(a.NodeServices.Services) > 0, "must list at least one service")
	for i, s := range a.NodeServices.Services {
		v.check(fmt.Sprintf("alerts.nodeServices.services[%d]", i), serviceName.MatchString(s),
			"must be a Windows service key name (letters, digits, '_', '.', '-'), got %q", s)
	}
	v.hold("alerts.nodeServices.for", a.NodeServices.For)
	if c.WindowsExporter.Deploy {
		for i, s := range a.NodeServices.Services {
			v.check(fmt.Sprintf("alerts.nodeServices.services[%d]", i), !serviceName.MatchString(s) || containsFold(c.WindowsExporter.Services, s),
				"%q is not in windowsExporter.services, so the exporter would not report it and the alert could never fire", s)
		}
	}
	if d, ok := v.duration("alerts.uncordonedReboot.window", a.UncordonedReboot.Window); ok {
		v.check("alerts.uncordonedReboot.window", d > 0, "must be longer than zero")
	}
	v.hold("alerts.exporterDown.for", a.ExporterDown.For)
	v.hold("alerts.collectorFailing.for", a.CollectorFailing.For)
	v.hold("alerts.exporterVersion.for", a.ExporterVersion.For)
	v.hold("alerts.commitLimitMissing.for", a.CommitLimitMissing.For)
	return v.probs
}

func validateExporter(v *validator, e *WindowsExporter) {
	v.nonEmpty("windowsExporter.image", e.Image)
	v.check("windowsExporter.monitor", e.Monitor == PodMonitor || e.Monitor == ServiceMonitor,
		"must be %s or %s, got %q", PodMonitor, ServiceMonitor, e.Monitor)
	if d, ok := v.duration("windowsExporter.scrapeInterval", e.ScrapeInterval); ok {
		v.check("windowsExporter.scrapeInterval", d > 0, "must be longer than zero")
	}
	for k := range e.MonitorLabels {
		v.check("windowsExporter.monitorLabels."+k, qualifiedName.MatchString(k), "must be a Kubernetes label key")
	}
	if e.Firewall.Enabled {
		v.check("windowsExporter.firewall.allowFrom", len(e.Firewall.AllowFrom) > 0,
			"must list the addresses Prometheus scrapes from (or set firewall.enabled: false)")
	}
	for i, a := range e.Firewall.AllowFrom {
		_, errPrefix := netip.ParsePrefix(a)
		_, errAddr := netip.ParseAddr(a)
		v.check(fmt.Sprintf("windowsExporter.firewall.allowFrom[%d]", i), errPrefix == nil || errAddr == nil,
			"must be an IP address or CIDR such as 192.168.10.23/32, got %q", a)
	}
	v.resources("windowsExporter.resources", e.Resources)
	for i, s := range e.Services {
		v.check(fmt.Sprintf("windowsExporter.services[%d]", i), serviceName.MatchString(s),
			"must be a Windows service key name (letters, digits, '_', '.', '-'), got %q", s)
	}
}

// validateAgents checks what HostProcess agents on the node need. They run in
// the node's network namespace: cluster DNS names do not resolve there and
// Service IPs are not routed to the host, so both are rejected.
func validateAgents(v *validator, c *Config) {
	cidr, err := netip.ParsePrefix(c.ServiceCIDR)
	v.check("serviceCIDR", err == nil, "must be a CIDR such as 10.96.0.0/12, got %q", c.ServiceCIDR)
	reachable := func(path, host string) {
		h := strings.ToLower(strings.TrimSuffix(host, "."))
		switch {
		case h == "":
			v.add(path, "must not be empty")
		case strings.HasSuffix(h, ".svc") || strings.Contains(h, ".svc.") || strings.HasSuffix(h, ".cluster.local") || h == "kubernetes" || !strings.Contains(h, ".") && net.ParseIP(h) == nil && h != "localhost":
			v.add(path, "%q is a cluster DNS name, which HostProcess pods cannot resolve: use an address the node network reaches (a NodePort on a node, a load balancer or an ingress name)", host)
		default:
			if ip, err := netip.ParseAddr(h); err == nil && cidr.IsValid() && cidr.Contains(ip) {
				v.add(path, "%s is in the Service CIDR %s, which the Windows host cannot reach: use a NodePort, load balancer or ingress address", host, c.ServiceCIDR)
			}
		}
	}
	reachable("apiServer.host", c.APIServer.Host)
	v.check("apiServer.port", c.APIServer.Port > 0 && c.APIServer.Port < 65536, "must be a TCP port, got %d", c.APIServer.Port)

	u, err := url.Parse(c.Loki.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		v.add("loki.url", "must be an http(s) URL such as http://192.168.10.24:31100/loki/api/v1/push, got %q", c.Loki.URL)
	case !strings.HasSuffix(u.Path, "/loki/api/v1/push"):
		v.add("loki.url", "must be the push endpoint, ending in /loki/api/v1/push, got %q", c.Loki.URL)
	default:
		reachable("loki.url", u.Hostname())
	}
	v.check("loki.basicAuth.passwordFile", (c.Loki.BasicAuth.Username == "") == (c.Loki.BasicAuth.PasswordFile == ""),
		"basicAuth needs both username and passwordFile")
	v.check("loki.bearerTokenFile", c.Loki.BearerTokenFile == "" || c.Loki.BasicAuth.Username == "",
		"use either basicAuth or bearerTokenFile, not both")
	v.check("loki.caFile", c.Loki.CAFile == "" || strings.HasPrefix(c.Loki.URL, "https://"), "a CA file needs an https URL")

	v.check("eventLog.channels", len(c.EventLog.Channels) > 0, "must list at least one channel")
	seen := map[string]bool{}
	for i, ch := range c.EventLog.Channels {
		p := fmt.Sprintf("eventLog.channels[%d]", i)
		v.check(p+".name", ch.Name != "" && !seen[strings.ToLower(ch.Name)], "must be a channel name listed once, got %q", ch.Name)
		seen[strings.ToLower(ch.Name)] = true
		v.check(p+".levels", len(ch.Levels) > 0, "must list at least one level")
		for j, l := range ch.Levels {
			v.check(fmt.Sprintf("%s.levels[%d]", p, j), l >= 0 && l <= 5, "must be a level from 0 (LogAlways) to 5 (verbose), got %d", l)
		}
	}
	v.check("eventLog.locale", c.EventLog.Locale > 0 && c.EventLog.Locale <= 0xFFFF, "must be a Windows LCID such as 1033 (en-US), got %d", c.EventLog.Locale)

	v.check("logAgent.nodeLabel", qualifiedName.MatchString(c.LogAgent.NodeLabel), "must be a Kubernetes label key, got %q", c.LogAgent.NodeLabel)
	v.check("logAgent.default", c.LogAgent.Default == AgentAlloy || c.LogAgent.Default == AgentShipper,
		"must be %s or %s, got %q", AgentAlloy, AgentShipper, c.LogAgent.Default)

	v.nonEmpty("alloy.image", c.Alloy.Image)
	v.check("alloy.storagePath", windowsAbsPath.MatchString(c.Alloy.StoragePath),
		`must be an absolute Windows path on the node's disk such as C:\var\lib\alloy, got %q`, c.Alloy.StoragePath)
	if ap, err := netip.ParseAddrPort(c.Alloy.ListenAddress); err != nil {
		v.add("alloy.listenAddress", "must be address:port such as 127.0.0.1:12345, got %q", c.Alloy.ListenAddress)
	} else if !ap.Addr().IsLoopback() {
		v.add("alloy.listenAddress", "%s would open Alloy's HTTP server to the node network: HostProcess pods share the host's network, use 127.0.0.1", c.Alloy.ListenAddress)
	}
	v.resources("alloy.resources", c.Alloy.Resources)
	v.nonEmpty("shipper.image", c.Shipper.Image)
	for path, dir := range map[string]string{"shipper.stateDir": c.Shipper.StateDir, "shipper.textfileDir": c.Shipper.TextfileDir} {
		v.check(path, windowsAbsPath.MatchString(dir), `must be an absolute Windows path on the node's disk, got %q`, dir)
	}
	if ap, err := netip.ParseAddrPort(c.Shipper.Listen); err != nil || !ap.Addr().IsLoopback() {
		v.add("shipper.listen", "must be a loopback address:port such as 127.0.0.1:9498 (metrics reach Prometheus through the exporter's textfile collector), got %q", c.Shipper.Listen)
	}
	v.resources("shipper.resources", c.Shipper.Resources)
	for k := range c.Nodes.Selector {
		v.check("nodes.selector."+k, qualifiedName.MatchString(k), "must be a Kubernetes label key")
	}
	for i, t := range c.Nodes.Tolerations {
		v.check(fmt.Sprintf("nodes.tolerations[%d].operator", i), t.Operator == "Equal" || t.Operator == "Exists",
			"must be Equal or Exists, got %q", t.Operator)
		v.check(fmt.Sprintf("nodes.tolerations[%d].effect", i), t.Effect == "" || t.Effect == "NoSchedule" || t.Effect == "PreferNoSchedule" || t.Effect == "NoExecute",
			"must be NoSchedule, PreferNoSchedule, NoExecute or empty, got %q", t.Effect)
	}
}

var windowsAbsPath = regexp.MustCompile(`^[A-Za-z]:\\`)

func (v *validator) resources(path string, r Resources) {
	for kind, m := range map[string]map[string]string{"requests": r.Requests, "limits": r.Limits} {
		for name, q := range m {
			p := path + "." + kind + "." + name
			v.check(p, name == "cpu" || name == "memory", "must be cpu or memory")
			if _, err := resource.ParseQuantity(q); err != nil {
				v.add(p, "must be a Kubernetes quantity such as 50m or 128Mi, got %q", q)
			}
		}
	}
}

type validator struct{ probs Problems }

func (v *validator) add(path, format string, args ...any) {
	v.probs = append(v.probs, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) check(path string, ok bool, format string, args ...any) {
	if !ok {
		v.add(path, format, args...)
	}
}

func (v *validator) nonEmpty(path, s string) {
	v.check(path, s != "", "must not be empty")
}

func (v *validator) labelName(path, s string) {
	v.check(path, labelName.MatchString(s), "must be a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*), got %q", s)
}

// ratio accepts a fraction in (0, 1]: thresholds are ratios, not percentages.
func (v *validator) ratio(path string, f float64) {
	v.check(path, validRatio(f), "must be a ratio above 0 and at most 1 (0.9 means 90%%), got %g", f)
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func validRatio(f float64) bool { return f > 0 && f <= 1 }

func (v *validator) duration(path string, d Duration) (model.Duration, bool) {
	m, err := model.ParseDuration(string(d))
	if err != nil {
		v.add(path, "must be a non-negative duration such as 30s, 5m or 1h, got %q", string(d))
		return 0, false
	}
	return m, true
}

// hold is an alert's "for": zero is allowed (fire on the first evaluation).
func (v *validator) hold(path string, d Duration) { v.duration(path, d) }
