// Package view holds the narrow views of the config, one per artifact
// family. A builder takes its view, never the whole config, so what reaches
// each artifact is written once, here: Of is the one place a setting is
// routed to the builders that read it. Views hold config values, not
// copies kept in step.
package view

import (
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/vocab"
)

// Agents is what every node agent's objects share (package nodeagent): the
// namespace they run in, placement on the Windows nodes, the pods' extra
// settings, the Loki Secret and which log agent each node gets.
type Agents struct {
	Namespace       string
	CreateNamespace bool
	Nodes           config.Nodes
	Pods            config.Pods
	LokiSecret      config.LokiSecret
	LogAgent        config.LogAgent
	// ShipperDeployed: without the shipper, the node label chooses nothing.
	ShipperDeployed bool
}

// Rules is what the Prometheus and Loki rules read (package rules).
type Rules struct {
	// Terms select every cluster's series: rules name no cluster.
	Terms  vocab.Terms
	Alerts config.Alerts
	// ExporterServices are the services windows-exporter reports: the Loki
	// rules watch each for an unexpected stop.
	ExporterServices config.Services
	// Namespace holds the PrometheusRule objects (and the Loki rules'
	// ConfigMap unless LokiRules names another).
	Namespace  string
	RuleLabels config.Labels
	Ruler      config.Ruler
	LokiRules  config.LokiRules
	// EventSets are the event sets forwarded: each brings its detections.
	EventSets []string
	// Managed is where the rules run: "" loads PrometheusRule objects; a
	// managed Prometheus reads none (and its cluster has no such CRD).
	Managed string
}

// Dashboards is what the dashboards read (package dashboards).
type Dashboards struct {
	// Terms select the cluster the $cluster variable names, if any.
	Terms   vocab.Terms
	Cluster config.Cluster
	// Alerts are the thresholds the panels draw.
	Alerts     config.Alerts
	Namespace  string
	Dashboards config.Dashboards
	// Channels are the event log channels the agents forward: the event
	// dashboard's channel choices (structured metadata, which Loki's
	// label-values API does not list).
	Channels []string
}

// Alloy is what Alloy's config and DaemonSet read (package alloy).
type Alloy struct {
	Agents    Agents
	Alloy     config.Alloy
	APIServer config.APIServer
	Loki      config.Loki
	Cluster   config.Cluster
	Logs      config.Logs
	EventLog  config.EventLog
}

// Exporters is what windows-exporter's objects read (package exporters).
type Exporters struct {
	Agents          Agents
	WindowsExporter config.WindowsExporter
	// TextfileDir is where the shipper writes its metrics for the
	// exporter's textfile collector.
	TextfileDir string
	// MonitorAPI is the apiVersion of the monitor the collector reads
	// ("" for prometheus-operator's); MonitorDir, the folder the monitor
	// is written to instead of being applied with the exporter ("" to
	// apply it): both the managed Prometheus's (managed.Service).
	MonitorAPI, MonitorDir string
}

// Managed is what a managed Prometheus's renderers read (the packages
// beneath gen/managed): the rules, the dashboards whose metrics it must
// keep (Azure Monitor's keep-lists), where the rules go, and how the
// exporter is scraped.
type Managed struct {
	// Service is the managed Prometheus the rules run in (its row of
	// package managed); its Name is "" for none.
	Service    managed.Service
	Azure      config.AzureMonitor
	AMP        config.AMP
	GMP        config.GMP
	Cluster    config.Cluster
	Rules      Rules
	Dashboards Dashboards
	// ScrapeInterval is the exporter's, which the settings repeat.
	ScrapeInterval config.Duration
	// ExporterJob and KSMJob are the jobs the rules select, which a
	// rendered scrape configuration names.
	ExporterJob, KSMJob string
}

// Shipper is what the eventlog-shipper's config and DaemonSet read
// (package shipperdeploy): the same channels, Loki endpoint, stream labels
// and locale as Alloy's.
type Shipper struct {
	Agents    Agents
	Shipper   config.Shipper
	Loki      config.Loki
	Cluster   config.Cluster
	EventsJob string
	EventLog  config.EventLog
	// StructuredMetadata is the event layout (logs.structuredMetadata).
	StructuredMetadata bool
}

