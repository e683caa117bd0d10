// Package cluster is the cluster in a box: a real etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, with kwok standing in for the
// kubelets of Windows and Linux nodes, all on 127.0.0.1, built from Go
// modules by build.sh (make cluster-e2e). The bundle is applied as the
// README says, and what only a real control plane decides is asserted: where
// the DaemonSet controller and the scheduler put our pods, what Pod Security
// admits, and what an uninstall removes.
package cluster

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// patience bounds every wait on the control plane: generous, since the
// verdict is about what happens, never how fast.
const patience = 3 * time.Minute

// box is a running control plane.
type box struct {
	t          *testing.T
	bin, dir   string
	kubeconfig string
	apiPort    int
	pki        *pki
	exited     chan string // a program that stopped while the test ran
}

// TestClusterInABox applies the bundle as the README says to a control
// plane with two Windows nodes (one tainted as EKS's Windows pools often
// are) and a Linux node, upgrades it with docs/upgrade.md's prune,
// uninstalls it, then applies it to a namespace at Pod Security "baseline".
func TestClusterInABox(t *testing.T) {
	b := start(t, clusterBin(t))
	b.nodes()
	b.kubectl("apply", "--server-side", "-f", repo(t, "testdata/crds"))

	// The README's commands, with a config for this cluster: winobs's own
	// namespace, created by the render at Pod Security "privileged"; a
	// shared namespace holds an object of someone else's.
	b.kubectl("create", "namespace", "monitoring")
	b.kubectl("create", "configmap", "not-ours", "-n", "monitoring", "--from-literal=a=b")
	out := b.render("winobs", true)
	b.kubectl("apply", "-k", out)
	if got := b.kubectl("get", "namespace", "winobs", "-o", `jsonpath={.metadata.labels}`); !strings.Contains(got, `"pod-security.kubernetes.io/enforce":"privileged"`) {
		t.Errorf("the rendered namespace's labels: %s", got)
	}
	if got := b.kubectl("get", "namespace", "monitoring", "-o", `jsonpath={.metadata.labels}`); strings.Contains(got, "pod-security") {
		t.Errorf("the shared namespace was relabelled: %s", got)
	}
	// Something of the user's in winobs's namespace: a prune and an
	// uninstall leave it.
	b.kubectl("create", "configmap", "not-ours", "-n", "winobs", "--from-literal=a=b")

	// The exporter on every Windows node; one log agent per node: the
	// shipper where the node asks for it (winobs.io/log-agent=shipper),
	// Alloy elsewhere; nothing on Linux.
	want := map[string][]string{
		"winobs-windows-exporter": {"win-aks-1", "win-eks-1"},
		"winobs-alloy-windows":    {"win-aks-1"},
		"winobs-eventlog-shipper": {"win-eks-1"},
	}
	daemonSets := b.names("daemonsets", "winobs")
	if got := slices.Sorted(maps.Keys(want)); !slices.Equal(daemonSets, got) {
		t.Fatalf("DaemonSets %v, want %v", daemonSets, got)
	}
	for _, ds := range daemonSets {
		b.waitFor("DaemonSet "+ds+" running on "+strings.Join(want[ds], ", "), func() error {
			return b.onExactly("winobs", ds, want[ds])
		})
	}

	// Upgrade with docs/upgrade.md's prune: the exporter switched off goes,
	// with exactly its objects; a second apply changes nothing.
	before := b.ours()
	up := b.render("winobs", false)
	prune := b.pruneCommand(up)
	b.kubectl(prune...)
	after := b.ours()
	var gone []string
	for _, o := range before {
		if !slices.Contains(after, o) {
			gone = append(gone, o)
		}
	}
	if want := []string{"configmap/winobs-windows-exporter", "daemonset.apps/winobs-windows-exporter",
		"podmonitor.monitoring.coreos.com/winobs-windows-exporter"}; !slices.Equal(gone, want) {
		t.Errorf("the prune removed %v, want %v", gone, want)
	}
	b.kubectl("get", "configmap", "not-ours", "-n", "winobs")
	if again := b.kubectl(prune...); strings.Contains(again, "created") || strings.Contains(again, "configured") || strings.Contains(again, "pruned") {
		t.Errorf("a second apply changed something:\n%s", again)
	}

	// Uninstall as docs/upgrade.md writes it: nothing of ours stays but
	// the namespace, which holds the user's ConfigMap (issue 51: no
	// uninstall deletes a namespace, and so what else it holds); nothing
	// else goes.
	b.kubectl(b.uninstallCommand(up)...)
	b.waitFor("nothing of winobs left but its namespace", func() error {
		if left := strings.Join(b.ours(), " "); strings.TrimSpace(left) != "" {
			return fmt.Errorf("left: %s", left)
		}
		return nil
	})
	b.kubectl("get", "namespace", "winobs")
	b.kubectl("get", "configmap", "not-ours", "-n", "winobs")
	b.kubectl("get", "configmap", "not-ours", "-n", "monitoring")
	b.kubectl("delete", "namespace", "winobs", "--wait=true") // the user's step, once it holds nothing of theirs

	// Issue 51: kube-prometheus-stack released as prom-stack into
	// observability, a name gen cannot know. A config naming it (and
	// saying nothing of createNamespace) leaves it shared: install and
	// uninstall neither relabel it nor delete it or what else it holds.
	b.kubectl("create", "namespace", "observability")
	b.kubectl("create", "configmap", "prom-stack-grafana", "-n", "observability", "--from-literal=a=b")
	outO := b.renderConfig("observability", b.config("observability", true, "prom-stack"))
	if _, err := os.Stat(filepath.Join(outO, "namespace.yaml")); err == nil {
		t.Error("a Namespace was rendered for observability")
	}
	b.kubectl("apply", "-k", outO)
	if got := b.kubectl("get", "namespace", "observability", "-o", `jsonpath={.metadata.labels}`); strings.Contains(got, "pod-security") {
		t.Errorf("observability was relabelled: %s", got)
	}
	b.kubectl(b.uninstallCommand(outO)...)
	b.kubectl("get", "namespace", "observability")
	b.kubectl("get", "configmap", "prom-stack-grafana", "-n", "observability")

	// Pod Security: the same bundle in a namespace at baseline is refused,
	// with the message a user would see in the DaemonSet's events.
	outB := b.renderConfig("strict", "createNamespace: false\n"+b.config("strict", true, "kps"))
	b.kubectl("create", "namespace", "strict")
	b.kubectl("label", "namespace", "strict", "pod-security.kubernetes.io/enforce=baseline")
	b.kubectl("apply", "-k", outB)
	for _, ds := range b.names("daemonsets", "strict") {
		b.waitFor("DaemonSet "+ds+" refused by Pod Security", func() error {
			return b.refused("strict", ds)
		})
	}
}

