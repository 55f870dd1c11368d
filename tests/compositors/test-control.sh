#!/bin/bash
# The control socket of the example compositor (linked with libwlatomic):
# requests from wlatomic-ctl and from raw sockets, bad ones too; tinywl keeps
# running, leaks nothing and holds no buffer lock at exit.
# Usage: test-control.sh CASE TINYWL WLATOMIC_CTL PNG_INFO
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
CASE=$1 TINYWL=$(realpath "$2") CTL=$(realpath "$3") PNGINFO=$(realpath "$4")
setup
command -v weston-simple-shm >/dev/null || skip "weston-simple-shm is not installed"
command -v python3 >/dev/null || skip "python3 is not installed"
export WLA_CONTROL="$XDG_RUNTIME_DIR/control"
export CTL PNGINFO TEST_DIR
# The steps' scripts wait with lib.sh's wait_until.
LIB=$(realpath "$(dirname "$0")/../integration/lib.sh")
export LIB

# The steps run as tinywl's startup command; tinywl exits with their status.
steps() {
	cat >"$TEST_DIR/steps.sh"
	run_tinywl "$TINYWL" -s "bash $TEST_DIR/steps.sh"
	expect_status 0
	grep -qx 'tinywl: buffer_locks=0' "$TEST_DIR/stdout" || fail "buffer locks left at exit"
}

# client_steps: the same, the steps (on stdin) run with set -eu, a fail() of
# their own and weston-simple-shm showing a window until they end.
client_steps() {
	{
		cat <<'EOS'
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
weston-simple-shm & client=$!
trap 'kill $client 2>/dev/null || true' EXIT
EOS
		cat
	} >"$TEST_DIR/client-steps.sh"
	steps <"$TEST_DIR/client-steps.sh"
}

# Raw requests, for what wlatomic-ctl never sends.
cat >"$TEST_DIR/raw.py" <<'PY'
import os, socket, sys, time
path = os.environ['WLA_CONTROL']
# Deadlines are scaled as lib.sh's wait_until scales them.
scale = float(os.environ.get('WLA_TEST_TIME_SCALE', '1'))
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.settimeout(10 * scale)
    return s
def lines(s):
    data = b''
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return data.decode(errors='replace')
        data += chunk
        if data.endswith(b'\n') and (data.split(b'\n')[-2].startswith(b'ok') or
                                     data.split(b'\n')[-2].startswith(b'error')):
            return data.decode(errors='replace')
def expect(reply, want):
    last = reply.strip().split('\n')[-1]
    if not last.startswith(want):
        print(f'FAIL: reply {reply!r}, expected {want!r}', file=sys.stderr)
        sys.exit(1)
    print(last)
case = sys.argv[1]
if case == 'long':
    s = conn()
    s.sendall(b'list ' + b'x' * 2000 + b'\n')
    expect(lines(s), 'error request longer than 1023 bytes')
    try:
        rest = s.recv(100)
    except ConnectionResetError:
        rest = b''
    if rest != b'':
        sys.exit('FAIL: not closed after an over-long line')
elif case == 'nul':
    s = conn()
    s.sendall(b'li\0st\n')
    expect(lines(s), 'error request holds a NUL byte')
elif case == 'pipeline':
    # Requests behind a wait are answered in order once it ends.
    s = conn()
    s.sendall(b'wait Virtual-1 3\nbogus\nlist\n')
    data = b''
    while data.count(b'\n') < 4:
        data += s.recv(65536)
    got = [l.split(' ')[0] + ' ' + l.split(' ')[1] for l in data.decode().split('\n')
           if l.startswith(('ok', 'error'))]
    if got != ['ok presented', 'error unknown', 'ok 1']:
        sys.exit(f'FAIL: pipelined replies {got}')
    print('pipelined', got)
elif case == 'hangup':
    # Clients gone mid-request: a wait, a capture, a half line.
    for req in (b'wait Virtual-1 100000\n', b'capture Virtual-1 /nonexistent/x.png\n',
                b'plug HALF 640x48'):
        s = conn()
        s.sendall(req)
        s.close()
    # Served on: a request after them is answered (they are gone by
    # then: their hangups were ready before it).
    s = conn()
    s.sendall(b'list\n')
    expect(lines(s), 'ok 1 connectors buffer_locks=')
