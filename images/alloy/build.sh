#!/usr/bin/env bash
# Builds and pushes the Alloy HostProcess image that winobs's default config
# names (versions.json: alloy, alloyImage), or IMAGE=registry/name:tag.
# Requires gh (GitHub CLI), sha256sum, unzip and docker buildx.
#   images/alloy/build.sh                   # build and push versions.json's alloyImage
#   IMAGE=registry.example/alloy:v1 images/alloy/build.sh
# Then pin it by digest in your config: alloy.image: registry/name@sha256:...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version() { sed -n "s/^ *\"$1\": *\"\([^\"]*\)\".*/\1/p" "$here/../../versions.json"; }
ALLOY=$(version alloy)
IMAGE=${IMAGE:-$(version alloyImage)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
gh release download "$ALLOY" -R grafana/alloy -p 'alloy-windows-amd64.exe.zip' -p SHA256SUMS
grep ' alloy-windows-amd64.exe.zip$' SHA256SUMS | sha256sum -c -
unzip -q alloy-windows-amd64.exe.zip
cp "$here/Dockerfile" .
docker buildx build --platform windows/amd64 -t "$IMAGE" --push .
docker buildx imagetools inspect "$IMAGE" --format '{{json .Manifest}}' | grep -o '"digest":"sha256:[0-9a-f]*"' | head -1
