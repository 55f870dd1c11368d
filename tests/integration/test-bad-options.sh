#!/bin/bash
# A bad option or value makes tinywl exit with status 2 after one error line,
# before it creates anything.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TINYWL=$(realpath "$1")
setup

for args in "--no-such-option" "--backend drm" "--cursor 10" "--cursor 10,x" \
		"--window-pos ,5" "--capture-after -1" "--exit-after-frames 0" \
		"--exit-after-frames 5x" "--mode 1920" "--mode 1920x1080@0" \
		"--mode 0x1080" "--mode 1920x1080@60.1234" "--mode 1920x1080@" \
		"--backend auto --deadline" "-s" "stray-argument"; do
	# shellcheck disable=SC2086 # each entry is a list of arguments
	run_tinywl "$TINYWL" $args
	expect_status 2
	lines=$(grep -c . "$TEST_DIR/stderr" || true)
	[ "$lines" -eq 1 ] || fail "'$args': expected one error line, got $lines"
done

run_tinywl "$TINYWL" -h
expect_status 0
for option in --capture-after --mode --deadline; do
	grep -q -- "$option" "$TEST_DIR/stdout" || fail "-h does not list $option"
done
echo "PASS"
