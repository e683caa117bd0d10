#!/usr/bin/env bash
# Builds prometheus-operator $2 into directory $1 from the Go module proxy,
# with its CRDs beside it (crds/). The operator's go.mod replaces its two
# nested modules (pkg/apis/monitoring, pkg/client) with directories its
# module zip does not carry, so the build uses a scratch module with its
# go.mod, each replaced by a published release: apis at $2, the generated
# client at $3 (the newest the proxy serves; it compiles against the apis
# of $2). Cold: about 5 CPU-minutes; warm: seconds.
set -euo pipefail
out=$(realpath -m "$1")
op=$2 client=$3
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
mkdir -p "$out/crds"

scratch=$(mktemp -d)
trap 'chmod -R u+w "$scratch"; rm -rf "$scratch"' EXIT
mod=github.com/prometheus-operator/prometheus-operator
info=$(go mod download -json "$mod@$op")
gomod=$(printf '%s\n' "$info" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
dir=$(printf '%s\n' "$info" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
sed -e 's|^module .*|module winobs.local/operator|' \
	-e "s|=> \./pkg/apis/monitoring|=> $mod/pkg/apis/monitoring $op|" \
	-e "s|=> \./pkg/client|=> $mod/pkg/client $client|" \
	-e "0,/^require (/s||require (\n\t$mod $op|" "$gomod" > "$scratch/go.mod"
cd "$scratch"
go build -trimpath -o "$out/operator" "$mod/cmd/operator"
install -m 644 "$dir"/example/prometheus-operator-crd/*.yaml "$out/crds/"
