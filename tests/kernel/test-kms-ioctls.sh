#!/bin/bash
# Run in the guest on an emulated card: the DRM ioctls a frame costs on
# wlatomic's KMS driver against wlroots' own DRM backend in the same guest,
# the same fixture and client (strace, every thread). Counted as the
# difference between a run of FRAMES and one of 3 x FRAMES frames, so that
# what a start costs once (enumeration, the first imports) drops out.
# wlatomic must cost no more a frame than wlroots (buffers are imported
# once each and kept, a flip that changes only framebuffers sends no
# TEST_ONLY, vblanks are counted from the page-flip events).
# Usage: test-kms-ioctls.sh TINYWL_MEASURED PATTERN_CLIENT FRAMES
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
TINYWL=$1 CLIENT=$2 FRAMES=$3
setup
[ -e /dev/dri/card0 ] || skip "no /dev/dri/card0: run through run-guest.sh --card"
command -v strace >/dev/null || skip "no strace (package strace)"
TINYWL_TIMEOUT=240
export WLR_RENDERER=pixman WLA_CONTROL=off
# LeakSanitizer cannot run under ptrace (strace): leaks are the other tests'
# to find; the rest of the sanitizers stay.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

# count BACKEND FRAMES: DRM ioctls of one run into $count, frames in $frames.
count() {
	local backend=$1 n=$2
	local -a args=()
	if [ "$backend" = wlroots ]; then
		args=(--backend auto)
	fi
	run_tinywl strace -f -qq -e trace=ioctl -o "$TEST_DIR/trace" \
		env WLA_DRIVER=kms WLR_BACKENDS=drm LIBSEAT_BACKEND=builtin \
		"$TINYWL" "${args[@]}" -s "$(shell_quote "$CLIENT") --frames 1000000" \
		--exit-after-frames "$n"
	expect_status 0
	frames=$(sed -n 's/^tinywl: stats .* frames_presented=\([0-9]*\).*/\1/p' \
		"$TEST_DIR/stdout" | head -n 1)
	[ -n "$frames" ] || fail "$backend: no stats line"
	count=$(grep -c 'DRM_IOCTL' "$TEST_DIR/trace" || true)
	echo "$backend: $count DRM ioctls for $frames frames"
	grep -o 'DRM_IOCTL_[A-Z0-9_]*' "$TEST_DIR/trace" | sort | uniq -c | sort -rn | head -n 8
}

declare -A per_frame
for backend in wlatomic wlroots; do
	count "$backend" "$FRAMES"
	c1=$count f1=$frames
	count "$backend" $((3 * FRAMES))
	c2=$count f2=$frames
	[ "$f2" -gt "$f1" ] || fail "$backend: $f2 frames after $f1"
	per_frame[$backend]=$(awk -v a="$c1" -v b="$c2" -v fa="$f1" -v fb="$f2" \
		'BEGIN { printf "%.2f", (b - a) / (fb - fa) }')
	echo "$backend: ${per_frame[$backend]} DRM ioctls a frame"
done
awk -v w="${per_frame[wlatomic]}" -v r="${per_frame[wlroots]}" 'BEGIN { exit !(w <= r) }' ||
	fail "wlatomic makes ${per_frame[wlatomic]} DRM ioctls a frame, wlroots ${per_frame[wlroots]}"
echo "PASS"
