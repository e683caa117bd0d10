package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/doctor"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/view"
)

// runDoctor checks the user's cluster against what gen renders for the
// config: 0 when every check holds, 1 when one does not (or an API cannot
// be used), 2 on a usage or configuration error.
func runDoctor(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen doctor", flag.ContinueOnError)
	configPath := fs.String("config", "", "the config the bundle was rendered from (default: the built-in example)")
	promURL := fs.String("prometheus", "", "base URL of the Prometheus that scrapes the exporters and loads the rules (required)")
	lokiURL := fs.String("loki", "", "Loki's base URL (or its push endpoint, as loki.url), to check that events and pod logs arrive")
	output := fs.String("output", "text", "text or json")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound of the whole run")
	reqTimeout := fs.Duration("request-timeout", 30*time.Second, "bound of each API request")
	var promAuth, lokiAuth doctor.Auth
	for _, a := range []struct {
		name string
		auth *doctor.Auth
	}{{"prometheus", &promAuth}, {"loki", &lokiAuth}} {
		fs.StringVar(&a.auth.BearerTokenFile, a.name+"-bearer-token-file", "", "file holding a bearer token for "+a.name)
		fs.StringVar(&a.auth.Username, a.name+"-username", "", "basic auth user name for "+a.name)
		fs.StringVar(&a.auth.PasswordFile, a.name+"-password-file", "", "file holding the basic auth password for "+a.name)
		fs.StringVar(&a.auth.CAFile, a.name+"-ca-file", "", "CA bundle to verify "+a.name+"'s certificate (default: the system roots)")
		fs.StringVar(&a.auth.CertFile, a.name+"-cert-file", "", "client certificate for "+a.name+" (a server that asks for one; with --"+a.name+"-key-file)")
		fs.StringVar(&a.auth.KeyFile, a.name+"-key-file", "", "the client certificate's private key for "+a.name)
	}
	fs.StringVar(&promAuth.Tenant, "prometheus-tenant", "", "X-Scope-OrgID for a multi-tenant Prometheus API (Mimir, Cortex)")
	lokiTenant := fs.String("loki-tenant", "", "X-Scope-OrgID for a multi-tenant Loki (default: the config's loki.tenant)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	cfg, _, err := config.Read(*configPath)
	if err != nil {
		return configFailed(stderr, "gen doctor", err)
	}
	if svc, _ := managed.Lookup(cfg.Prometheus.Managed); svc.Doctor.SigV4 {
		// Its query API is the workspace's, signed with SigV4 for its
		// region; credentials from AWS's standard chain, never a flag.
		a := cfg.Prometheus.AMP
		promAuth.SigV4Region = a.Region
		if *promURL == "" && svc.Doctor.QueryURL != nil {
			*promURL = svc.Doctor.QueryURL(a.Region, a.WorkspaceID)
		}
	}
	if *promURL == "" || (*output != "text" && *output != "json") {
		fmt.Fprintln(stderr, "gen doctor: --prometheus URL is required and --output is text or json; run \"gen doctor --help\"")
		return 2
	}
	// The agents push as loki.tenant: doctor reads as the same tenant.
	lokiAuth.Tenant = cfg.Loki.Tenant
	if *lokiTenant != "" {
		lokiAuth.Tenant = *lokiTenant
	}
	// doctor.NewAPI checks the URL, the credentials and the tenant, as
	// endpoint checks the agents'.
	prom, err := doctor.NewAPI("Prometheus", *promURL, promAuth, *reqTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "gen doctor: %v\n", err)
		return 2
	}
	var loki *doctor.API
	if *lokiURL != "" {
		if loki, err = doctor.NewLokiAPI(*lokiURL, lokiAuth, *reqTimeout); err != nil {
			fmt.Fprintf(stderr, "gen doctor: %v\n", err)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep := doctor.Run(ctx, view.ForDoctor(cfg), prom, loki)
	if *output == "json" {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil || !rep.OK() {
		return 1
	}
	return 0
}