elif case == 'many':
    # 32 clients are served at once; more are told and closed.
    socks = [conn() for _ in range(40)]
    refused = set()
    for s in socks:
        s.setblocking(False)
    deadline = time.monotonic() + 10 * scale
    while len(refused) < 8 and time.monotonic() < deadline:
        for i, s in enumerate(socks):
            try:
                d = s.recv(100)
                if d.startswith(b'error too many clients'):
                    refused.add(i)
            except BlockingIOError:
                pass
        time.sleep(0.02)
    if len(refused) != 8 or refused != set(range(32, 40)):
        sys.exit(f'FAIL: clients {sorted(refused)} of 40 refused, expected the last 8')
    for s in socks[:32]:
        s.setblocking(True)
        s.settimeout(10)
        s.sendall(b'list\n')
    for s in socks[:32]:
        expect(lines(s), 'ok 1 connectors buffer_locks=')
    print('served 32, refused 8')
elif case == 'flood':
    # A client that sends requests and never reads its replies: the
    # compositor stops reading it once its replies pile up (memory stays
    # bounded) and serves the others meanwhile.
    s = conn()
    s.setblocking(False)
    sent, stuck_since = 0, None
    deadline = time.monotonic() + 20 * scale
    while time.monotonic() < deadline:
        try:
            sent += s.send(b'list\n' * 1000)
            stuck_since = None
        except BlockingIOError:
            stuck_since = stuck_since or time.monotonic()
            if time.monotonic() - stuck_since > 1.0 * scale:
                break
            time.sleep(0.01)
        except (BrokenPipeError, ConnectionResetError):
            break
    else:
        sys.exit('FAIL: the compositor read a client that never reads for 20 s')
    other = conn()
    other.sendall(b'list\n')
    expect(lines(other), 'ok 1 connectors buffer_locks=')
    print(f'held back after {sent} bytes of requests; others still served')
PY

case $CASE in
requests)
	client_steps <<'EOS'
"$CTL" wait Virtual-1 10 >"$TEST_DIR/r" || fail "wait: $(cat "$TEST_DIR/r")"
grep -Eq '^ok presented 10 seq=[0-9]+$' "$TEST_DIR/r" || fail "wait reply $(cat "$TEST_DIR/r")"
"$CTL" list >"$TEST_DIR/r"
grep -Eq '^output Virtual-1 status=connected output=yes enabled=1 dpms=on mode=1920x1080@60.000 modes=1920x1080@60.000 .* frames_presented=[1-9]' \
	"$TEST_DIR/r" || fail "list: $(cat "$TEST_DIR/r")"
tail -n 1 "$TEST_DIR/r" | grep -Eqx 'ok 1 connectors buffer_locks=[0-9]+' || fail "list end: $(cat "$TEST_DIR/r")"
# A capture's CRC is the PNG's.
"$CTL" capture Virtual-1 "$TEST_DIR/v1.png" >"$TEST_DIR/r" || fail "capture: $(cat "$TEST_DIR/r")"
crc=$(sed -n 's/^ok captured 1920x1080 seq=[0-9]* crc32=\([0-9a-f]*\) .*/\1/p' "$TEST_DIR/r")
[ -n "$crc" ] || fail "capture reply $(cat "$TEST_DIR/r")"
[ "$("$PNGINFO" "$TEST_DIR/v1.png" | cut -d' ' -f1,2)" = "1920x1080 crc32=$crc" ] || fail "PNG and CRC differ"
# A broken link (link-status BAD): the backend sets the output up again
# with its mode; frames go on and the screen shows what it showed.
before=$("$PNGINFO" --pixel 5,5 "$TEST_DIR/v1.png")
"$CTL" link-bad Virtual-1 | grep -qx 'ok link-status BAD on Virtual-1' || fail "link-bad"
"$CTL" wait Virtual-1 3 >/dev/null || fail "no frames after the link was trained again"
"$CTL" capture Virtual-1 "$TEST_DIR/v1b.png" >/dev/null || fail "capture after link-bad"
[ "$("$PNGINFO" --pixel 5,5 "$TEST_DIR/v1b.png")" = "$before" ] ||
	fail "after link-bad the screen shows $("$PNGINFO" --pixel 5,5 "$TEST_DIR/v1b.png"), was $before"
