#!/bin/bash
# Once tinywl has disabled its outputs the backend holds no buffer lock,
# whether the client finished first or was still committing frames (buffers
# queued and on screen) when tinywl stopped.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TINYWL=$(realpath "$1") CLIENT=$(realpath "$2")
setup

check_locks() {
	expect_status 0
	grep -qx 'tinywl: buffer_locks=0' "$TEST_DIR/stdout" ||
		fail "expected 'tinywl: buffer_locks=0' on stdout"
}

echo "client finishes first"
run_tinywl "$TINYWL" -s "$(shell_quote "$CLIENT") --frames 30" --cursor 50,50
check_locks

echo "tinywl stops while the client is still drawing"
run_tinywl "$TINYWL" -s "$(shell_quote "$CLIENT") --frames 100000" --exit-after-frames 30
check_locks
echo "PASS"
