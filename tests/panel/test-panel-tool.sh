#!/bin/bash
# wla-panel-tool: a dry-run cycle prints every step in order with its lines,
# values and a time that honours the configured delays; a missing chip is
# one error line naming it and exit status 1; bad usage is status 2.
# Usage: test-panel-tool.sh WLA_PANEL_TOOL
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
TOOL=$1
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*"; [ -f "$DIR/out" ] && sed 's/^/  | /' "$DIR/out"; exit 1; }

panel_conf DSI-1 800x480 wla-test-no-such-chip 3 4 5 20 30 10 40 >"$DIR/panel.conf"

"$TOOL" "$DIR/panel.conf" cycle --hold 0 --dry-run >"$DIR/out" 2>"$DIR/err" ||
	fail "dry-run cycle exited with $?"
want="request chip 'wla-test-no-such-chip' as 'wlatomic:DSI-1': enable=0 (3:low) reset=1 (4:low, active-low) backlight=0 (5:low)
set enable=1 (3:high)
set reset=0 (4:high, active-low)
event on:
set backlight=1 (5:high)
power-off requested
set backlight=0 (5:low)
event blanked:
set reset=1 (4:low, active-low)
set enable=0 (3:low)
event off
release"
got=$(grep ' ms  ' "$DIR/out" | sed 's/^ *[0-9.]* ms  //' || true)
i=0
while IFS= read -r pattern; do
	i=$((i + 1))
	line=$(sed -n "${i}p" <<<"$got")
	[[ $line == "$pattern"* ]] || fail "line $i: expected '$pattern', got '$line'"
done <<<"$want"
[ "$(wc -l <<<"$got")" -eq 12 ] || fail "expected 12 timed lines"

# Times in ms: reset=0 at least 20 after enable=1, ON at least 30 after it,
# blanked at least 10 after backlight=0, off at least 40 after enable=0.
t() { grep ' ms  ' "$DIR/out" | sed -n "${1}p" | awk '{print $1}'; }
ge() { awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { exit !(b - a >= d) }'; }
ge "$(t 2)" "$(t 3)" 20 || fail "prepare delay not honoured"
ge "$(t 3)" "$(t 4)" 30 || fail "enable delay not honoured"
ge "$(t 7)" "$(t 8)" 10 || fail "disable delay not honoured"
ge "$(t 10)" "$(t 11)" 40 || fail "unprepare delay not honoured"

set +e
"$TOOL" "$DIR/panel.conf" on >"$DIR/out" 2>"$DIR/err"
status=$?
set -e
[ $status -eq 1 ] || fail "missing chip: exit status $status, expected 1"
[ "$(grep -c . "$DIR/err")" -eq 1 ] || fail "missing chip: expected one error line"
grep -q "panel DSI-1: chip 'wla-test-no-such-chip'.*No such file or directory" "$DIR/err" ||
	fail "missing chip: the error line does not name the chip: $(cat "$DIR/err")"

set +e
"$TOOL" "$DIR/panel.conf" sideways >/dev/null 2>&1
status=$?
set -e
[ $status -eq 2 ] || fail "bad usage: exit status $status, expected 2"
echo PASS