# Hot-plug: a new output with the modes asked for, then gone.
"$CTL" plug HP-1 1024x768@75,800x600 >"$TEST_DIR/r" || fail "plug: $(cat "$TEST_DIR/r")"
"$CTL" wait HP-1 3 >/dev/null || fail "HP-1 presents no frame"
"$CTL" list >"$TEST_DIR/r"
grep -q '^output HP-1 status=connected output=yes enabled=1 dpms=on mode=1024x768@75.000 modes=1024x768@75.000,800x600@60.000 ' \
	"$TEST_DIR/r" || fail "HP-1 in list: $(cat "$TEST_DIR/r")"
"$CTL" capture HP-1 "$TEST_DIR/hp.png" | grep -q '^ok captured 1024x768 ' || fail "HP-1 capture"
"$CTL" unplug HP-1 | grep -qx 'ok unplugged HP-1' || fail "unplug"
"$CTL" list >"$TEST_DIR/r"
grep -q HP-1 "$TEST_DIR/r" && fail "HP-1 still listed"
grep -Eqx 'ok 1 connectors buffer_locks=[0-9]+' "$TEST_DIR/r" || fail "list after unplug"
# A wait on an output that is unplugged meanwhile is told so. The wait is
# sent (the file sent says so) before another client's wait for 2 frames
# of HP-2: once that one is answered, two vblanks later, the compositor
# has read the first.
. "$LIB"
"$CTL" plug HP-2 640x480 >/dev/null
python3 -c 'import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["WLA_CONTROL"])
s.sendall(b"wait HP-2 100000\n")
open(sys.argv[1], "w").close()
data = b""
while not data.endswith(b"\n"):
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
sys.stdout.write(data.decode(errors="replace"))' "$TEST_DIR/sent" >"$TEST_DIR/w" 2>&1 &
waiter=$!
wait_until 10 '[ -e "$TEST_DIR/sent" ]' || fail "the wait on HP-2 was not sent"
"$CTL" wait HP-2 2 >/dev/null || fail "HP-2 presents no frame"
"$CTL" unplug HP-2 >/dev/null
wait $waiter
grep -q '^error wait: output HP-2 went away after' "$TEST_DIR/w" || fail "wait on unplugged: $(cat "$TEST_DIR/w")"
# wlatomic-ctl's status on an error reply.
rc=0; "$CTL" wait HP-2 1 >"$TEST_DIR/w" 2>&1 || rc=$?
grep -q '^error wait: no output named HP-2' "$TEST_DIR/w" || fail "wait on a gone output: $(cat "$TEST_DIR/w")"
[ "$rc" = 1 ] || fail "wlatomic-ctl status on error: $rc"
echo "steps done"
EOS
	grep -q "control: listening on $WLA_CONTROL" "$TEST_DIR/stderr" ||
		true # logged at info level; tinywl logs errors only
	grep -q '\[ERROR\]' "$TEST_DIR/stderr" && fail "error lines in a good run"
	[ ! -e "$WLA_CONTROL" ] || fail "the socket was left behind"
	;;
compare)
	# Golden images: an output of tinywl's without a client against
	# references made from a capture of it.
	cat >"$TEST_DIR/png.py" <<'PY'
# png.py IN DIR: IN (8-bit RGB or RGBA, as captures are) as references in
# DIR: same.png, one.png (7,5 one step off in blue), two.png (that and
# 100,70 far off) and small.png (64x48).
import struct, sys, zlib
src, out = sys.argv[1], sys.argv[2]
data = open(src, 'rb').read()
pos, idat, w = 8, b'', 0
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytearray(b''.join(line[x * bpp:x * bpp + 3] for x in range(w))))
    prev = line
def chunk(kind, body):
    return struct.pack('>I', len(body)) + kind + body + struct.pack('>I', zlib.crc32(kind + body))
