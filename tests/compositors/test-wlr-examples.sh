#!/bin/bash
# wlroots 0.15's own example compositors (Debian's libwlroots-examples,
# unmodified) on wlatomic through the preload module, each against
# wlroots' headless backend in the same run. They set a mode and commit
# without enabling first, as compositors written against headless do: the
# VDC's outputs must come lit, as headless' do, or wlroots refuses the
# commit ("Tried to modeset a disabled output") and the screen stays dark.
# Frames are counted on both backends by the commit-count module, which
# wraps wlr_output_commit.
# Usage: test-wlr-examples.sh EXAMPLE PRELOAD COMMIT_COUNT WLATOMIC_CTL PNG_INFO
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
EXAMPLE=$1 PRELOAD=$(realpath "$2") COUNTER=$(realpath "$3") CTL=$(realpath "$4")
PNGINFO=$(realpath "$5")
setup
BIN=/usr/lib/wlroots/$EXAMPLE
[ -x "$BIN" ] || skip "$BIN is not installed (Debian's libwlroots-examples)"
# The module before the sanitizer's runtime, in an uninstrumented program.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0:detect_leaks=0"
preload="$COUNTER:$PRELOAD"
if [ "${WLA_TEST_SANITIZED:-0}" = 1 ]; then
	preload="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so):$preload"
fi

# Frames each run must show: rotation draws turned textures with pixman,
# a few frames a second; the others draw a frame per vblank.
FRAMES=30
[ "$EXAMPLE" = rotation ] && FRAMES=3

# count FIELD: FIELD of the first output's line in the commit-count file.
count() {
	head -n 1 "$TEST_DIR/count" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# run_on BACKEND: start the example on BACKEND (wlroots' headless output is
# 1280x720, the VDC's is configured alike) and wait for $FRAMES frames it
# committed; leaves it running as $PID.
run_on() {
	rm -f "$TEST_DIR/count"
	START_US=$(_wla_now_us)
	env LD_PRELOAD="$preload" WLA_COMMIT_COUNT="$TEST_DIR/count" WLR_BACKENDS="$1" \
		WLR_RENDERER=pixman WLA_OUTPUTS=1280x720@60 WLA_CONTROL="$TEST_DIR/control" \
		WLA_VIRTUAL_INPUT=off timeout -k 5 "$(scaled 60)" "$BIN" \
		>"$TEST_DIR/$1.log" 2>&1 &
	PID=$!
	wait_until 30 '[ "$(count buffers)" -ge "$FRAMES" ] 2>/dev/null ||
		! kill -0 "$PID" 2>/dev/null' || true
	ELAPSED_MS=$((($(_wla_now_us) - START_US) / 1000))
	echo "$EXAMPLE on $1: $(cat "$TEST_DIR/count" 2>/dev/null || echo 'no commit') after ${ELAPSED_MS} ms"
	if ! kill -0 "$PID" 2>/dev/null; then
		tail -n 20 "$TEST_DIR/$1.log" >&2
		fail "$EXAMPLE exited on $1"
	fi
	if [ "$(count buffers)" -lt "$FRAMES" ] 2>/dev/null || [ -z "$(count buffers)" ]; then
		grep -E '\[ERROR\]' "$TEST_DIR/$1.log" | head -n 10 >&2 || true
		fail "$EXAMPLE on $1: fewer than $FRAMES frames committed"
	fi
	[ "$(count refused)" = 0 ] || fail "$EXAMPLE on $1: $(count refused) commits refused"
	[ "$(count enabled)" = 1 ] || fail "$EXAMPLE on $1: the output is not enabled"
}

stop() {
	kill "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
}

run_on headless
stop
headless_ms=$ELAPSED_MS

run_on wlatomic
# What wlroots and wlatomic said: no refused test or commit, no error.
if grep -E 'Tried to modeset a disabled output|Basic output test failed|\[ERROR\]' \
		"$TEST_DIR/wlatomic.log" | grep -v 'drmGetDevices2'; then
	fail "error lines on wlatomic"
fi
grep -q 'lit at start on crtc-0' "$TEST_DIR/wlatomic.log" ||
	fail "the VDC's output did not come lit"
# The frames reached the screen: presented (the last one committed may
# still wait for its vblank), and the capture shows the example's picture
# (each clears to a grey or colour, never black).
presented_frames() {
	"$CTL" -s "$TEST_DIR/control" -t "$(scaled 30)" list |
		sed -n 's/^output Virtual-1 .*frames_presented=\([0-9]*\).*/\1/p'
}
wait_until 10 '[ "$(presented_frames)" -ge "$FRAMES" ] 2>/dev/null' || true
presented=$(presented_frames)
[ "${presented:-0}" -ge "$FRAMES" ] || fail "Virtual-1 presented ${presented:-0} frames"
"$CTL" -s "$TEST_DIR/control" -t "$(scaled 30)" capture Virtual-1 "$TEST_DIR/screen.png" >/dev/null ||
	fail "no capture of Virtual-1"
pixel=$("$PNGINFO" --pixel 640,360 "$TEST_DIR/screen.png")
[ "$pixel" != 000000 ] || fail "the screen is black at its centre"
stop
echo "$EXAMPLE: $FRAMES frames in $headless_ms ms on headless, $ELAPSED_MS ms on" \
	"wlatomic; $presented presented, the centre $pixel"
