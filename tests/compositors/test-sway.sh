#!/bin/bash
# Debian's sway, unmodified, on wlatomic through the preload module, with
# real clients; outcomes checked through swaymsg, grim, wlr-randr and the
# control socket.
# Usage: test-sway.sh CASE PRELOAD WLATOMIC_CTL PNG_INFO
set -euo pipefail
here=$(dirname "$0")
. "$here/../integration/lib.sh"
CASE=$1 PRELOAD=$(realpath "$2") CTL=$(realpath "$3") PNGINFO=$(realpath "$4")
setup
. "$here/lib-compositor.sh"
for tool in sway swaymsg foot grim wlr-randr weston-presentation-shm python3; do
	command -v $tool >/dev/null || skip "$tool is not installed"
done
need_user
chmod 0755 "$TEST_DIR"

cat >"$TEST_DIR/sway.conf" <<'CONF'
xwayland disable
default_border none
CONF
chmod 0644 "$TEST_DIR/sway.conf"
export WLA_OUTPUTS='1920x1080@60,1280x720@60'
start_compositor sway sway -c "$TEST_DIR/sway.conf"
for _ in $(seq 100); do
	SWAYSOCK=$(ls "$RUN"/sway-ipc.*.sock 2>/dev/null | head -n 1) && [ -n "$SWAYSOCK" ] && break
	sleep 0.05
done
[ -n "${SWAYSOCK:-}" ] || fail "sway made no IPC socket"
export SWAYSOCK
msg() { as_user swaymsg "$@"; }
# output_json NAME KEY: one key of an output in swaymsg -t get_outputs.
output_json() {
	msg -r -t get_outputs | python3 -c "
import json, sys
for o in json.load(sys.stdin):
    if o['name'] == '$1':
        v = o
        for k in '$2'.split('.'):
            v = v[k] if not k.isdigit() else v[int(k)]
        print(json.dumps(v)); break
else:
    print('absent')"
}

# Every case: the output is there, enabled, with the configured modes.
[ "$(output_json Virtual-1 active)" = true ] || fail "Virtual-1 is not active in sway"
[ "$(output_json Virtual-1 current_mode)" = '{"width": 1920, "height": 1080, "refresh": 60000}' ] ||
	fail "current mode $(output_json Virtual-1 current_mode)"
[ "$(output_json Virtual-1 modes.1.width)x$(output_json Virtual-1 modes.1.height)" = 1280x720 ] ||
	fail "the second configured mode is not listed: $(output_json Virtual-1 modes)"
[ "$(list_field Virtual-1 enabled)" = 1 ] || fail "the control socket says Virtual-1 is off"

