#!/bin/bash
# With a client redrawing on every frame callback, each presented frame's
# vblank sequence number advances by exactly the refresh periods that passed
# (tinywl counts every disagreement as a seq_error), and the display
# controller counts at least one vblank per presented frame.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TINYWL=$(realpath "$1") CLIENT=$(realpath "$2")
setup

FRAMES=120
run_tinywl "$TINYWL" -s "$(shell_quote "$CLIENT") --frames $FRAMES"
expect_status 0

stats_fields Virtual-1 frames_presented vblanks missed_vblanks seq_errors
presented=$frames_presented missed=$missed_vblanks
echo "frames_presented=$presented vblanks=$vblanks missed_vblanks=$missed" \
	"seq_errors=$seq_errors"

[[ $presented =~ ^[0-9]+$ ]] || fail "frames_presented is not a number: $presented"
[[ $vblanks =~ ^[0-9]+$ ]] || fail "vblanks is not a number: $vblanks"
# A loaded machine may miss vblanks; that it is counted is what matters here.
[[ $missed =~ ^[0-9]+$ ]] || fail "missed_vblanks is not a number: $missed"
[ "$seq_errors" = 0 ] || fail "seq_errors=$seq_errors, expected 0"
# Every client frame is drawn by one compositor commit, but tinywl sends the
# frame callback right after committing: the last few commits (as many as a
# flip queue holds, at most 3) may not have latched when the client exits.
[ "$presented" -ge $((FRAMES - 3)) ] ||
	fail "frames_presented=$presented, expected at least $((FRAMES - 3))"
[ "$vblanks" -ge "$presented" ] ||
	fail "vblanks=$vblanks is less than frames_presented=$presented"
echo "PASS"
