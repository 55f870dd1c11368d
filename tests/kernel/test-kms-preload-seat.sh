#!/bin/bash
# Run in the guest, as root without a seat daemon (libseat's built-in
# backend): an unmodified wlroots program (preload-probe, linked with
# wlroots only) through the preload module on the KMS driver.
# - WLR_BACKENDS=wlatomic: wlroots' multi backend made no session, yet
#   wlr_backend_get_session on it gives the seat wlatomic opened its card
#   through (what sway and cage ask for their Ctrl+Alt+Fn VT keys).
# - WLR_BACKENDS=wlatomic,libinput: wlroots made a seat session for its
#   libinput backend; wlatomic opens its card through that one and asks
#   libseat for no second (a VT-bound seat is given to one client only,
#   and both must follow the same VT switches).
# Usage: test-kms-preload-seat.sh PROBE PRELOAD
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
PROBE=$(realpath "$1") PRELOAD=$(realpath "$2")
setup
[ -e /dev/dri/card0 ] || skip "no /dev/dri/card0: run through run-guest.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root for libseat's built-in backend"
[ -e /dev/tty1 ] || skip "no virtual terminals"
command -v busybox >/dev/null || skip "no busybox"
busybox chvt 1
# A sanitized module is preloaded before the sanitizer's runtime.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"

probe() {
	STATUS=0
	env -u LIBSEAT_BACKEND LD_PRELOAD="$PRELOAD" PROBE_VERBOSE=1 WLA_DRIVER=kms \
		WLA_CONTROL=off WLR_RENDERER=pixman WLR_LIBINPUT_NO_DEVICES=1 "$@" \
		timeout -k 5 "$(scaled 60)" "$PROBE" >"$TEST_DIR/out" 2>"$TEST_DIR/err" ||
		STATUS=$?
	echo "--- probe $* (status $STATUS)"
	cat "$TEST_DIR/out"
	[ "$STATUS" -eq 0 ] || { cat "$TEST_DIR/err"; fail "the probe failed ($STATUS)"; }
	if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$TEST_DIR/err"; then
		cat "$TEST_DIR/err"
		fail "sanitizer report"
	fi
}
subs() { grep '^sub ' "$TEST_DIR/out" | cut -d' ' -f2 | sort | tr '\n' ' '; }
seats() { grep -c "Seat opened with backend" "$TEST_DIR/err" || true; }
logged() {
	grep -q "$1" "$TEST_DIR/err" || { grep -iE 'seat|session' "$TEST_DIR/err" | head -n 20
		fail "$2"; }
}

probe WLR_BACKENDS=wlatomic
[ "$(subs)" = "wlatomic " ] || fail "sub-backends '$(subs)', expected wlatomic alone"
grep -q '^output ' "$TEST_DIR/out" || fail "no output on the card"
logged "session: /dev/dri/card0 opened through the seat" "the card not opened through the seat"
grep -qx 'session seat' "$TEST_DIR/out" ||
	fail "wlr_backend_get_session of the multi backend gives no session"
[ "$(seats)" -eq 1 ] || fail "$(seats) seats opened, expected 1"

probe WLR_BACKENDS=wlatomic,libinput
[ "$(subs)" = "libinput wlatomic " ] || fail "sub-backends '$(subs)'"
grep -q '^output ' "$TEST_DIR/out" || fail "no output on the card"
logged "session: the compositor's seat session (active" "wlatomic did not take wlroots' seat"
logged "session: /dev/dri/card0 opened through the seat" "the card not opened through the seat"
grep -qx 'session seat' "$TEST_DIR/out" || fail "no session for the multi backend"
[ "$(seats)" -eq 1 ] || fail "$(seats) seats opened, expected 1 (wlroots')"
echo PASS
