# Helpers for running unmodified compositors (sway, cage) on wlatomic through
# the preload module; sourced after ../integration/lib.sh and setup.
# sway refuses to run as root: compositors and clients run as an
# unprivileged user, created here when missing (CI runs as root).

TEST_USER=wlatomic-test

# need_user: skip unless we can run things as $TEST_USER.
need_user() {
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	if [ "$(id -u)" -ne 0 ]; then
		skip "needs root to run the compositor as the unprivileged $TEST_USER"
	fi
	id "$TEST_USER" >/dev/null 2>&1 || useradd -m -s /bin/sh "$TEST_USER" ||
		skip "cannot create the user $TEST_USER"
	# The user's runtime dir, the compositor's socket and ours.
	RUN=$(mktemp -d /tmp/wla-comp.XXXXXX)
	chown "$TEST_USER:" "$RUN"
	chmod 0700 "$RUN"
	export WLA_CONTROL="$RUN/control"
	trap 'stop_compositor; pkill -KILL -u "$TEST_USER" 2>/dev/null || true; rm -rf "$TEST_DIR" "$RUN"' EXIT
}

# The environment a compositor and its clients get: nothing of ours but
# what is named. A sanitized build's module needs the sanitizer runtime
# loaded first in an uninstrumented compositor.
preload_list() {
	local list=""
	if [ "${WLA_TEST_SANITIZED:-0}" = 1 ]; then
		local asan ubsan
		asan=$(gcc -print-file-name=libasan.so)
		ubsan=$(gcc -print-file-name=libubsan.so)
		list="$asan:$ubsan:"
	fi
	printf '%s%s' "$list" "$PRELOAD"
}

# as_user CMD...: run CMD as the test user in the compositor's session.
as_user() {
	setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups \
		env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$(getent passwd "$TEST_USER" | cut -d: -f6)" \
		XDG_RUNTIME_DIR="$RUN" WAYLAND_DISPLAY="${WAYLAND_DISPLAY_NAME:-wayland-1}" \
		WLA_CONTROL="$WLA_CONTROL" SWAYSOCK="${SWAYSOCK:-}" LANG=C.UTF-8 "$@"
}

# start_compositor NAME CMD...: start CMD as the test user with the preload
# module and WLR_BACKENDS=wlatomic (plus WLA_* variables exported by the
# test); wait for its Wayland and control sockets.
start_compositor() {
	local name=$1
	shift
	COMPOSITOR=$name
	local wla_env=()
	local v
	for v in WLA_OUTPUTS WLA_CONFIG WLA_FLIP_DEPTH WLA_FLIP_POLICY WLA_GPIO_DRY_RUN \
			WLA_CURSOR_SIZE WLA_OVERLAY_PLANES; do
		if [ -n "${!v:-}" ]; then
			wla_env+=("$v=${!v}")
		fi
	done
	setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups \
		env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$(getent passwd "$TEST_USER" | cut -d: -f6)" \
		XDG_RUNTIME_DIR="$RUN" LANG=C.UTF-8 LD_PRELOAD="$(preload_list)" \
		LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0" \
		UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		WLR_BACKENDS="${COMPOSITOR_BACKENDS:-wlatomic}" WLR_RENDERER=pixman \
		WLA_CONTROL="$WLA_CONTROL" "${wla_env[@]}" \
		timeout -k 5 "${COMPOSITOR_TIMEOUT:-60}" "$@" \
		>"$TEST_DIR/$name.out" 2>"$TEST_DIR/$name.err" &
	COMPOSITOR_PID=$!
	local i
	for i in $(seq 200); do
		if [ -S "$WLA_CONTROL" ] && ls "$RUN"/wayland-* >/dev/null 2>&1; then
			break
		fi
		kill -0 "$COMPOSITOR_PID" 2>/dev/null || break
		sleep 0.05
	done
	if ! [ -S "$WLA_CONTROL" ] && [ -z "${NO_CONTROL:-}" ]; then
		cat "$TEST_DIR/$name.err"
		fail "$name did not start on wlatomic (no control socket)"
	fi
	WAYLAND_DISPLAY_NAME=$(basename "$(ls "$RUN"/wayland-* | grep -v lock | head -n 1)")
	export WAYLAND_DISPLAY_NAME
}

stop_compositor() {
	if [ -n "${COMPOSITOR_PID:-}" ]; then
		kill "$COMPOSITOR_PID" 2>/dev/null || true
		wait "$COMPOSITOR_PID" 2>/dev/null || true
		COMPOSITOR_PID=
	fi
}

# ctl ARGS...: wlatomic-ctl as the compositor's user.
ctl() {
	as_user "$CTL" -s "$WLA_CONTROL" "$@"
}

# list_field OUTPUT FIELD: a field of OUTPUT's line in the control socket's list.
list_field() {
	ctl list | grep "^output $1 " | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# wla_errors FILE: error lines from wlatomic (library or preload module).
wla_errors() {
	grep -E '\[ERROR\].*(\[(\.\./)*(backend|render)/|\[wlatomic-preload\])' "$1" || true
}

# animate: a foot window that redraws every few milliseconds, so that the
# compositor presents a frame at every vblank (sway draws only damage).
animate() {
	as_user foot --title wla-animate sh -c 'while :; do date +%s.%N; sleep 0.004; done' \
		>"$TEST_DIR/animate.log" 2>&1 &
}

# stop_clients NAME...: end the test user's processes of those names and
# wait until they are gone ($! of a background as_user is a subshell's).
stop_clients() {
	local name
	for name in "$@"; do
		pkill -TERM -u "$TEST_USER" -x "$name" 2>/dev/null || true
	done
	for _ in $(seq 100); do
		local left=0
		for name in "$@"; do
			pgrep -u "$TEST_USER" -x "$name" >/dev/null && left=1
		done
		[ $left = 0 ] && return 0
		sleep 0.05
	done
	fail "$* did not end"
}
