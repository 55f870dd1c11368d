#!/bin/bash
# Run in the guest: a VT switch under a compositor on the KMS driver. With
# seatd (the default), seatd runs for nobody and the test fixture, as
# nobody, has the card through the seat on VT 1; with --builtin no seat
# daemon runs and the fixture runs as root, where libseat falls back to its
# built-in backend (as wlroots' DRM backend has it as root). Either way,
# with a client: `chvt 2` makes the seat go away: the driver says the
# session is inactive, leaves the card alone (its DRM master is free: this
# script can take it) and no frame is presented. `chvt 1` gives the seat
# back: every CRTC and plane is restored in one modeset, frames flow again,
# drm_info shows the output lit with a framebuffer, and at the end nothing
# is left locked.
# Usage: test-kms-vt.sh TINYWL_MEASURED PATTERN_CLIENT WLATOMIC_CTL UINPUT [--builtin]
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
TINYWL=$1 CLIENT=$2 CTL=$3 UINPUT=$4 MODE=${5:-}
builtin=false
[ "$MODE" = --builtin ] && builtin=true
setup
[ -e /dev/dri/card0 ] || skip "no /dev/dri/card0: run through run-guest.sh"
for tool in busybox drm_info $($builtin || echo seatd); do
	command -v $tool >/dev/null || skip "no $tool"
done
[ "$(id -u)" -eq 0 ] || skip "needs root to start a seat and switch VTs"
[ -e /dev/tty1 ] && [ -e /dev/tty2 ] || skip "no virtual terminals"
busybox chvt 1
chmod 0600 /dev/dri/card0
chmod 0755 "$TEST_DIR"
chown 65534:65534 "$XDG_RUNTIME_DIR"
export WLA_CONTROL=$XDG_RUNTIME_DIR/wla-vt.sock
as_user() {
	if $builtin; then
		# Root, and libseat left to pick: no seatd socket, no logind,
		# then its built-in backend.
		env -u LIBSEAT_BACKEND XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" WLA_DRIVER=kms \
			WLR_RENDERER=pixman WLA_CONTROL="$WLA_CONTROL" "$@"
		return
	fi
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" WLA_DRIVER=kms WLR_RENDERER=pixman \
		WLA_CONTROL="$WLA_CONTROL" LIBSEAT_BACKEND=seatd "$@"
}
ctl() { as_user "$CTL" -t "$(scaled 30)" "$@"; }

# Whether this process can become the card's DRM master (no one is).
master_free() {
	/usr/bin/python3 - <<-'PY'
	import fcntl, os, sys
	fd = os.open('/dev/dri/card0', os.O_RDWR)
	try:
	    fcntl.ioctl(fd, 0x641e)  # DRM_IOCTL_SET_MASTER
	    fcntl.ioctl(fd, 0x641f)  # DRM_IOCTL_DROP_MASTER
	    sys.exit(0)
	except OSError:
	    sys.exit(1)
	finally:
	    os.close(fd)
	PY
}

lit() {
	drm_info -j /dev/dri/card0 >"$TEST_DIR/drm_info.json" 2>/dev/null || return 1
	/usr/bin/python3 - "$TEST_DIR/drm_info.json" <<-'PY'
	import json, sys
	dev = list(json.load(open(sys.argv[1])).values())[0]
	active = {c['id'] for c in dev['crtcs'] if c['properties']['ACTIVE']['value']}
	shown = {p['properties']['CRTC_ID']['value'] for p in dev['planes']
	         if p['properties']['FB_ID']['value'] and p['properties']['CRTC_ID']['value']}
	print(f"drm_info: active CRTCs {sorted(active)}, with a framebuffer {sorted(active & shown)}")
	sys.exit(0 if active & shown else 1)
	PY
}

: >"$TEST_DIR/seatd.log"
if $builtin; then
	[ ! -S /run/seatd.sock ] || fail "a seatd runs: the built-in backend would not be used"
	trap 'touch "$TEST_DIR/done"' EXIT
else
	seatd -u nobody -g nogroup -n 9 >"$TEST_DIR/seatd.log" 2>&1 9>"$TEST_DIR/seatd.ready" &
	seatd_pid=$!
	trap 'touch "$TEST_DIR/done"; kill $seatd_pid 2>/dev/null || true' EXIT
	poll 100 '[ -S /run/seatd.sock ]' || { cat "$TEST_DIR/seatd.log"; fail "seatd did not start"; }
fi

