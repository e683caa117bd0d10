package winobs_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Dependencies point one way: gen links the shipper's config schema and its
// manifest builder, never the shipper's runtime (Loki client, snappy); the
// shipper links no Kubernetes module and none of gen's builder libraries.
func TestBinariesLinkOnlyWhatTheyNeed(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		return strings.Fields(string(out))
	}
	allowedShipper := map[string]bool{"github.com/winobs/winobs/shipper/shipconfig": true}
	for _, d := range deps("./cmd/gen") {
		if strings.HasPrefix(d, "github.com/winobs/winobs/shipper") && !allowedShipper[d] || d == "github.com/golang/snappy" {
			t.Errorf("cmd/gen links %s", d)
		}
	}
	// The config knows nothing of what is built from it (ARCHITECTURE.md).
	for _, d := range deps("./config") {
		for _, builder := range []string{"rules", "dashboards", "alloy", "exporters", "eventlogshipper", "hostprocess", "bundle", "render", "shipper"} {
			if d == "github.com/winobs/winobs/"+builder || strings.HasPrefix(d, "github.com/winobs/winobs/"+builder+"/") {
				t.Errorf("config links %s", d)
			}
		}
	}
	// Rules and dashboards are siblings over package vocab: neither links the other.
	for pkg, other := range map[string]string{"./dashboards": "github.com/winobs/winobs/rules", "./rules": "github.com/winobs/winobs/dashboards"} {
		if slices.Contains(deps(pkg), other) {
			t.Errorf("%s links %s", pkg, other)
		}
	}
	for _, goos := range []string{"linux", "windows"} {
		cmd := exec.Command("go", "list", "-deps", "./cmd/eventlog-shipper")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, d := range strings.Fields(string(out)) {
			for _, banned := range []string{"k8s.io/", "sigs.k8s.io/", "github.com/winobs/winobs/config", "github.com/prometheus/prometheus/",
				"github.com/prometheus-operator/", "github.com/grafana/grafana-foundation-sdk/", "github.com/grafana/alloy/"} {
				if strings.HasPrefix(d, banned) {
					t.Errorf("eventlog-shipper (%s) links %s", goos, d)
				}
			}
		}
	}
}
