package config

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/winobs/winobs"
)

// The example's lab values are warned about wherever they come from; a
// firewall open to every address is too; a config of one's own is quiet.
func TestWarnings(t *testing.T) {
	paths := func(ps Problems) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Path)
		}
		return strings.Join(out, ",")
	}
	// Alloy's default image is Grafana's, published; the shipper's is not
	// deployed by default.
	if got := paths(Warnings(Default())); got != "loki.url,apiServer.host,windowsExporter.firewall.allowFrom,prometheus.ruleLabels" {
		t.Errorf("default: %s", got)
	}
	c := Default()
	c.Shipper.Deploy = true
	c.Alloy.Image = winobs.Pinned().AlloyHostProcessImage
	if got := paths(Warnings(c)); !strings.HasSuffix(got, ",alloy.image,shipper.image") {
		t.Errorf("winobs's own images, never published yet: %s", got)
	}
	c.Loki.URL = "https://loki.example.org/loki/api/v1/push"
	c.APIServer.Host = "api.example.org"
	c.WindowsExporter.Firewall.AllowFrom = []string{"10.0.0.0/24"}
	c.Prometheus.RuleLabels = map[string]string{"release": "kube-prometheus-stack"}
	c.Alloy.Image, c.Shipper.Image = "registry.example/alloy-hostprocess:v1.19.2", "registry.example/eventlog-shipper:v0.2.0"
	if w := Warnings(c); len(w) != 0 {
		t.Errorf("own values: %v", w)
	}
	c.WindowsExporter.Firewall.AllowFrom = []string{"10.0.0.0/24", "0.0.0.0/0", "::/0"}
	if got := paths(Warnings(c)); got != "windowsExporter.firewall.allowFrom[1],windowsExporter.firewall.allowFrom[2]" {
		t.Errorf("open firewall: %s", got)
	}
	c.WindowsExporter.Firewall.Enabled = false
	if w := Warnings(c); len(w) != 0 {
		t.Errorf("no firewall rule, nothing opened: %v", w)
	}
	// A cluster name Grafana cannot carry in a variable (each character as
	// TestGrafanaLimitsAreDocumented measured), and one it can.
	for name, warned := range map[string]bool{`eu "west"`: true, `eu\west`: true, `eu's`: true, "eu`west": true, `eu.west|1 $x {y} [z] é`: false} {
		c.Cluster.Name = name
		if got := paths(Warnings(c)); (got == "cluster.name") != warned {
			t.Errorf("cluster name %q: warnings %q, want a cluster.name warning: %v", name, got, warned)
		}
	}
	c.Cluster.Name = ""
	// The shipper everywhere, its counters nowhere.
	c.LogAgent.Default, c.WindowsExporter.Deploy = AgentShipper, false
	if got := paths(Warnings(c)); got != "windowsExporter.deploy" {
		t.Errorf("shipper without winobs's exporter: %s", got)
	}
}

// Read locates the warnings in the user's file.
func TestReadLocatesWarnings(t *testing.T) {
	p := writeConfig(t, "namespace: observability\ncreateNamespace: false\nwindowsExporter:\n  firewall:\n    allowFrom: [10.1.0.0/16, 0.0.0.0/0]\n")
	_, w, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range w {
		got = append(got, x.Error())
	}
	want := p + ":5: windowsExporter.firewall.allowFrom[1]: allowFrom lets every IPv4 address"
	if len(got) != 4 || !strings.HasPrefix(got[0], want) || !strings.HasPrefix(got[1], "(default): apiServer.host") {
		t.Errorf("got %q, want first %q", got, want)
	}
}