# Real input devices (uinput, where the guest has it and udevd), found by
# name: opened through the seat (their nodes stay root's, 0600: only the
# seat can open them for the fixture), closed while the session is
# inactive, so that what is typed on VT 2 does not reach the compositor,
# and opened again when it is back, each on its own: the mouse unplugged
# while away does not keep the keyboard closed, and a keyboard plugged
# while away is opened (through the seat) once the session is back.
input_env=()
if [ -w /dev/uinput ] && [ -S /run/udev/control ]; then
	mkfifo "$TEST_DIR/uinput.in"
	"$UINPUT" --keyboard "wla-vt keyboard" --mouse "wla-vt mouse" <"$TEST_DIR/uinput.in" \
		>"$TEST_DIR/uinput.out" 2>&1 &
	exec 3>"$TEST_DIR/uinput.in"
	poll 200 "grep -q '^ready' '$TEST_DIR/uinput.out'" || fail "wla-uinput did not start"
	keyboard=$(sed -n 's/^ready keyboard=\([^ ]*\).*/\1/p' "$TEST_DIR/uinput.out")
	mouse=$(sed -n 's/^ready .* mouse=\([^ ]*\).*/\1/p' "$TEST_DIR/uinput.out")
	udevadm settle --timeout=30 || true
	chown 0:0 "$keyboard" "$mouse"
	chmod 0600 "$keyboard" "$mouse"
	input_env=(WLA_INPUT_DEVICES="name:wla-vt *")
else
	echo "no uinput or udevd here: input is not checked"
fi

# The fixture ends when its startup command does: the client runs until
# this script says so.
cat >"$TEST_DIR/startup.sh" <<-EOS
$(shell_quote "$CLIENT") --frames 1000000 &
client=\$!
while [ ! -e $(shell_quote "$TEST_DIR/done") ]; do sleep 0.1; done
kill \$client
wait \$client || true
EOS
chmod 0755 "$TEST_DIR/startup.sh"
as_user "${input_env[@]}" timeout -k 5 "$(scaled 240)" "$TINYWL" -v -s "sh $(shell_quote "$TEST_DIR/startup.sh")" \
	>"$TEST_DIR/stdout" 2>"$TEST_DIR/stderr" &
tinywl_pid=$!
# The first output's name (Virtual-1 on vkms and qxl, VGA-1 on cirrus).
first_output() { ctl list 2>/dev/null | sed -n 's/^output \([^ ]*\) .*/\1/p' | head -n 1; }
wait_until 120 '[ -S "$WLA_CONTROL" ] && out=$(first_output) && [ -n "$out" ] &&
	ctl wait "$out" 10 >/dev/null 2>&1' ||
	{ tail -n 30 "$TEST_DIR/stderr"; fail "no frames before the VT switch"; }
out=$(first_output)
echo "output: $out"
grep -q 'session: /dev/dri/card0 opened through the seat' "$TEST_DIR/stderr" ||
	fail "the card was not opened through the seat"
# The seat is the compositor's too, for its VT switch keys.
grep -q '^tinywl: session=seat$' "$TEST_DIR/stdout" || fail "the backend gives no session"
if $builtin; then
	grep -q "Seat opened with backend 'builtin'" "$TEST_DIR/stderr" || { grep -i seat "$TEST_DIR/stderr" | head -n 20;
		fail "libseat did not say it took its built-in backend"; }
fi
master_free && fail "the card's master is free while the compositor runs"

# Away: the session goes inactive, the card is left alone.
busybox chvt 2
wait_until 30 'grep -q "session inactive: nothing goes to the card" "$TEST_DIR/stderr"' ||
	{ tail -n 20 "$TEST_DIR/stderr"; cat "$TEST_DIR/seatd.log"; fail "no inactive session after chvt 2"; }
wait_until 30 master_free || fail "the card's DRM master was not given up"
before=$(ctl list | sed -n "s/^output $out .* frames_presented=\\([0-9]*\\).*/\\1/p")
# Nothing presented while away (a frame would come within 2 periods).
if ctl -t "$(scaled 1)" wait "$out" 1 >/dev/null 2>&1; then
	fail "a frame was presented on VT 2"
