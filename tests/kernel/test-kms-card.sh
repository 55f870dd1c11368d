#!/bin/bash
# Run in the guest on an emulated card (run-guest.sh --card): the test
# fixture on wlatomic's KMS driver with the pattern client until the first
# output presented FRAMES frames. Every head the card has lights and
# presents, with honest counters: vblanks counted once a refresh cycle
# (never wrapped below zero on a card without vblank events), sequence
# numbers that follow the clock, VSYNC on the presents only where the
# kernel has vblank events (VSYNC=1, vkms) and on none where it has not
# (VSYNC=0: virtio-gpu, qxl, cirrus, bochs). drm_info, from outside our
# process, shows each head's CRTC active with a framebuffer meanwhile. Each
# output is made by MAKE: the manufacturer its EDID names (qemu's: Red Hat),
# or wlatomic where the card gives no EDID. Then wlroots' DRM backend runs
# the same client in the same guest, for its frames beside ours.
# WLROOTS says whether wlroots' DRM backend runs on the card (runs: then
# a failure of it fails the test, since the comparison is what it is for)
# or may not (may-fail: qxl refuses its commits, bochs its start).
# Usage: test-kms-card.sh TINYWL_MEASURED PATTERN_CLIENT HEADS FRAMES VSYNC MAKE WLROOTS
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
TINYWL=$1 CLIENT=$2 HEADS=$3 FRAMES=$4 VSYNC=$5 MAKE=$6 WLROOTS=$7
case $WLROOTS in
runs | may-fail) ;;
*) fail "WLROOTS='$WLROOTS': expected runs or may-fail" ;;
esac
setup
[ -e /dev/dri/card0 ] || skip "no /dev/dri/card0: run through run-guest.sh --card"
command -v drm_info >/dev/null || skip "no drm_info (package drm-info)"
TINYWL_TIMEOUT=240
export WLA_DRIVER=kms WLR_RENDERER=pixman WLA_CONTROL=off
echo "card: $(basename "$(readlink -f /sys/class/drm/card0/device/driver)")"

lit() {
	drm_info -j /dev/dri/card0 >"$TEST_DIR/drm_info.json" 2>/dev/null || return 1
	/usr/bin/python3 - "$TEST_DIR/drm_info.json" "$HEADS" <<-'PY'
	import json, sys
	dev = list(json.load(open(sys.argv[1])).values())[0]
	active = {c['id'] for c in dev['crtcs'] if c['properties']['ACTIVE']['value']}
	shown = {p['properties']['CRTC_ID']['value'] for p in dev['planes']
	         if p['properties']['FB_ID']['value'] and p['properties']['CRTC_ID']['value']}
	lit = active & shown
	print(f"drm_info: {dev['driver']['name']}: {len(dev['crtcs'])} crtcs, active {sorted(active)},"
	      f" with a framebuffer {sorted(lit)}")
	sys.exit(0 if len(lit) >= int(sys.argv[2]) else 1)
	PY
}

# drm_info's view while tinywl runs: HEADS active CRTCs, each with a plane
# showing a framebuffer. tinywl's startup command starts the client, polls
# drm_info until it sees them (tinywl opened the card, as its DRM master,
# before it runs the command: the first opener of a card is its master),
# then waits for the client's FRAMES frames; tinywl exits when it ends.
{
	echo 'set -u'
	echo ". $(shell_quote "$(dirname "$0")/../integration/lib.sh")"
	echo "TEST_DIR=$(shell_quote "$TEST_DIR") HEADS=$HEADS"
	declare -f lit
	echo "$(shell_quote "$CLIENT") --frames $FRAMES &"
	echo 'client=$!'
	echo 'if wait_until 200 '"'"'lit >"$TEST_DIR/lit.out"'"'"'; then'
	echo '	echo ok >"$TEST_DIR/lit.status"'
	echo 'fi'
	echo 'wait $client'
} >"$TEST_DIR/startup.sh"
start_ns=$(date +%s%N)
run_tinywl "$TINYWL" -s "bash $(shell_quote "$TEST_DIR/startup.sh")"
wall_us=$((($(date +%s%N) - start_ns) / 1000))
expect_status 0
cat "$TEST_DIR/lit.out" 2>/dev/null || true
[ -f "$TEST_DIR/lit.status" ] || fail "drm_info never showed $HEADS lit CRTCs with a framebuffer"

