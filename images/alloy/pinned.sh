#!/bin/sh
# Prints the SHA-256 pinned for Alloy release $1's alloy-windows-amd64.exe.zip
# (images/alloy/pins/$1.sha256, one `sha256sum` line), or fails saying how
# to record it. alloy.exe runs as SYSTEM on every Windows node: `make images`
# never builds it from a download that only the same release's SHA256SUMS
# vouches for. A pin is recorded once, by `make pin-alloy` on a machine that
# can reach GitHub, and reviewed like any change; a release asset replaced
# after that fails the build.
set -eu
version=${1:?usage: pinned.sh ALLOY_VERSION}
pin="$(dirname "$0")/pins/$version.sha256"
if [ ! -f "$pin" ]; then
	echo "images/alloy/pins/$version.sha256 is missing: alloy.exe of $version is not pinned." >&2
	echo "Record it once with network access: make pin-alloy (then review and commit the file)." >&2
	exit 2
fi
line=$(grep -v '^#' "$pin" | grep -v '^$' || true)
if [ "$(printf '%s\n' "$line" | wc -l)" -ne 1 ] || ! printf '%s\n' "$line" | grep -Eqx '[0-9a-f]{64}  alloy-windows-amd64\.exe\.zip'; then
	echo "$pin: want one line \"<64 lowercase hex>  alloy-windows-amd64.exe.zip\", got: $line" >&2
	exit 2
fi
printf '%s\n' "${line%% *}"