// Bundle is every builder's view of one config.
type Bundle struct {
	Agents     Agents
	Rules      Rules
	Dashboards Dashboards
	Alloy      Alloy
	Exporters  Exporters
	Shipper    Shipper
	Managed    Managed
}

// Vocab routes the names the vocabulary is written in (package vocab, which
// reads no config): the cluster's label and name, the jobs, the watched
// services, the Loki layout.
func Vocab(cfg *config.Config) vocab.Settings {
	s := vocab.Settings{
		ClusterLabel: cfg.Cluster.Label,
		ExporterJob:  cfg.WindowsExporter.Job, KSMJob: cfg.KubeStateMetrics.Job,
		EventsJob: cfg.Logs.EventsJob, PodLogsJob: cfg.Logs.PodLogsJob,
		Services:           cfg.Alerts.NodeServices.Services,
		StructuredMetadata: cfg.Logs.StructuredMetadata,
	}
	if cfg.Cluster.Multi() {
		s.ClusterName = cfg.Cluster.Name
	}
	return s
}

// rulesOf routes the config to the rules (package rules), which gen and
// doctor read.
func rulesOf(cfg *config.Config) Rules {
	return Rules{
		Terms: vocab.ForRules(Vocab(cfg)), Alerts: cfg.Alerts, ExporterServices: cfg.WindowsExporter.Services,
		Namespace: cfg.Namespace, RuleLabels: cfg.Prometheus.RuleLabels, Ruler: cfg.Ruler, LokiRules: cfg.LokiRules,
		EventSets: cfg.EventLog.Sets, Managed: cfg.Prometheus.Managed,
	}
}

// Of routes a validated config to the builders.
func Of(cfg *config.Config) Bundle {
	service, _ := managed.Lookup(cfg.Prometheus.Managed)
	agents := Agents{
		Namespace: cfg.Namespace, CreateNamespace: cfg.CreateNamespace,
		Nodes: cfg.Nodes, Pods: cfg.Pods, LokiSecret: cfg.LokiSecret, LogAgent: cfg.LogAgent,
		ShipperDeployed: cfg.Shipper.Deploy,
	}
	dashboards := Dashboards{
		Terms: vocab.ForDashboards(Vocab(cfg)), Cluster: cfg.Cluster, Alerts: cfg.Alerts,
		Namespace: cfg.Namespace, Dashboards: cfg.Dashboards, Channels: cfg.EventLog.ChannelNames(),
	}
	b := Bundle{
		Agents:     agents,
		Rules:      rulesOf(cfg),
		Dashboards: dashboards,
		Alloy: Alloy{
			Agents: agents, Alloy: cfg.Alloy, APIServer: cfg.APIServer, Loki: cfg.Loki,
			Cluster: cfg.Cluster, Logs: cfg.Logs, EventLog: cfg.EventLog,
		},
		Exporters: Exporters{Agents: agents, WindowsExporter: cfg.WindowsExporter, TextfileDir: cfg.Shipper.TextfileDir,
			MonitorAPI: service.MonitorAPI},
		Shipper: Shipper{
			Agents: agents, Shipper: cfg.Shipper, Loki: cfg.Loki,
			Cluster: cfg.Cluster, EventsJob: cfg.Logs.EventsJob, EventLog: cfg.EventLog, StructuredMetadata: cfg.Logs.StructuredMetadata,
		},
	}
	if service.MonitorBeside {
		b.Exporters.MonitorDir = service.Dir
	}
	b.Managed = Managed{Service: service, Azure: cfg.Prometheus.Azure, AMP: cfg.Prometheus.AMP, GMP: cfg.Prometheus.GMP, Cluster: cfg.Cluster,
		Rules: b.Rules, Dashboards: dashboards, ScrapeInterval: cfg.WindowsExporter.ScrapeInterval,
		ExporterJob: cfg.WindowsExporter.Job, KSMJob: cfg.KubeStateMetrics.Job}
	return b
}
