#!/bin/bash
# A bad WLA_* configuration makes tinywl exit with status 1 (not a crash)
# after exactly one error line that names the offending value.
# Usage: test-bad-config.sh TINYWL VARIABLE VALUE NAMED
#   VARIABLE=WLA_CONFIG: VALUE is the text of a config file to point it at.
#   NAMED: what the error line must quote.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TINYWL=$(realpath "$1") VARIABLE=$2 VALUE=$3 NAMED=$4
setup

if [ "$VARIABLE" = WLA_CONFIG ]; then
	printf '%s\n' "$VALUE" >"$TEST_DIR/wla.conf"
	export WLA_CONFIG="$TEST_DIR/wla.conf"
else
	export "$VARIABLE=$VALUE"
fi
run_tinywl "$TINYWL"
expect_status 1

lines=$(grep -c . "$TEST_DIR/stderr" || true)
[ "$lines" -eq 1 ] || fail "expected exactly one line on stderr, got $lines"
line=$(grep . "$TEST_DIR/stderr")
[[ $line == *config:* ]] || fail "the error line does not come from the config parser"
[[ $line == *"'$NAMED'"* ]] || fail "the error line does not quote '$NAMED'"
echo "PASS"
