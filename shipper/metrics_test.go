package shipper

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/winobs/winobs/contract"
)

// The shipper exports exactly the metrics the catalog names, which is what
// gen's dashboards and the tests query.
func TestMetricsAreTheCatalogs(t *testing.T) {
	var got []string
	for _, c := range newMetrics([]string{"System"}).collectors() {
		descs := make(chan *prometheus.Desc, 1)
		go func() { c.Describe(descs); close(descs) }()
		for d := range descs {
			// Desc has no name accessor; its String() starts with fqName: "name".
			_, after, _ := strings.Cut(d.String(), `fqName: "`)
			name, _, _ := strings.Cut(after, `"`)
			got = append(got, name)
		}
	}
	want := slices.Clone(contract.ShipperMetrics)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("registered %v\ncatalog    %v", got, want)
	}
}
