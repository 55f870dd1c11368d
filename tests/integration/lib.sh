# Helpers shared by the integration scripts; sourced, not run.
# Every test gets a private XDG_RUNTIME_DIR and a scrubbed WLA_* environment
# so that neither the developer's session nor another test can leak in.

# Seconds a single tinywl run may take before it counts as hung.
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
	timeout -k 5 "$TINYWL_TIMEOUT" "$tinywl" "$@" >"$TEST_DIR/stdout" \
		2>"$TEST_DIR/stderr" || STATUS=$?
	echo "--- tinywl $* (exit status $STATUS)"
	echo "--- stdout"
	cat "$TEST_DIR/stdout"
	echo "--- stderr"
	cat "$TEST_DIR/stderr"
	echo "---"
	if [ "$STATUS" -eq 124 ] || [ "$STATUS" -eq 137 ]; then
		fail "tinywl did not finish within ${TINYWL_TIMEOUT}s"
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

# poll STEPS CONDITION: evaluate the shell CONDITION (a string, evaluated
# afresh each time) every 50 ms until it holds, STEPS times, then once more;
# its last status.
poll() {
	local steps=$1
	shift
	for _ in $(seq "$steps"); do
		eval "$1" && return 0
		sleep 0.05
	done
	eval "$1"
}

# A command line for tinywl -s: the path quoted for /bin/sh.
shell_quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}