// clusterBin is the directory build.sh filled; without it the test is
// skipped, unless make cluster-e2e runs it.
func clusterBin(t *testing.T) string {
	bin := os.Getenv("WINOBS_CLUSTER_BIN")
	if bin == "" {
		if os.Getenv("WINOBS_REQUIRE_CLUSTER") != "" {
			t.Fatal("WINOBS_CLUSTER_BIN is not set: run make cluster-e2e")
		}
		t.Skip("the cluster in a box runs with make cluster-e2e (WINOBS_CLUSTER_BIN)")
	}
	return bin
}

// start runs etcd, the API server, the controller manager, the scheduler
// and kwok; each stops with the test.
func start(t *testing.T, bin string) *box { return startShaped(t, bin, "10.96.0.0/16") }

// startShaped is start with the Service range a platform gives its
// clusters.
func startShaped(t *testing.T, bin, serviceCIDR string) *box {
	dir := t.TempDir()
	b := &box{t: t, bin: bin, dir: dir, exited: make(chan string, 8)}
	pki := newPKI(t, dir)
	b.pki = pki
	etcdClient, etcdPeer, api := freePort(t), freePort(t), freePort(t)
	b.apiPort = api
	b.run("etcd", "--name=box", "--data-dir="+filepath.Join(dir, "etcd"),
		fmt.Sprintf("--listen-client-urls=http://127.0.0.1:%d", etcdClient), fmt.Sprintf("--advertise-client-urls=http://127.0.0.1:%d", etcdClient),
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", etcdPeer), fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", etcdPeer),
		fmt.Sprintf("--initial-cluster=box=http://127.0.0.1:%d", etcdPeer), "--listen-metrics-urls=", "--log-level=warn")
	b.run("kube-apiserver", fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdClient),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", api),
		"--tls-cert-file="+pki.serverCert, "--tls-private-key-file="+pki.serverKey, "--client-ca-file="+pki.caCert,
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+pki.saKey,
		"--service-account-signing-key-file="+pki.saKey, "--service-cluster-ip-range="+serviceCIDR,
		"--authorization-mode=RBAC", "--enable-priority-and-fairness=false",
		// The kubernetes Service's endpoint may not be a loopback address.
		"--endpoint-reconciler-type=none",
		// As kubeadm, AKS and EKS run it: HostProcess pods need it.
		"--allow-privileged=true", "-v=0")
	b.kubeconfig = pki.kubeconfig(t, dir, api)
	b.waitFor("the API server ready", func() error {
		_, err := b.try("get", "--raw", "/readyz")
		return err
	})
	b.run("kube-controller-manager", "--kubeconfig="+b.kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1",
		"--secure-port=0", "--service-account-private-key-file="+pki.saKey, "--root-ca-file="+pki.caCert,
		"--use-service-account-credentials=false")
	b.run("kube-scheduler", "--kubeconfig="+b.kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0")
	stages := kwokStages(t, bin, dir)
	b.run("kwok", "--kubeconfig="+b.kubeconfig, "--config="+strings.Join(stages, ","), "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--cidr=127.1.0.0/16",
		"--node-ip=127.0.0.1", "--node-lease-duration-seconds=40", fmt.Sprintf("--server-address=127.0.0.1:%d", freePort(t)))
	return b
}