case $CASE in
clients)
	# foot shows its window; a screenshot by grim (screencopy) equals the
	# control socket's capture of the same frame (sway draws no cursor
	# without a pointer, so nothing is masked).
	as_user foot >"$TEST_DIR/foot.log" 2>&1 &
	for _ in $(seq 100); do
		msg -t get_tree | grep -q '"app_id": "foot"' && break
		sleep 0.05
	done
	msg -t get_tree | grep -q '"app_id": "foot"' || fail "foot's window did not map"
	# sway draws only what changed: a static foot presents a few frames.
	sleep 0.5
	[ "$(list_field Virtual-1 frames_presented)" -ge 1 ] || fail "no frames presented"
	ctl capture Virtual-1 "$RUN/cap1.png" >"$TEST_DIR/c1" || fail "capture $(cat "$TEST_DIR/c1")"
	as_user grim -o Virtual-1 "$RUN/grim.png" || fail "grim failed"
	ctl capture Virtual-1 "$RUN/cap2.png" >"$TEST_DIR/c2" || fail "capture $(cat "$TEST_DIR/c2")"
	cat "$TEST_DIR/c1" "$TEST_DIR/c2"
	[ "$("$PNGINFO" "$RUN/cap1.png" "$RUN/cap2.png")" = differ=0 ] ||
		fail "the screen changed between the captures around grim"
	[ "$("$PNGINFO" "$RUN/cap1.png" "$RUN/grim.png")" = differ=0 ] ||
		fail "grim's screenshot and the capture differ: $("$PNGINFO" "$RUN/cap1.png" "$RUN/grim.png")"
	# foot's window is on screen: the capture is not one colour.
	colours=$("$PNGINFO" "$RUN/cap1.png" | sed -n 's/.*colours=//p')
	[ "$colours" -ge 3 ] || fail "the capture shows no window ($colours colours)"
	stop_clients foot
	# A window that redraws all the time: a frame at every vblank.
	animate
	ctl wait Virtual-1 10 >/dev/null || fail "no frames from a redrawing foot"
	before=$(list_field Virtual-1 frames_presented)
	ctl wait Virtual-1 120 >/dev/null || fail "no frames from a redrawing foot"
	after=$(list_field Virtual-1 frames_presented)
	[ $((after - before)) -ge 120 ] || fail "frames $before -> $after"
	[ "$(list_field Virtual-1 missed_vblanks)" = 0 ] || fail "missed vblanks"
	p50=$(list_field Virtual-1 interval_p50_ns)
	[ "$p50" -ge 16666666 ] && [ "$p50" -le 16666667 ] ||
		fail "median interval $p50 ns is not the period"
	# weston-presentation-shm: presented feedback, vsync'd, sequence +1
	# per frame, the mode's period.
	stop_clients foot
	as_user timeout 5 weston-presentation-shm >"$TEST_DIR/pres.log" 2>&1 || true
	awk '/seq/ { n++ } END { exit n >= 30 ? 0 : 1 }' "$TEST_DIR/pres.log" ||
		fail "weston-presentation-shm got no feedback: $(tail -n 5 "$TEST_DIR/pres.log")"

	;;
randr)
	# wlr-randr lists the outputs truthfully and changes a mode through
	# sway's output management: the virtual display follows.
	as_user wlr-randr >"$TEST_DIR/randr" || fail "wlr-randr failed"
	cat "$TEST_DIR/randr"
	grep -q '^Virtual-1 ' "$TEST_DIR/randr" || fail "wlr-randr does not list Virtual-1"
	grep -q '  Enabled: yes' "$TEST_DIR/randr" || fail "wlr-randr says disabled"
	grep -q '1920x1080 px, 60.000000 Hz (preferred, current)' "$TEST_DIR/randr" ||
		fail "wlr-randr does not give the current mode"
	grep -q '1280x720 px, 60.000000 Hz' "$TEST_DIR/randr" || fail "the second mode is missing"
	as_user wlr-randr --output Virtual-1 --mode 1280x720 || fail "wlr-randr --mode failed"
	for _ in $(seq 100); do
		[ "$(list_field Virtual-1 mode)" = 1280x720@60.000 ] && break
		sleep 0.05
	done
	[ "$(list_field Virtual-1 mode)" = 1280x720@60.000 ] ||
		fail "the virtual display did not change mode: $(list_field Virtual-1 mode)"
	ctl capture Virtual-1 "$RUN/small.png" | grep -q '^ok captured 1280x720 ' ||
		fail "the capture does not have the new size"
	as_user wlr-randr --output Virtual-1 --off || fail "wlr-randr --off failed"
	for _ in $(seq 100); do
		[ "$(list_field Virtual-1 enabled)" = 0 ] && break
		sleep 0.05
	done
	[ "$(list_field Virtual-1 enabled)" = 0 ] || fail "wlr-randr --off left it on"
	# An output turned on presents at least sway's first frame on it.
	as_user "$CTL" -s "$WLA_CONTROL" wait Virtual-1 1 >"$TEST_DIR/w" & waiter=$!
	animate
	as_user wlr-randr --output Virtual-1 --on || fail "wlr-randr --on failed"
	wait $waiter || fail "no frames after wlr-randr --on: $(cat "$TEST_DIR/w")"
	;;