// The starter config carries the site's values exactly, validated, and
// quiet once they are the user's; unset ones keep the example's, warned.
func TestStarter(t *testing.T) {
	src, w, err := Starter(Site{Namespace: "observability", ClusterName: "eu-1", Release: "prom", APIPort: 443,
		LokiURL: "https://loki.example.org/loki/api/v1/push", APIHost: "api.example.org",
		ScrapeFrom: []string{"10.0.1.0/24", "10.0.2.7"}, ServiceCIDR: "10.43.0.0/16"})
	if err != nil || len(w) != 0 {
		t.Fatalf("%v %v", err, w)
	}
	c, _, _, err := parse("init.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace != "observability" || c.Cluster.Name != "eu-1" || c.Prometheus.RuleLabels["release"] != "prom" ||
		c.WindowsExporter.MonitorLabels["release"] != "prom" || c.APIServer.Port != 443 || c.ServiceCIDR != "10.43.0.0/16" ||
		strings.Join(c.WindowsExporter.Firewall.AllowFrom, " ") != "10.0.1.0/24 10.0.2.7" {
		t.Errorf("%+v", c)
	}
	if !strings.Contains(string(src), "# Loki's push URL as the Windows nodes reach it") {
		t.Errorf("comments missing:\n%s", src)
	}
	_, w, err = Starter(Site{})
	if err != nil || len(w) != len(ExampleFields) {
		t.Errorf("example values: %v %v", err, w)
	}
}

// Values that would add keys or documents to the file are refused as
// values, with the field named; nothing is written by Starter.
func TestStarterRefusesHostileValues(t *testing.T) {
	for _, s := range []Site{
		{Namespace: "x\nloki: {url: http://evil}"},
		{LokiURL: "https://a.example/\n---\nnamespace: evil"},
		{APIHost: "a.example\"\nshipper: {image: evil}"},
		{ScrapeFrom: []string{"10.0.0.1\nalloy: {}"}},
		{ClusterName: "a\n  label: job"},
	} {
		src, _, err := Starter(s)
		if err == nil {
			t.Errorf("%+v accepted:\n%s", s, src)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "(init):") || strings.Contains(msg, "unknown field") {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

// The firewall warning counts what allowFrom opens together: every address
// of a family, or half of it, however it is split or written.
func TestOpenFirewallCountsTheUnion(t *testing.T) {
	for _, tc := range []struct {
		allow []string
		want  string // the warning's path and share; "" for none
	}{
		{[]string{"10.0.0.0/24", "10.0.1.7"}, ""},
		{[]string{"0.0.0.0/0"}, "[0] every IPv4"},
		{[]string{"10.0.0.0/24", "0.0.0.0/1", "128.0.0.0/1"}, "[2] every IPv4"},
		{[]string{"::ffff:0.0.0.0/96"}, "[0] every IPv4"},
		{[]string{"0.0.0.0/1"}, "[0] 50% of all IPv4"},
		{[]string{"0.0.0.0/2", "0.0.0.0/3", "64.0.0.0/3"}, ""}, // a /2 counted once: 37.5%
		{[]string{"::/1", "8000::/1"}, "[1] every IPv6"},
		{[]string{"2001:db8::/32", "10.0.0.0/8"}, ""},
	} {
		got := ""
		for _, p := range openFirewall(tc.allow) {
			got = strings.TrimPrefix(p.Path, "windowsExporter.firewall.allowFrom") + " " + strings.TrimSuffix(strings.TrimPrefix(p.Msg, "allowFrom lets "), " address that reaches a node scrape its exporter (port 9182): list your Prometheus nodes' addresses instead")
		}
		if got != tc.want {
			t.Errorf("%v: %q, want %q", tc.allow, got, tc.want)
		}
	}
}

// Each platform preset writes its API port and Service CIDR, validated; a
// flag given beside it wins; docs/config.md cites every preset's values.
func TestStarterPlatforms(t *testing.T) {
	doc, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range DistributionNames() {
		p := Distributions[name]
		src, _, err := Starter(Site{Distribution: name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cfg, _, _, err := parse("(init)", src)
		if err != nil || cfg.APIServer.Port != p.APIPort || cfg.ServiceCIDR != p.ServiceCIDR {
			t.Errorf("%s: port %d, CIDR %s (%v), want %d, %s", name, cfg.APIServer.Port, cfg.ServiceCIDR, err, p.APIPort, p.ServiceCIDR)
		}
		row := regexp.MustCompile("(?m)^\\| `" + name + "` \\| " + strconv.Itoa(p.APIPort) + " \\| `" + regexp.QuoteMeta(p.ServiceCIDR) + "` \\|.*https://")
		if !row.Match(doc) {
			t.Errorf("docs/config.md has no row for %s with port %d, %s and a source", name, p.APIPort, p.ServiceCIDR)
		}
	}
	src, _, err := Starter(Site{Distribution: "aks", APIPort: 8443, ServiceCIDR: "10.2.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _, _, err := parse("(init)", src); err != nil || cfg.APIServer.Port != 8443 || cfg.ServiceCIDR != "10.2.0.0/16" {
		t.Errorf("the flags beside a preset: %v %+v", err, cfg)
	}
	if _, _, err := Starter(Site{Distribution: "openshift"}); err == nil || !strings.Contains(err.Error(), "aks, eks, gke, kubeadm") {
		t.Errorf("an unknown platform: %v", err)
	}
}
