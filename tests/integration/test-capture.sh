#!/bin/bash
# tinywl on the wlatomic backend shows a client's pixels and the hardware
# cursor: a capture of the display controller's scanout must show the pattern
# client's quadrants exactly where the window was placed, the arrow in the
# cursor plane, and tinywl's background everywhere else.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TINYWL=$(realpath "$1") CLIENT=$(realpath "$2") CHECK=$(realpath "$3")
setup

BACKGROUND=$(tinywl_background "$TINYWL")

run_tinywl "$TINYWL" -s "$(shell_quote "$CLIENT") --frames 200" \
	--window-pos 100,200 --cursor 800,600 \
	--capture "$TEST_DIR/out.png" --capture-after 60
expect_status 0
[ -s "$TEST_DIR/out.png" ] || fail "no capture written"
grep -q '^tinywl: captured 1920x1080 ' "$TEST_DIR/stdout" || fail "no capture line on stdout"

"$CHECK" "$TEST_DIR/out.png" --size 1920x1080 --background "$BACKGROUND" \
	--window 100,200,256,256 --cursor 800,600 || {
	if [ -n "${WLA_KEEP_CAPTURE:-}" ]; then
		cp "$TEST_DIR/out.png" "$WLA_KEEP_CAPTURE"
	fi
	fail "capture does not show what tinywl composed"
}
echo "PASS"
