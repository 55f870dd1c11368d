#!/bin/bash
# For comparison, tinywl also runs on wlroots' own headless backend: the
# client's frames are presented, the stats line marks what only wlatomic can
# count as n/a, and --capture is refused because headless has no scanout to read.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TINYWL=$(realpath "$1") CLIENT=$(realpath "$2")
setup
export WLR_BACKENDS=headless WLR_RENDERER=pixman

run_tinywl "$TINYWL" --backend auto -s "$(shell_quote "$CLIENT") --frames 1000" \
	--exit-after-frames 30
expect_status 0
[ "$(stats_field HEADLESS-1 frames_presented)" = 30 ] || fail "expected 30 presented frames"
[ "$(stats_field HEADLESS-1 vblanks)" = n/a ] || fail "headless cannot count vblanks"
! grep -q '^tinywl: buffer_locks=' "$TEST_DIR/stdout" ||
	fail "buffer_locks printed for a backend that is not wlatomic"

run_tinywl "$TINYWL" --backend auto --capture "$TEST_DIR/out.png"
expect_status 2
grep -q -- '--capture needs --backend wla' "$TEST_DIR/stderr" || fail "no clear error for --capture"
[ ! -e "$TEST_DIR/out.png" ] || fail "a capture was written"
echo "PASS"
