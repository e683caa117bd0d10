package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/internal/testkit/fixture"
)

// The stand-ins for what the box cannot run: kube-state-metrics and one
// windows_exporter per Windows node. Both read the real node and pod
// objects from the API server, so what they export is what the control
// plane decided (which pods run where, their namespaces, names and
// container ids), in the exact names and labels the real programs use
// (testdata/windows-exporter: the 0.31.8 exposition and kube-state-metrics
// v2.20.0's names).

// objects is the cluster's nodes and pods, as the API server lists them.
type objects struct {
	Nodes []node
	Pods  []pod
}

type node struct {
	Metadata struct{ Name string }
	Spec     struct{ Unschedulable bool }
	Status   struct {
		Addresses []struct{ Type, Address string }
		NodeInfo  struct {
			OSImage                 string `json:"osImage"`
			KernelVersion           string `json:"kernelVersion"`
			ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
			KubeletVersion          string `json:"kubeletVersion"`
		} `json:"nodeInfo"`
	}
}

type pod struct {
	Metadata struct {
		Name, Namespace, UID string
		OwnerReferences      []struct{ Kind, Name string }
	}
	Spec struct {
		NodeName    string `json:"nodeName"`
		HostNetwork bool   `json:"hostNetwork"`
		Containers  []struct {
			Name, Image string
			Resources   struct{ Limits map[string]string }
		}
		SecurityContext struct {
			WindowsOptions struct {
				HostProcess bool `json:"hostProcess"`
			} `json:"windowsOptions"`
		} `json:"securityContext"`
	}
	Status struct {
		Phase, PodIP, HostIP string
		ContainerStatuses    []struct {
			Name, ContainerID string
			State             struct{ Running *struct{} }
		}
	}
}

// apiReader lists nodes and pods with the box's admin credentials.
type apiReader struct {
	client *http.Client
	base   string
}

func newAPIReader(t *testing.T, b *box) *apiReader {
	cert, err := tls.LoadX509KeyPair(b.pki.adminCert, b.pki.adminKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := os.ReadFile(b.pki.caCert)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &apiReader{
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool}}},
		base:   fmt.Sprintf("https://127.0.0.1:%d", b.apiPort),
	}
}

func (a *apiReader) list() (objects, error) {
	var o objects
	for path, into := range map[string]any{"/api/v1/nodes": &struct{ Items *[]node }{&o.Nodes}, "/api/v1/pods": &struct{ Items *[]pod }{&o.Pods}} {
		resp, err := a.client.Get(a.base + path)
		if err != nil {
			return o, err
		}
		err = json.NewDecoder(resp.Body).Decode(into)
		resp.Body.Close()
		if err != nil {
			return o, err
		}
	}
	return o, nil
}

// standIn is one scrape target: it answers with expose(objects) and can be
// taken down or changed while the test runs.
type standIn struct {
	api    *apiReader
	addr   string
	expose func(objects) string

	mu   sync.Mutex
	down bool
	edit func(string) string // a change of what it serves, or nil
}

func serve(t *testing.T, api *apiReader, addr string, expose func(objects) string) *standIn {
	s := &standIn{api: api, addr: addr, expose: expose}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("stand-in at %s: %v", addr, err)
	}
	s.addr = ln.Addr().String()
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	down, edit := s.down, s.edit
	s.mu.Unlock()
	if down || r.URL.Path != "/metrics" {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	o, err := s.api.list()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	text := s.expose(o)
	if edit != nil {
		text = edit(text)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprint(w, text)
}

// change makes it serve edit(what it would serve); nil restores it.
func (s *standIn) change(edit func(string) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.edit = edit
}

func (s *standIn) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// replaceValue sets the value of every line of text that starts with
// prefix (a series' name and labels) to v.
func replaceValue(text, prefix, v string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines[i] = l[:strings.LastIndexByte(l, ' ')+1] + v
		}
	}
	return strings.Join(lines, "\n")
}