dpms)
	# swaymsg dpms off and on reach the hardware, and sway reports them.
	msg output Virtual-1 dpms off >/dev/null || fail "dpms off refused"
	for _ in $(seq 100); do
		[ "$(list_field Virtual-1 dpms)" = off ] && break
		sleep 0.05
	done
	[ "$(list_field Virtual-1 dpms)" = off ] || fail "the control socket says dpms $(list_field Virtual-1 dpms)"
	[ "$(output_json Virtual-1 dpms)" = false ] || fail "sway reports dpms $(output_json Virtual-1 dpms)"
	# The first frame on it comes while we wait (wait fails on a disabled
	# output only when it goes away).
	as_user "$CTL" -s "$WLA_CONTROL" wait Virtual-1 1 >"$TEST_DIR/w" & waiter=$!
	sleep 0.2
	msg output Virtual-1 dpms on >/dev/null || fail "dpms on refused"
	wait $waiter || fail "no frames after dpms on: $(cat "$TEST_DIR/w")"
	[ "$(list_field Virtual-1 dpms)" = on ] || fail "dpms not on again"
	[ "$(output_json Virtual-1 dpms)" = true ] || fail "sway reports dpms $(output_json Virtual-1 dpms)"
	;;
hotplug)
	# A client keeps Virtual-1 busy: frames go on while HP-1 comes and goes.
	animate
	ctl wait Virtual-1 5 >/dev/null || fail "no frames from a redrawing foot"
	# Locks counted idle before and after the plug cycle: it must not
	# leave any behind (HP-1 holds one or two while it runs).
	stop_clients foot
	sleep 0.5
	locks0=$(ctl list | tail -n 1 | sed -n 's/.*buffer_locks=//p')
	ctl plug HP-1 1024x768@75,800x600 >/dev/null || fail "plug failed"
	for _ in $(seq 100); do
		[ "$(output_json HP-1 active)" = true ] && break
		sleep 0.05
	done
	[ "$(output_json HP-1 active)" = true ] || fail "sway did not enable HP-1"
	[ "$(output_json HP-1 current_mode)" = '{"width": 1024, "height": 768, "refresh": 75000}' ] ||
		fail "HP-1 mode $(output_json HP-1 current_mode)"
	[ "$(list_field HP-1 frames_presented)" -ge 1 ] || fail "HP-1 presents no frames"
	ctl unplug HP-1 >/dev/null || fail "unplug failed"
	for _ in $(seq 100); do
		[ "$(output_json HP-1 active)" = absent ] && break
		sleep 0.05
	done
	[ "$(output_json HP-1 active)" = absent ] || fail "sway still has HP-1"
	ctl list | grep -q '^output HP-1 ' && fail "the control socket still lists HP-1"
	sleep 0.5
	locks1=$(ctl list | tail -n 1 | sed -n 's/.*buffer_locks=//p')
	[ "$locks1" = "$locks0" ] || fail "buffer locks went from $locks0 to $locks1 over a plug cycle"
	[ "$locks0" = 1 ] || fail "$locks0 buffer locks on one idle output (its current frame: 1)"
	ctl wait Virtual-1 1 >/dev/null & waiter=$!
	animate
	wait $waiter || fail "Virtual-1 presents no frame after the plug cycle"
	;;
*)
	fail "unknown case $CASE"
	;;
esac

stop_compositor
errors=$(wla_errors "$TEST_DIR/sway.err")
[ -z "$errors" ] || fail "wlatomic logged errors: $errors"
if grep -qE 'AddressSanitizer|runtime error:' "$TEST_DIR/sway.err"; then
	fail "sanitizer report in sway's log"
fi
grep -iE 'failed to (commit|test)|output commit failed' "$TEST_DIR/sway.err" &&
	fail "a failed output test or commit"
echo PASS
