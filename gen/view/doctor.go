package view

import (
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/vocab"
)

// Doctor is what gen doctor reads of a config (package doctor): the rules
// it checks are loaded, the terms that select this cluster's series (and
// the rules' own, for a Prometheus whose series lack the cluster label),
// and the names its checks and fixes cite.
type Doctor struct {
	Rules Rules
	// Terms select this cluster's series; RuleTerms select as the rules do,
	// with no cluster matcher.
	Terms, RuleTerms vocab.Terms
	Cluster          config.Cluster
	// Namespace holds the agents' pods.
	Namespace string
	// ExporterJob and KSMJob are the scrape jobs; ExporterDeployed says
	// whether winobs's exporter (which reads the shipper's textfile) runs.
	ExporterJob, KSMJob string
	ExporterDeployed    bool
	// EventsJob and PodLogsJob are the Loki streams' job labels.
	EventsJob, PodLogsJob string
	// RunbookURL is the base of every alert's runbook link.
	RunbookURL string
	// ShipperDefault: the eventlog-shipper is the log agent of every
	// unlabelled node.
	ShipperDefault bool
	// Managed is the managed Prometheus the rules run in (Name "" for
	// none): its query API serves less than Prometheus's (no rules, alerts
	// or config).
	Managed managed.Service
}

// ForDoctor routes a validated config to gen doctor.
func ForDoctor(cfg *config.Config) Doctor {
	service, _ := managed.Lookup(cfg.Prometheus.Managed)
	return Doctor{
		Rules: rulesOf(cfg), Terms: vocab.ForCluster(Vocab(cfg)), RuleTerms: vocab.ForRules(Vocab(cfg)), Cluster: cfg.Cluster,
		Namespace: cfg.Namespace, ExporterJob: cfg.WindowsExporter.Job, KSMJob: cfg.KubeStateMetrics.Job,
		ExporterDeployed: cfg.WindowsExporter.Deploy, EventsJob: cfg.Logs.EventsJob, PodLogsJob: cfg.Logs.PodLogsJob,
		RunbookURL: cfg.Alerts.RunbookURL, ShipperDefault: cfg.LogAgent.Default == config.AgentShipper,
		Managed: service,
	}
}
