package config

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"sync"

	"github.com/winobs/winobs/conffile"
)

// ExampleFields are the values of the embedded default that belong to the
// reference lab of the seed articles, not to any user's cluster: its Loki,
// its API server and its Prometheus nodes. A render that still uses them
// points the agents at someone else's network and firewalls the user's
// Prometheus off.
var ExampleFields = []struct {
	Path string
	Get  func(*Config) any
}{
	{"loki.url", func(c *Config) any { return c.Loki.URL }},
	{"apiServer.host", func(c *Config) any { return c.APIServer.Host }},
	{"windowsExporter.firewall.allowFrom", func(c *Config) any { return c.WindowsExporter.Firewall.AllowFrom }},
}

// Warnings returns what is legal in c but probably wrong, each with its
// field path: the example lab's values still in use, and a firewall rule
// open to every address.
func Warnings(c *Config) Problems {
	var out Problems
	lab := defaultValues()
	for _, f := range ExampleFields {
		if v := f.Get(c); reflect.DeepEqual(v, f.Get(lab)) {
			out = append(out, Problem{Path: f.Path, Msg: fmt.Sprintf(
				"is the example lab's value (%s): set your cluster's; `go run ./cmd/gen init` writes a config to start from", shown(v))})
		}
	}
	fw := c.WindowsExporter.Firewall
	for i, a := range fw.AllowFrom {
		if p, err := netip.ParsePrefix(a); fw.Enabled && err == nil && p.Bits() == 0 {
			out = append(out, Problem{Path: fmt.Sprintf("windowsExporter.firewall.allowFrom[%d]", i), Msg: fmt.Sprintf(
				"%s lets every address that reaches a node scrape its exporter (port 9182): list your Prometheus nodes' addresses instead", a)})
		}
	}
	return out
}

func shown(v any) string {
	if l, ok := v.([]string); ok {
		return strings.Join(l, ", ")
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
