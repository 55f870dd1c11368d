#!/bin/bash
# Input through wlatomic's virtual devices, in tinywl (built like wlroots'
# tinywl: focus on map, Alt key bindings) with wla-input-client windows,
# which print every event they receive.
# Usage: test-input.sh CASE TINYWL_MEASURED INPUT_CLIENT CTL
#   keyboard-by-default   the default keyboard exists: a mapped window gets
#                         keyboard focus, tinywl keeps running
#   script-typing         --input-script types text (Shift where needed)
#   click-focus           pointer motion and clicks move focus between windows
#   keybindings           Alt+F1 cycles the focus, Alt+Escape quits
#   touch                 touch points reach the window at output coordinates
#   control-socket        wlatomic-ctl types, points and replays a script
#   bad-script            bad script lines: one error naming the line, nothing sent
#   bad-devices           real devices that cannot be used: one error each
#   virtual-input-off     no virtual devices: no keyboard, a clear error
set -euo pipefail
. "$(dirname "$0")/lib.sh"
CASE=$1 TINYWL=$(realpath "$2") CLIENT=$(realpath "$3") CTL=$(realpath "$4")
setup
[ "${WLA_TEST_SANITIZED:-0}" = 1 ] && TINYWL_TIMEOUT=60

# Output lines of client NAME (its events), from tinywl's stdout.
events() {
	grep "^$1 " "$TEST_DIR/stdout" || true
}

# How many clients tinywl has focused (it focuses each window it maps).
# Lines of different clients interleave in no particular order: each
# client's own lines are in order, nothing more.
focused_clients() {
	[ -f "$TEST_DIR/stdout" ] || { echo 0; return; }
	sed -n 's/^\([A-Z]\) keyboard enter$/\1/p' "$TEST_DIR/stdout" | sort -u | wc -l
}

other() {
	[ "$1" = A ] && echo B || echo A
}

script() {
	cat >"$TEST_DIR/script.txt"
	echo "$TEST_DIR/script.txt"
}

client() {
	printf '%s --name %s' "$(shell_quote "$CLIENT")" "$1"
	shift
	printf ' %s' "$@"
}

case $CASE in
keyboard-by-default)
	# wlroots' tinywl dereferences the seat's keyboard when a window maps;
	# ours asks for it the same way: with no keyboard it gets NULL.
	run_tinywl "$TINYWL" -s "$(client A --timeout "$(scaled 3)")"
	expect_status 0
	events A | grep -qx 'A keyboard enter' || fail "the window got no keyboard focus"
	events A | grep -qx 'A mapped' || fail "the window did not map"
	;;

script-typing)
	s=$(script <<-'EOF'
	# a comment, then blank lines are skipped

	at 50ms key KEY_ENTER
	at 100ms type Hello, World!
	EOF
	)
	run_tinywl "$TINYWL" --input-script "$s" \
		-s "$(client A --exit-on-text "$(shell_quote 'Hello, World!')" --timeout "$(scaled 20)")"
	expect_status 0
	events A | grep -qx 'A text "Hello, World!"' || fail "the text did not arrive whole"
	events A | grep -qx 'A key 28 pressed text=""' || fail "KEY_ENTER did not arrive"
	# H is Shift+h: the modifier is pressed before and released after.
	events A | grep -A1 -x 'A key 42 pressed text=""' | grep -q 'A key 35 pressed text="H"' ||
		fail "H was not typed as Shift+h"
	grep -q '^tinywl: input script: script .*script.txt: 2 events sent$' "$TEST_DIR/stdout" ||
		fail "tinywl did not report the script done"
	;;

