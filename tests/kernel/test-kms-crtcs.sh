#!/bin/bash
# Run in the guest: more connectors than CRTCs. vkms with extra_connectors=1
# has Virtual-1 and Virtual-2, both connected, on its one CRTC. Debian's
# sway, unmodified, on the KMS driver through the preload module: both
# outputs exist, Virtual-1 lit and Virtual-2 off (no CRTC free for it).
# Turning Virtual-1 off and Virtual-2 on moves the CRTC, as wlroots' DRM
# backend reallocates CRTCs: drm_info shows Virtual-2 routed to the CRTC
# with a framebuffer and Virtual-1 routed nowhere, and frames flow on
# Virtual-2. Turning Virtual-1 on while Virtual-2 is lit is refused, with
# the reason in the log, and changes nothing.
# Before that: the seat here can never be active (libseat's built-in
# backend as nobody cannot open the VT), so the card is opened directly;
# while another process holds its DRM master, sway is refused with why.
# Usage: test-kms-crtcs.sh PRELOAD WLATOMIC_CTL
set -euo pipefail
here=$(dirname "$0")
. "$here/../integration/lib.sh"
. "$here/../compositors/lib-compositor.sh"
setup
PRELOAD=$(realpath "$1") CTL=$(realpath "$2")
[ -e /dev/dri/card0 ] || skip "no /dev/dri/card0: run through run-guest.sh"
for tool in sway swaymsg weston-presentation-shm drm_info python3 setpriv; do
	command -v $tool >/dev/null || skip "$tool is not installed"
done
[ "$(id -u)" -eq 0 ] || skip "needs root to hand the card to an unprivileged sway"
n_conn=$(ls -d /sys/class/drm/card0-Virtual-* 2>/dev/null | wc -l)
[ "$n_conn" -ge 2 ] || skip "vkms has $n_conn Virtual connectors: run with --vkms extra_connectors=1"

# sway refuses to run as root: nobody, with the card opened directly (no
# seat here), as a user in the video group would.
TEST_USER=nobody TEST_GROUP=nogroup
chmod 0666 /dev/dri/card0
chmod 0755 "$TEST_DIR"
RUN=$TEST_DIR/run
mkdir -m 0700 "$RUN"
chown "$TEST_USER:" "$RUN"
export WLA_CONTROL=$RUN/control
trap 'status=$?; stop_compositor; [ $status = 0 ] || [ $status = 77 ] || compositor_log
	signal_run KILL || true' EXIT
cat >"$TEST_DIR/sway.conf" <<'CONF'
xwayland disable
CONF
chmod 0644 "$TEST_DIR/sway.conf"
COMPOSITOR_ENV=(WLA_DRIVER=kms WLR_LIBINPUT_NO_DEVICES=1)

