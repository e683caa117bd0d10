#!/usr/bin/env bash
# Builds a real Loki from the Go module proxy alone and writes the binary to
# $1: the rule tests of tests/loki run our Loki rules on it. Loki is AGPL:
# it is built here as a separate program, in a scratch copy of its own
# module (so its replace directives apply), and run as a test process; none
# of it is a dependency of winobs or linked into anything winobs ships.
# The module zip leaves out the nested ./pkg/push module, whose one served
# version is the one Loki's go.mod requires: that replace is dropped.
# Flags as Loki's Makefile. Cold: about 6 minutes on 2 cores (10 CPU-minutes,
# ~1.9 GB of modules); warm (Go's build cache): seconds.
set -euo pipefail
out=$(realpath -m "$1")
version=$2
here=$(cd "$(dirname "$0")" && pwd)
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off

. "$here/../../scripts/module-copy.sh"
module_copy github.com/grafana/loki/v3 "$version"
go mod edit -dropreplace github.com/grafana/loki/pkg/push
build=github.com/grafana/loki/v3/pkg/util/build
go build -trimpath -tags netgo -ldflags "-s -w -X $build.Version=${version#v} -X $build.Branch=HEAD" -o "$out" ./cmd/loki
