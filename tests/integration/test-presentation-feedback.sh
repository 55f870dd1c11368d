#!/bin/bash
# weston-presentation-shm (Debian's weston package) gets wp_presentation
# feedback under tinywl on the virtual display: every frame it prints is
# presented with the vsync flag, its vblank sequence advances, and the time
# since the previous presentation is the number of refresh periods that the
# sequence says passed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TINYWL=$(realpath "$1")
setup
CLIENT=$(command -v weston-presentation-shm) ||
	skip "weston-presentation-shm is not installed (Debian package weston)"

# The client prints a line per feedback it gets and stops cleanly on SIGINT;
# run it until it printed 40 (a count, not a time: a sanitized build on a
# busy machine renders slower), 25 s at most (lib.sh's wait_until, scaled).
OUT="$TEST_DIR/feedback.txt"
TINYWL_TIMEOUT=40
cat >"$TEST_DIR/client.sh" <<EOF
. $(shell_quote "$(realpath "$(dirname "$0")/lib.sh")")
$(shell_quote "$CLIENT") -f >$(shell_quote "$OUT") &
pid=\$!
wait_until 25 '[ "\$(grep -c ": f2c" $(shell_quote "$OUT"))" -ge 40 ]' || true
kill -INT \$pid
wait \$pid
EOF
run_tinywl "$TINYWL" -s "bash $(shell_quote "$TEST_DIR/client.sh")"
expect_status 0

# "   N: f2c X ms, c2p X ms, f2p X ms, p2p X us, t2p X, [sce_], seq N"
awk '
	/^ *[0-9]+: f2c / {
		p2p = $0; sub(/.*p2p +/, "", p2p); sub(/ us.*/, "", p2p)
		flags = $0; sub(/.*\[/, "", flags); sub(/\].*/, "", flags)
		seq = $0; sub(/.*seq /, "", seq)
		n++
		if (flags !~ /s/) { print "frame without the vsync flag: " $0; bad++ }
		if (n > 1) {
			d = seq - last
			err = p2p - d * 1000000 / 60
			if (d < 1 || err < -2 || err > 2) {
				print "p2p disagrees with seq: " $0
				bad++
			}
		}
		last = seq
	}
	END {
		print n + 0 " presented feedback lines"
		if (n < 30) { print "expected at least 30"; bad++ }
		exit bad > 0
	}' "$OUT" || { sed -n '1,20p' "$OUT"; fail "presentation feedback is missing or wrong"; }
echo "PASS"