click-focus)
	# Windows cascade 40 px from --window-pos: the first is alone at
	# 110,110, the second at 390,390. The script goes through the control
	# socket once both windows mapped.
	export WLA_CONTROL=$TEST_DIR/ctl
	s=$(script <<-'EOF'
	at 100ms move Virtual-1 110,110
	click left
	type 1
	at 300ms move Virtual-1 390,390
	click left
	type 2
	at 500ms move-by -270,-270
	button left down
	button left up
	type 3
	EOF
	)
	"$TINYWL" --window-pos 100,100 \
		-s "$(client A --timeout "$(scaled 30)") & $(client B --timeout "$(scaled 30)"); wait" \
		>"$TEST_DIR/stdout" 2>"$TEST_DIR/stderr" &
	pid=$!
	# On a failure, what the clients and tinywl said.
	trap 'status=$?; kill $pid 2>/dev/null || true
		[ $status = 0 ] || cat "$TEST_DIR/stdout" "$TEST_DIR/stderr"; rm -rf "$TEST_DIR"' EXIT
	wait_until 20 '[ "$(focused_clients)" = 2 ]' || fail "two windows did not map"
	out=$("$CTL" -s "$WLA_CONTROL" script "$s" 2>&1) || fail "script: $out"
	wait_until 10 "events A | grep -q 'text \"2\"' || events B | grep -q 'text \"2\"'" || true
	wait_until 10 "events A | grep -q 'text \"13\"' || events B | grep -q 'text \"13\"'" || true
	kill $pid
	wait $pid || true
	check_no_sanitizer_report
	# The first window mapped is the one 110,110 (its 10,10) is on.
	first=$(sed -n 's/^\([A-Z]\) pointer enter 10,10$/\1/p' "$TEST_DIR/stdout" | head -n 1)
	[ -n "$first" ] || fail "no window under the pointer at 110,110"
	second=$(other "$first")
	events "$first" | grep -qx "$first text \"13\"" ||
		fail "the first window ($first) did not get 1 and 3 after clicks on it"
	events "$second" | grep -qx "$second text \"2\"" ||
		fail "the second window ($second) did not get 2 after a click on it"
	events "$first" | grep -qx "$first pointer enter 10,10" ||
		fail "the pointer did not enter the first window at 10,10"
	events "$first" | grep -qxE "$first pointer (enter|motion) 20,20" ||
		fail "relative motion did not bring the pointer back to the first window at 20,20"
	events "$first" | grep -q "^$first button 272 pressed" || fail "no left button press"
	;;

keybindings)
	# Alt+F1 gives the focus to the window focused longest ago (the first),
	# and the keys typed go there; Alt+Escape ends tinywl, with status 0.
	export WLA_CONTROL=$TEST_DIR/ctl
	"$TINYWL" -s "$(client A --timeout "$(scaled 30)") & $(client B --timeout "$(scaled 30)"); wait" \
		>"$TEST_DIR/stdout" 2>"$TEST_DIR/stderr" &
	pid=$!
	trap 'status=$?; kill $pid 2>/dev/null || true
		[ $status = 0 ] || cat "$TEST_DIR/stdout" "$TEST_DIR/stderr"; rm -rf "$TEST_DIR"' EXIT
	wait_until 20 '[ "$(focused_clients)" = 2 ]' || fail "two windows did not map"
	printf '%s\n' 'key KEY_LEFTALT down' 'key KEY_F1' 'key KEY_LEFTALT up' 'type x' \
		>"$TEST_DIR/s.txt"
	"$CTL" -s "$WLA_CONTROL" script "$TEST_DIR/s.txt" >/dev/null 2>&1 || true
	# Alt+Escape once a window printed the x (tinywl's exit ends the
	# clients, and a client a loaded machine had not run yet lost it).
	wait_until 10 "grep -q '^[AB] text \"x\"' '$TEST_DIR/stdout'" || true
	printf '%s\n' 'key KEY_LEFTALT down' 'key KEY_ESC' 'key KEY_LEFTALT up' >"$TEST_DIR/s.txt"
	"$CTL" -s "$WLA_CONTROL" script "$TEST_DIR/s.txt" >/dev/null 2>&1 || true
	timeout "$(scaled 20)" tail --pid=$pid -f /dev/null || fail "Alt+Escape did not end tinywl"
	wait $pid || fail "tinywl exited with status $? after Alt+Escape"
	# The window focused before Alt+F1 got the Alt press; the other one,
	# focused longest ago, must get the focus and the x.
	before=$(sed -n 's/^\([A-Z]\) key 56 pressed .*/\1/p' "$TEST_DIR/stdout" | head -n 1)
	[ -n "$before" ] || fail "no window had the focus when Alt went down"
	target=$(other "$before")
	events "$target" | grep -qx "$target text \"x\"" ||
		fail "the window focused longest ago ($target) did not get the focus and the x after Alt+F1"
	if events "$before" | grep -q ' text '; then
		fail "the window focused before Alt+F1 ($before) got text"
	fi
	if grep -q ' key 59 pressed' "$TEST_DIR/stdout"; then
		fail "a client saw F1, which tinywl bound"
	fi
	;;