// kwokStages are kwok's stages as build.sh copied them, with one thing a
// kubelet on containerd reports and kwok's pod stage does not: each running
// container's containerID ("containerd://" and 64 hex digits, here the
// SHA-256 of the pod's UID and the container's name), which
// kube-state-metrics and windows_exporter both label container series with.
func kwokStages(t *testing.T, bin, dir string) []string {
	stages, _ := filepath.Glob(filepath.Join(bin, "stages", "*.yaml"))
	if len(stages) == 0 {
		t.Fatalf("no kwok stages in %s/stages: rebuild with make cluster-e2e", bin)
	}
	for i, path := range stages {
		if filepath.Base(path) != "pod-ready.yaml" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		const status = "      - image: {{ .image | Quote }}\n        name: {{ .name | Quote }}\n        ready: true\n"
		id := `{{ printf "containerd://%s" (sha256sum (printf "%s/%s" $.metadata.uid .name)) | Quote }}` // sprig's, as kwok's templates have it
		if !strings.Contains(string(data), status) {
			t.Fatalf("%s: kwok's container status changed shape; update kwokStages", path)
		}
		patched := strings.Replace(string(data), status, status+"        containerID: "+id+"\n", 1)
		stages[i] = filepath.Join(dir, "pod-ready.yaml")
		if err := os.WriteFile(stages[i], []byte(patched), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return stages
}

// nodes creates the Windows nodes as AKS and EKS label them (EKS's pool
// with the os=windows:NoSchedule taint many clusters add, and asking for the
// shipper instead of Alloy) and a Linux node.
func (b *box) nodes() {
	// kwok fills each node's conditions and leases and keeps what a kubelet
	// would have registered: addresses (one loopback address per node, so
	// each node's host-network pods, the exporter's, have their own) and
	// the OS image kube-state-metrics reports.
	node := func(name, os string, labels map[string]string, taints string) string {
		l := map[string]string{"kubernetes.io/os": os, "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "type": "kwok"}
		for k, v := range labels {
			l[k] = v
		}
		lj, _ := json.Marshal(l)
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q,"labels":%s,"annotations":{"kwok.x-k8s.io/node":"fake"}},
"spec":{"taints":[%s]},"status":{"allocatable":{"cpu":"8","memory":"32Gi","pods":"110"},"capacity":{"cpu":"8","memory":"32Gi","pods":"110"},
"addresses":[{"type":"InternalIP","address":%q},{"type":"Hostname","address":%q}],"nodeInfo":{"operatingSystem":%q,"osImage":%q,"kernelVersion":%q,"architecture":"amd64","machineID":%q,"systemUUID":%q,"bootID":"9f3c1a52-6b7d-4e21-8c0a-5d2e7f4b1a36",
"containerRuntimeVersion":"containerd://2.1.4","kubeletVersion":"v1.37.2","kubeProxyVersion":""}}}`,
			name, lj, taints, nodeIPs[name], name, os, osImages[name], kernels[name], name, name)
	}
	items := []string{
		node("win-aks-1", "windows", map[string]string{"kubernetes.azure.com/os-sku": "Windows2022", "node.kubernetes.io/windows-build": "10.0.20348"}, ""),
		node("win-eks-1", "windows", map[string]string{"eks.amazonaws.com/nodegroup": "windows", "node.kubernetes.io/windows-build": "10.0.26100",
			"winobs.io/log-agent": "shipper"},
			`{"key":"os","value":"windows","effect":"NoSchedule"}`),
		node("linux-1", "linux", nil, ""),
	}
	list := `{"apiVersion":"v1","kind":"List","items":[` + strings.Join(items, ",") + `]}`
	b.kubectlIn(list, "apply", "-f", "-")
	b.waitFor("kwok's nodes Ready, at their own addresses", func() error {
		out := b.kubectl("get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}@{.status.addresses[?(@.type=="InternalIP")].address} {end}`)
		for name, ip := range nodeIPs {
			if !strings.Contains(out, name+"=True@"+ip+" ") {
				return fmt.Errorf("nodes: %s", out)
			}
		}
		return nil
	})
}

