#!/bin/bash
# tinywl's stats line on the virtual display: the flip queue counters, the
# present-interval distribution at exactly the 60 Hz period, tinywl's own
# latency (render start to presentation) and CPU time per frame, with a
# queue of 2, with --deadline (rendering just before the frame deadline,
# which makes the latency shorter than rendering at the frame event), and on
# wlroots' headless backend, where what only wlatomic knows is n/a.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TINYWL=$(realpath "$1") CLIENT=$(realpath "$2")
setup
FRAMES=60
PERIOD_US=16666.667

number() {
	[[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "$1 is not a number: $2"
}

near_period() {
	awk -v v="$2" -v p=$PERIOD_US 'BEGIN { exit !(v >= p - 0.002 && v <= p + 0.002) }' ||
		fail "$1=$2, expected the period $PERIOD_US"
}

# A whole number of periods (vblank times on the exact grid, 1 ns either way).
near_periods() {
	awk -v v="$2" -v p=$PERIOD_US 'BEGIN { n = int(v / p + 0.5)
		exit !(n >= 1 && v >= n * p - 0.002 * n && v <= n * p + 0.002 * n) }' ||
		fail "$1=$2, expected a whole number of periods of $PERIOD_US"
}

# run_and_check NAME TINYWL-ARGS...: sets LATENCY to latency_mean_us.
run_and_check() {
	local name=$1
	shift
	echo "== $name"
	run_tinywl "$TINYWL" -s "$(shell_quote "$CLIENT") --frames 1000" \
		--exit-after-frames $FRAMES "$@"
	expect_status 0
	local key
	for key in frames_committed frames_discarded refused_queue_full interval_min_us \
			interval_p50_us interval_p99_us interval_max_us interval_mean_us \
			jitter_p99_us skipped_vblanks latency_mean_us latency_p99_us \
			cpu_us_per_frame; do
		number "$key" "$(stats_field Virtual-1 $key)"
	done
	# tinywl stops at the present event of frame FRAMES; a late wake-up of
	# a loaded machine reports the latches of every vblank it passed at
	# once, so a frame or two more may be counted.
	local presented
	presented=$(stats_field Virtual-1 frames_presented)
	[ "$presented" -ge $FRAMES ] && [ "$presented" -le $((FRAMES + 2)) ] ||
		fail "expected $FRAMES presented frames (or up to 2 more), got $presented"
	[ "$(stats_field Virtual-1 frames_discarded)" = 0 ] || fail "frames discarded in queue mode"
	[ "$(stats_field Virtual-1 refused_queue_full)" = 0 ] ||
		fail "commits refused although tinywl waits for frame events"
	local committed
	committed=$(stats_field Virtual-1 frames_committed)
	[ "$committed" -ge $FRAMES ] && [ "$committed" -le $((FRAMES + 3)) ] ||
		fail "frames_committed=$committed for $FRAMES presented"
	# Presentation times are vblank times: every interval is a whole number
	# of periods (the exact 1/60 s grid rounded to the nanosecond: 1 ns
	# either way). Where rendering keeps up, the shortest and the median
	# are one period; a sanitized build on a loaded machine renders (its
	# client too) slower than that, and only the whole periods are checked.
	near_periods interval_min_us "$(stats_field Virtual-1 interval_min_us)"
	near_periods interval_p50_us "$(stats_field Virtual-1 interval_p50_us)"
	near_periods interval_max_us "$(stats_field Virtual-1 interval_max_us)"
	if [ "${WLA_TEST_SANITIZED:-0}" != 1 ]; then
		near_period interval_min_us "$(stats_field Virtual-1 interval_min_us)"
		near_period interval_p50_us "$(stats_field Virtual-1 interval_p50_us)"
	fi
	LATENCY=$(stats_field Virtual-1 latency_mean_us)
	LAG=$(stats_field Virtual-1 event_lag_p99_us)
	# A frame cannot be presented before the vblank after its render began,
	# nor later than a queue of 3 plus a few late vblanks.
	awk -v l="$LATENCY" 'BEGIN { exit !(l > 0 && l < 8 * 16666.667) }' ||
		fail "latency_mean_us=$LATENCY out of range"
}

export WLA_FLIP_DEPTH=2
# Rendering at the frame event fills the queue: frames wait a period longer.
# Only a quarter period is asserted: on a loaded machine (the sanitizer build
# running beside another test) some renders miss their deadline and latch a
# vblank later; the full figure is the pacing benchmark's. A pair of runs
# that shows no gain while tinywl's event loop woke late (event_lag_p99_us
# over a quarter period in either run: the machine did not run it in time,
# which says nothing of --deadline) is measured again, three times at most;
# a pair without the gain where the loop kept time fails.
# A sanitized build may render too slowly for a deadline inside the period:
# tinywl then renders at once, as it should, and gains nothing; a gain it
# shows is still asserted.
gain=unknown
for attempt in 1 2 3; do
	run_and_check "queue of 2, rendering at the frame event"
	QUEUED=$LATENCY QUEUED_LAG=$LAG
	run_and_check "queue of 2, rendering at the deadline" --deadline
	DEADLINE=$LATENCY DEADLINE_LAG=$LAG
	echo "latency: at the frame event ${QUEUED} us, at the deadline ${DEADLINE} us" \
		"(event loop late by ${QUEUED_LAG} and ${DEADLINE_LAG} us at p99)"
	if awk -v q="$QUEUED" -v d="$DEADLINE" 'BEGIN { exit !(d + 4000 < q) }'; then
		gain=yes
		break
	fi
	[ "${WLA_TEST_SANITIZED:-0}" = 1 ] && break
	if awk -v a="$QUEUED_LAG" -v b="$DEADLINE_LAG" 'BEGIN { exit !(a < 4167 && b < 4167) }'; then
		fail "--deadline did not shorten the latency by a quarter period"
	fi
done
# What could not be asserted is reported at the end, after the other checks
# ran: the test then ends skipped (77) with the reason, never passed.
unchecked=
if [ $gain = yes ]; then
	:
elif [ "${WLA_TEST_SANITIZED:-0}" = 1 ]; then
	unchecked="latency gain of --deadline not asserted: no gain in a sanitized build"
	unchecked+=" (it may render too slowly for a deadline inside the period)"
else
	unchecked="latency gain of --deadline not asserted: no gain, and tinywl's event loop"
	unchecked+=" woke over a quarter period late in each of 3 attempts (a loaded machine)"
fi
[ -z "$unchecked" ] || echo "$unchecked"
unset WLA_FLIP_DEPTH

echo "== --deadline needs the wlatomic backend"
run_tinywl "$TINYWL" --backend auto --deadline
expect_status 2
grep -q -- '--deadline needs --backend wla' "$TEST_DIR/stderr" || fail "no clear error"

echo "== headless"
export WLR_BACKENDS=headless WLR_RENDERER=pixman
run_tinywl "$TINYWL" --backend auto --mode 1920x1080@60 \
	-s "$(shell_quote "$CLIENT") --frames 1000" --exit-after-frames $FRAMES
expect_status 0
for key in frames_discarded refused_queue_full; do
	[ "$(stats_field HEADLESS-1 $key)" = n/a ] || fail "headless cannot know $key"
done
for key in frames_committed interval_min_us interval_p50_us interval_p99_us \
		interval_max_us interval_mean_us jitter_p99_us skipped_vblanks \
		latency_mean_us latency_p99_us cpu_us_per_frame; do
	number "$key" "$(stats_field HEADLESS-1 $key)"
done
[ -z "$unchecked" ] || skip "all else passed; $unchecked"
echo "PASS"