def write(name, w, h, rows):
    with open(out + '/' + name, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) +
                chunk(b'IDAT', zlib.compress(b''.join(b'\0' + bytes(r) for r in rows))) +
                chunk(b'IEND', b''))
write('same.png', w, h, rows)
rows[5][3 * 7 + 2] ^= 1
write('one.png', w, h, rows)
for k in range(3):
    rows[70][3 * 100 + k] ^= 0x80
write('two.png', w, h, rows)
write('small.png', 64, 48, [bytearray(192)] * 48)
PY
	steps <<'EOS'
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$LIB"
# A small output of its own (its background, no cursor), once it shows
# what it will keep showing: two captures alike (tinywl draws it once, and
# a capture needs no new frame).
"$CTL" plug Small-1 160x120 >/dev/null || fail "plug"
crc() { "$CTL" capture Small-1 "$TEST_DIR/now.png" | sed -n 's/.* crc32=\([0-9a-f]*\) .*/\1/p'; }
last=$(crc)
wait_until 10 '[ "$(crc)" = "$last" ] || { last=$(crc); false; }' || fail "Small-1 keeps changing"
python3 "$TEST_DIR/png.py" "$TEST_DIR/now.png" "$TEST_DIR"
[ "$("$PNGINFO" "$TEST_DIR/same.png" | cut -d' ' -f1,2)" = "$("$PNGINFO" "$TEST_DIR/now.png" | cut -d' ' -f1,2)" ] ||
	fail "png.py changed the capture"
compare() { # compare WANT_STATUS ARGS...: wlatomic-ctl compare's status and reply
	local want=$1 rc=0; shift
	"$CTL" compare Small-1 "$@" >"$TEST_DIR/r" 2>&1 || rc=$?
	[ "$rc" = "$want" ] || fail "compare $*: status $rc, expected $want: $(cat "$TEST_DIR/r")"
}
compare 0 "$TEST_DIR/same.png"
grep -Eq '^ok match differing=0 compared=19200 ignored=0 max_delta=0 seq=[0-9]+$' "$TEST_DIR/r" ||
	fail "same: $(cat "$TEST_DIR/r")"
# A one-pixel change: caught at tolerance 0, passes at 1.
compare 1 "$TEST_DIR/one.png"
grep -q '^error compare: differ: 1 of 19200 pixels by more than 0 (at most 0 may), the first at 7,5; ' \
	"$TEST_DIR/r" || fail "one at 0: $(cat "$TEST_DIR/r")"
compare 0 "$TEST_DIR/one.png" --tolerance 1
grep -q 'max_delta=1 ' "$TEST_DIR/r" || fail "one at 1: $(cat "$TEST_DIR/r")"
# The far pixel: caught at tolerance 1, not where it is ignored or allowed.
cd "$TEST_DIR"
compare 1 two.png --tolerance 1 --diff diff.png
grep -q "the first at 100,70; .* diff=$TEST_DIR/diff.png\$" r || fail "two: $(cat r)"
[ "$("$PNGINFO" --pixel 100,70 diff.png)" = ff0000 ] || fail "the diff image is not red at 100,70"
[ "$("$PNGINFO" --pixel 7,5 diff.png)" != ff0000 ] || fail "the diff image is red at 7,5"
compare 0 two.png --tolerance 1 --ignore 90,60,20x20
grep -q ' ignored=400 ' r || fail "ignored: $(cat r)"
compare 0 two.png --max-pixels 2
compare 1 two.png --max-pixels 1
# Refusals: status 3, a line each, and the compositor goes on.
compare 3 small.png
grep -q '^error compare: the frame is 160x120, the reference 64x48$' r || fail "small: $(cat r)"
compare 3 /nonexistent/ref.png
grep -q '^error compare: cannot read the reference /nonexistent/ref.png' r || fail "missing: $(cat r)"
compare 3 same.png --tolerance 256
grep -q "^error compare: tolerance '256': expected 0..255" r || fail "tolerance: $(cat r)"
compare 3 same.png --max-pixels +1
grep -q "^error compare: max-pixels '+1'" r || fail "max-pixels: $(cat r)"
compare 3 same.png --ignore 1,2,0x5
grep -q "^error compare: ignore '1,2,0x5'" r || fail "ignore: $(cat r)"
compare 3 same.png --ignore 4294967296,0,10x10
grep -q "^error compare: ignore '4294967296,0,10x10'" r || fail "ignore overflow: $(cat r)"
compare 2 same.png --frobnicate 3
grep -q "unknown option '--frobnicate'" r || fail "option: $(cat r)"
compare 2 same.png --diff "my dir/d.png"
grep -q "holds a blank" r || fail "blank: $(cat r)"
compare 3 same.png --diff /nonexistent/dir/d.png
grep -q '^error compare: cannot write the diff image /nonexistent/dir/d.png' r || fail "diff: $(cat r)"
rc=0; "$CTL" compare NOPE same.png >r 2>&1 || rc=$?
[ "$rc" = 3 ] && grep -q '^error compare: no output named NOPE' r || fail "NOPE: $rc $(cat r)"
# A client gone before its answer takes the compare with it (ASan: no
# leak at exit).
python3 -c 'import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["WLA_CONTROL"])
s.sendall(("compare Small-1 %s\n" % sys.argv[1]).encode())
s.close()' "$TEST_DIR/same.png"
"$CTL" compare Small-1 "$TEST_DIR/same.png" >/dev/null || fail "no match after the bad requests"
echo "steps done"
EOS
	;;