// The box's nodes: their addresses and OS images.
var (
	nodeIPs  = map[string]string{"win-aks-1": "127.0.2.1", "win-eks-1": "127.0.2.2", "linux-1": "127.0.2.3"}
	kernels  = map[string]string{"win-aks-1": "10.0.20348.4052", "win-eks-1": "10.0.26100.4946", "linux-1": "6.12.48"}
	osImages = map[string]string{"win-aks-1": "Windows Server 2022 Datacenter", "win-eks-1": "Windows Server 2025 Datacenter", "linux-1": "Debian GNU/Linux 13 (trixie)"}
)

// render runs gen with a config for this cluster, into namespace ns, with
// or without the exporter, and returns the output directory (one per
// namespace: a re-render replaces it, as gen does).
func (b *box) render(ns string, exporter bool) string {
	return b.renderConfig(ns, b.config(ns, exporter, "kps"))
}

// config is a config for the box: the bundle in namespace ns, the
// exporter deployed or not, the rules labelled for the Prometheus of
// release, scrapes and the commit alert's hold short enough for a test.
func (b *box) config(ns string, exporter bool, release string) string {
	return fmt.Sprintf(`namespace: %s
cluster:
  name: box
prometheus:
  ruleLabels: {release: %s}
windowsExporter:
  deploy: %t
  scrapeInterval: 1s
  firewall:
    allowFrom: [127.0.0.1/32]
alerts:
  nodeCommit: {for: 5s}
apiServer:
  host: 127.0.0.1
  port: %d
loki:
  url: http://127.0.0.1:3100/loki/api/v1/push
shipper:
  deploy: true
`, ns, release, exporter, b.apiPort)
}

// renderConfig runs gen with this config (kept as <ns>.yaml) into the
// namespace's output directory.
func (b *box) renderConfig(ns, config string) string {
	cfg := filepath.Join(b.dir, ns+".yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		b.t.Fatal(err)
	}
	out := filepath.Join(b.dir, "out-"+ns)
	cmd := exec.Command("go", "run", "./cmd/gen", "--config", cfg, "--out", out)
	cmd.Dir = repo(b.t, ".")
	if o, err := cmd.CombinedOutput(); err != nil {
		b.t.Fatalf("gen: %v\n%s", err, o)
	}
	return out
}