// startKSM serves kube-state-metrics' series for the objects, as v2.20.0
// names and labels them: the ones winobs's rules and doctor read, and a
// few others beside them.
func startKSM(t *testing.T, api *apiReader) *standIn {
	return serve(t, api, "127.0.0.1:0", func(o objects) string { return ksmExposition(t, o) })
}

// ksmExposition is kube-state-metrics' answer for the objects.
func ksmExposition(t *testing.T, o objects) string {
	var b strings.Builder
	metric := func(name, typ string) { fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, name, name, typ) }
	metric("kube_node_info", "gauge")
	for _, n := range o.Nodes {
		ip := ""
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" {
				ip = a.Address
			}
		}
		i := n.Status.NodeInfo
		fmt.Fprintf(&b, "kube_node_info{container_runtime_version=%q,internal_ip=%q,kernel_version=%q,kubelet_version=%q,kubeproxy_version=\"deprecated\",node=%q,os_image=%q,pod_cidr=\"\",provider_id=\"\",system_uuid=%q} 1\n",
			i.ContainerRuntimeVersion, ip, i.KernelVersion, i.KubeletVersion, n.Metadata.Name, i.OSImage, n.Metadata.Name)
	}
	metric("kube_node_spec_unschedulable", "gauge")
	for _, n := range o.Nodes {
		fmt.Fprintf(&b, "kube_node_spec_unschedulable{node=%q} %d\n", n.Metadata.Name, btoi(n.Spec.Unschedulable))
	}
	metric("kube_pod_info", "gauge")
	for _, p := range o.Pods {
		kind, owner := "<none>", "<none>"
		if len(p.Metadata.OwnerReferences) > 0 {
			kind, owner = p.Metadata.OwnerReferences[0].Kind, p.Metadata.OwnerReferences[0].Name
		}
		fmt.Fprintf(&b, "kube_pod_info{created_by_kind=%q,created_by_name=%q,host_ip=%q,host_network=\"%t\",namespace=%q,node=%q,pod=%q,pod_ip=%q,priority_class=\"\",uid=%q} 1\n",
			kind, owner, p.Status.HostIP, p.Spec.HostNetwork, p.Metadata.Namespace, p.Spec.NodeName, p.Metadata.Name, p.Status.PodIP, p.Metadata.UID)
	}
	metric("kube_pod_container_info", "gauge")
	for _, p := range o.Pods {
		for _, c := range p.Spec.Containers {
			id := ""
			for _, st := range p.Status.ContainerStatuses {
				if st.Name == c.Name {
					id = st.ContainerID
				}
			}
			fmt.Fprintf(&b, "kube_pod_container_info{container=%q,container_id=%q,image=%q,image_id=\"\",image_spec=%q,namespace=%q,pod=%q,uid=%q} 1\n",
				c.Name, id, c.Image, c.Image, p.Metadata.Namespace, p.Metadata.Name, p.Metadata.UID)
		}
	}
	metric("kube_pod_container_status_running", "gauge")
	for _, p := range o.Pods {
		for _, st := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "kube_pod_container_status_running{container=%q,namespace=%q,pod=%q,uid=%q} %d\n",
				st.Name, p.Metadata.Namespace, p.Metadata.Name, p.Metadata.UID, btoi(st.State.Running != nil))
		}
	}
	metric("kube_pod_container_resource_limits", "gauge")
	for _, p := range o.Pods {
		for _, c := range p.Spec.Containers {
			if mem, ok := c.Resources.Limits["memory"]; ok {
				fmt.Fprintf(&b, "kube_pod_container_resource_limits{container=%q,namespace=%q,node=%q,pod=%q,resource=\"memory\",uid=%q,unit=\"byte\"} %d\n",
					c.Name, p.Metadata.Namespace, p.Spec.NodeName, p.Metadata.Name, p.Metadata.UID, bytesOf(t, mem))
			}
		}
	}
	return b.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// bytesOf reads the memory quantities the box's pods use (Mi, Gi).