touch)
	export WLA_VIRTUAL_TOUCH=Virtual-1
	s=$(script <<-'EOF'
	at 100ms touch 0 down 150,170
	touch 1 down 300,300
	at 150ms touch 0 motion 160,180
	at 200ms touch 0 up
	touch 1 up
	EOF
	)
	run_tinywl "$TINYWL" --window-pos 100,100 --input-script "$s" -s "$(client A --timeout "$(scaled 3)")"
	expect_status 0
	events A | grep -qx 'A touch down 0 50,70' || fail "touch 0 did not go down at 50,70"
	events A | grep -qx 'A touch motion 0 60,80' || fail "touch 0 did not move to 60,80"
	events A | grep -qx 'A touch down 1 200,200' || fail "touch 1 did not go down at 200,200"
	events A | grep -qx 'A touch up 0' || fail "touch 0 did not go up"
	events A | grep -qx 'A touch up 1' || fail "touch 1 did not go up"
	;;

control-socket)
	export WLA_CONTROL=$TEST_DIR/ctl WLA_VIRTUAL_TOUCH=Virtual-1
	"$TINYWL" --window-pos 100,100 -s "$(client A --timeout "$(scaled 20)" --exit-on-text done)" \
		>"$TEST_DIR/stdout" 2>"$TEST_DIR/stderr" &
	pid=$!
	wait_until 20 "events A | grep -q 'keyboard enter'" || fail "the window did not get focus"
	ctl() { "$CTL" -s "$WLA_CONTROL" "$@" 2>&1; }
	[ "$(ctl type 'a  b')" = "ok type" ] || fail "type did not answer ok"
	[ "$(ctl move Virtual-1 120,130)" = "ok move" ] || fail "move did not answer ok"
	[ "$(ctl click right)" = "ok click" ] || fail "click did not answer ok"
	[ "$(ctl axis vertical 15)" = "ok axis" ] || fail "axis did not answer ok"
	[ "$(ctl touch 3 down 110,110)" = "ok touch" ] || fail "touch did not answer ok"
	[ "$(ctl touch 3 up)" = "ok touch" ] || fail "touch up did not answer ok"
	out=$(ctl key KEY_NOPE) && fail "an unknown key was accepted"
	[ "$out" = "error key: unknown key name 'KEY_NOPE' (expected an evdev name like KEY_A or KEY_ENTER)" ] ||
		fail "unknown key: $out"
	out=$(ctl move Virtual-1 1920,5) && fail "a position off the output was accepted"
	[ "$out" = "error move: position 1920,5 is off output Virtual-1 (1920x1080)" ] ||
		fail "position off the output: $out"
	out=$(ctl move Virtual-9 1,1) && fail "an unknown output was accepted"
	[ "$out" = "error move: no output named Virtual-9" ] || fail "unknown output: $out"
	out=$(ctl touch 3 up) && fail "lifting a point that is up was accepted"
	[ "$out" = "error touch point 3 is not down" ] || fail "touch up twice: $out"
	printf 'at 10ms type do\nat 20ms type ne\n' >"$TEST_DIR/s.txt"
	out=$(ctl script "$TEST_DIR/s.txt") || fail "script: $out"
	[ "$out" = "ok script s.txt: 2 events sent" ] || fail "script answered: $out"
	wait $pid || fail "tinywl exited with status $?"
	events A | grep -qx 'A text "a  bdone"' || fail "typed text: $(events A | grep text | tail -1)"
	events A | grep -qx 'A button 273 pressed' || fail "no right button press"
	events A | grep -qx 'A axis vertical 15.00' || fail "no scroll"
	events A | grep -qx 'A touch down 3 10,10' || fail "no touch down at 10,10"
	cat "$TEST_DIR/stderr"
	check_no_sanitizer_report
	;;