// onExactly checks that the DaemonSet's pods run on exactly these nodes.
func (b *box) onExactly(ns, ds string, nodes []string) error {
	var pods struct {
		Items []struct {
			Metadata struct {
				OwnerReferences []struct{ Kind, Name string }
			}
			Spec   struct{ NodeName string }
			Status struct{ Phase string }
		}
	}
	if err := json.Unmarshal([]byte(b.kubectl("get", "pods", "-n", ns, "-o", "json")), &pods); err != nil {
		return err
	}
	var on []string
	for _, p := range pods.Items {
		if len(p.Metadata.OwnerReferences) == 0 || p.Metadata.OwnerReferences[0].Name != ds {
			continue
		}
		if p.Status.Phase != "Running" {
			return fmt.Errorf("a pod on %q is %s", p.Spec.NodeName, p.Status.Phase)
		}
		on = append(on, p.Spec.NodeName)
	}
	slices.Sort(on)
	if !slices.Equal(on, nodes) {
		return fmt.Errorf("running on %v, want %v", on, nodes)
	}
	return nil
}

// refused checks that the DaemonSet has no pod and its events say Pod
// Security refused them.
func (b *box) refused(ns, ds string) error {
	events := b.kubectl("get", "events", "-n", ns, "--field-selector", "involvedObject.name="+ds+",reason=FailedCreate", "-o", "jsonpath={.items[*].message}")
	if !strings.Contains(events, `violates PodSecurity "baseline:latest"`) {
		return fmt.Errorf("events: %q", events)
	}
	if n := b.kubectl("get", "daemonset", ds, "-n", ns, "-o", "jsonpath={.status.currentNumberScheduled}"); n != "0" {
		return fmt.Errorf("%s pods scheduled", n)
	}
	return nil
}

// ours is every object of winobs's kinds in the cluster that carries its
// label, sorted.
func (b *box) ours() []string {
	out := b.kubectl("get", "configmaps,secrets,services,serviceaccounts,daemonsets,clusterroles,clusterrolebindings,prometheusrules,podmonitors,servicemonitors",
		"-A", "-l", "app.kubernetes.io/part-of=winobs", "-o", "name")
	names := strings.Fields(out)
	slices.Sort(names)
	return names
}

// pruneCommand is docs/upgrade.md's prune command for the output directory
// out: the kubectl line of its "Upgrade and prune" block, run as written.
func (b *box) pruneCommand(out string) []string {
	return b.docCommand("## Upgrade and prune", "kubectl apply -k out", "apply", "-k", out)
}

// uninstallCommand is docs/upgrade.md's uninstall command for out.
func (b *box) uninstallCommand(out string) []string {
	return append(b.docCommand("## Uninstall", "kubectl delete -k out", "delete", "-k", out), "--wait=true")
}

// docCommand is the kubectl line of docs/upgrade.md's first sh block under
// heading that starts with prefix: head, then the line's words after the
// prefix (a backslash continues the line, single quotes group a word).
func (b *box) docCommand(heading, prefix string, head ...string) []string {
	doc, err := os.ReadFile(repo(b.t, "docs/upgrade.md"))
	if err != nil {
		b.t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), heading)
	_, block, _ := strings.Cut(section, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	_, line, ok := strings.Cut(block, prefix)
	if !ok {
		b.t.Fatalf("docs/upgrade.md's %q block has no %s:\n%s", heading, prefix, block)
	}
	line = strings.ReplaceAll(line, "\\\n", " ")
	line, _, _ = strings.Cut(line, "\n")
	var words []string
	for i, part := range strings.Split(line, "'") {
		if i%2 == 1 {
			words = append(words, part) // quoted: one word as it is
			continue
		}
		words = append(words, strings.Fields(part)...)
	}
	return append(head, words...)
}