func bytesOf(t *testing.T, q string) int64 {
	var n int64
	var unit string
	fmt.Sscanf(q, "%d%s", &n, &unit)
	switch unit {
	case "Mi":
		return n << 20
	case "Gi":
		return n << 30
	}
	t.Errorf("memory quantity %q: the stand-in reads Mi and Gi", q)
	return 0
}

// sampleContainer matches the sample's series of its one workload
// container ("web"), and its HostProcess container.
var (
	sampleContainer = regexp.MustCompile(`container="web",container_id="containerd://[0-9a-f]{64}"(.*),namespace="shop",pod="web-[^"]*"`)
	sampleHostProc  = regexp.MustCompile(`container="windows-exporter",container_id="containerd://[0-9a-f]{64}",hostprocess="true",namespace="monitoring",pod="windows-exporter-[^"]*"`)
)

// supplement is what the abridged sample leaves out of the collectors
// winobs's exporter runs (time, pagefile, logical_disk, net): names from
// the 0.31.8 name list, labels as those collectors set them, counters that
// grow so rates move.
var supplement = []struct {
	name, typ, labels string
	value, perSecond  float64
}{
	{"windows_time_computed_time_offset_seconds", "gauge", "", 0.0012, 0},
	{"windows_time_ntp_client_time_sources", "gauge", "", 1, 0},
	{"windows_pagefile_free_bytes", "gauge", `{file="C:\\pagefile.sys"}`, 4294967296, 0},
	{"windows_pagefile_limit_bytes", "gauge", `{file="C:\\pagefile.sys"}`, 8589934592, 0},
	{"windows_logical_disk_free_bytes", "gauge", `{volume="C:"}`, 68719476736, 0},
	{"windows_logical_disk_size_bytes", "gauge", `{volume="C:"}`, 137438953472, 0},
	{"windows_logical_disk_read_latency_seconds_total", "counter", `{volume="C:"}`, 120, 0.02},
	{"windows_logical_disk_write_latency_seconds_total", "counter", `{volume="C:"}`, 240, 0.04},
	{"windows_logical_disk_reads_total", "counter", `{volume="C:"}`, 50000, 10},
	{"windows_logical_disk_writes_total", "counter", `{volume="C:"}`, 90000, 20},
	{"windows_net_packets_total", "counter", `{nic="Ethernet"}`, 1e6, 300},
	{"windows_net_packets_received_errors_total", "counter", `{nic="Ethernet"}`, 0, 0},
	{"windows_net_packets_outbound_errors_total", "counter", `{nic="Ethernet"}`, 0, 0},
	{"windows_net_packets_received_discarded_total", "counter", `{nic="Ethernet"}`, 2, 0},
	{"windows_net_packets_outbound_discarded_total", "counter", `{nic="Ethernet"}`, 0, 0},
}

// startExporter serves windows_exporter 0.31.8 for one Windows node at its
// address and port 9182: the testdata sample's node series, and the
// sample's container series once per container the API server runs on
// the node (HostProcess ones as the exporter reports them: available
// only), and where the API server runs the eventlog-shipper, the counters
// its textfile holds.
func startExporter(t *testing.T, api *apiReader, nodeName, addr string) *standIn {
	sample := fixture.Read(t, "windows-exporter", "metrics-0.31.8.prom")
	started := time.Now()
	return serve(t, api, addr, func(o objects) string { return exporterExposition(string(sample), nodeName, o, time.Since(started)) })
}

