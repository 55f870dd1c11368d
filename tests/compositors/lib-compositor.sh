# Helpers for running unmodified compositors (sway, cage) on wlatomic through
# the preload module; sourced after ../integration/lib.sh.
# sway refuses to run as root: compositors and clients run as an
# unprivileged user, created here when missing (CI runs as root).

TEST_USER=wlatomic-test

# preload_case CASE PRELOAD WLATOMIC_CTL PNG_INFO: the arguments of a script
# that runs a compositor through the preload module (test-sway.sh,
# test-cage.sh) as CASE, PRELOAD, CTL and PNGINFO, then setup.
preload_case() {
	CASE=$1 PRELOAD=$(realpath "$2") CTL=$(realpath "$3") PNGINFO=$(realpath "$4")
	setup
}

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
	trap 'status=$?; stop_compositor; [ $status = 0 ] || [ $status = 77 ] || compositor_log
		signal_run KILL || true; rm -rf "$TEST_DIR" "$RUN"' EXIT
}

# run_pids [NAME]: the test user's processes of this run (named NAME, an
# extended regex of whole names, if given). Runs of other build trees use
# the same user at the same time: a process is this run's when its
# XDG_RUNTIME_DIR is $RUN, which every process started here gets.
run_pids() {
	local pid
	for pid in $(pgrep -u "$TEST_USER" ${1:+-x "$1"}); do
		tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
			grep -qxF "XDG_RUNTIME_DIR=$RUN" && echo "$pid"
	done
	return 0
}

# signal_run SIGNAL [NAME]: send SIGNAL to this run's processes (of NAME);
# false if there were none.
signal_run() {
	local pids
	pids=$(run_pids "${2:-}")
	[ -n "$pids" ] || return 1
	# shellcheck disable=SC2086 # one word per pid
	kill -"$1" $pids 2>/dev/null || true
}

# compositor_log: the end of the compositor's stderr, for a failed test.
compositor_log() {
	if [ -n "${COMPOSITOR:-}" ] && [ -s "$TEST_DIR/$COMPOSITOR.err" ]; then
		echo "--- the last lines of $COMPOSITOR's stderr" >&2
		tail -n 40 "$TEST_DIR/$COMPOSITOR.err" | cut -c1-300 >&2
	fi
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
	setpriv --reuid="$TEST_USER" --regid="${TEST_GROUP:-$TEST_USER}" --init-groups \
		env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$(getent passwd "$TEST_USER" | cut -d: -f6)" \
		XDG_RUNTIME_DIR="$RUN" WAYLAND_DISPLAY="${WAYLAND_DISPLAY_NAME:-wayland-1}" \
		WLA_CONTROL="$WLA_CONTROL" SWAYSOCK="${SWAYSOCK:-}" LANG=C.UTF-8 "$@"
}

# start_compositor NAME CMD...: start CMD as the test user with the preload
# module and WLR_BACKENDS=wlatomic (plus WLA_* variables exported by the
# test and the VAR=VALUE words of the array COMPOSITOR_ENV); wait for its
# Wayland and control sockets.
start_compositor() {
	local name=$1
	shift
	COMPOSITOR=$name
	local wla_env=()
	local v
	for v in WLA_OUTPUTS WLA_CONFIG WLA_FLIP_DEPTH WLA_FLIP_POLICY WLA_GPIO_DRY_RUN \
			WLA_CURSOR_SIZE WLA_OVERLAY_PLANES WLA_VIRTUAL_INPUT WLA_VIRTUAL_TOUCH \
			WLA_KEYBOARD_LAYOUT; do
		if [ -n "${!v:-}" ]; then
			wla_env+=("$v=${!v}")
		fi
	done
	setpriv --reuid="$TEST_USER" --regid="${TEST_GROUP:-$TEST_USER}" --init-groups \
		env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$(getent passwd "$TEST_USER" | cut -d: -f6)" \
		XDG_RUNTIME_DIR="$RUN" LANG=C.UTF-8 LD_PRELOAD="$(preload_list)" \
		LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0" \
		UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		WLR_BACKENDS="${COMPOSITOR_BACKENDS:-wlatomic}" WLR_RENDERER=pixman \
		WLA_CONTROL="$WLA_CONTROL" "${wla_env[@]}" ${COMPOSITOR_ENV[@]+"${COMPOSITOR_ENV[@]}"} \
		timeout -k 5 "$(scaled "${COMPOSITOR_TIMEOUT:-60}")" "$@" \
		>"$TEST_DIR/$name.out" 2>"$TEST_DIR/$name.err" &
	COMPOSITOR_PID=$!
	wait_until "${COMPOSITOR_START_WAIT:-10}" '{ [ -S "$WLA_CONTROL" ] && ls "$RUN"/wayland-* >/dev/null 2>&1; } ||
		! kill -0 "$COMPOSITOR_PID" 2>/dev/null' || true
	if ! [ -S "$WLA_CONTROL" ] && [ -z "${NO_CONTROL:-}" ]; then
		cat "$TEST_DIR/$name.err"
		fail "$name did not start on wlatomic (no control socket)"
	fi
	# NO_CONTROL: a start expected to be refused has no display either.
	if [ -z "${NO_CONTROL:-}" ] || ls "$RUN"/wayland-* >/dev/null 2>&1; then
		WAYLAND_DISPLAY_NAME=$(basename "$(ls "$RUN"/wayland-* | grep -v lock | head -n 1)")
		export WAYLAND_DISPLAY_NAME
	fi
}

