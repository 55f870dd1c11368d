#!/usr/bin/env bash
# Meta-test of run-guest.sh: a guest whose command never ends is killed at
# the timeout and reported as a failure (not 0, not 77) with its console.
# usage: test-timeout.sh RUN-GUEST
set -euo pipefail
runner=$1
# Boot takes 6-10 s under TCG, but has taken over 30 s on a busy host: the
# limit leaves room for a slow boot, so that the hang itself is tested.
limit=90

"$runner" --check || exit $?

out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
"$runner" --timeout "$limit" --no-vkms -- bash -c 'echo hanging-on-purpose; exec sleep infinity' \
	>"$out" 2>&1 || status=$?
cat "$out"

fail() {
	echo "FAIL: $*"
	exit 1
}
[ "$status" -ne 0 ] || fail "run-guest.sh reported a hung guest as a success"
[ "$status" -ne 77 ] || fail "run-guest.sh reported a hung guest as skipped"
grep -q '^guest: booted in ' "$out" || fail "the guest did not boot, so no hang was tested"
grep -q "^guest: timed out after $limit s (the command was still running)" "$out" ||
	fail "no timeout report"
grep -q '^guest: last [0-9]* lines of the console' "$out" || fail "no console tail"
grep -q '^  | hanging-on-purpose' "$out" || fail "the console tail lacks the command's output"

# The runner keeps a failed guest's job for its log; this failure was wanted.
job=$(sed -n 's/^guest: last .* (full log: \(.*\)\/console.log):$/\1/p' "$out")
case $job in
*/job.*) rm -rf "$job" ;;
esac
echo "ok: the hung guest failed with status $status and showed its console"
