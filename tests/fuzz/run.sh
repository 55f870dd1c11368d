#!/usr/bin/env bash
# Fuzz the targets of tests/fuzz with libFuzzer (README.md there).
#
#   tests/fuzz/run.sh [-t SECONDS] [-k] [TARGET...]
#
#   -t SECONDS  how long to fuzz each target (default 60)
#   -k          keep going after a crash (libFuzzer's fork mode): every crash
#               is saved and the run goes on until the time is up
#   TARGET      config, panel, compose, png, ... (default: every target)
#
# Installs clang and libFuzzer if they are missing (apt-get, needs root),
# builds with -Dfuzz=enabled under ASan and UBSan in build-fuzz/ (or
# $FUZZ_BUILD_DIR), and fuzzes each target from a working copy of its seed
# corpus in build-fuzz/corpus/TARGET (without the repro-* files: they are
# the regression tests of bugs found, replayed by meson's suite 'fuzz'). New inputs stay in that copy, crashes
# go to build-fuzz/crashes/TARGET/; tests/fuzz/TARGET.dict, if there is one,
# is its libFuzzer dictionary. For each target it prints the number of
# inputs executed and the crashes found. Exit status 1 if any target crashed.
set -uo pipefail

seconds=60
keep_going=0
while getopts "t:kh" opt; do
	case $opt in
	t) seconds=$OPTARG ;;
	k) keep_going=1 ;;
	*) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$src/build-fuzz}

# clang, and libFuzzer's runtime, which Debian ships apart (libclang-rt-14-dev).
have_libfuzzer() {
	local cc=$1 tmp
	tmp=$(mktemp -d) || return 1
	printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
		'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }' >"$tmp/t.c"
	"$cc" -fsanitize=fuzzer,address "$tmp/t.c" -o "$tmp/t" 2>/dev/null
	local ok=$?
	rm -rf "$tmp"
	return $ok
}
cc=""
for c in clang clang-14; do
	if command -v "$c" >/dev/null && have_libfuzzer "$c"; then
		cc=$c
		break
	fi
done
if [ -z "$cc" ]; then
	echo "run.sh: installing clang-14 and libFuzzer (libclang-rt-14-dev)"
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	$sudo apt-get update -q &&
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
			clang-14 libclang-rt-14-dev || exit 1
	cc=clang-14
	have_libfuzzer "$cc" || { echo "run.sh: $cc still cannot link libFuzzer" >&2; exit 1; }
fi

if [ ! -f "$build/build.ninja" ]; then
	CC=$cc meson setup "$build" "$src" -Dfuzz=enabled -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debugoptimized || exit 1
fi
ninja -C "$build" || exit 1

if [ $# -eq 0 ]; then
	for exe in "$build"/tests/fuzz/fuzz-*; do
		name=${exe##*/fuzz-}
		[ -x "$exe" ] && [ -f "$exe" ] && [[ $name != *-replay ]] && set -- "$@" "$name"
	done
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
for t in "$@"; do
	exe=$build/tests/fuzz/fuzz-$t
	seeds=$src/tests/fuzz/corpus/$t
	if [ ! -x "$exe" ] || [ ! -d "$seeds" ]; then
		echo "run.sh: no target '$t' (no $exe or $seeds)" >&2
		status=1
		continue
	fi
	corpus=$build/corpus/$t
	crashes=$build/crashes/$t
	mkdir -p "$corpus" "$crashes"
	find "$seeds" -maxdepth 1 -type f ! -name 'repro-*' -exec cp -n {} "$corpus"/ \;
	log=$build/fuzz-$t.log
	args=(-max_total_time="$seconds" -print_final_stats=1 -timeout=20
		-artifact_prefix="$crashes/")
	if [ -f "$src/tests/fuzz/$t.dict" ]; then
		args+=(-dict="$src/tests/fuzz/$t.dict")
	fi
	if [ $keep_going -eq 1 ]; then
		args+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
	fi
	before=$(ls "$crashes" | wc -l)
	echo "== $t: fuzzing for ${seconds}s from $(ls "$corpus" | wc -l) inputs (log: $log)"
	"$exe" "${args[@]}" "$corpus" >"$log" 2>&1
	ret=$?
	# Plain mode ends with stat:: lines; fork mode with its last status line.
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	if [ -z "$execs" ]; then
		execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
	fi
	found=$(($(ls "$crashes" | wc -l) - before))
	echo "   $t: ${execs:-?} inputs executed, corpus now $(ls "$corpus" | wc -l)," \
		"$found new crash file(s) in $crashes, libFuzzer exit $ret"
	if [ $ret -ne 0 ] || [ "$found" -gt 0 ]; then
		grep -m 3 -E "invariant|ERROR: |runtime error" "$log" | sed 's/^/   /'
		status=1
	fi
done
exit $status
