package cluster

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/winobs/winobs"
	"github.com/winobs/winobs/gen/config"
)

// TestReadmeOwnClusterPath runs the README's own-cluster block as it is
// written, with bash, on an AKS-shaped and an EKS-shaped control plane (the
// platform's Service range; kwok's Windows nodes labelled and tainted as
// each platform does): `gen init --platform` for the platform, the user's
// edit (the box's API address, Loki, scrapers and release: what $EDITOR
// would change), the render and `kubectl apply -k out`. Then: winobs's own
// namespace at Pod Security "privileged", every agent on every Windows node,
// every image one its publisher ships, and the preset's Service range the
// one the cluster's kubernetes Service sits in. The block's doctor line needs
// a Prometheus; TestClusterMonitoring runs doctor against a real one.
func TestReadmeOwnClusterPath(t *testing.T) {
	bin := clusterBin(t)
	block := readmeBlock(t)
	gen := filepath.Join(t.TempDir(), "gen")
	build := exec.Command("go", "build", "-o", gen, "./cmd/gen")
	build.Dir = repo(t, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, platform := range []string{"aks", "eks"} {
		t.Run(platform, func(t *testing.T) {
			preset := config.Distributions[platform]
			b := startShaped(t, bin, preset.ServiceCIDR)
			b.nodes()
			b.kubectl("apply", "--server-side", "-f", repo(t, "testdata/crds"))

			// The preset's range is the cluster's: its kubernetes Service
			// holds the range's first address, as the preset's comment says.
			ip := b.kubectl("get", "service", "kubernetes", "-n", "default", "-o", "jsonpath={.spec.clusterIP}")
			if addr, err := netip.ParseAddr(ip); err != nil || !netip.MustParsePrefix(preset.ServiceCIDR).Contains(addr) {
				t.Errorf("the kubernetes Service is at %q, outside the preset's %s", ip, preset.ServiceCIDR)
			}

			dir := t.TempDir()
			shims := b.shims(t, gen, platform)
			script := strings.Replace(block, "--platform aks", "--platform "+platform, 1)
			script, _, _ = strings.Cut(script, "go run ./cmd/gen doctor")
			cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+shims+":"+os.Getenv("PATH"), "EDITOR="+filepath.Join(shims, "edit"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the README's block for %s: %v\n%s", platform, err, out)
			}
			if !strings.Contains(string(out), "wrote winobs.yaml") {
				t.Errorf("gen init did not write winobs.yaml:\n%s", out)
			}

			ns := config.Default().Namespace
			if got := b.kubectl("get", "namespace", ns, "-o", `jsonpath={.metadata.labels}`); !strings.Contains(got, `"pod-security.kubernetes.io/enforce":"privileged"`) {
				t.Errorf("namespace %s: %s", ns, got)
			}
			for ds, nodes := range map[string][]string{"winobs-windows-exporter": windowsNodes, "winobs-alloy-windows": windowsNodes} {
				b.waitFor("DaemonSet "+ds+" on "+strings.Join(nodes, ", "), func() error { return b.onExactly(ns, ds, nodes) })
			}
			if got := b.names("daemonsets", ns); slices.Contains(got, "winobs-eventlog-shipper") {
				t.Errorf("the shipper was deployed without being asked for: %v", got)
			}
			pinned := winobs.Pinned()
			images := strings.Fields(b.kubectl("get", "daemonsets", "-n", ns, "-o", `jsonpath={range .items[*]}{range .spec.template.spec.containers[*]}{.image} {end}{end}`))
			for _, img := range images {
				if img != pinned.AlloyImage && img != pinned.WindowsExporterImage {
					t.Errorf("image %s is not one its publisher ships (%s, %s)", img, pinned.AlloyImage, pinned.WindowsExporterImage)
				}
			}
			if len(images) < 2 {
				t.Errorf("images %v", images)
			}
		})
	}
}

// readmeBlock is the README's own-cluster block: the sh block after "Then
// for your own cluster".
func readmeBlock(t *testing.T) string {
	doc, err := os.ReadFile(repo(t, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "Then for your own cluster")
	if !ok {
		t.Fatal("README.md has no own-cluster section")
	}
	_, block, _ := strings.Cut(section, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	for _, want := range []string{"gen init --config winobs.yaml --platform aks", "$EDITOR winobs.yaml", "--out out", "kubectl apply -k out", "go run ./cmd/gen doctor"} {
		if !strings.Contains(block, want) {
			t.Fatalf("the README's own-cluster block lacks %q:\n%s", want, block)
		}
	}
	return block
}

// shims is a directory of what the README's block calls: go run ./cmd/gen
// (the gen built from this checkout), kubectl (the box's, with its
// kubeconfig) and the editor, which sets what a user of this box would: its
// API address, a Loki on loopback, the scrapers and the release.
func (b *box) shims(t *testing.T, gen, platform string) string {
	dir := t.TempDir()
	files := map[string]string{
		"go": fmt.Sprintf(`#!/bin/sh
[ "$1" = run ] && [ "$2" = ./cmd/gen ] || { echo "the README's block ran go $*" >&2; exit 2; }
shift 2
exec %q "$@"
`, gen),
		"kubectl": fmt.Sprintf("#!/bin/sh\nexec %q --kubeconfig %q \"$@\"\n", filepath.Join(b.bin, "kubectl"), b.kubeconfig),
		"edit": fmt.Sprintf(`#!/bin/sh
sed -i -e 's|k8s-lab-api.example.com|127.0.0.1|' -e 's|^  port: %d$|  port: %d|' \
  -e 's|http://192.168.10.24:31100/loki/api/v1/push|http://127.0.0.1:3100/loki/api/v1/push|' \
  -e 's|192.168.10.2[346]/32|127.0.0.1/32|' -e 's|release: kps|release: kube-prometheus-stack|' "$1"
grep -q '127.0.0.1' "$1"
`, config.Distributions[platform].APIPort, b.apiPort),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
