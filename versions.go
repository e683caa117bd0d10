// Package winobs pins every external version the bundle deploys or is tested
// with. The one source is versions.json, read by gen's defaults (through
// Pinned), by the Makefile and by CI, so a version is changed in one place.
package winobs

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
)

//go:embed versions.json
var versionsJSON []byte

// Versions is versions.json. Every field is required.
type Versions struct {
	// Winobs is this bundle's own version, on every object it renders
	// (app.kubernetes.io/version).
	Winobs string `json:"winobs"`
	// WindowsExporterImage is the default windows-exporter image.
	WindowsExporterImage string `json:"windowsExporterImage"`
	// Alloy is the Grafana Alloy release the Alloy config is written for.
	Alloy string `json:"alloy"`
	// AlloyImage is the default image of the Alloy DaemonSet: Grafana's own
	// Windows image of release Alloy, which keeps alloy.exe where
	// contract.AlloyExe finds it.
	AlloyImage string `json:"alloyImage"`
	// AlloyHostProcessImage is the image `make image-alloy` builds instead (the
	// HostProcess base image and the same alloy.exe at the same path, with no
	// os.version) and the release workflow pushes.
	AlloyHostProcessImage string `json:"alloyHostProcessImage"`
	// EventlogShipperImage is the default eventlog-shipper image; its tag
	// is Winobs (the image is built from this repository's code).
	EventlogShipperImage string `json:"eventlogShipperImage"`
	// HostProcessBaseImage is the base of both HostProcess images
	// (images/*/Dockerfile).
	HostProcessBaseImage string `json:"hostProcessBaseImage"`
	// GoImage compiles the shipper in its image's build stage (the Go of
	// go.mod).
	GoImage string `json:"goImage"`
	// FetchImage downloads and checks the Alloy release in the Alloy
	// image's first stage.
	FetchImage string `json:"fetchImage"`
	// VictoriaLogs is the Loki-protocol receiver of the shipper's end-to-end
	// tests (go install).
	VictoriaLogs string `json:"victoriaLogs"`
	// Promtool is the Prometheus module version of `make promtool-test`.
	Promtool string `json:"promtool"`
	// Prometheus is the Prometheus server `make doctor-e2e` builds and runs
	// doctor against.
	Prometheus string `json:"prometheus"`
	// Staticcheck is the honnef.co/go/tools version CI lints with.
	Staticcheck string `json:"staticcheck"`
	// PrometheusOperatorCRDs is the prometheus-operator release whose CRD
	// schemas the rendered monitors and rules are validated against
	// (testdata/crds).
	PrometheusOperatorCRDs string `json:"prometheusOperatorCRDs"`
	// GrafanaScenes and GrafanaPrometheus are the npm packages of Grafana's
	// frontend code that the dashboards test runs (tests/grafana/package.json,
	// which pins them).
	GrafanaScenes     string `json:"grafanaScenes"`
	GrafanaPrometheus string `json:"grafanaPrometheus"`
	// PowerShellGrammar is tree-sitter's PowerShell grammar (npm
	// tree-sitter-powershell), which parses the node steps' scripts
	// (tests/powershell/package.json, which pins it).
	PowerShellGrammar string `json:"powershellGrammar"`
	// AlloyHarness is the Grafana Alloy module whose own code the Alloy
	// tests run (tests/alloy: parser, validator, loki.process): Alloy, the
	// release the DaemonSet runs (versions_test.go holds them equal).
	AlloyHarness string `json:"alloyHarness"`
	// Kubernetes, Etcd and Kwok are the cluster in a box's control plane
	// (kube-apiserver, kube-controller-manager, kube-scheduler and kubectl
	// from k8s.io/kubernetes), its store (go.etcd.io/etcd/server/v3) and its
	// fake nodes (sigs.k8s.io/kwok): make cluster-e2e, tests/cluster.
	Kubernetes string `json:"kubernetes"`
	Etcd       string `json:"etcd"`
	Kwok       string `json:"kwok"`
	// PrometheusOperator is the operator the cluster in a box runs
	// (tests/cluster/build-operator.sh), built with the generated client
	// module PrometheusOperatorClient: the newest the Go module proxy
	// serves, since it serves none of the operator's own release.
	PrometheusOperator       string `json:"prometheusOperator"`
	PrometheusOperatorClient string `json:"prometheusOperatorClient"`
	// Loki is the real Loki make test builds from the Go module proxy
	// (tests/loki/build.sh) and runs as a test process: the Loki rule tests
	// and the shipper's stream-limit test. Loki is AGPL: it is never a
	// dependency of winobs, nor linked into what winobs ships.
	Loki string `json:"loki"`
}

// Pinned returns versions.json. It panics only if the embedded file is
// broken, which its test rules out.
func Pinned() Versions {
	v, err := parseVersions(versionsJSON)
	if err != nil {
		panic(err)
	}
	return v
}

func parseVersions(b []byte) (Versions, error) {
	var v Versions
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("versions.json: %w", err)
	}
	var missing []string
	for k, s := range v.Map() {
		if s == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return v, fmt.Errorf("versions.json: missing %v", missing)
	}
	return v, nil
}

// Map returns the versions by their versions.json key.
func (v Versions) Map() map[string]string {
	out := map[string]string{}
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		out[rv.Type().Field(i).Tag.Get("json")] = rv.Field(i).String()
	}
	return out
}