func (b *box) names(kind, ns string) []string {
	return strings.Fields(b.kubectl("get", kind, "-n", ns, "-o", "jsonpath={.items[*].metadata.name}"))
}

func (b *box) kubectl(args ...string) string { return b.kubectlIn("", args...) }

func (b *box) kubectlIn(stdin string, args ...string) string {
	b.t.Helper()
	out, err := b.tryIn(stdin, args...)
	if err != nil {
		b.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (b *box) try(args ...string) (string, error) { return b.tryIn("", args...) }

func (b *box) tryIn(stdin string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(b.bin, "kubectl"), append([]string{"--kubeconfig", b.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String() + errOut.String(), err
	}
	return out.String(), nil
}

// waitFor polls check until it passes or patience runs out.
func (b *box) waitFor(what string, check func() error) {
	b.t.Helper()
	var err error
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if err = check(); err == nil {
			return
		}
		select {
		case name := <-b.exited:
			b.t.Fatalf("%s: %s exited\n%s", what, name, b.logs())
		default:
		}
	}
	b.t.Fatalf("%s: not within %v: %v\n%s", what, patience, err, b.logs())
}

// run starts one of the box's programs, logging to a file, stopped with the
// test.
func (b *box) run(name string, args ...string) { b.runPath(name, filepath.Join(b.bin, name), args...) }

// runPath is run for a program outside the box's directory.
func (b *box) runPath(name, path string, args ...string) {
	logf, err := os.Create(filepath.Join(b.dir, name+".log"))
	if err != nil {
		b.t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("%s: %v", name, err)
	}
	done := make(chan struct{})
	stopping := false
	go func() {
		cmd.Wait()
		if !stopping {
			b.exited <- name
		}
		close(done)
	}()
	b.t.Cleanup(func() {
		stopping = true
		cmd.Process.Kill()
		<-done
		logf.Close()
	})
}

// logs is the tail of every program's log and the cluster's workloads and
// events, for a failure.
func (b *box) logs() string {
	var s strings.Builder
	if state, err := b.try("get", "nodes,daemonsets,pods,events", "-A", "-o", "wide"); err == nil {
		fmt.Fprintf(&s, "--- cluster\n%s\n", state)
	}
	for _, n := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "prometheus-operator", "prometheus"} {
		data, _ := os.ReadFile(filepath.Join(b.dir, n+".log"))
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&s, "--- %s\n%s\n", n, data)
	}
	return s.String()
}

// pki is the box's certificates: a CA, the API server's serving pair, an
// admin client (system:masters) and the service account key.
type pki struct {
	caCert, serverCert, serverKey, saKey string
	adminCert, adminKey                  string
}

func newPKI(t *testing.T, dir string) *pki {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "box-ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caParsed, _ := x509.ParseCertificate(caDER)
	p := &pki{}
	write := func(name string, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p.caCert = write("ca.crt", "CERTIFICATE", caDER)
	leaf := func(name string, tmpl *x509.Certificate) (string, string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = big.NewInt(time.Now().UnixNano()), time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caParsed, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalECPrivateKey(key)
		return write(name+".crt", "CERTIFICATE", der), write(name+".key", "EC PRIVATE KEY", keyDER)
	}
	p.serverCert, p.serverKey = leaf("apiserver", &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}})
	p.adminCert, p.adminKey = leaf("admin", &x509.Certificate{Subject: pkix.Name{CommonName: "box-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	sa, _ := rsa.GenerateKey(rand.Reader, 2048)
	p.saKey = write("sa.key", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa))
	return p
}

// kubeconfig writes the admin's kubeconfig for the API server on port.
func (p *pki) kubeconfig(t *testing.T, dir string, port int) string {
	path := filepath.Join(dir, "admin.kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: box, cluster: {server: "https://127.0.0.1:%d", certificate-authority: %q}}]
users: [{name: admin, user: {client-certificate: %q, client-key: %q}}]
contexts: [{name: box, context: {cluster: box, user: admin}}]
current-context: box
`, port, p.caCert, p.adminCert, p.adminKey)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// repo is a path in the repository.
func repo(t *testing.T, rel string) string {
	p, err := filepath.Abs(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
