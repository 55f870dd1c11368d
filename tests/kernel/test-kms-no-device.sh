#!/bin/bash
# On a machine without a DRM card (the host of the kernel tier), tinywl on
# the KMS driver fails with one clear error naming what is missing, as it
# does for a drm-device path that is no KMS device; no crash, status 1.
# Usage: test-kms-no-device.sh TINYWL
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
TINYWL=$1
setup
export WLA_DRIVER=kms
if ! compgen -G '/dev/dri/card*' >/dev/null; then
	run_tinywl "$TINYWL"
	expect_status 1
	grep -q 'session: no DRM device: /dev/dri has no card' "$TEST_DIR/stderr" ||
		fail "no error saying there is no DRM device"
else
	echo "this machine has a DRM card: only the bad-path case runs"
fi
WLA_DRM_DEVICE=/dev/null run_tinywl "$TINYWL"
expect_status 1
grep -q 'session: drm-device /dev/null: not a KMS device' "$TEST_DIR/stderr" ||
	fail "no error saying /dev/null is not a KMS device"
WLA_DRM_DEVICE=/dev/dri/card99 run_tinywl "$TINYWL"
expect_status 1
grep -q 'session: drm-device /dev/dri/card99: cannot open it: No such file or directory' \
	"$TEST_DIR/stderr" || fail "no error naming the missing card"
echo "PASS"