bad-script)
	# Each: tinywl exits 1, one error names the file and line, and nothing
	# of the lines before it was sent.
	n=0
	while IFS='|' read -r line expect; do
		n=$((n + 1))
		printf 'type abc\nat 10ms %s\n' "$line" >"$TEST_DIR/bad$n.txt"
		run_tinywl "$TINYWL" --input-script "$TEST_DIR/bad$n.txt" -s "$(client A --timeout "$(scaled 2)")"
		expect_status 1
		errors=$(grep -c 'ERROR' "$TEST_DIR/stderr" || true)
		[ "$errors" = 1 ] || fail "'$line': $errors error lines, expected 1"
		grep -qF "input: script $TEST_DIR/bad$n.txt line 2: $expect" "$TEST_DIR/stderr" ||
			fail "'$line': the error does not say '$expect'"
		if events A | grep -q ' key '; then
			fail "'$line': keys were sent before the bad line was found"
		fi
	done <<-'EOF'
	key KEY_NOPE|key: unknown key name 'KEY_NOPE'
	move Virtual-1 1920,1080|move: position 1920,1080 is off output Virtual-1 (1920x1080)
	move Nowhere-1 5,5|move: no output named Nowhere-1
	jump 5,5|unknown input 'jump'
	click left twice|click left: expected down or up after the button
	touch 0 down 5,5|touch: no virtual touch device
	type ☃|type: character 1 (U+2603) cannot be typed
	EOF
	printf 'at 100ms type a\nat 50ms type b\n' >"$TEST_DIR/order.txt"
	run_tinywl "$TINYWL" --input-script "$TEST_DIR/order.txt" -s "$(client A --timeout "$(scaled 2)")"
	expect_status 1
	grep -qF "line 2: at 50ms is before the line above (100ms)" "$TEST_DIR/stderr" ||
		fail "time going backwards was not refused"
	;;

bad-devices)
	# Real devices that cannot be used: one error each, naming the device and
	# why, and tinywl runs with what works (here: nothing, the configuration
	# named devices, so no virtual ones either).
	export WLA_INPUT_DEVICES="/dev/input/event-none;/dev/null;/etc/hostname;name:no such device*"
	run_tinywl "$TINYWL" -s "$(client A --timeout "$(scaled 2)")"
	expect_status 0
	cat "$TEST_DIR/stderr"
	[ "$(grep -c ERROR "$TEST_DIR/stderr")" = 3 ] || fail "expected 3 error lines"
	grep -q 'input: input-device /dev/input/event-none: No such file or directory' \
		"$TEST_DIR/stderr" || fail "a missing path was not named"
	grep -q 'input: input-device /dev/null: not an input device' "$TEST_DIR/stderr" ||
		fail "a character device that is not an input device was not named"
	grep -q 'input: input-device /etc/hostname: not a character device' "$TEST_DIR/stderr" ||
		fail "a regular file was not named"
	events A | grep -qx 'A mapped' || fail "the window did not map"
	if events A | grep -q 'keyboard enter'; then
		fail "a keyboard appeared from nowhere"
	fi
	;;

virtual-input-off)
	export WLA_VIRTUAL_INPUT=off WLA_CONTROL=$TEST_DIR/ctl
	"$TINYWL" -s "$(client A --timeout "$(scaled 20)")" >"$TEST_DIR/stdout" 2>"$TEST_DIR/stderr" &
	pid=$!
	wait_until 20 "events A | grep -q mapped" || fail "the window did not map"
	out=$("$CTL" -s "$WLA_CONTROL" type a 2>&1) && fail "typing without devices was accepted"
	[ "$out" = "error the virtual input devices are off (virtual-input)" ] || fail "got: $out"
	kill $pid
	wait $pid || true
	# tinywl offers a keyboard only while one exists.
	if events A | grep -q 'keyboard enter'; then
		fail "a keyboard focus came without a keyboard"
	fi
	;;

*)
	fail "unknown case $CASE"
	;;
esac
echo "PASS"