# stop_compositor: one SIGTERM to the compositor, and wait for it to exit.
# Not to timeout(1) ($COMPOSITOR_PID): it passes the signal on to its
# child and to its process group, and sway 1.7 dies of a second SIGTERM
# halfway through its clean exit.
stop_compositor() {
	if [ -n "${COMPOSITOR_PID:-}" ]; then
		pkill -TERM -P "$COMPOSITOR_PID" 2>/dev/null || kill "$COMPOSITOR_PID" 2>/dev/null || true
		# A compositor caught before its signal handlers, or stuck in
		# its exit, must not hold the test up: killed after 30 s.
		wait_until 30 '! kill -0 "$COMPOSITOR_PID" 2>/dev/null' ||
			{ echo "$COMPOSITOR did not exit on SIGTERM: killed" >&2;
			pkill -KILL -P "$COMPOSITOR_PID" 2>/dev/null || true; }
		wait "$COMPOSITOR_PID" 2>/dev/null || true
		COMPOSITOR_PID=
	fi
}

# ctl ARGS...: wlatomic-ctl as the compositor's user, its deadline for a
# reply (30 s by default) scaled.
ctl() {
	as_user "$CTL" -s "$WLA_CONTROL" -t "$(scaled 30)" "$@"
}

# list_field OUTPUT FIELD: a field of OUTPUT's line in the control socket's list.
list_field() {
	ctl list | grep "^output $1 " | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# wla_errors FILE: error lines from wlatomic (library or preload module):
# its files are named as the compiler had them, from the build tree
# (../backend/..., or ../../src/backend/... from a build tree elsewhere);
# wlroots names its own from its source tree (its session's:
# [backend/session/session.c:N]), libseat from its own
# ([libseat/backend/logind.c:N]), neither with ../ before.
wla_errors() {
	grep -E '\[ERROR\].*(\[(\.\./)+([^] ]*/)?(backend|render)/|\[wlatomic-preload\])' "$1" || true
}

# animate: a foot window that redraws every few milliseconds, so that the
# compositor presents a frame at every vblank (sway draws only damage).
animate() {
	as_user foot --title wla-animate sh -c 'while :; do date +%s.%N; sleep 0.004; done' \
		>"$TEST_DIR/animate.log" 2>&1 &
}

# stop_clients NAME...: end this run's processes of those names and
# wait until they are gone ($! of a background as_user is a subshell's).
stop_clients() {
	local name
	for name in "$@"; do
		signal_run TERM "$name" || true
	done
	_stop_pattern=$(IFS='|'; echo "$*")
	wait_until 5 '[ -z "$(run_pids "$_stop_pattern")" ]' ||
		fail "$* did not end"
}

# list_line OUTPUT: OUTPUT's line of the control socket's list (one request,
# so its fields are one snapshot); field LINE NAME: a field of such a line.
list_line() {
	ctl list | grep "^output $1 " || true
}
field() {
	printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# buffer_locks: the backend's buffer locks, from the end of the list.
buffer_locks() {
	ctl list | tail -n 1 | sed -n 's/.*buffer_locks=//p'
}

# wait_idle OUTPUT: until OUTPUT presents no frame for a quarter second (the
# compositor has drawn what it had to; the quarter second scaled), 10 s at
# most.
wait_idle() {
	_idle_frames=$(list_field "$1" frames_presented)
	_idle_since=$(_wla_now_us)
	_idle_output=$1
	wait_until 10 '_idle_step "$_idle_output"' || fail "$1 still presents frames after $(scaled 10) s"
}
_idle_step() {
	local now frames
	now=$(_wla_now_us)
	frames=$(list_field "$1" frames_presented)
	if [ "$frames" != "$_idle_frames" ]; then
		_idle_frames=$frames _idle_since=$now
		return 1
	fi
	awk -v d="$((now - _idle_since))" -v k="$WLA_TEST_TIME_SCALE" \
		'BEGIN { exit !(d >= 250000 * k) }'
}

# start_presentation LOG: weston-presentation-shm as the test user, its
# lines in LOG (its stderr in LOG.err: written unbuffered, it would cut a
# line of the buffered stdout at exit); finish_presentation LOG FRAMES: wait
# until LOG has FRAMES per-frame lines (20 s at most: a count, not a time),
# then end it with SIGINT, its clean exit.
start_presentation() {
	as_user weston-presentation-shm >"$1" 2>"$1.err" &
	_pres_pid=$!
}
finish_presentation() {
	_pres_log=$1 _pres_frames=$2
	wait_until 20 '[ "$(grep -c ": f2c" "$_pres_log")" -ge "$_pres_frames" ]' || true
	# $! is the subshell of as_user's background job; the client its child.
	pkill -INT -P "$_pres_pid" 2>/dev/null || true
	wait "$_pres_pid" || true
}

# solid_png PATH W H RRGGBB: a PNG of one colour, to compare captures with.
solid_png() {
	python3 - "$@" <<'PY'
import struct, sys, zlib
path, w, h, rgb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), bytes.fromhex(sys.argv[4])
def chunk(kind, data):
    return (struct.pack('>I', len(data)) + kind + data +
            struct.pack('>I', zlib.crc32(kind + data)))
with open(path, 'wb') as f:
    f.write(b'\x89PNG\r\n\x1a\n' +
            chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) +
            chunk(b'IDAT', zlib.compress((b'\0' + rgb * w) * h)) + chunk(b'IEND', b''))
PY
}

