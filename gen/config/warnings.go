package config

import (
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/winobs/winobs"
	"github.com/winobs/winobs/conffile"
	"github.com/winobs/winobs/gen/managed"
)

// ExampleFields are the values of the embedded default that belong to the
// reference lab of the seed articles, not to any user's cluster: its Loki,
// its API server and its Prometheus nodes. A render that still uses them
// points the agents at someone else's network and firewalls the user's
// Prometheus off.
var ExampleFields = []exampleField{
	{"loki.url", func(c *Config) any { return c.Loki.URL }},
	{"apiServer.host", func(c *Config) any { return c.APIServer.Host }},
	{"windowsExporter.firewall.allowFrom", func(c *Config) any { return c.WindowsExporter.Firewall.AllowFrom }},
	// The lab's kube-prometheus-stack release: a Prometheus of another
	// release (the chart's own name, often) silently loads no rule.
	{"prometheus.ruleLabels", func(c *Config) any { return c.Prometheus.RuleLabels }},
}

type exampleField struct {
	Path string
	Get  func(*Config) any
}

// Warnings returns what is legal in c but probably wrong, each with its
// field path: the example lab's values still in use, and a firewall rule
// open to every address.
func Warnings(c *Config) Problems {
	var out Problems
	lab := defaultValues()
	for _, f := range ExampleFields {
		if f.Path == "prometheus.ruleLabels" && c.Prometheus.Managed != "" {
			continue // a managed Prometheus loads no PrometheusRule
		}
		if v := f.Get(c); reflect.DeepEqual(v, f.Get(lab)) {
			out = append(out, Problem{Path: f.Path, Msg: fmt.Sprintf(
				"is the example lab's value (%s): set your cluster's; `go run ./cmd/gen init` writes a config to start from", shown(v))})
		}
	}
	// winobs's own images are built by make image-shipper and image-alloy;
	// until a release pushes them, a node pulling the default gets
	// ErrImagePull. (Alloy's default is Grafana's published image.)
	pinned := winobs.Pinned()
	for _, img := range []struct {
		path, image, def, build string
		used                    bool
	}{
		{"alloy.image", c.Alloy.Image, pinned.AlloyHostProcessImage, "make image-alloy PUSH=1 ALLOY_IMAGE=…", true},
		{"shipper.image", c.Shipper.Image, pinned.EventlogShipperImage, "make image-shipper PUSH=1 SHIPPER_IMAGE=…", c.Shipper.Deploy},
	} {
		if img.used && img.image == img.def {
			out = append(out, Problem{Path: img.path, Msg: fmt.Sprintf(
				"is winobs's default image %s, which no release has published yet: build and push it to your registry "+
					"(%s) and set %s to it", img.def, img.build, img.path)})
		}
	}
	out = append(out, nodeLocalWarnings(c)...)
	out = append(out, setWarnings(c.EventLog)...)
	out = append(out, spellingWarnings(c.EventLog)...)
	if fw := c.WindowsExporter.Firewall; fw.Enabled {
		out = append(out, openFirewall(fw.AllowFrom)...)
	}
	// Measured through Grafana's own code (tests: TestGrafanaLimitsAreDocumented).
	if strings.ContainsAny(c.Cluster.Name, `"'\`) {
		out = append(out, Problem{Path: "cluster.name", Msg: "holds a '\"', a \"'\" or a '\\', which Grafana's Loki data source cannot carry in the cluster variable: " +
			"the log panels' queries break or select nothing when this cluster is chosen (docs/dashboards.md); the Prometheus panels, rules and alerts are not affected"})
	}
	if strings.Contains(c.Cluster.Name, "`") {
		out = append(out, Problem{Path: "cluster.name", Msg: "holds a '`', which ends the backquoted string the dashboards' PromQL matches the cluster with: " +
			"their Prometheus panels break when this cluster is chosen (docs/dashboards.md); the log panels, rules and alerts are not affected"})
	}
	if c.Prometheus.Managed == managed.GMP && c.Cluster.Multi() && !gkeClusterName.MatchString(c.Cluster.Name) {
		out = append(out, Problem{Path: "cluster.name", Msg: fmt.Sprintf("is %q, which no GKE cluster can be named (lower-case letters, digits and '-', "+
			"starting with a letter, at most 40): GMP's collectors label the series cluster=<the GKE cluster's name> and its rule evaluator selects that, "+
			"so the dashboards and doctor, which select cluster.name, find nothing unless your self-deployed collection writes this name", c.Cluster.Name)})
	}
	if c.LogAgent.Default == AgentShipper && !c.WindowsExporter.Deploy {
		out = append(out, Problem{Path: "windowsExporter.deploy", Related: "logAgent.default", Msg: "is false while the eventlog-shipper is the default log agent: " +
			"its counters (drops, push errors) are a textfile that only winobs's exporter reads (shipper.textfileDir), so they never reach Prometheus; " +
			"deploy the exporter, or have yours read that directory (--collector.textfile.directories)"})
	}
	return out
}