bad)
	client_steps <<'EOS'
check() { # check WANT ARGS...: the error reply of a bad request
	local want=$1; shift
	if "$CTL" "$@" >"$TEST_DIR/r" 2>&1; then fail "'$*' succeeded"; fi
	grep -qF -- "$want" "$TEST_DIR/r" || fail "'$*' replied $(cat "$TEST_DIR/r")"
}
check "error unknown command 'frobnicate'" frobnicate
check "error list: takes no argument" list extra
check "error wait: no output named NOPE" wait NOPE 3
check "error capture: no output named NOPE" capture NOPE /tmp/x.png
check "error unplug: no connector named NOPE" unplug NOPE
check "error link-bad: no virtual connector named NOPE" link-bad NOPE
check "error link-bad: expected link-bad NAME" link-bad
check "error wait: frames 'x': expected 1..1000000" wait Virtual-1 x
check "error wait: frames '0'" wait Virtual-1 0
check "error plug: mode '12x'" plug BAD 12x
check "error plug: mode '0x0@60'" plug BAD 1920x1080,0x0@60
check "error plug: mode '640x480@0'" plug BAD 640x480@0
check "error plug: expected plug NAME MODE" plug BAD
check "error capture: cannot write /nonexistent/dir/x.png" capture Virtual-1 /nonexistent/dir/x.png
check "error plug: connector Virtual-1" plug Virtual-1 640x480
for c in long nul pipeline hangup many flood; do
	python3 "$TEST_DIR/raw.py" $c || fail "raw case $c"
done
# Still serving, with the same one output.
"$CTL" list | tail -n 1 | grep -Eqx 'ok 1 connectors buffer_locks=[0-9]+' || fail "not serving after the bad requests"
"$CTL" wait Virtual-1 5 >/dev/null || fail "no frames after the bad requests"
echo "steps done"
EOS
	;;
in-use)
	# A second compositor on the same path is refused clearly and runs on.
	cat >"$TEST_DIR/second.sh" <<EOS
set -u
XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR WLA_CONTROL=$WLA_CONTROL timeout -k 5 $(scaled 20) \
	"$TINYWL" --exit-after-frames 20 >"$TEST_DIR/second.out" 2>"$TEST_DIR/second.err"
echo \$? >"$TEST_DIR/second.rc"
EOS
	client_steps <<'EOS'
bash "$TEST_DIR/second.sh"
[ "$(cat "$TEST_DIR/second.rc")" = 0 ] || fail "the second compositor failed: $(cat "$TEST_DIR/second.err")"
grep -q "control: $WLA_CONTROL is in use by a live compositor; no control socket" \
	"$TEST_DIR/second.err" || fail "no clear refusal: $(cat "$TEST_DIR/second.err")"