// exporterExposition is windows_exporter's answer on nodeName for the
// objects, elapsed after it started.
func exporterExposition(sample, nodeName string, o objects, elapsed time.Duration) string {
	type ctr struct{ ns, pod, name, id string }
	var work, host []ctr
	shipper := false
	for _, p := range o.Pods {
		if p.Spec.NodeName != nodeName || p.Status.Phase != "Running" {
			continue
		}
		for _, ref := range p.Metadata.OwnerReferences {
			shipper = shipper || ref.Name == contract.ShipperName
		}
		for _, st := range p.Status.ContainerStatuses {
			c := ctr{p.Metadata.Namespace, p.Metadata.Name, st.Name, st.ContainerID}
			if st.ContainerID == "" || st.State.Running == nil {
				continue
			}
			if p.Spec.SecurityContext.WindowsOptions.HostProcess {
				host = append(host, c)
			} else {
				work = append(work, c)
			}
		}
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(sample, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "windows_container_count "):
			fmt.Fprintf(&b, "windows_container_count %d\n", len(work)+len(host))
		case sampleContainer.MatchString(l):
			for _, c := range work {
				b.WriteString(sampleContainer.ReplaceAllString(l, fmt.Sprintf(`container=%q,container_id=%q$1,namespace=%q,pod=%q`, c.name, c.id, c.ns, c.pod)) + "\n")
			}
		case sampleHostProc.MatchString(l):
			for _, c := range host {
				b.WriteString(sampleHostProc.ReplaceAllString(l, fmt.Sprintf(`container=%q,container_id=%q,hostprocess="true",namespace=%q,pod=%q`, c.name, c.id, c.ns, c.pod)) + "\n")
			}
		default:
			b.WriteString(l + "\n")
		}
	}
	for _, s := range supplement {
		fmt.Fprintf(&b, "# TYPE %s %s\n%s%s %g\n", s.name, s.typ, s.name, s.labels, s.value+s.perSecond*elapsed.Seconds())
	}
	if shipper { // the shipper's textfile, which the exporter's textfile collector serves
		read := 1000 + 5*elapsed.Seconds()
		for _, m := range []string{contract.ShipperEventsRead, contract.ShipperEventsSent} {
			fmt.Fprintf(&b, "# TYPE %s counter\n", m)
			for _, ch := range []string{"Application", "System"} {
				fmt.Fprintf(&b, "%s{channel=%q} %g\n", m, ch, read)
			}
		}
		fmt.Fprintf(&b, "# TYPE %s counter\n", contract.ShipperEventsDropped)
		for _, reason := range contract.ShipperDropReasons {
			fmt.Fprintf(&b, "%s{channel=\"System\",reason=%q} 0\n", contract.ShipperEventsDropped, reason)
		}
		fmt.Fprintf(&b, "# TYPE %s counter\n%s{status=\"429\"} 0\n", contract.ShipperPushErrors, contract.ShipperPushErrors)
	}
	b.WriteString("# HELP windows_exporter_build_info A metric with a constant '1' value labeled by version, revision, branch, goversion from which windows_exporter was built, and the goos and goarch for the build.\n")
	b.WriteString("# TYPE windows_exporter_build_info gauge\n")
	b.WriteString(`windows_exporter_build_info{branch="HEAD",goarch="amd64",goos="windows",goversion="go1.25.1",revision="0c5b2a5",tags="unknown",version="0.31.8"} 1` + "\n")
	return b.String()
}

// container is a running container: namespace/pod/container, whether it
// is a HostProcess container and whether it has a memory limit.
type container struct {
	name                 string
	hostProcess, limited bool
}

// runningOn is every running container on the given nodes.
func runningOn(o objects, nodes []string) []container {
	var out []container
	for _, p := range o.Pods {
		if !slices.Contains(nodes, p.Spec.NodeName) || p.Status.Phase != "Running" {
			continue
		}
		for _, st := range p.Status.ContainerStatuses {
			if st.State.Running == nil {
				continue
			}
			limited := false
			for _, c := range p.Spec.Containers {
				_, has := c.Resources.Limits["memory"]
				limited = limited || (c.Name == st.Name && has)
			}
			out = append(out, container{p.Metadata.Namespace + "/" + p.Metadata.Name + "/" + st.Name, p.Spec.SecurityContext.WindowsOptions.HostProcess, limited})
		}
	}
	return out
}

// named is the sorted names of the containers keep keeps.
func named(cs []container, keep func(container) bool) []string {
	var out []string
	for _, c := range cs {
		if keep(c) {
			out = append(out, c.name)
		}
	}
	slices.Sort(out)
	return out
}