# Another process (root, the card's first opener) is its DRM master: the
# inactive seat does not open the card, the direct open is not master,
# sway is refused, naming both.
coproc HOLDER { python3 -c 'import os, sys
fd = os.open("/dev/dri/card0", os.O_RDWR)
print("held", flush=True)
sys.stdin.read()'; }
read -r -t "$(scaled 30)" held <&"${HOLDER[0]}" && [ "$held" = held ] ||
	fail "no process holds the card's DRM master"
COMPOSITOR_TIMEOUT=60 COMPOSITOR_START_WAIT=60 NO_CONTROL=1 \
	start_compositor sway-refused sway -c "$TEST_DIR/sway.conf"
wait_until 60 '! kill -0 "$COMPOSITOR_PID" 2>/dev/null' || fail "sway did not exit refused"
COMPOSITOR_PID=
grep -q "the seat's session is inactive and another process is its DRM master" \
	"$TEST_DIR/sway-refused.err" || { cat "$TEST_DIR/sway-refused.err"
	fail "no line saying the card's DRM master is another process's"; }
[ ! -S "$WLA_CONTROL" ] || fail "a refused sway left a control socket"
eval "exec ${HOLDER[1]}>&-"
wait "$HOLDER_PID" || true

COMPOSITOR_TIMEOUT=300 COMPOSITOR_START_WAIT=120
start_compositor sway sway -c "$TEST_DIR/sway.conf"
wait_until 60 'ls "$RUN"/sway-ipc.*.sock >/dev/null 2>&1' || fail "sway has no IPC socket"
SWAYSOCK=$(ls "$RUN"/sway-ipc.*.sock | head -n 1)
export SWAYSOCK
msg() { as_user swaymsg "$@"; }

# The kernel's routing, from outside: "CONNECTOR:CRTC_ID" per Virtual
# connector, and whether the CRTC is active with a framebuffer.
routing() {
	drm_info -j /dev/dri/card0 >"$TEST_DIR/drm_info.json" 2>/dev/null || return 1
	python3 - "$TEST_DIR/drm_info.json" <<-'PY'
	import json, sys
	dev = list(json.load(open(sys.argv[1])).values())[0]
	conns = sorted((c for c in dev['connectors'] if c['type'] == 15), key=lambda c: c['id'])
	crtcs = {c['id']: c['properties']['ACTIVE']['value'] for c in dev['crtcs']}
	shown = {p['properties']['CRTC_ID']['value'] for p in dev['planes']
	         if p['properties']['FB_ID']['value']}
	words = []
	for i, c in enumerate(conns):
	    crtc = c['properties']['CRTC_ID']['value']
	    lit = crtc and crtcs.get(crtc) and crtc in shown
	    words.append(f"Virtual-{i + 1}:{'lit' if lit else 'off'}")
	print(' '.join(words))
	PY
}
# enabled NAME: sway's view ("true" or "false").
enabled() {
	msg -t get_outputs -r | python3 -c '
import json, sys
print(str(next(o for o in json.load(sys.stdin) if o["name"] == sys.argv[1])["active"]).lower())' "$1"
}
frames() {
	ctl list | sed -n "s/^output $1 .* frames_presented=\([0-9]*\).*/\1/p"
}

# 1. Both outputs: Virtual-1 lit, Virtual-2 off for want of a CRTC.
wait_until 60 '[ "$(routing)" = "Virtual-1:lit Virtual-2:off" ]' ||
	fail "at start the kernel shows: $(routing || true)"
n=$(msg -t get_outputs -r | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[ "$n" -eq 2 ] || fail "sway has $n outputs, expected 2"
[ "$(enabled Virtual-1)" = true ] || fail "Virtual-1 is not on at start"
[ "$(enabled Virtual-2)" = false ] || fail "Virtual-2 is on at start without a CRTC"
# sway logs errors only: its enable of Virtual-2 refused, with the reason.
grep -q "output Virtual-2: no CRTC for it: each of its possible_crtcs 0x1 drives an output that is on" \
	"$TEST_DIR/sway.err" || fail "no line telling why Virtual-2 is off"
echo "at start: $(routing)"

# 2. The CRTC moves to Virtual-2 once Virtual-1 is off.
msg output Virtual-1 disable >/dev/null || fail "swaymsg refused to disable Virtual-1"
msg output Virtual-2 enable >/dev/null || fail "swaymsg refused to enable Virtual-2"
wait_until 60 '[ "$(routing)" = "Virtual-1:off Virtual-2:lit" ]' ||
	fail "after the swap the kernel shows: $(routing || true)"
# A client redrawing at each frame on the output that is left.
start_presentation "$TEST_DIR/presentation.log"
ctl wait Virtual-2 10 >/dev/null || fail "no frames on Virtual-2"
echo "swapped: $(routing), Virtual-2 presented $(frames Virtual-2) frames"

# 3. Virtual-1 cannot have it while Virtual-2 is lit: refused, said, and
# the kernel's state is as it was.
msg output Virtual-1 enable >/dev/null 2>&1 || true
wait_until 30 'grep -q "output Virtual-1: no CRTC for it: each of its possible_crtcs 0x1 drives an output that is on" "$TEST_DIR/sway.err"' ||
	fail "enabling Virtual-1 was not refused with its reason"
[ "$(enabled Virtual-1)" = false ] || fail "sway says Virtual-1 is on"
[ "$(routing)" = "Virtual-1:off Virtual-2:lit" ] || fail "the refusal changed the kernel: $(routing)"
ctl wait Virtual-2 10 >/dev/null || fail "no frames on Virtual-2 after the refusal"

# 4. And back.
msg output Virtual-2 disable >/dev/null || fail "swaymsg refused to disable Virtual-2"
msg output Virtual-1 enable >/dev/null || fail "swaymsg refused to enable Virtual-1"
wait_until 60 '[ "$(routing)" = "Virtual-1:lit Virtual-2:off" ]' ||
	fail "back: the kernel shows $(routing || true)"
ctl wait Virtual-1 10 >/dev/null || fail "no frames on Virtual-1 after it came back"
echo "back: $(routing)"
stop_clients weston-presentation-shm
stop_compositor
if grep -q 'DRM fbs still there' "$TEST_DIR/sway.err"; then
	fail "DRM framebuffers left at exit"
fi
echo "PASS"
