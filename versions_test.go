package winobs_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/winobs/winobs"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/internal/testkit/fixture"
)

// The Makefile reads versions.json with sed; it must read what Go reads.
func TestMakefileReadsVersions(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is required: %v", err)
	}
	out, err := exec.Command("make", "-s", "--no-print-directory", "print-versions").CombinedOutput()
	if err != nil {
		t.Fatalf("make print-versions: %v\n%s", err, out)
	}
	pinned := winobs.Pinned().Map()
	lines := strings.Fields(string(out))
	if len(lines) < 4 {
		t.Fatalf("make print-versions printed %q", out)
	}
	for _, l := range lines {
		k, v, _ := strings.Cut(l, "=")
		if want, ok := pinned[k]; !ok || v != want {
			t.Errorf("Makefile reads %s=%q, versions.json says %q", k, v, want)
		}
	}
}

// gen's defaults take their images from versions.json.
func TestDefaultsUsePinnedImages(t *testing.T) {
	v, c := winobs.Pinned(), config.Default()
	for got, want := range map[string]string{
		c.WindowsExporter.Image: v.WindowsExporterImage,
		c.Alloy.Image:           v.AlloyImage,
		c.Shipper.Image:         v.EventlogShipperImage,
	} {
		if got != want {
			t.Errorf("default image %q, versions.json %q", got, want)
		}
	}
	// The Alloy tests run the code of the release the DaemonSet runs.
	if v.AlloyHarness != v.Alloy {
		t.Errorf("alloyHarness %s is not alloy %s: make test would run another Alloy's code than the DaemonSet's", v.AlloyHarness, v.Alloy)
	}
	if !strings.Contains(v.AlloyImage, ":"+v.Alloy+"-") || !strings.HasSuffix(v.AlloyHostProcessImage, ":"+v.Alloy) {
		t.Errorf("alloyImage %q or alloyHostProcessImage %q is not Alloy %s", v.AlloyImage, v.AlloyHostProcessImage, v.Alloy)
	}
}

// The vendored CRDs are the release versions.json names.
// The CRDs the schema checks use and the Go types gen builds objects with are
// one prometheus-operator release.
func TestCRDsMatchTheOperatorTypes(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring " + winobs.Pinned().PrometheusOperatorCRDs + "\n"
	if !strings.Contains(string(mod), want) {
		t.Errorf("go.mod does not require %q: the types and the CRDs (versions.json prometheusOperatorCRDs) differ", strings.TrimSpace(want))
	}
}

func TestCRDsMatchPinnedRelease(t *testing.T) {
	want := "operator.prometheus.io/version: " + strings.TrimPrefix(winobs.Pinned().PrometheusOperatorCRDs, "v")
	for _, f := range fixture.Glob(t, 3, "crds", "*.yaml") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q: run make update-crds", f, want)
		}
	}
}
