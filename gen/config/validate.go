package config

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/prometheus/common/model"

	"github.com/winobs/winobs/conffile"
	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/endpoint"
	"github.com/winobs/winobs/winname"
)

// rulerNamespace is what a ruler namespace prefix may be: it becomes a URL
// path segment of the ruler API and a directory name in the ruler's storage.
var rulerNamespace = regexp.MustCompile(`^[a-z0-9]([a-z0-9_.-]{0,46}[a-z0-9])?$`)

// Service key names as the Service Control Manager accepts them.
var serviceName = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,256}$`)

// Bounds that keep every alert able to fire and every rule able to evaluate.
const (
	// maxHold: an alert that must hold longer than a week never fires in
	// practice (rule restarts reset the pending state).
	maxHold = model.Duration(7 * 24 * time.Hour)
	// The rules' rates use 5m windows, which need two scrapes.
	minScrape = model.Duration(time.Second)
	maxScrape = model.Duration(150 * time.Second)
)

// Validate checks the whole configuration and returns every problem, each with
// its field path (File and Line are filled in by Load).
func Validate(c *Config) Problems {
	v := &validator{}
	validateNames(v, c)
	validateExporter(v, &c.WindowsExporter)
	validateAgents(v, c)
	validateDashboards(v, &c.Dashboards)
	validatePods(v, &c.Pods)
	validateLokiRules(v, &c.LokiRules)
	validateAlerts(v, &c.Alerts)
	validateWatchedServices(v, c)
	return v.probs
}

// validateNames checks the names that reach other systems: the namespace,
// the cluster label, the rule labels, the ruler namespaces and the jobs
// every selector reads.
func validateNames(v *validator, c *Config) {
	for _, msg := range validation.IsDNS1123Label(c.Namespace) {
		v.add("namespace", "must be a DNS-1123 label, got %q: %s", c.Namespace, reason(msg))
	}
	validateOwnNamespace(v, c)
	v.clusterLabel("cluster.label", c.Cluster.Label)
	v.text("cluster.name", c.Cluster.Name)
	v.labels("prometheus.ruleLabels", c.Prometheus.RuleLabels)
	validateManaged(v, c)
	v.check("ruler.namespacePrefix", rulerNamespace.MatchString(c.Ruler.NamespacePrefix),
		"must be 1-48 lower-case letters, digits, '-', '_' or '.', starting and ending with a letter or digit, got %q", c.Ruler.NamespacePrefix)
	for path, job := range map[string]string{"windowsExporter.job": c.WindowsExporter.Job, "kubeStateMetrics.job": c.KubeStateMetrics.Job,
		"logs.eventsJob": c.Logs.EventsJob, "logs.podLogsJob": c.Logs.PodLogsJob} {
		v.nonEmpty(path, job)
		v.text(path, job)
	}
	v.check("logs.podLogsJob", c.Logs.PodLogsJob != c.Logs.EventsJob, "must differ from logs.eventsJob")
}

func validateDashboards(v *validator, d *Dashboards) {
	v.nonEmpty("dashboards.folder", d.Folder)
	v.text("dashboards.folder", d.Folder)
	// The Grafana sidecar joins the folder to its directory and writes the
	// dashboards there (foldersFromFilesStructure): no way out of it.
	v.check("dashboards.folder", !unsafeFolder(d.Folder),
		"must be a folder name, not a path: no leading '/' or '\\', drive letter, '..' or '.' segment, got %q", conffile.Excerpt(d.Folder))
	for i, tag := range d.Tags {
		v.nonEmpty(fmt.Sprintf("dashboards.tags[%d]", i), tag)
		v.text(fmt.Sprintf("dashboards.tags[%d]", i), tag)
	}
	v.labelKey("dashboards.sidecarLabel", d.SidecarLabel)
	v.labelValue("dashboards.sidecarLabelValue", d.SidecarLabelValue)
	v.labelKey("dashboards.folderAnnotation", d.FolderAnnotation)
}

func validateLokiRules(v *validator, l *LokiRules) {
	if l.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(l.Namespace) {
			v.add("lokiRules.namespace", "must be a DNS-1123 label, got %q: %s", conffile.Excerpt(l.Namespace), reason(msg))
		}
	}
	v.labelKey("lokiRules.label", l.Label)
	v.labelValue("lokiRules.labelValue", l.LabelValue)
}

// validateAlerts checks every threshold and hold time, each against the
// range in which its alert can both fire and resolve.
func validateAlerts(v *validator, a *Alerts) {
	// runbook_url is expanded by Prometheus as a Go template: the URL grammar
	// check refuses braces, so no template action can reach it.
	v.httpURL("alerts.runbookURL", a.RunbookURL)
	v.ratio("alerts.nodeCommit.warning", a.NodeCommit.Warning)
	v.ratio("alerts.nodeCommit.critical", a.NodeCommit.Critical)
	v.check("alerts.nodeCommit.critical", !validRatio(a.NodeCommit.Warning) || a.NodeCommit.Critical >= a.NodeCommit.Warning,
		"must not be below alerts.nodeCommit.warning (%g), got %g", a.NodeCommit.Warning, a.NodeCommit.Critical)
	v.hold("alerts.nodeCommit.for", a.NodeCommit.For)
	v.ratio("alerts.containerCommit.warning", a.ContainerCommit.Warning)
	v.hold("alerts.containerCommit.for", a.ContainerCommit.For)
	v.hold("alerts.containerNoMemoryLimit.for", a.ContainerNoMemoryLimit.For)
	// Commit beyond physical memory is the point of this alert, so the ratio
	// may exceed 1; past 16 the pagefile limits (3x RAM by default) make it
	// unreachable.
	v.finiteIn("alerts.nodeOvercommit.commitToPhysical", a.NodeOvercommit.CommitToPhysical, 0, 16, "a ratio of committed bytes to physical memory")
	v.finiteIn("alerts.nodeOvercommit.pagesPerSecond", a.NodeOvercommit.PagesPerSecond, 0, 1e7, "a rate of pages per second")
	v.hold("alerts.nodeOvercommit.for", a.NodeOvercommit.For)
	v.check("alerts.nodeServices.services", len(a.NodeServices.Services) > 0, "must list at least one service")
	v.services("alerts.nodeServices.services", a.NodeServices.Services)
	v.hold("alerts.nodeServices.for", a.NodeServices.For)
	v.durationIn("alerts.uncordonedReboot.window", a.UncordonedReboot.Window, model.Duration(time.Minute), maxHold, "a look-back window for reboots")
	v.hold("alerts.exporterDown.for", a.ExporterDown.For)
	v.hold("alerts.collectorFailing.for", a.CollectorFailing.For)
	v.hold("alerts.exporterVersion.for", a.ExporterVersion.For)
	v.ratio("alerts.volumeFree.warning", a.VolumeFree.Warning)
	v.ratio("alerts.volumeFree.critical", a.VolumeFree.Critical)
	v.check("alerts.volumeFree.critical", !validRatio(a.VolumeFree.Warning) || a.VolumeFree.Critical <= a.VolumeFree.Warning,
		"must not be above alerts.volumeFree.warning (%g): both are free fractions, critical is the smaller, got %g", a.VolumeFree.Warning, a.VolumeFree.Critical)
	v.hold("alerts.volumeFree.for", a.VolumeFree.For)
	v.durationIn("alerts.volumeFilling.lookback", a.VolumeFilling.Lookback, model.Duration(30*time.Minute), maxHold, "a look-back window of at least 30m (free space refreshes every 10-15 minutes)")
	v.durationIn("alerts.volumeFilling.horizon", a.VolumeFilling.Horizon, model.Duration(time.Hour), model.Duration(30*24*time.Hour), "a prediction horizon between 1h and 30d")
	v.ratio("alerts.volumeFilling.freeBelow", a.VolumeFilling.FreeBelow)
	v.hold("alerts.volumeFilling.for", a.VolumeFilling.For)
	v.finiteIn("alerts.volumeLatency.seconds", a.VolumeLatency.Seconds, 0, 60, "an average I/O time in seconds")
	v.hold("alerts.volumeLatency.for", a.VolumeLatency.For)
	for path, th := range map[string]Threshold{
		"alerts.networkErrors":    a.NetworkErrors,
		"alerts.pagefile":         a.Pagefile,
		"alerts.cpuSaturation":    {Ratio: a.CPUSaturation.Ratio, For: a.CPUSaturation.For},
		"alerts.memorySaturation": {Ratio: a.MemorySaturation.Ratio, For: a.MemorySaturation.For},
	} {
		v.ratio(path+".ratio", th.Ratio)
		v.hold(path+".for", th.For)
	}
	v.finiteIn("alerts.clock.maxOffsetSeconds", a.Clock.MaxOffsetSeconds, 0, 3600, "an offset in seconds")
	v.hold("alerts.clock.for", a.Clock.For)
	v.hold("alerts.clock.noSourceFor", a.Clock.NoSourceFor)
	v.hold("alerts.commitLimitMissing.for", a.CommitLimitMissing.For)
}

// validateWatchedServices holds that every service the alerts watch is one
// the exporter winobs deploys reports: otherwise the alert could never fire.
func validateWatchedServices(v *validator, c *Config) {
	if !c.WindowsExporter.Deploy {
		return
	}
	for i, s := range c.Alerts.NodeServices.Services {
		if serviceName.MatchString(s) && !containsFold(c.WindowsExporter.Services, s) {
			v.probs = append(v.probs, Problem{Path: fmt.Sprintf("alerts.nodeServices.services[%d]", i), Related: "windowsExporter.services",
				Msg: fmt.Sprintf("%q is not in windowsExporter.services, so the exporter would not report it and the alert could never fire", conffile.Excerpt(s))})
		}
	}
}

func validateExporter(v *validator, e *WindowsExporter) {
	v.image("windowsExporter.image", e.Image)
	v.check("windowsExporter.monitor", e.Monitor == PodMonitor || e.Monitor == ServiceMonitor,
		"must be %s or %s, got %q", PodMonitor, ServiceMonitor, e.Monitor)
	v.durationIn("windowsExporter.scrapeInterval", e.ScrapeInterval, minScrape, maxScrape, "the rules' 5m rates need at least two scrapes")
	v.labels("windowsExporter.monitorLabels", e.MonitorLabels)
	if e.Firewall.Enabled {
		v.check("windowsExporter.firewall.allowFrom", len(e.Firewall.AllowFrom) > 0,
			"must list the addresses Prometheus scrapes from (or set firewall.enabled: false)")
	}
	for i, a := range e.Firewall.AllowFrom {
		v.scraperAddress(fmt.Sprintf("windowsExporter.firewall.allowFrom[%d]", i), a)
	}
	v.resources("windowsExporter.resources", e.Resources)
	v.services("windowsExporter.services", e.Services)
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
		case strings.Trim(h, "0123456789.") == "" && net.ParseIP(h) == nil:
			// 10.0.0.256, 1.2.3, 1.2.3.4.5: a DNS name's last label is
			// never all digits (RFC 3696), so this was meant as an address.
			v.add(path, "%q is not an IPv4 address (four numbers from 0 to 255) and cannot be a DNS name (its last label is all digits): check it", host)
		default:
			if ip, err := netip.ParseAddr(h); err == nil && cidr.IsValid() && cidr.Contains(ip) {
				v.add(path, "%s is in the Service CIDR %s, which the Windows host cannot reach: use a NodePort, load balancer or ingress address", host, c.ServiceCIDR)
			}
		}
	}
	// The host becomes KUBERNETES_SERVICE_HOST: a DNS name or an IP
	// literal, nothing a URL, header or command line would read otherwise.
	if h := c.APIServer.Host; h != "" && !isHostName(h) && net.ParseIP(h) == nil {
		hint := ""
		if host, port, isURL, err := APIServerURL(h); isURL && err == nil {
			hint = fmt.Sprintf(" (a URL: write its host, %s, here and its port, %d, in apiServer.port)", conffile.Excerpt(host), port)
		}
		v.probs = append(v.probs, Problem{Path: "apiServer.host", Msg: fmt.Sprintf(
			"must be a DNS name (letters, digits, '-' and '.', at most 253 bytes) or an IP address, got %q%s", conffile.Excerpt(h), hint)})
	} else {
		reachable("apiServer.host", h)
	}
	v.check("apiServer.port", c.APIServer.Port > 0 && c.APIServer.Port < 65536, "must be a TCP port, got %d", c.APIServer.Port)

	// The endpoint's own checks, shared with the shipper; then what gen adds:
	// the push path, a host the nodes can reach, Windows paths for secrets.
	v.probs = append(v.probs, c.Loki.Check("loki")...)
	if u, err := endpoint.ParseURL(c.Loki.URL); err == nil {
		if _, err := endpoint.LokiPushURL(c.Loki.URL); err != nil {
			v.probs = append(v.probs, Problem{Path: "loki.url", Msg: err.Error()}) // bounded: it quotes an excerpt
		} else {
			reachable("loki.url", u.Hostname())
		}
	}
	v.secretFile("loki.basicAuth.passwordFile", c.Loki.BasicAuth.PasswordFile)
	v.secretFile("loki.bearerTokenFile", c.Loki.BearerTokenFile)
	v.secretFile("loki.caFile", c.Loki.CAFile)
	validateLokiSecret(v, c)

	v.check("eventLog.channels", len(c.EventLog.Channels) > 0, "must list at least one channel")
	seen, labels := map[string]bool{}, map[string]string{}
	for i, ch := range c.EventLog.Channels {
		p := fmt.Sprintf("eventLog.channels[%d]", i)
		v.check(p+".name", ch.Name != "" && !seen[strings.ToLower(ch.Name)], "must be a channel name listed once, got %q", ch.Name)
		seen[strings.ToLower(ch.Name)] = true
		v.text(p+".name", ch.Name)
		// The agents name a node's files after the channel (Alloy's
		// bookmark, the shipper's checkpoint).
		v.windowsName(p+".name", ch.Name, ch.Name, "no event log channel is named so, and the agents' files named after it would not be files")
		if other, dup := labels[ch.ComponentLabel()]; dup && ch.Name != "" && !strings.EqualFold(other, ch.Name) {
			v.add(p+".name", "%q and %q both become the Alloy component and bookmark %q: rename one", other, ch.Name, ch.ComponentLabel())
		}
		labels[ch.ComponentLabel()] = ch.Name
		for _, prob := range ch.Filter.Check() {
			// The message quotes its own excerpt of the value; it is never cut.
			v.probs = append(v.probs, Problem{Path: p + "." + prob.Field, Msg: prob.Msg})
		}
	}
	setSeen := map[string]bool{}
	for i, set := range c.EventLog.Sets {
		_, known := EventSets[set]
		v.check(fmt.Sprintf("eventLog.sets[%d]", i), known && !setSeen[set], "must be an event set listed once (%s or %s), got %q", SetNodeOperations, SetSecurity, set)
		setSeen[set] = true
	}
	v.check("eventLog.locale", c.EventLog.Locale > 0 && c.EventLog.Locale <= 0xFFFF, "must be a Windows LCID such as 1033 (en-US), got %d", c.EventLog.Locale)

	v.labelKey("logAgent.nodeLabel", c.LogAgent.NodeLabel)
	v.check("logAgent.default", c.LogAgent.Default == AgentAlloy || c.LogAgent.Default == AgentShipper,
		"must be %s or %s, got %q", AgentAlloy, AgentShipper, c.LogAgent.Default)
	v.check("logAgent.default", c.LogAgent.Default != AgentShipper || c.Shipper.Deploy,
		"is %s, but shipper.deploy is false: no node would ship its logs; set shipper.deploy: true (and shipper.image to the image you built, docs/agents.md)", AgentShipper)

	v.image("alloy.image", c.Alloy.Image)
	v.windowsPath("alloy.storagePath", c.Alloy.StoragePath)
	if ap, err := netip.ParseAddrPort(c.Alloy.ListenAddress); err != nil {
		v.add("alloy.listenAddress", "must be address:port such as 127.0.0.1:12345, got %q", c.Alloy.ListenAddress)
	} else if !ap.Addr().IsLoopback() {
		v.add("alloy.listenAddress", "%s would open Alloy's HTTP server to the node network: HostProcess pods share the host's network, use 127.0.0.1", c.Alloy.ListenAddress)
	} else if ap.Addr().Zone() != "" || ap.Port() == 0 {
		// The probes' URL is built from it.
		v.add("alloy.listenAddress", "must be a loopback address and a port other than 0, without a zone, got %q", c.Alloy.ListenAddress)
	}
	v.resources("alloy.resources", c.Alloy.Resources)
	v.image("shipper.image", c.Shipper.Image)
	v.windowsPath("shipper.stateDir", c.Shipper.StateDir)
	v.windowsPath("shipper.textfileDir", c.Shipper.TextfileDir)
	// No zone: the probe URL built from it must parse.
	if ap, err := netip.ParseAddrPort(c.Shipper.Listen); err != nil || !ap.Addr().IsLoopback() || ap.Addr().Zone() != "" || ap.Port() == 0 {
		v.add("shipper.listen", "must be a loopback address:port such as 127.0.0.1:9498, without a zone (metrics reach Prometheus through the exporter's textfile collector), got %q", conffile.Excerpt(c.Shipper.Listen))
	}
	v.resources("shipper.resources", c.Shipper.Resources)
	v.labels("nodes.selector", c.Nodes.Selector)
	for i, t := range c.Nodes.Tolerations {
		validateToleration(v, fmt.Sprintf("nodes.tolerations[%d]", i), t)
	}
}

// validateToleration applies the API server's toleration rules.
func validateToleration(v *validator, p string, t Toleration) {
	if t.Key != "" {
		v.labelKey(p+".key", t.Key)
	}
	switch t.Operator {
	case "Equal":
		v.check(p+".operator", t.Key != "", "must be Exists when key is empty (an empty key with Exists tolerates every taint)")
		v.labelValue(p+".value", t.Value)
	case "Exists":
		v.check(p+".value", t.Value == "", "must be empty when operator is Exists, got %q", t.Value)
	default:
		v.add(p+".operator", "must be Equal or Exists, got %q", t.Operator)
	}
	v.check(p+".effect", t.Effect == "" || t.Effect == "NoSchedule" || t.Effect == "PreferNoSchedule" || t.Effect == "NoExecute",
		"must be NoSchedule, PreferNoSchedule, NoExecute or empty, got %q", t.Effect)
}

// validateLokiSecret: a mounted Secret is read by at least one credential
// file, and no credential file points into the mount without a Secret.
func validateLokiSecret(v *validator, c *Config) {
	s := c.LokiSecret
	v.windowsPath("lokiSecret.mountPath", s.MountPath)
	if s.Name != "" {
		for _, msg := range validation.IsDNS1123Subdomain(s.Name) {
			v.add("lokiSecret.name", "must be a Secret name, got %q: %s", conffile.Excerpt(s.Name), reason(msg))
		}
	}
	inMount := func(p string) bool {
		return p != "" && strings.HasPrefix(strings.ToLower(p), strings.ToLower(strings.TrimSuffix(s.MountPath, `\`))+`\`)
	}
	used := false
	for path, file := range map[string]string{"loki.basicAuth.passwordFile": c.Loki.BasicAuth.PasswordFile,
		"loki.bearerTokenFile": c.Loki.BearerTokenFile, "loki.caFile": c.Loki.CAFile} {
		if inMount(file) {
			used = true
			v.check(path, s.Name != "", "is under lokiSecret.mountPath (%s), but lokiSecret.name names no Secret to mount there", s.MountPath)
		}
	}
	if s.Name != "" {
		mount := strings.ToLower(strings.TrimSuffix(s.MountPath, `\`))
		for _, dir := range []string{contract.AlloyConfigDir, contract.ShipperConfigDir} {
			d := strings.ToLower(dir)
			v.check("lokiSecret.mountPath", mount != d && !strings.HasPrefix(mount, d+`\`) && !strings.HasPrefix(d, mount+`\`),
				"%s is where an agent's config is mounted (%s): the API server refuses two volumes at one path, and a nested one hides files; choose another path", s.MountPath, dir)
		}
	}
	v.check("lokiSecret.name", s.Name == "" || used,
		`is mounted at %s, but no loki.basicAuth.passwordFile, loki.bearerTokenFile or loki.caFile reads from it (such as %s\password)`, s.MountPath, s.MountPath)
}

func validatePods(v *validator, p *Pods) {
	seen := map[string]bool{}
	for i, name := range p.ImagePullSecrets {
		path := fmt.Sprintf("pods.imagePullSecrets[%d]", i)
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			v.add(path, "must be a Secret name, got %q: %s", conffile.Excerpt(name), reason(msg))
		}
		v.check(path, !seen[name], "%q is listed twice", name)
		seen[name] = true
	}
	if p.PriorityClassName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(p.PriorityClassName) {
			v.add("pods.priorityClassName", "must be a PriorityClass name, got %q: %s", conffile.Excerpt(p.PriorityClassName), reason(msg))
		}
	}
	v.labels("pods.labels", p.Labels)
	for k := range p.Labels {
		v.check(conffile.KeyPath("pods.labels", k), !strings.HasPrefix(k, "app.kubernetes.io/"),
			"app.kubernetes.io/ labels are winobs's own (selectors and pruning rely on them)")
	}
	total := 0
	for k, val := range p.Annotations {
		path := conffile.KeyPath("pods.annotations", k)
		for _, msg := range validation.IsQualifiedName(k) {
			v.add(path, "invalid Kubernetes annotation key %q: %s", conffile.Excerpt(k), reason(msg))
		}
		// Values may be long and multi-line; nothing else a terminal acts on.
		v.check(path, utf8.ValidString(val) && strings.IndexFunc(val, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }) < 0,
			"must be UTF-8 text without control characters other than newlines")
		total += len(k) + len(val)
	}
	v.check("pods.annotations", total <= 64<<10, "at most 64 KiB in all (the API server allows 256 KiB per object), got %d bytes", total)
}

func (v *validator) resources(path string, r Resources) {
	parsed := map[string]map[string]resource.Quantity{}
	for kind, m := range map[string]map[string]string{"requests": r.Requests, "limits": r.Limits} {
		parsed[kind] = map[string]resource.Quantity{}
		for name, q := range m {
			p := conffile.KeyPath(path+"."+kind, name)
			v.check(p, name == "cpu" || name == "memory", "must be cpu or memory")
			qty, err := resource.ParseQuantity(q)
			if err != nil || qty.Sign() <= 0 {
				v.add(p, "must be a positive Kubernetes quantity such as 50m or 128Mi, got %q", q)
				continue
			}
			parsed[kind][name] = qty
		}
	}
	for name, limit := range parsed["limits"] {
		if req, ok := parsed["requests"][name]; ok && req.Cmp(limit) > 0 {
			v.add(conffile.KeyPath(path+".requests", name), "must not exceed the %s limit %s, got %s", name, limit.String(), req.String())
		}
	}
}

type validator struct{ probs Problems }

// add records a problem; quoted values are cut to a short excerpt so a huge
// or hostile value is never echoed whole.
// reason is an explanation (an apimachinery or endpoint message), printed
// whole; every other string argument is a value and echoed as an excerpt.
type reason string

// ours is text of winobs's own (a reason, a remedy, a command to run):
// add cuts the config's values it quotes, never these.
type ours string

func (v *validator) add(path, format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = conffile.Excerpt(s)
		}
	}
	v.probs = append(v.probs, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// windowsName refuses name, a file name or a component of value, where
// Windows would open a device or another file (package winname); the
// message is built here so that it is never cut.
func (v *validator) windowsName(path, value, name, why string) bool {
	msg := winname.Problem(name)
	if msg == "" {
		return true
	}
	if value != name {
		msg = fmt.Sprintf("%q: %q %s", conffile.Excerpt(value), name, msg)
	} else {
		msg = fmt.Sprintf("%q %s", conffile.Excerpt(name), msg)
	}
	v.probs = append(v.probs, Problem{Path: path, Msg: msg + ": " + why})
	return false
}

func (v *validator) check(path string, ok bool, format string, args ...any) {
	if !ok {
		v.add(path, format, args...)
	}
}

func (v *validator) nonEmpty(path, s string) {
	v.check(path, s != "", "must not be empty")
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

// hold is an alert's "for": zero is allowed (fire on the first evaluation),
// beyond a week is not (the alert would never fire).
func (v *validator) hold(path string, d Duration) {
	v.durationIn(path, d, 0, maxHold, "an alert's hold time")
}

// hostName is an RFC 1123 DNS name: labels of letters, digits and '-', not
// starting or ending with '-', at most 63 bytes each.
var hostLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

func isHostName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if !hostLabel.MatchString(l) {
			return false
		}
	}
	return true
}

// unsafeFolder reports a folder name a directory join would take outside its
// base: absolute (either slash, a drive letter), or with "." or ".."
// segments.
func unsafeFolder(f string) bool {
	if strings.HasPrefix(f, "/") || strings.HasPrefix(f, `\`) || (len(f) >= 2 && f[1] == ':') {
		return true
	}
	for _, seg := range strings.FieldsFunc(f, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// sharedNamespaces belong to Kubernetes or, by their charts' defaults, to
// the systems winobs runs next to: winobs must never own one.
var sharedNamespaces = map[string]string{
	"default": "Kubernetes'", "kube-system": "Kubernetes'", "kube-public": "Kubernetes'", "kube-node-lease": "Kubernetes'",
	"monitoring": "kube-prometheus-stack's", "loki": "Loki's", "grafana": "Grafana's",
}

// SharedNamespace says whose namespace ns is by default when it belongs to
// Kubernetes or to a system winobs runs next to ("kube-prometheus-stack's"),
// and false for a namespace winobs may own.
func SharedNamespace(ns string) (owner string, shared bool) {
	owner, shared = sharedNamespaces[ns]
	return owner, shared
}

// validateOwnNamespace refuses createNamespace for a namespace winobs did
// not create: the kustomization would own it, apply would relabel it to Pod
// Security "privileged", and `kubectl delete -k` would delete it with
// everything in it.
func validateOwnNamespace(v *validator, c *Config) {
	if !c.CreateNamespace || len(validation.IsDNS1123Label(c.Namespace)) > 0 {
		return
	}
	owner, shared := SharedNamespace(c.Namespace)
	if c.LokiRules.Namespace == c.Namespace {
		owner, shared = "Loki's (lokiRules.namespace)", true
	}
	if shared {
		// createNamespace is true by default: the problem is then the
		// namespace line the user wrote.
		v.probs = append(v.probs, Problem{Path: "createNamespace", Related: "namespace", Msg: fmt.Sprintf(
			"would make winobs own %s namespace %q (createNamespace is true by default: winobs keeps a namespace of its own): "+
				"applying relabels it to Pod Security \"privileged\", which then admits any privileged pod in it, "+
				"and a bare kubectl delete -k deletes it with everything in it; keep the default namespace (winobs), or set createNamespace: false and label it once: %s",
			ours(owner), c.Namespace, ours(LabelNamespaceCommand(c.Namespace)))})
	}
}

// LabelNamespaceCommand is the command that admits HostProcess pods to an
// existing namespace (a DNS-1123 label, so it needs no quoting).
func LabelNamespaceCommand(ns string) string {
	return "kubectl label namespace " + ns + " --overwrite pod-security.kubernetes.io/enforce=privileged " +
		"pod-security.kubernetes.io/audit=privileged pod-security.kubernetes.io/warn=privileged"
}
