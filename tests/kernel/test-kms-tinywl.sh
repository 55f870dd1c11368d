#!/bin/bash
# Run in the guest: tinywl on wlatomic's KMS driver (vkms) with the pattern
# client. The writeback capture must show the client's quadrants where the
# window was placed, the hardware cursor's arrow and the background; the
# present intervals come from the kernel's page-flip events; at exit no
# buffer lock and no DRM framebuffer is left.
# Usage: test-kms-tinywl.sh TINYWL_MEASURED PATTERN_CLIENT CHECK_CAPTURE
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
TINYWL=$1 CLIENT=$2 CHECK=$3
setup
[ -e /dev/dri/card0 ] || skip "no /dev/dri/card0: run through run-guest.sh"
# Everything is several times slower under TCG.
TINYWL_TIMEOUT=150
export WLA_DRIVER=kms WLR_RENDERER=pixman WLA_CONTROL=off

BACKGROUND=$(tinywl_background "$TINYWL")

# 1. Pixels, through the writeback connector.
run_tinywl "$TINYWL" -s "$(shell_quote "$CLIENT") --frames 2000" \
	--window-pos 100,200 --cursor 700,500 \
	--capture "$TEST_DIR/out.png" --capture-after 40
expect_status 0
# 1024x768 is vkms' preferred mode (the VDC's default is 1920x1080).
grep -q '^tinywl: captured 1024x768 ' "$TEST_DIR/stdout" || fail "no 1024x768 capture"
"$CHECK" "$TEST_DIR/out.png" --size 1024x768 --background "$BACKGROUND" \
	--window 100,200,256,256 --cursor 700,500 ||
	fail "the writeback capture does not show what tinywl composed"

# 2. Frames from page-flip events, and nothing left at exit.
run_tinywl "$TINYWL" -s "$(shell_quote "$CLIENT") --frames 2000" --exit-after-frames 120
expect_status 0
stats_fields Virtual-1 frames_presented refused seq_errors interval_min_us interval_mean_us \
	early_presents unmatched_presents
presented=$frames_presented interval_min=$interval_min_us interval_mean=$interval_mean_us
early=$early_presents unmatched=$unmatched_presents
echo "presented=$presented refused=$refused seq_errors=$seq_errors" \
	"interval_min=$interval_min interval_mean=$interval_mean early=$early"
[ "$presented" -ge 120 ] || fail "only $presented frames presented"
[ "$refused" -eq 0 ] || fail "$refused commits refused"
[ "$seq_errors" -eq 0 ] || fail "$seq_errors sequence errors"
[ "$unmatched" -eq 0 ] || fail "$unmatched presents naming no commit"
# vkms runs 1024x768 at 60.004 Hz: 16665.6 us a vblank. No two frames
# closer than one vblank (2% for the guest's timer), none faster on average.
awk -v m="$interval_min" -v a="$interval_mean" \
	'BEGIN { exit !(m >= 16332 && a >= 16332) }' ||
	fail "present intervals shorter than a vblank: min $interval_min mean $interval_mean"
grep -q '^tinywl: buffer_locks=0$' "$TEST_DIR/stdout" || fail "buffer locks left at exit"
if grep -q 'DRM fbs still there' "$TEST_DIR/stderr"; then
	fail "DRM framebuffers left at exit"
fi
echo "PASS"