# differ A B [X,Y,W,H]: pixels of two same-sized PNGs whose colours differ
# (outside the rectangle if one is given).
differ() {
	local out
	out=$("$PNGINFO" "$@") || fail "png-info $*: $out"
	case $out in
	differ=*) printf '%s\n' "${out#differ=}" ;;
	*) fail "png-info $*: $out" ;;
	esac
}

# check_presentation LOG PERIOD_NS MIN_FRAMES: weston-presentation-shm's
# per-frame lines in LOG ("N: f2c .. p2p U us, t2p .., [FLAGS], seq S")
# show presented feedback from the display: at least MIN_FRAMES frames,
# each flagged vsync, hardware clock and hardware completion; the interval
# between two frames is the period times their sequence difference (to the
# microsecond it is printed in); the sequence goes up by one per frame
# (a frame the compositor made late now and then on a loaded machine is
# allowed: 1 in 50, times WLA_TEST_TIME_SCALE for sanitized builds, never
# more than 1 in 10, so that no scale hides a backend dropping every tenth
# vblank or more often); no frame is
# discarded once one was presented. Prints a summary.
check_presentation() {
	python3 - "$@" "$WLA_TEST_TIME_SCALE" <<'PY' || fail "weston-presentation-shm's feedback: see above"
import re, sys
path, period_ns, min_frames = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
scale = float(sys.argv[4])
line_re = re.compile(r'\s*(\d+): f2c\s+-?\d+ ms, c2p\s+-?\d+ ms, f2p\s+-?\d+ ms, '
                     r'p2p\s+(\d+) us, t2p\s+-?\d+, \[([a-z_]{4})\], seq (\d+)')
frames, discarded_late, problems = [], 0, []
with open(path, errors='replace') as f:
    for line in f:
        m = line_re.fullmatch(line.rstrip('\n'))
        if m:
            frames.append((int(m[1]), int(m[2]), m[3], int(m[4])))
        elif line.startswith('discarded') and frames:
            discarded_late += 1
if len(frames) < min_frames:
    sys.exit(f'FAIL: {len(frames)} presented frames, expected at least {min_frames}')
skips = 0
for i, (commit, p2p, flags, seq) in enumerate(frames):
    if flags[:3] != 'sce':
        problems.append(f'frame {commit}: flags [{flags}], expected vsync, hw clock, hw completion')
    if i == 0:
        continue
    prev_commit, _, _, prev_seq = frames[i - 1]
    step = seq - prev_seq
    if commit <= prev_commit or step < 1:
        problems.append(f'frame {commit} seq {seq} after frame {prev_commit} seq {prev_seq}')
        continue
    skips += step != 1
    want_us = step * period_ns / 1000
    if abs(p2p - want_us) > 1:
        problems.append(f'frame {commit}: p2p {p2p} us after {step} vblank(s) of {period_ns} ns')
allowed_skips = min(len(frames) // 10, int(len(frames) * scale) // 50)
if skips > allowed_skips:
    problems.append(f'{skips} of {len(frames)} frames came later than the next vblank '
                    f'(allowed {allowed_skips}, WLA_TEST_TIME_SCALE={scale:g})')
if discarded_late:
    problems.append(f'{discarded_late} frames discarded after the first presented one')
for p in problems[:10]:
    print('FAIL:', p, file=sys.stderr)
if problems:
    sys.exit(1)
print(f'presentation: {len(frames)} frames, seq {frames[0][3]}..{frames[-1][3]}, '
      f'+1 for all but {skips}, every interval the period ({period_ns} ns) per vblank')
PY
}
