#!/bin/bash
# The preload module in an unmodified wlroots program (preload-probe, linked
# with wlroots only): what wlr_backend_autocreate returns for WLR_BACKENDS.
# Usage: test-preload.sh CASE PROBE PRELOAD [WRONG_PRELOAD]
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
CASE=$1 PROBE=$(realpath "$2") PRELOAD=$(realpath "$3") WRONG=${4:+$(realpath "$4")}
setup
# A sanitized module is preloaded before the sanitizer's runtime.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"

# probe [ENV...]: run the probe with the preload module, output in
# $TEST_DIR/out and $TEST_DIR/err, status in STATUS.
probe() {
	STATUS=0
	env "$@" timeout -k 5 "$(scaled 20)" "$PROBE" >"$TEST_DIR/out" 2>"$TEST_DIR/err" || STATUS=$?
	echo "--- probe $* (status $STATUS)"
	cat "$TEST_DIR/out"
	echo "--- stderr"
	cat "$TEST_DIR/err"
	[ "$STATUS" -lt 124 ] || fail "the probe hung or crashed (status $STATUS)"
	if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$TEST_DIR/err"; then
		fail "sanitizer report"
	fi
}
subs() { grep '^sub ' "$TEST_DIR/out" | cut -d' ' -f2 | sort | tr '\n' ' '; }
errors() { grep -c '\[ERROR\]' "$TEST_DIR/err" || true; }

case $CASE in
only)
	probe LD_PRELOAD="$PRELOAD" WLR_BACKENDS=wlatomic WLA_OUTPUTS='1280x720@50;800x600'
	[ "$STATUS" -eq 0 ] || fail "autocreate failed"
	grep -qx 'backend multi' "$TEST_DIR/out" || fail "not a multi backend"
	[ "$(subs)" = "wlatomic " ] || fail "sub-backends '$(subs)', expected wlatomic alone"
	grep -qx 'output Virtual-1 1280x720@50000 modes=1' "$TEST_DIR/out" ||
		fail "no output Virtual-1 with the configured mode"
	grep -qx 'output Virtual-2 800x600@60000 modes=1' "$TEST_DIR/out" ||
		fail "no output Virtual-2 with the configured mode"
	# The virtual display controller needs no seat, and none is made.
	grep -qx 'session none' "$TEST_DIR/out" || fail "a session on the VDC"
	[ "$(errors)" -eq 0 ] || fail "error lines"
	;;
with-headless)
	probe LD_PRELOAD="$PRELOAD" WLR_BACKENDS=headless,wlatomic
	[ "$STATUS" -eq 0 ] || fail "autocreate failed"
	[ "$(subs)" = "headless wlatomic " ] || fail "sub-backends '$(subs)'"
	# wlroots' autocreate gives headless one output of its own.
	grep -q '^output HEADLESS-1 ' "$TEST_DIR/out" || fail "no headless output"
	grep -qx 'output Virtual-1 1920x1080@60000 modes=1' "$TEST_DIR/out" ||
		fail "no wlatomic output"
	[ "$(errors)" -eq 0 ] || fail "error lines"
	;;
unchanged)
	# Without wlatomic named, wlroots answers alone, as without the module.
	probe WLR_BACKENDS=headless
	cp "$TEST_DIR/out" "$TEST_DIR/plain"
	probe LD_PRELOAD="$PRELOAD" WLR_BACKENDS=headless
	cmp "$TEST_DIR/plain" "$TEST_DIR/out" || fail "the module changed a headless autocreate"
	[ "$(subs)" = "headless " ] || fail "sub-backends '$(subs)'"
	grep -q wlatomic "$TEST_DIR/err" && fail "the module spoke without being asked"
	# A name that only contains the word is not the word.
	probe LD_PRELOAD="$PRELOAD" WLR_BACKENDS=wlatomicx
	[ "$STATUS" -eq 1 ] || fail "wlroots should refuse 'wlatomicx' itself"
	grep -q "unrecognized backend 'wlatomicx'" "$TEST_DIR/err" ||
		fail "wlroots' own refusal expected"
	;;
twice)
	probe LD_PRELOAD="$PRELOAD" WLR_BACKENDS=wlatomic,wlatomic
	[ "$STATUS" -eq 0 ] || fail "the compositor should run on one wlatomic"
	[ "$(subs)" = "wlatomic " ] || fail "sub-backends '$(subs)'"
	[ "$(errors)" -eq 1 ] || fail "expected exactly one error line"
	grep -q "WLR_BACKENDS='wlatomic,wlatomic' names wlatomic more than once" \
		"$TEST_DIR/err" || fail "the error does not say wlatomic is named twice"
	;;
unknown)
	probe LD_PRELOAD="$PRELOAD" WLR_BACKENDS=wlatomic,bogus,headless
	[ "$STATUS" -eq 0 ] || fail "the compositor should run on what works"
	[ "$(subs)" = "headless wlatomic " ] || fail "sub-backends '$(subs)'"
	[ "$(errors)" -eq 1 ] || fail "expected exactly one error line"
	grep -q "wlroots knows no backend 'bogus'; it is left out" "$TEST_DIR/err" ||
		fail "the error does not name 'bogus'"
	;;
others-fail)
	# drm needs a session, which this machine cannot give (no seat
	# daemon, no logind): wlatomic alone.
	probe LD_PRELOAD="$PRELOAD" WLR_BACKENDS=wlatomic,drm
	[ "$STATUS" -eq 0 ] || fail "the compositor should run on wlatomic"
	[ "$(subs)" = "wlatomic " ] || fail "sub-backends '$(subs)'"
	grep -q "wlroots could not create the backends 'drm'; running on wlatomic alone" \
		"$TEST_DIR/err" || fail "no line saying drm failed"
	;;
bad-config)
	probe LD_PRELOAD="$PRELOAD" WLR_BACKENDS=wlatomic WLA_FLIP_DEPTH=0
	[ "$STATUS" -eq 1 ] || fail "autocreate should fail on a bad WLA_* value"
	grep -q "WLA_FLIP_DEPTH" "$TEST_DIR/err" || fail "the config error is not named"
	;;
wrong-wlroots)
	# A module built for another libwlroots says so and leaves autocreate
	# to wlroots, which does not know wlatomic.
	probe LD_PRELOAD="$WRONG" WLR_BACKENDS=wlatomic,headless
	[ "$STATUS" -eq 1 ] || fail "wlroots should have answered alone"
	lines=$(grep -c 'wlatomic-preload' "$TEST_DIR/err" || true)
	[ "$lines" -eq 1 ] || fail "expected one line from the module, got $lines"
	grep -q "wlatomic is built for libwlroots.so.0-not-this: wlr_backend_autocreate left alone" \
		"$TEST_DIR/err" || fail "the line does not name the mismatch"
	grep -q "unrecognized backend 'wlatomic'" "$TEST_DIR/err" || fail "wlroots did not answer"
	# A process without wlroots hears nothing from the module.
	STATUS=0
	LD_PRELOAD="$WRONG" /bin/true 2>"$TEST_DIR/err" || STATUS=$?
	[ "$STATUS" -eq 0 ] && [ ! -s "$TEST_DIR/err" ] || fail "noise in a process without wlroots"
	;;
*)
	fail "unknown case $CASE"
	;;
esac
echo PASS
