package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/winobs/winobs/conffile"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/managed/azuremonitor"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
)

// runAzureSettings merges what winobs needs into the cluster's own
// ama-metrics settings ConfigMap (azuremonitor.Merge): 0 merged, 1 the
// output could not be written, 2 a usage or configuration error or a
// conflict (each named; nothing written).
func runAzureSettings(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen azure-settings", flag.ContinueOnError)
	configPath := fs.String("config", "", "the config the bundle is rendered from (prometheus.platform: azure-monitor)")
	current := fs.String("current", "", "the cluster's settings, as kubectl get cm -n kube-system "+azuremonitor.SettingsName+" -o yaml prints them (required)")
	out := fs.String("out", "-", "file to write the merged ConfigMap to (never replaced), or - for standard output")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	azure, _ := managed.Lookup(managed.AzureMonitor)
	if *current == "" {
		fmt.Fprintln(stderr, "gen azure-settings: --current FILE is required (kubectl get cm -n kube-system "+azuremonitor.SettingsName+" -o yaml > current.yaml); "+
			"a cluster without that ConfigMap takes out/"+azure.Dir+"ama-metrics-settings-configmap.yaml as it is (kubectl create -f)")
		return 2
	}
	cfg, warnings, err := config.Read(*configPath)
	if err != nil {
		return configFailed(stderr, "gen azure-settings", err)
	}
	printWarnings(stderr, *configPath, warnings)
	if cfg.Prometheus.Managed != managed.AzureMonitor {
		fmt.Fprintf(stderr, "gen azure-settings: the config's prometheus.platform is %q, not %s\n", cfg.Prometheus.Managed, managed.AzureMonitor)
		return 2
	}
	src, err := conffile.ReadConfig(*current, conffile.MaxFileSize)
	if err != nil {
		fmt.Fprintf(stderr, "gen azure-settings: --current: %v\n", err)
		return 2
	}
	v := view.Of(cfg).Managed
	groups, err := rules.Build(v.Rules)
	if err != nil {
		fmt.Fprintf(stderr, "gen azure-settings: %v\n", err)
		return 1
	}
	merged, notes, err := azuremonitor.Merge(v, groups, src)
	for _, n := range notes {
		fmt.Fprintf(stderr, "gen azure-settings: note: %s\n", n)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gen azure-settings: %s: %v\n", *current, err)
		var conflicts azuremonitor.Conflicts
		if errors.As(err, &conflicts) {
			fmt.Fprintln(stderr, "gen azure-settings: edit the cluster's ConfigMap or winobs's config as each line says, then run it again")
		}
		return 2
	}
	if *out == "-" {
		stdout.Write(merged)
		return 0
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		fmt.Fprintf(stderr, "gen azure-settings: %v (an existing file is never replaced)\n", err)
		return 1
	}
	if _, err := f.Write(merged); err != nil {
		f.Close()
		os.Remove(*out)
		fmt.Fprintf(stderr, "gen azure-settings: writing %s: %v\n", *out, err)
		return 1
	}
	if err := f.Close(); err != nil {
		os.Remove(*out)
		fmt.Fprintf(stderr, "gen azure-settings: writing %s: %v\n", *out, err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s: apply it with kubectl replace -f %s (it fails if the ConfigMap changed since you read it: read it again)\n", *out, shellQuote(*out))
	return 0
}
