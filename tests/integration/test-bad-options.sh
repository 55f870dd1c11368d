#!/bin/bash
# A bad option or value makes tinywl, and tinywl-measured (the test fixture)
# for its own options, exit with status 2 after one error line, before it
# creates anything; -h lists the options of each. What only tests need
# (--cursor, --window-pos, --input-script, --no-planes) is the fixture's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TINYWL=$(realpath "$1") MEASURED=$(realpath "$2")
setup

# expect_usage_error BINARY ARGS...
expect_usage_error() {
	local binary=$1
	shift
	run_tinywl "$binary" "$@"
	expect_status 2
	lines=$(grep -c . "$TEST_DIR/stderr" || true)
	[ "$lines" -eq 1 ] || fail "'$*': expected one error line, got $lines"
	[ ! -e "$XDG_RUNTIME_DIR/wayland-0" ] || fail "'$*': a Wayland socket was made"
}

for args in "--no-such-option" "--cursor 10,10" "--window-pos 5,5" "--no-planes" \
		"--input-script /dev/null" "-s" "stray-argument" \
		"--mode 1920x1080" "--capture /tmp/x.png" "--stall-ms 5"; do
	# shellcheck disable=SC2086 # each entry is a list of arguments
	expect_usage_error "$TINYWL" $args
done
# What only the measuring build takes, and its own checks.
for args in "--backend drm" "--capture-after -1" "--exit-after-frames 0" \
		"--exit-after-frames 5x" "--mode 1920" "--mode 1920x1080@0" \
		"--mode 0x1080" "--mode 1920x1080@60.1234" "--mode 1920x1080@" \
		"--backend auto --deadline" "--backend auto --capture /tmp/x.png" \
		"--stall-every 10" "--stall-ms 20000 --stall-every 2" "--churn-ms 5" \
		"--exit-after-frames=0" "--mode=1920" "--capture-after=x" \
		"-s" "--cursor 10" "--cursor 10,x" "--cursor 9999999999,1" "--window-pos ,5" \
		"--window-pos 5,5,5" "--window-pos" "--input-script" "stray-argument"; do
	# shellcheck disable=SC2086
	expect_usage_error "$MEASURED" $args
done

run_tinywl "$TINYWL" -h
expect_status 0
for option in --startup --deadline --verbose; do
	grep -q -- "$option" "$TEST_DIR/stdout" || fail "tinywl -h does not list $option"
done
for option in --cursor --window-pos --input-script --no-planes; do
	! grep -q -- "$option" "$TEST_DIR/stdout" || fail "tinywl -h lists the fixture's $option"
done
run_tinywl "$MEASURED" -h
expect_status 0
for option in --capture-after --mode --exit-after-frames --stall-every --churn-ms --deadline \
		--cursor --window-pos --input-script --no-planes; do
	grep -q -- "$option" "$TEST_DIR/stdout" || fail "tinywl-measured -h does not list $option"
done
echo "PASS"
