package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
)

// runInit writes a commented config holding the values that differ per
// cluster (from the flags, or the example's where a flag is not given),
// validated before it is written; an existing file is never replaced.
func runInit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen init", flag.ContinueOnError)
	path := fs.String("config", "winobs.yaml", "file to write (never replaced)")
	var s config.Site
	fs.StringVar(&s.Namespace, "namespace", "", "namespace of the rendered objects (default winobs, created by the render; any other is taken as shared: you label it)")
	fs.BoolVar(&s.CreateNamespace, "create-namespace", false, "the render creates --namespace (at Pod Security \"privileged\"; the uninstall leaves it): only for a namespace of winobs's alone")
	fs.StringVar(&s.ClusterName, "cluster", "", "this cluster's name, when several share one Prometheus or Loki")
	fs.StringVar(&s.Release, "release", "", "kube-prometheus-stack Helm release name (its Prometheus selects release=<name>)")
	fs.StringVar(&s.LokiURL, "loki-url", "", "Loki push URL as the Windows nodes reach it (a NodePort, an internal load balancer or an ingress: not a Service)")
	fs.StringVar(&s.LokiTenant, "loki-tenant", "", "X-Scope-OrgID of a multi-tenant Loki")
	fs.StringVar(&s.APIHost, "api-server", "", "API server DNS name or IP as the Windows nodes reach it")
	fs.IntVar(&s.APIPort, "api-port", 0, "API server port (default: the distribution's (--platform), else 6443)")
	scrape := fs.String("scrape-from", "", "comma-separated IPs or CIDRs of the nodes your Prometheus runs on")
	fs.StringVar(&s.ServiceCIDR, "service-cidr", "", "the cluster's Service CIDR (default: the distribution's (--platform), else 10.96.0.0/12)")
	fs.StringVar(&s.Prometheus, "prometheus", "", "where the rules run: empty for kube-prometheus-stack (PrometheusRule), or a managed Prometheus: "+managedHelp())
	fs.StringVar(&s.AMPWorkspace, "amp-workspace", "", "the AMP workspace id, ws-… (--prometheus "+managed.AMP+")")
	fs.StringVar(&s.AMPRegion, "amp-region", "", "the AMP workspace's region, such as eu-west-1")
	fs.StringVar(&s.AzureWorkspace, "azure-workspace", "", "the Azure Monitor workspace's resource id (--prometheus "+managed.AzureMonitor+")")
	fs.StringVar(&s.AzureLocation, "azure-location", "", "the workspace's region, such as westeurope")
	fs.StringVar(&s.AzureCluster, "azure-cluster", "", "the AKS cluster's resource id (az aks show --query id): scopes the rule groups to it, and its name is the cluster label ama-metrics writes (optional)")
	fs.Func("azure-action-group", "an action group's resource id the alerts notify (repeat it for several)", func(id string) error {
		s.AzureActionGroups = append(s.AzureActionGroups, id)
		return nil
	})
	fs.StringVar(&s.Distribution, "platform", "", "the Kubernetes distribution, for its defaults of the API port and Service CIDR: "+strings.Join(config.DistributionNames(), ", ")+" (docs/config.md)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if _, ok := config.Distributions[s.Distribution]; s.Distribution != "" && !ok {
		fmt.Fprintf(stderr, "gen init: --platform %q: one of %s\n", s.Distribution, strings.Join(config.DistributionNames(), ", "))
		return 2
	}
	if *scrape != "" {
		s.ScrapeFrom = strings.Split(*scrape, ",")
	}
	_, known := managed.Lookup(s.Prometheus)
	switch {
	case s.Prometheus != "" && !known:
		fmt.Fprintf(stderr, "gen init: --prometheus %q: empty (kube-prometheus-stack), %s\n", s.Prometheus, managed.Names())
		return 2
	case s.Prometheus == managed.AMP && (s.AMPWorkspace == "" || s.AMPRegion == ""):
		fmt.Fprintf(stderr, "gen init: --prometheus %s needs --amp-workspace and --amp-region\n", managed.AMP)
		return 2
	case s.Prometheus != managed.AMP && (s.AMPWorkspace != "" || s.AMPRegion != ""):
		fmt.Fprintf(stderr, "gen init: --amp-* flags need --prometheus %s\n", managed.AMP)
		return 2
	case s.Prometheus == managed.AzureMonitor && (s.AzureWorkspace == "" || s.AzureLocation == ""):
		fmt.Fprintf(stderr, "gen init: --prometheus %s needs --azure-workspace (az monitor account show --query id) and --azure-location\n", managed.AzureMonitor)
		return 2
	case s.Prometheus != managed.AzureMonitor && (s.AzureWorkspace != "" || s.AzureLocation != "" || s.AzureCluster != "" || len(s.AzureActionGroups) > 0):
		fmt.Fprintf(stderr, "gen init: --azure-* flags need --prometheus %s\n", managed.AzureMonitor)
		return 2
	}
	// The API server as a console shows it (EKS: a URL): its host and port.
	if host, port, isURL, err := config.APIServerURL(s.APIHost); isURL {
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "gen init: --api-server: %v\n", err)
			return 2
		case s.APIPort != 0 && s.APIPort != port:
			fmt.Fprintf(stderr, "gen init: --api-server names port %d and --api-port %d: give one\n", port, s.APIPort)
			return 2
		}
		s.APIHost, s.APIPort = host, port
	}
	src, warnings, err := config.Starter(s)
	if err != nil {
		return configFailed(stderr, "gen init", byFlag(err))
	}
	// First what is not the user's yet, and how to set it.
	if len(warnings) > 0 {
		are := "values are"
		if len(warnings) == 1 {
			are = "value is"
		}
		fmt.Fprintf(stderr, "gen init: %d %s the example lab's, not your cluster's; give the flag or edit %s after:\n", len(warnings), are, *path)
		for _, p := range warnings {
			fmt.Fprintf(stderr, "  %-36s %s\n", p.Path, exampleFlags[p.Path])
		}
	}
	f, err := os.OpenFile(*path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	switch {
	case errors.Is(err, os.ErrExist):
		fmt.Fprintf(stderr, "gen init: %v (an existing config is never replaced)\n", err)
		return 1
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(stderr, "gen init: %s: the directory %s does not exist: create it first, or give another --config\n", *path, filepath.Dir(*path))
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "gen init: %v\n", err)
		return 1
	}
	if _, err := f.Write(src); err != nil {
		f.Close()
		os.Remove(*path)
		fmt.Fprintf(stderr, "gen init: writing %s: %v\n", *path, err)
		return 1
	}
	if err := f.Close(); err != nil {
		os.Remove(*path)
		fmt.Fprintf(stderr, "gen init: writing %s: %v\n", *path, err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", *path)
	if q := managedQuestion(s.Distribution); q != "" && s.Prometheus == "" {
		fmt.Fprintln(stdout, q)
	}
	if s.Prometheus != "" {
		cfg, err := config.Load(*path)
		if err != nil {
			return configFailed(stderr, "gen init", err)
		}
		fmt.Fprintln(stdout, "next, in this order (docs/platforms.md):")
		for _, line := range managedSteps(cfg, *path) {
			fmt.Fprintln(stdout, "  "+line)
		}
		return 0
	}
	ns := s.Namespace
	if ns == "" {
		ns = config.Default().Namespace
	}
	render := fmt.Sprintf("go run ./cmd/gen --config %s --out out && kubectl apply -k out", shellQuote(*path))
	if ns != config.Default().Namespace && !s.CreateNamespace {
		// gen never owns a namespace it may not have created: the user
		// creates and labels it, and the label holds for every pod in it.
		whose := "a shared"
		if owner, known := config.SharedNamespace(ns); known {
			whose = owner
		}
		fmt.Fprintf(stdout, "next (%s is %s namespace: createNamespace is false, and the Pod Security label admits any privileged pod in it;\n"+
			"--create-namespace makes it winobs's alone, created at \"privileged\"):\n"+
			"  kubectl create namespace %[1]s      # if it does not exist yet\n"+
			"  %[3]s\n"+
			"  %[4]s\n", ns, whose, config.LabelNamespaceCommand(ns), render)
		return 0
	}
	fmt.Fprintf(stdout, "next:\n  %s   # creates namespace %s at Pod Security \"privileged\", for winobs's pods alone\n", render, ns)
	return 0
}

// managedQuestion asks, by the Kubernetes distribution, whether the
// cluster's metrics go to the managed Prometheus of package managed's table
// its clusters usually use, which loads no PrometheusRule: most AKS, EKS and
// GKE clusters' do, and nothing here can tell.
func managedQuestion(distribution string) string {
	for _, svc := range managed.Services {
		if distribution != "" && svc.Distribution == distribution {
			flags := strings.TrimSpace("--prometheus " + svc.Name + " " + svc.InitFlags)
			title := svc.Title
			if svc.Collector != "" {
				title += " (" + svc.Collector + ")"
			}
			return strings.ToUpper(distribution) + ": does this cluster use " + title + " rather than kube-prometheus-stack?\n" +
				"  Then run gen init again with " + flags + " (docs/platforms.md)."
		}
	}
	return ""
}

// managedHelp lists the managed Prometheus services for --prometheus's
// help, each with the flags it needs.
func managedHelp() string {
	var each []string
	for _, svc := range managed.Services {
		e := svc.Name + " (" + svc.Title
		if svc.InitFlags != "" {
			e += ", with " + svc.InitFlags
		}
		each = append(each, e+")")
	}
	return strings.Join(each, ", ")
}

// initFlags names the flag that sets each field gen init writes.
var initFlags = map[string]string{
	"namespace": "--namespace", "createNamespace": "--namespace", "cluster.name": "--cluster",
	"prometheus.ruleLabels": "--release", "windowsExporter.monitorLabels": "--release",
	"windowsExporter.firewall.allowFrom": "--scrape-from", "apiServer.host": "--api-server", "apiServer.port": "--api-port",
	"serviceCIDR": "--service-cidr", "loki.url": "--loki-url", "loki.tenant": "--loki-tenant",
	"prometheus.azure.workspace": "--azure-workspace", "prometheus.azure.location": "--azure-location", "prometheus.azure.cluster": "--azure-cluster",
	"prometheus.azure.actionGroups": "--azure-action-group",
	"prometheus.amp.workspaceId":    "--amp-workspace", "prometheus.amp.region": "--amp-region",
}

// byFlag locates the problems of the config gen init built from its flags
// at the flag that gave the value: the file is not written yet, so its
// lines are in no file.
func byFlag(err error) error {
	var probs config.Problems
	if !errors.As(err, &probs) {
		return err
	}
	out := make(config.Problems, len(probs))
	for i, p := range probs {
		field := p.Path
		if j := strings.IndexAny(field, "[\""); j >= 0 {
			field = field[:j]
		}
		for field != "" && initFlags[field] == "" {
			field = field[:max(strings.LastIndex(field, "."), 0)]
		}
		p.Line = 0
		p.File = "flag " + initFlags[field]
		if field == "" {
			p.File = "a default"
		}
		out[i] = p
	}
	return out
}

// exampleFlags names the flag that sets each of config.ExampleFields.
var exampleFlags = map[string]string{
	"loki.url":                           "--loki-url",
	"apiServer.host":                     "--api-server",
	"windowsExporter.firewall.allowFrom": "--scrape-from (your Prometheus nodes' IPs or CIDRs)",
	"prometheus.ruleLabels":              "--release (your kube-prometheus-stack Helm release name)",
}

// shellQuote is s as one word of a POSIX shell command the user pastes: as
// it is when it holds nothing the shell reads, else single-quoted (a path
// such as "a b;$(touch x).yaml" must never run anything).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
