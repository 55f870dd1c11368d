#!/bin/bash
# Run in the guest: a card without atomic modesetting (the cap refused at
# the libdrm boundary by no-atomic-shim.so, the card itself untouched):
# tinywl on the KMS driver exits with one clear error naming the card and
# the refused cap, and no crash. Usage: test-kms-no-atomic.sh TINYWL SHIM
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
TINYWL=$1 SHIM=$2
setup
[ -e /dev/dri/card0 ] || skip "no /dev/dri/card0: run through run-guest.sh"
TINYWL_TIMEOUT=60
export WLA_DRIVER=kms WLR_RENDERER=pixman WLA_CONTROL=off
# ASan must come first in a sanitized build: preload its runtime before the shim.
asan=$(ldd "$TINYWL" | awk '/libasan/ { print $3 }')
LD_PRELOAD="${asan:+$asan:}$SHIM" run_tinywl "$TINYWL"
expect_status 1
grep -q 'session: no usable DRM card in /dev/dri (the last one, /dev/dri/card0: no atomic modesetting (DRM_CLIENT_CAP_ATOMIC: Operation not supported))' \
	"$TEST_DIR/stderr" || fail "no error naming the card and the missing atomic support"
LD_PRELOAD="${asan:+$asan:}$SHIM" WLA_DRM_DEVICE=/dev/dri/card0 run_tinywl "$TINYWL"
expect_status 1
grep -q 'session: drm-device /dev/dri/card0: no atomic modesetting' "$TEST_DIR/stderr" ||
	fail "no error naming the configured card"
echo "PASS"
