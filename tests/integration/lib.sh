# Helpers shared by the integration scripts; sourced, not run.
# Every test gets a private XDG_RUNTIME_DIR and a scrubbed WLA_* environment
# so that neither the developer's session nor another test can leak in.

# Every wait of a test is for a condition, with a deadline in seconds that
# WLA_TEST_TIME_SCALE multiplies (a factor > 0, default 1; sanitized builds
# and slow machines set it, .ci/test does for its sanitized build).
WLA_TEST_TIME_SCALE=${WLA_TEST_TIME_SCALE:-1}
if ! [[ "$WLA_TEST_TIME_SCALE" =~ ^[0-9]*\.?[0-9]+$ ]] ||
		! awk -v s="$WLA_TEST_TIME_SCALE" 'BEGIN { exit !(s > 0) }'; then
	echo "FAIL: WLA_TEST_TIME_SCALE='$WLA_TEST_TIME_SCALE': expected a number > 0" >&2
	exit 1
fi
export WLA_TEST_TIME_SCALE

# scaled SECONDS: SECONDS times the scale, rounded up to whole seconds, for
# deadlines handed to other programs (timeout(1), wlatomic-ctl -t, a
# client's --timeout).
scaled() {
	awk -v s="$1" -v k="$WLA_TEST_TIME_SCALE" \
		'BEGIN { t = s * k; n = int(t); if (n < t) n++; print n }'
}

# Seconds a single tinywl run may take before it counts as hung (scaled).
TINYWL_TIMEOUT=${TINYWL_TIMEOUT:-30}

skip() {
	echo "SKIP: $*"
	exit 77
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

setup() {
	command -v timeout >/dev/null || skip "timeout(1) is not installed"
	TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/wla-integration.XXXXXX") ||
		skip "cannot create a temporary directory"
	trap 'rm -rf "$TEST_DIR"' EXIT
	export XDG_RUNTIME_DIR="$TEST_DIR/runtime"
	mkdir -m 0700 "$XDG_RUNTIME_DIR"
	unset WAYLAND_DISPLAY WAYLAND_SOCKET DISPLAY
	unset WLA_CONFIG WLA_OUTPUTS WLA_OVERLAY_PLANES WLA_CURSOR_SIZE WLA_FLIP_DEPTH \
		WLA_FLIP_POLICY WLA_GPIO_DRY_RUN
	unset WLA_VIRTUAL_INPUT WLA_KEYBOARD_LAYOUT WLA_VIRTUAL_TOUCH WLA_TOUCH_OUTPUT \
		WLA_INPUT_DEVICES WLA_CONTROL WLA_DRIVER WLA_DRM_DEVICE
	unset WLR_BACKENDS WLR_RENDERER
}

# run_tinywl TINYWL ARGS...: runs tinywl under timeout, output in
# $TEST_DIR/stdout and $TEST_DIR/stderr, exit status in $STATUS.
run_tinywl() {
	local tinywl=$1
	shift
	STATUS=0
	timeout -k 5 "$(scaled "$TINYWL_TIMEOUT")" "$tinywl" "$@" >"$TEST_DIR/stdout" \
		2>"$TEST_DIR/stderr" || STATUS=$?
	echo "--- tinywl $* (exit status $STATUS)"
	echo "--- stdout"
	cat "$TEST_DIR/stdout"
	echo "--- stderr"
	cat "$TEST_DIR/stderr"
	echo "---"
	if [ "$STATUS" -eq 124 ] || [ "$STATUS" -eq 137 ]; then
		fail "tinywl did not finish within $(scaled "$TINYWL_TIMEOUT") s"
	fi
	if [ "$STATUS" -ge 128 ]; then
		fail "tinywl was killed by signal $((STATUS - 128))"
	fi
	check_no_sanitizer_report
}

check_no_sanitizer_report() {
	if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:' \
			"$TEST_DIR/stderr"; then
		fail "sanitizer report on stderr"
	fi
}

expect_status() {
	[ "$STATUS" -eq "$1" ] || fail "tinywl exited with status $STATUS, expected $1"
}

# stats_field OUTPUT FIELD: the value of FIELD in the stats line of OUTPUT.
stats_field() {
	local line
	line=$(grep -E "^tinywl: stats output=$1 " "$TEST_DIR/stdout" | tail -n 1) ||
		fail "no stats line for output $1"
	local value
	value=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n "s/^$2=//p")
	[ -n "$value" ] || fail "stats line for $1 has no $2: $line"
	printf '%s\n' "$value"
}

# stats_fields OUTPUT FIELD...: each FIELD of the stats line of OUTPUT into
# the shell variable of the same name; fails as stats_field does.
stats_fields() {
	local output=$1 field value
	shift
	for field in "$@"; do
		value=$(stats_field "$output" "$field")
		printf -v "$field" '%s' "$value"
	done
}

# tinywl_background TINYWL: the background colour that tinywl -h documents
# (0xRRGGBB), which a capture's checker needs too.
tinywl_background() {
	local value
	value=$("$1" -h | sed -n 's/^The background is \(0x[0-9a-f]*\)\..*/\1/p')
	[ -n "$value" ] || fail "tinywl -h does not name its background colour"
	printf '%s\n' "$value"
}

# wait_until SECONDS CONDITION: evaluate the shell CONDITION (a string,
# evaluated afresh each time, which may record what it sees) until it holds
# or SECONDS times WLA_TEST_TIME_SCALE have passed on the clock (not counted
# in steps: a slow condition does not stretch the deadline), then once more
# after the deadline; its last status. The one way a test waits.
wait_until() {
	local _wu_end
	_wu_end=$(($(_wla_now_us) + $(awk -v s="$1" -v k="$WLA_TEST_TIME_SCALE" \
		'BEGIN { printf "%.0f", s * k * 1000000 }')))
	while [ "$(_wla_now_us)" -lt "$_wu_end" ]; do
		eval "$2" && return 0
		sleep 0.05
	done
	eval "$2"
}
_wla_now_us() {
	local t=$EPOCHREALTIME
	printf '%s\n' "${t/[.,]/}"
}

# poll STEPS CONDITION: the older form (STEPS of 50 ms), still used by the
# kernel tier's scripts: wait_until with STEPS / 20 seconds.
poll() {
	wait_until "$(awk -v n="$1" 'BEGIN { printf "%g", n / 20 }')" "$2"
}

# panel_conf NAME "MODE..." CHIP ENABLE RESET BACKLIGHT PREPARE ON OFF UNPREPARE:
# the [output] section of a config that puts a panel behind output NAME (one
# mode line per MODE): GPIO lines by offset on CHIP, reset active-low, the
# simple preset, and the prepare, enable, disable and unprepare delays in ms.
panel_conf() {
	local mode
	printf '[output]\nname = %s\n' "$1"
	for mode in $2; do
		printf 'mode = %s\n' "$mode"
	done
	printf 'panel-chip = %s\n' "$3"
	printf 'panel-line = enable %s\npanel-line = reset %s active-low\npanel-line = backlight %s\n' \
		"$4" "$5" "$6"
	printf 'panel-preset = simple\n'
	printf 'panel-delay-prepare = %s\npanel-delay-enable = %s\n' "$7" "$8"
	printf 'panel-delay-disable = %s\npanel-delay-unprepare = %s\n' "$9" "${10}"
}

# A command line for tinywl -s: the path quoted for /bin/sh.
shell_quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}
