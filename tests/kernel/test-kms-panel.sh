#!/bin/bash
# Run in the guest (vkms and a gpio-sim chip "panel-gpio"): tinywl on the
# KMS driver with a panel on the simulated chip, through the real libgpiod
# provider. While it runs the lines read back powered and lit and gpioinfo
# names wlatomic's consumer; the log tells the order against the kernel's
# page-flip events: the CRTC the console left lit turned off first, the
# panel's supply before the CRTC starts, the
# backlight only after the first page-flip event, and at exit the
# backlight off before the CRTC stops and the supply after.
# Usage: test-kms-panel.sh TINYWL_MEASURED PATTERN_CLIENT
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
TINYWL=$1 CLIENT=$2
setup
[ -e /dev/dri/card0 ] || skip "no /dev/dri/card0: run through run-guest.sh"
chip=$(gpiodetect 2>/dev/null | awk '/\[panel-gpio\]/ { print $1; exit }' || true)
[ -n "$chip" ] || skip "no gpio-sim chip labelled panel-gpio"
value() { cat "/sys/bus/gpio/devices/$chip/sim_gpio$1/value"; }
TINYWL_TIMEOUT=150

{
	echo 'driver = kms'
	panel_conf Virtual-1 1024x768@60 panel-gpio 0 1 2 20 10 15 5
} >"$TEST_DIR/panel.conf"
export WLA_CONFIG="$TEST_DIR/panel.conf" WLR_RENDERER=pixman WLA_CONTROL=off

# Sample the lines while the compositor runs (it exits after 150 frames).
"$TINYWL" -v -s "$(shell_quote "$CLIENT") --frames 2000" --exit-after-frames 150 \
	>"$TEST_DIR/stdout" 2>"$TEST_DIR/stderr" &
pid=$!
lit=false
wait_until 30 '[ "$(value 2)" = 1 ]' && lit=true
running_enable=$(value 0) running_backlight=$(value 2)
info=$(gpioinfo panel-gpio 2>&1 || true)
STATUS=0
wait "$pid" || STATUS=$?
check_no_sanitizer_report
echo "while running: enable=$running_enable backlight=$running_backlight lit=$lit"
printf '%s\n' "$info" | sed -n '1,4p'
[ "$STATUS" -eq 0 ] || { tail -n 40 "$TEST_DIR/stderr"; fail "tinywl exited with $STATUS"; }
$lit || fail "the backlight line never read 1"
[ "$running_enable" = 1 ] || fail "the enable line read $running_enable while lit"
printf '%s\n' "$info" | grep -E 'line +0:' | grep -q '"wlatomic:Virtual-1"' ||
	fail "gpioinfo does not name wlatomic:Virtual-1 as the consumer of line 0"
# Released at exit: nobody holds the lines.
gpioinfo panel-gpio | grep -E 'line +0:' | grep -q unused || fail "line 0 still held after exit"

# The story: GPIO sets, the CRTC, the first page-flip event, in log order.
grep -hE 'panel gpio: chip [a-z0-9]+: set|crtc-[0-9]+: (enabled|disabled)|first page-flip event' \
	"$TEST_DIR/stderr" | sed -E 's/^.*(panel gpio|kms \/dev)/\1/' >"$TEST_DIR/story"
cat "$TEST_DIR/story"
line_of() { grep -nE "$1" "$TEST_DIR/story" | head -n 1 | cut -d: -f1; }
last_of() { grep -nE "$1" "$TEST_DIR/story" | tail -n 1 | cut -d: -f1; }
first_set=$(line_of 'set ')
enabled=$(line_of ': enabled ')
flip=$(line_of 'first page-flip event')
lit_at=$(line_of 'set .*2=1')
dark_at=$(line_of 'set .*2=0')
# The last: the console's CRTC, lit at boot, is turned off first (the
# panel is ours to power up in order).
disabled=$(last_of ': disabled')
last_set=$(last_of 'set ')
for v in first_set enabled flip lit_at dark_at disabled last_set; do
	[ -n "${!v}" ] || fail "no '$v' step in the log"
done
[ "$first_set" -lt "$enabled" ] || fail "the CRTC started before the panel's supply"
[ "$flip" -lt "$lit_at" ] || fail "the backlight came on before the first page-flip event"
[ "$enabled" -lt "$flip" ] || fail "a page-flip event before the CRTC was enabled"
[ "$dark_at" -lt "$disabled" ] || fail "the CRTC stopped before the backlight went off"
[ "$disabled" -lt "$last_set" ] || fail "the supply went off before the CRTC stopped"
grep -q 'output Virtual-1: lit at start on crtc-[0-9]*, turned off: its panel panel-gpio powers up in order' \
	"$TEST_DIR/stderr" || fail "the console's lit CRTC was not turned off for the panel"
[ "$(line_of ': disabled')" -lt "$first_set" ] ||
	fail "the console's CRTC was not off before the panel's supply came on"
grep -q '^tinywl: buffer_locks=0$' "$TEST_DIR/stdout" || fail "buffer locks left at exit"
echo "PASS"