// openFirewall warns about allowFrom entries that, alone or together, let
// at least half of an address family scrape the exporter: 0.0.0.0/0, but
// also 0.0.0.0/1 with 128.0.0.0/1, or ::ffff:0.0.0.0/96 (every IPv4 address
// as IPv6 sees it).
func openFirewall(allowFrom []string) Problems {
	var out Problems
	covered := map[int]float64{} // family bits (32, 128): fraction of the family
	var at = map[int][]int{}
	var seen []netip.Prefix
	for i, a := range allowFrom {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			if addr, aerr := netip.ParseAddr(a); aerr == nil {
				p = netip.PrefixFrom(addr, addr.BitLen())
			} else {
				continue // validation reports it
			}
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		p = p.Masked()
		if containedIn(p, seen) {
			continue // counted once
		}
		seen = append(seen, p)
		fam := p.Addr().BitLen()
		covered[fam] += math.Ldexp(1, -p.Bits())
		at[fam] = append(at[fam], i)
	}
	for _, fam := range []int{32, 128} {
		if covered[fam] < 0.5 {
			continue
		}
		name := map[int]string{32: "IPv4", 128: "IPv6"}[fam]
		share := "every"
		if covered[fam] < 1 {
			share = fmt.Sprintf("%.0f%% of all", 100*math.Min(covered[fam], 1))
		}
		out = append(out, Problem{Path: fmt.Sprintf("windowsExporter.firewall.allowFrom[%d]", at[fam][len(at[fam])-1]), Msg: fmt.Sprintf(
			"allowFrom lets %s %s address that reaches a node scrape its exporter (port 9182): list your Prometheus nodes' addresses instead",
			share, name)})
	}
	return out
}

// containedIn reports whether p lies inside one of ps. Entries are checked
// in order, so a wider prefix after a narrower one may count an overlap
// twice: the sum is then an overestimate, which only warns sooner.
func containedIn(p netip.Prefix, ps []netip.Prefix) bool {
	for _, q := range ps {
		if q.Bits() <= p.Bits() && q.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

func shown(v any) string {
	switch v := v.(type) {
	case []string:
		return strings.Join(v, ", ")
	}
	if m := reflect.ValueOf(v); m.Kind() == reflect.Map {
		var kv []string
		for it := m.MapRange(); it.Next(); {
			kv = append(kv, fmt.Sprintf("%v=%v", it.Key(), it.Value()))
		}
		sort.Strings(kv)
		return conffile.Excerpt(strings.Join(kv, ", "))
	}
	return conffile.Excerpt(fmt.Sprint(v))
}

// defaultValues is the embedded default alone (validated by its tests),
// decoded once; callers only read it.
var defaultValues = sync.OnceValue(func() *Config {
	c := pinnedDefaults()
	conffile.Decode("(default)", defaultYAML, &c)
	return &c
})

// nodeLocalWarnings: an API server or Loki at the node's own address. The
// agents share each Windows node's network, so they would look for it on
// every node; legal (a node-local proxy), rarely meant.
func nodeLocalWarnings(c *Config) Problems {
	var out Problems
	hosts := []struct{ path, what, host string }{{"apiServer.host", "API server", c.APIServer.Host}}
	if u, err := url.Parse(c.Loki.URL); err == nil {
		hosts = append(hosts, struct{ path, what, host string }{"loki.url", "Loki", u.Hostname()})
	}
	for _, h := range hosts {
		name := strings.ToLower(strings.TrimSuffix(h.host, "."))
		ip, err := netip.ParseAddr(name)
		if name == "localhost" || strings.HasSuffix(name, ".localhost") || err == nil && (ip.IsLoopback() || ip.IsUnspecified()) {
			out = append(out, Problem{Path: h.path, Msg: fmt.Sprintf(
				"%s is each Windows node itself: the HostProcess agents share the node's network, so they look for the %s on every node; give the address the nodes reach it at, unless a proxy on every node serves it",
				h.host, h.what)})
		}
	}
	return out
}