n=$(grep -c '^tinywl: output ' "$TEST_DIR/stdout" || true)
[ "$n" -eq "$HEADS" ] || fail "$n outputs announced, expected $HEADS"
n=$(grep -cF "make=\"$MAKE\"" "$TEST_DIR/stdout" || true)
[ "$n" -eq "$HEADS" ] || fail "$n of $HEADS outputs made by \"$MAKE\""
grep '^tinywl: stats ' "$TEST_DIR/stdout" >"$TEST_DIR/stats" || fail "no stats lines"
n=$(wc -l <"$TEST_DIR/stats")
[ "$n" -eq "$HEADS" ] || fail "$n outputs, expected $HEADS"
first=true
while read -r line; do
	field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
	name=$(field output) presented=$(field frames_presented) vblanks=$(field vblanks)
	missed=$(field missed_vblanks) refused=$(field refused) seq_errors=$(field seq_errors)
	unmatched=$(field unmatched_presents) failures=$(field commit_failures)
	vsync=$(field vsync_presents) mean=$(field interval_mean_us) period=$(field period_us)
	echo "$name: presented=$presented vblanks=$vblanks missed=$missed vsync=$vsync" \
		"seq_errors=$seq_errors interval_mean_us=$mean period_us=$period"
	# The client's frames on its output; the other heads' at least a
	# quarter (their own pace, tinywl drawing what did not change).
	if $first; then
		[ "$presented" -ge $((FRAMES * 9 / 10)) ] || fail "$name: only $presented frames presented"
		first=false
	else
		[ "$presented" -ge $((FRAMES / 4)) ] || fail "$name: only $presented frames presented"
	fi
	[ "$refused" -eq 0 ] || fail "$name: $refused commits refused"
	[ "$failures" -eq 0 ] || fail "$name: $failures commits failed"
	[ "$unmatched" -eq 0 ] || fail "$name: $unmatched presents naming no commit"
	[ "$seq_errors" = 0 ] || fail "$name: seq_errors=$seq_errors (sequences off the clock)"
	# At least one refresh cycle a presented frame; at most one a mode's
	# period while tinywl ran plus one a frame (a flip sooner than half a
	# period after the last counts one).
	awk -v v="$vblanks" -v p="$presented" -v w="$wall_us" -v per="$period" \
		'BEGIN { exit !(v >= p && v <= w / per + p) }' ||
		fail "$name: $vblanks vblanks for $presented frames in $wall_us us"
	[ "$missed" -le "$vblanks" ] || fail "$name: $missed missed vblanks of $vblanks"
	if [ "$VSYNC" -eq 1 ]; then
		[ "$vsync" -eq "$presented" ] || fail "$name: $vsync of $presented presents flagged VSYNC"
	else
		[ "$vsync" -eq 0 ] || fail "$name: $vsync presents flagged VSYNC on a card without vblanks"
	fi
done <"$TEST_DIR/stats"
# What the driver expects (wlroots' probe of a bufferless enable, refused by
# a card that must scan out a buffer) is no error.
if grep -E '\[ERROR\] \[(\.\./)+([^] ]*/)?(backend|render)/' "$TEST_DIR/stderr"; then
	fail "wlatomic logged errors"
fi
grep -q '^tinywl: buffer_locks=0$' "$TEST_DIR/stdout" || fail "buffer locks left at exit"
if grep -q 'DRM fbs still there' "$TEST_DIR/stderr"; then
	fail "DRM framebuffers left at exit"
fi
wla_heads=$(wc -l <"$TEST_DIR/stats")
wla_first=$(head -n 1 "$TEST_DIR/stats")
wla_wall_us=$wall_us

# wlroots' DRM backend in the same guest (libseat's built-in backend as
# root), the same client and frames: its frames counted beside ours. The
# pace under TCG is noise, so rates are printed, not compared; what is
# checked is that wlatomic lights every head wlroots lights, and runs
# where wlroots does not (bochs). The figures printed for wlatomic are of
# a second run after wlroots', as wlroots' is run: the client alone (no
# drm_info polling beside it) and the guest warmed up by the first run
# (each run starts on what the one before left on the card: wlroots'
# run finds it off, wlatomic's measured run finds wlroots' frame lit).
printf '%s --frames %s\n' "$(shell_quote "$CLIENT")" "$FRAMES" >"$TEST_DIR/startup-wlr.sh"
start_ns=$(date +%s%N)
wlr_status=0
env -u WLA_DRIVER WLR_BACKENDS=drm LIBSEAT_BACKEND=builtin \
	timeout -k 5 "$(scaled 100)" "$TINYWL" --backend auto \
	-s "bash $(shell_quote "$TEST_DIR/startup-wlr.sh")" \
	>"$TEST_DIR/stdout.wlr" 2>"$TEST_DIR/stderr.wlr" || wlr_status=$?