[ "$(grep -c ERROR "$TEST_DIR/second.err")" = 1 ] || fail "more than the one error line"
# The first still owns the socket.
"$CTL" list | tail -n 1 | grep -Eqx 'ok 1 connectors buffer_locks=[0-9]+' || fail "the first lost its socket"
echo "steps done"
EOS
	;;
stale)
	# A socket left by a dead compositor is replaced.
	python3 -c "import socket,os; s=socket.socket(socket.AF_UNIX); s.bind(os.environ['WLA_CONTROL'])"
	[ -S "$WLA_CONTROL" ] || fail "no stale socket made"
	steps <<'EOS'
set -eu
"$CTL" list | tail -n 1 | grep -Eqx 'ok 1 connectors buffer_locks=[0-9]+' || { echo "FAIL: stale socket not replaced" >&2; exit 1; }
EOS
	grep -q '\[ERROR\]' "$TEST_DIR/stderr" && fail "an error line for a stale socket"
	# Not a socket: refused, the compositor runs on.
	echo data >"$WLA_CONTROL"
	steps <<'EOS'
exit 0
EOS
	grep -q "control: $WLA_CONTROL exists and is not a socket; no control socket" \
		"$TEST_DIR/stderr" || fail "a regular file at the path is not refused clearly"
	[ "$(cat "$WLA_CONTROL")" = data ] || fail "the file was touched"
	;;
config)
	export WLA_CONTROL=relative/path
	run_tinywl "$TINYWL" --exit-after-frames 1
	expect_status 1
	grep -q "config: WLA_CONTROL: control 'relative/path': expected off or an absolute path" \
		"$TEST_DIR/stderr" || fail "a relative WLA_CONTROL is not refused"
	export WLA_CONTROL=off
	run_tinywl "$TINYWL" --exit-after-frames 5
	expect_status 0
	[ -z "$(ls "$XDG_RUNTIME_DIR" | grep wlatomic || true)" ] || fail "a socket with control off"
	unset WLA_CONTROL
	run_tinywl "$TINYWL" -v --exit-after-frames 5
	expect_status 0
	grep -q "control: listening on $XDG_RUNTIME_DIR/wlatomic-0" "$TEST_DIR/stderr" ||
		fail "the default path is not printed"
	;;
peer)
	# Served only to the compositor's user, by the peer's credentials: root
	# passes the socket's file mode, not the check.
	[ "$(id -u)" -eq 0 ] || skip "needs root to run the compositor as another user"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	user=wlatomic-test
	id "$user" >/dev/null 2>&1 || useradd -m -s /bin/sh "$user" ||
		skip "cannot create the user $user"
	run=$(mktemp -d /tmp/wla-peer.XXXXXX)
	trap 'rm -rf "$TEST_DIR" "$run"; kill $tw 2>/dev/null || true' EXIT
	chown "$user:" "$run"
	chmod 0700 "$run"
	setpriv --reuid="$user" --regid="$user" --init-groups env -i PATH="$PATH" \
		XDG_RUNTIME_DIR="$run" WLA_CONTROL="$run/control" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}" LSAN_OPTIONS="${LSAN_OPTIONS:-}" \
		timeout -k 5 "$(scaled 30)" "$TINYWL" -s weston-simple-shm >"$TEST_DIR/stdout" \
		2>"$TEST_DIR/stderr" &
	tw=$!
	wait_until 10 '[ -S "$run/control" ]' || fail "the compositor made no socket: $(cat "$TEST_DIR/stderr")"
	STATUS=0
	"$CTL" -s "$run/control" list >"$TEST_DIR/r" 2>&1 || STATUS=$?
	cat "$TEST_DIR/r"
	[ "$STATUS" -eq 1 ] || fail "root was served (status $STATUS)"
	grep -qx "error permission denied: not the compositor's user" "$TEST_DIR/r" ||
		fail "no permission error"
	# Its own user is served.
	setpriv --reuid="$user" --regid="$user" --init-groups "$CTL" -s "$run/control" wait Virtual-1 5 ||
		fail "the compositor's user was not served"
	kill $tw
	wait $tw || true
	check_no_sanitizer_report
	;;
*)
	fail "unknown case $CASE"
	;;
esac
echo PASS
