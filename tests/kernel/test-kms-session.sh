#!/bin/bash
# Run in the guest: the card is root's alone (devtmpfs makes card0 0600), so
# tinywl on the KMS driver, run as nobody, must have it opened through the
# seat: seatd runs as root for nobody, libseat hands the fd over. Without a
# seat the same run fails with one clear error naming the card.
# Usage: test-kms-session.sh TINYWL_MEASURED PATTERN_CLIENT
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
TINYWL=$1 CLIENT=$2
setup
[ -e /dev/dri/card0 ] || skip "no /dev/dri/card0: run through run-guest.sh"
command -v seatd >/dev/null || skip "no seatd (package seatd)"
[ "$(id -u)" -eq 0 ] || skip "needs root to start seatd and drop to nobody"
TINYWL_TIMEOUT=150
chmod 0600 /dev/dri/card0
chmod 0755 "$TEST_DIR"
chown 65534:65534 "$XDG_RUNTIME_DIR"
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" WLA_DRIVER=kms WLR_RENDERER=pixman \
		WLA_CONTROL=off "$@"
}

# 1. No seat: the card cannot be had, and says why.
STATUS=0
LIBSEAT_BACKEND=seatd SEATD_SOCK=/run/no-seatd.sock as_nobody \
	timeout -k 5 60 "$TINYWL" -s "$(shell_quote "$CLIENT") --frames 10" \
	--exit-after-frames 5 >"$TEST_DIR/stdout" 2>"$TEST_DIR/stderr" || STATUS=$?
cat "$TEST_DIR/stderr" | tail -n 5
[ "$STATUS" -ne 0 ] || fail "tinywl ran without access to the card"
grep -q 'session: no usable DRM card in /dev/dri (the last one, /dev/dri/card0: cannot open it (Permission denied) and no seat session could be had' \
	"$TEST_DIR/stderr" || fail "no clear error naming the card and why"

# 2. seatd for nobody: the seat opens the card.
seatd -u nobody -g nogroup -n 9 >"$TEST_DIR/seatd.log" 2>&1 9>"$TEST_DIR/seatd.ready" &
seatd_pid=$!
trap 'kill $seatd_pid 2>/dev/null || true; rm -rf "$TEST_DIR"' EXIT
poll 100 '[ -S /run/seatd.sock ]' || { cat "$TEST_DIR/seatd.log"; fail "seatd did not start"; }
STATUS=0
LIBSEAT_BACKEND=seatd as_nobody timeout -k 5 "$TINYWL_TIMEOUT" "$TINYWL" -v \
	-s "$(shell_quote "$CLIENT") --frames 400" --exit-after-frames 60 \
	>"$TEST_DIR/stdout" 2>"$TEST_DIR/stderr" || STATUS=$?
grep -E 'kms|seat|session' "$TEST_DIR/stderr" | grep -vE 'page-flip|DEBUG.*writeback' | head -n 12
grep 'tinywl: stats' "$TEST_DIR/stdout" || true
check_no_sanitizer_report
[ "$STATUS" -eq 0 ] || { tail -n 30 "$TEST_DIR/stderr"; fail "tinywl as nobody exited with $STATUS"; }
grep -q 'session: /dev/dri/card0 opened through the seat' "$TEST_DIR/stderr" ||
	fail "the card was not opened through the seat"
presented=$(stats_field Virtual-1 frames_presented)
[ "$presented" -ge 60 ] || fail "only $presented frames presented"
grep -q '^tinywl: buffer_locks=0$' "$TEST_DIR/stdout" || fail "buffer locks left at exit"
echo "PASS"
