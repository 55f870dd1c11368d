#!/bin/bash
# Fault: a client killed (SIGKILL, no clean disconnect) while it draws as
# fast as frame events allow and tinywl holds three frames in the flip
# queue. tinywl goes on presenting frames, a second client connects and
# draws, and at the end the backend holds no buffer lock.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TINYWL=$(realpath "$1") CLIENT=$(realpath "$2") CTL=$(realpath "$3")
setup

export WLA_FLIP_DEPTH=3 WLA_FLIP_POLICY=queue WLA_CONTROL="$TEST_DIR/control"
# The first client is killed once it has drawn for a while (30 frames
# presented while it draws at every frame event); the second one then
# draws until tinywl stops.
script="$TEST_DIR/clients.sh"
cat >"$script" <<SCRIPT
$(shell_quote "$CLIENT") --frames 100000 &
pid=\$!
$(shell_quote "$CTL") -t $(scaled 20) wait Virtual-1 30 >&2 ||
	echo "the first client did not draw" >&2
kill -KILL \$pid
wait \$pid
echo "first client killed" >&2
exec $(shell_quote "$CLIENT") --frames 100000
SCRIPT
run_tinywl "$TINYWL" -s "sh $(shell_quote "$script")" --exit-after-frames 90
expect_status 0
grep -q 'first client killed' "$TEST_DIR/stderr" ||
	fail "the first client was not killed before tinywl stopped"
! grep -q 'the first client did not draw' "$TEST_DIR/stderr" ||
	fail "no frames came while the first client drew"
[ "$(stats_field Virtual-1 frames_presented)" -ge 90 ] || fail "tinywl stopped presenting"
[ "$(stats_field Virtual-1 seq_errors)" = 0 ] || fail "present sequence errors"
grep -qx 'tinywl: buffer_locks=0' "$TEST_DIR/stdout" ||
	fail "expected 'tinywl: buffer_locks=0' on stdout"
echo "PASS"
