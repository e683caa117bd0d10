#!/usr/bin/env bash
# Builds the cluster in a box's programs from the Go module proxy alone into
# directory $1: kube-apiserver, kube-controller-manager, kube-scheduler and
# kubectl from k8s.io/kubernetes $2, etcd from go.etcd.io/etcd/server/v3 $3,
# kwok from sigs.k8s.io/kwok $4. k8s.io/kubernetes is a module that replaces
# its staging modules with directories the module zip does not carry, so the
# build uses a scratch module with its go.mod, each staging module replaced
# by its published release (v0.X.Y for v1.X.Y), as Kubernetes publishes them.
# Cold: about 25 CPU-minutes; warm (Go's build cache): seconds.
set -euo pipefail
out=$(realpath -m "$1")
k8s=$2 etcd=$3 kwok=$4
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
mkdir -p "$out"

scratch=$(mktemp -d)
trap 'chmod -R u+w "$scratch"; rm -rf "$scratch"' EXIT

# Kubernetes: its go.mod, staging replaced by published releases.
info=$(go mod download -json "k8s.io/kubernetes@$k8s")
gomod=$(printf '%s\n' "$info" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
mkdir "$scratch/k8s"
sed -e 's|^module .*|module winobs.local/clusterbox|' \
	-e "s|=> \./staging/src/\([^ ]*\)|=> \1 v0.${k8s#v1.}|" \
	-e "0,/^require (/s||require (\n\tk8s.io/kubernetes $k8s|" "$gomod" > "$scratch/k8s/go.mod"
cd "$scratch/k8s"
for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
	go build -trimpath -o "$out/$c" "k8s.io/kubernetes/cmd/$c"
done

# etcd: the server module's main, as etcd's own main.go calls it.
mkdir "$scratch/etcd" && cd "$scratch/etcd"
cat > main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
go mod init winobs.local/etcd >/dev/null 2>&1
go get "go.etcd.io/etcd/server/v3@$etcd" >/dev/null 2>&1
go build -trimpath -o "$out/etcd" .

GOBIN="$out" go install -trimpath "sigs.k8s.io/kwok/cmd/kwok@$kwok"
# kwok's stages (what its fake kubelets do) ship as YAML in its module: nodes
# initialised and kept alive with leases, pods made ready (an IP from its
# --cidr, or the node's for hostNetwork), completed and deleted.
kdir=$(go mod download -json "sigs.k8s.io/kwok@$kwok" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
mkdir -p "$out/stages"
cp "$kdir"/kustomize/stage/node/fast/node-initialize.yaml \
	"$kdir"/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
	"$kdir"/kustomize/stage/pod/fast/pod-ready.yaml \
	"$kdir"/kustomize/stage/pod/fast/pod-complete.yaml \
	"$kdir"/kustomize/stage/pod/fast/pod-delete.yaml "$out/stages/"
chmod u+w "$out"/stages/*
