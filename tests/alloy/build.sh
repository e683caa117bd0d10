#!/usr/bin/env bash
# Builds tests/alloy/harness inside a scratch copy of Alloy's module, from the
# Go module proxy alone, and writes the binary to $1. Alloy's packages are
# internal, so the harness must sit in its tree; Alloy's go.mod asks for a
# few versions the proxy refuses, pinned here to the nearest served ones.
# What and why: tests/alloy/README.md. Cold: minutes; warm (Go's build cache):
# seconds.
set -euo pipefail
out=$(realpath -m "$1")
version=$2
here=$(cd "$(dirname "$0")" && pwd)
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off

. "$here/../../scripts/module-copy.sh"
module_copy github.com/grafana/alloy "$version"

# The module zip leaves out the nested ./syntax module; the required
# release of it is served.
go mod edit -dropreplace github.com/grafana/alloy/syntax
# Where the version Alloy's go.mod asks for is refused by the proxy (403),
# the nearest served release is pinned instead; a served one is kept.
for pin in \
	github.com/prometheus/common@v0.68.0 \
	github.com/open-telemetry/opentelemetry-collector-contrib/pkg/stanza@v0.149.0 \
	github.com/open-telemetry/opentelemetry-collector-contrib/processor/k8sattributesprocessor@v0.149.0 \
	github.com/open-telemetry/opentelemetry-collector-contrib/internal/k8sconfig@v0.149.0 \
	go.opentelemetry.io/collector/scraper@v0.149.0 \
	go.opentelemetry.io/collector/scraper/scraperhelper@v0.149.0; do
	mod=${pin%@*}
	want=$(awk -v m="$mod" '$1 == m { print $2 }' go.mod)
	if [ -n "$want" ] && go mod download "$mod@$want" 2>/dev/null; then
		continue
	fi
	go mod edit -replace "$mod=$pin"
done
# The pyroscope debuginfo uploader needs an ebpf-profiler fork the proxy
# refuses; the runtime imports its package, so Alloy's own stub is selected.
debuginfo=internal/component/pyroscope/write/debuginfo
sed -i '1s|^//go:build .*|//go:build ignore|' "$debuginfo/upload.go"
sed -i '1s|^//go:build .*|//go:build !ignore|' "$debuginfo/stub.go"

# The harness carries `//go:build ignore` so that winobs's own go commands
# (build, vet, mod tidy) pass it by; here it is a program of Alloy's module.
mkdir -p internal/cmd/alloyharness
sed '1{/^\/\/go:build ignore$/d}' "$here/harness/main.go" > internal/cmd/alloyharness/main.go
go build -trimpath -o "$out" ./internal/cmd/alloyharness
