// Package contract holds every name and limit that crosses a process
// boundary between winobs's parts and the systems they talk to, spelled once:
// the Loki stream labels the agents write and the queries, rules and doctor
// read; Loki's limits with the margins the shipper and gen keep; the metrics
// winobs's own components export; the windows_exporter versions the rules are
// tested against. It imports nothing, so both binaries and every test can
// read it; package vocab builds the PromQL and LogQL selectors on it, and
// deps_test.go holds that no other package spells these names.
package contract

// Where the node agents' pods mount their rendered config (a ConfigMap):
// no other volume may be mounted at or inside them, nor they inside another
// (the API server refuses two mounts at one path; nested ones hide files).
const (
	AlloyConfigDir   = `C:\etc\alloy`
	ShipperConfigDir = `C:\etc\eventlog-shipper`
)

// AlloyExe is the Alloy DaemonSet's command: alloy.exe where Grafana's
// Windows images keep it (grafana/alloy:<version>-windowsservercore-ltsc2022,
// Alloy's Dockerfile.windows) and images/alloy puts it too, under the
// directory HCS mounted the image at. A HostProcess container runs on the
// host, so the image's own absolute ENTRYPOINT would name the host's C:\.
const AlloyExe = `%CONTAINER_SANDBOX_MOUNT_POINT%\Program Files\GrafanaLabs\Alloy\alloy.exe`

// The Kubernetes service-discovery roles a rendered Prometheus scrape
// configuration names (kubernetes_sd_configs): Prometheus' words, the
// first spelled like the node label.
const (
	SDRoleNode      = "node"
	SDRoleEndpoints = "endpoints"
)
