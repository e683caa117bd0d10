#!/bin/sh
# busy.sh N COMMAND...: runs COMMAND while N other processes each keep a core
# busy, then stops them. make test-loaded uses it to prove that no test's
# verdict depends on the machine's speed or load (a user's machine is busy).
set -u
n=$1
shift
pids=""
i=0
while [ "$i" -lt "$n" ]; do
	sh -c 'while :; do :; done' &
	pids="$pids $!"
	i=$((i + 1))
done
trap 'kill $pids 2>/dev/null' EXIT INT TERM
uptime
"$@"

