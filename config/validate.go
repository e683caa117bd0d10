package config

import (
	"fmt"
	"net/url"
	"regexp"

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
	if d, ok := v.duration("alerts.uncordonedReboot.window", a.UncordonedReboot.Window); ok {
		v.check("alerts.uncordonedReboot.window", d > 0, "must be longer than zero")
	}
	v.hold("alerts.exporterDown.for", a.ExporterDown.For)
	v.hold("alerts.collectorFailing.for", a.CollectorFailing.For)
	v.hold("alerts.exporterVersion.for", a.ExporterVersion.For)
	v.hold("alerts.commitLimitMissing.for", a.CommitLimitMissing.For)
	return v.probs
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