wlr_wall_us=$((($(date +%s%N) - start_ns) / 1000))
[ "$wlr_status" -ne 124 ] && [ "$wlr_status" -ne 137 ] ||
	fail "wlroots' DRM backend did not finish within $(scaled 100) s"
# wlatomic again, measured as wlroots was.
start_ns=$(date +%s%N)
run_tinywl "$TINYWL" -s "bash $(shell_quote "$TEST_DIR/startup-wlr.sh")"
wla_wall_us=$((($(date +%s%N) - start_ns) / 1000))
expect_status 0
wla_first=$(grep '^tinywl: stats ' "$TEST_DIR/stdout" | head -n 1 || true)
[ -n "$wla_first" ] || fail "no stats line in wlatomic's measured run"
n=$(grep -c '^tinywl: stats ' "$TEST_DIR/stdout" || true)
[ "$n" -eq "$wla_heads" ] || fail "the measured run lit $n heads, the first $wla_heads"
n=$(sed -n 's/.* frames_presented=\([0-9]*\).*/\1/p' <<<"$wla_first")
[ "${n:-0}" -ge $((FRAMES * 9 / 10)) ] || fail "the measured run presented only ${n:-0} frames"
if grep -E '\[ERROR\] \[(\.\./)+([^] ]*/)?(backend|render)/' "$TEST_DIR/stderr"; then
	fail "wlatomic logged errors in its measured run"
fi
grep -q '^tinywl: buffer_locks=0$' "$TEST_DIR/stdout" || fail "buffer locks left after the measured run"
field_of() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
wlr_first=$(grep '^tinywl: stats ' "$TEST_DIR/stdout.wlr" | head -n 1 || true)
wlr_heads=$(grep -c '^tinywl: stats ' "$TEST_DIR/stdout.wlr" || true)
echo "frames on the first output, $FRAMES asked for:"
echo "  wlatomic: $(field_of frames_presented "$wla_first") presented in $((wla_wall_us / 1000)) ms," \
	"mean interval $(field_of interval_mean_us "$wla_first") us, CPU" \
	"$(field_of cpu_us_per_frame "$wla_first") us/frame, $wla_heads heads"
if [ "$wlr_status" -eq 0 ] && [ -n "$wlr_first" ]; then
	echo "  wlroots:  $(field_of frames_presented "$wlr_first") presented in $((wlr_wall_us / 1000)) ms," \
		"mean interval $(field_of interval_mean_us "$wlr_first") us, CPU" \
		"$(field_of cpu_us_per_frame "$wlr_first") us/frame, $wlr_heads heads"
	# Every head's frames, each backend's (the other heads draw at their
	# own pace: their frames are part of the CPU of a first head's frame).
	grep '^tinywl: stats ' "$TEST_DIR/stdout" >"$TEST_DIR/stats.measured" || true
	grep '^tinywl: stats ' "$TEST_DIR/stdout.wlr" >"$TEST_DIR/stats.wlr" || true
	while read -r line; do
		echo "  wlatomic $(field_of output "$line"): $(field_of frames_presented "$line")" \
			"frames, forced renders $(field_of forced_renders "$line")"
	done <"$TEST_DIR/stats.measured"
	while read -r line; do
		echo "  wlroots  $(field_of output "$line"): $(field_of frames_presented "$line")" \
			"frames, forced renders $(field_of forced_renders "$line")"
	done <"$TEST_DIR/stats.wlr"
	[ "$wla_heads" -ge "$wlr_heads" ] ||
		fail "wlroots lit $wlr_heads heads, wlatomic $wla_heads"
else
	echo "  wlroots:  did not run (exit status $wlr_status): $(grep -E '\[ERROR\]' \
		"$TEST_DIR/stderr.wlr" | tail -n 1 | cut -c1-200)"
	[ "$WLROOTS" = may-fail ] ||
		fail "wlroots' DRM backend runs on this card, but did not here: nothing to compare"
fi
echo "PASS"
