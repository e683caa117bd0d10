# Sourced by the build scripts of tests/alloy and tests/loki: module_copy
# MODULE VERSION downloads a module from the Go module proxy and makes a
# writable scratch copy of it the current directory (removed on exit), so
# the module builds as the main module, its own replace directives applied.
module_copy() {
	local info dir
	if ! info=$(go mod download -json "$1@$2"); then
		echo "$1 $2 cannot be downloaded from the Go module proxy:" >&2
		echo "$info" >&2
		exit 1
	fi
	dir=$(printf '%s\n' "$info" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	scratch=$(mktemp -d)
	trap 'chmod -R u+w "$scratch"; rm -rf "$scratch"' EXIT
	cp -r "$dir/." "$scratch/"
	chmod -R u+w "$scratch"
	cd "$scratch"
}