fi
after=$(ctl list | sed -n "s/^output $out .* frames_presented=\\([0-9]*\\).*/\\1/p")
[ "$before" = "$after" ] || fail "frames presented on VT 2: $before, then $after"
echo "on VT 2: the master free, no frames ($after presented before)"
if [ ${#input_env[@]} -gt 0 ]; then
	for node in "$keyboard" "$mouse"; do
		grep -q "session: input device $node opened through seat seat0" "$TEST_DIR/stderr" ||
			{ grep 'input' "$TEST_DIR/stderr" | head -n 20; fail "$node was not opened through the seat"; }
	done
	grep -q "input: session inactive: real input devices closed" "$TEST_DIR/stderr" ||
		fail "the keyboard was not closed on VT 2"
	grep -Eq "input: $(basename "$keyboard") \(wla-vt keyboard\) removed" "$TEST_DIR/stderr" ||
		fail "the keyboard was not removed from the compositor on VT 2"
	# While away: the mouse is unplugged, another keyboard plugged in.
	echo "remove mouse" >&3
	mkfifo "$TEST_DIR/uinput2.in"
	"$UINPUT" --keyboard "wla-vt late" <"$TEST_DIR/uinput2.in" >"$TEST_DIR/uinput2.out" 2>&1 &
	exec 4>"$TEST_DIR/uinput2.in"
	poll 200 "grep -q '^ready' '$TEST_DIR/uinput2.out'" || fail "the second wla-uinput did not start"
	late=$(sed -n 's/^ready keyboard=\([^ ]*\).*/\1/p' "$TEST_DIR/uinput2.out")
	udevadm settle --timeout=30 || true
	chown 0:0 "$late"
	chmod 0600 "$late"
	wait_until 30 'grep -q "input: $mouse unplugged while the session is inactive" "$TEST_DIR/stderr"' ||
		{ grep -E 'input|uevent' "$TEST_DIR/stderr" | tail -n 20; fail "the mouse's unplugging was not seen while away"; }
fi

# Back: one restore, frames again.
busybox chvt 1
wait_until 30 'grep -q "session active again: every CRTC and plane restored" "$TEST_DIR/stderr"' ||
	{ tail -n 20 "$TEST_DIR/stderr"; fail "no restore after chvt 1"; }
if [ ${#input_env[@]} -gt 0 ]; then
	wait_until 30 'grep -q "input: session active again: real input devices opened again" "$TEST_DIR/stderr"' ||
		fail "the keyboard was not opened again"
	n=$(grep -Ec "input: device 'wla-vt keyboard' .*announced" "$TEST_DIR/stderr" || true)
	[ "$n" -eq 2 ] || fail "the keyboard was announced $n times, expected 2 (at start, on VT 1 again)"
	n=$(grep -c "session: input device $keyboard opened through seat seat0" "$TEST_DIR/stderr" || true)
	[ "$n" -eq 2 ] || fail "the keyboard was opened through the seat $n times, expected 2"
	grep -q "input: session active again: real input devices opened again (1, 0 lost)" \
		"$TEST_DIR/stderr" || { grep 'input: session' "$TEST_DIR/stderr";
		fail "not the keyboard alone opened again (the mouse was unplugged while away)"; }
	n=$(grep -Ec "input: device 'wla-vt mouse' .*announced" "$TEST_DIR/stderr" || true)
	[ "$n" -eq 1 ] || fail "the mouse was announced $n times, expected 1 (unplugged while away)"
	wait_until 30 'grep -Eq "input: device .wla-vt late. .*announced" "$TEST_DIR/stderr"' ||
		fail "the keyboard plugged while away was not announced once the session was back"
	grep -q "session: input device $late opened through seat seat0" "$TEST_DIR/stderr" ||
		fail "the keyboard plugged while away was not opened through the seat"
	echo "mouse unplugged and a keyboard plugged while away: the keyboards open on VT 1"
	echo "keyboard: closed on VT 2, announced again on VT 1"
fi
ctl wait "$out" 20 >/dev/null || { grep -B30 -A30 "session active again: every" "$TEST_DIR/stderr" | cut -c1-220; fail "no frames after coming back to VT 1"; }
master_free && fail "the card's master is free after coming back"
wait_until 30 'lit >"$TEST_DIR/lit.out"' || fail "drm_info shows nothing lit after coming back"
cat "$TEST_DIR/lit.out"
n=$(grep -c 'restored in one modeset' "$TEST_DIR/stderr" || true)
[ "$n" -eq 1 ] || fail "$n restores, expected 1"

touch "$TEST_DIR/done"
STATUS=0
wait $tinywl_pid || STATUS=$?
grep 'tinywl: stats' "$TEST_DIR/stdout" || true
check_no_sanitizer_report
[ "$STATUS" -eq 0 ] || { tail -n 30 "$TEST_DIR/stderr"; fail "tinywl exited with $STATUS"; }
grep -q '^tinywl: buffer_locks=0$' "$TEST_DIR/stdout" || fail "buffer locks left at exit"
# The seat may take master away before it says so (seatd does): a commit
# refused then is no error, and nothing was turned off.
if grep -E '\[ERROR\].*\[(\.\./)+([^] ]*/)?(backend|render)/' "$TEST_DIR/stderr"; then
	fail "wlatomic logged errors around the VT switch"
fi
refused=$(sed -n "s/^tinywl: stats output=$out .* refused=\\([0-9]*\\) .*/\\1/p" "$TEST_DIR/stdout")
echo "commits refused while away: $refused"
# Sequence numbers follow the clock across the switch, also where the
# driver counts the refresh cycles itself (cirrus, qxl: no vblank events).
seq_errors=$(sed -n "s/^tinywl: stats output=$out .* seq_errors=\\([^ ]*\\) .*/\\1/p" "$TEST_DIR/stdout")
[ "$seq_errors" = 0 ] || { grep -v "before its commit returned" "$TEST_DIR/stderr" |
	grep -B12 -A2 "does not match the clock" | cut -c1-240
	fail "$out: seq_errors=$seq_errors (sequence numbers off the clock)"; }
grep -E 'session|restore' "$TEST_DIR/stderr" | grep -v DEBUG | head -n 8
echo "PASS"
