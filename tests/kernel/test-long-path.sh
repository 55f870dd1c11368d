#!/usr/bin/env bash
# The real-kernel tier from a checkout at a long path: nothing of it may
# depend on where the project is cloned. (qemu's monitor socket once lay in
# the job folder under the build tree, and a UNIX socket's path must fit in
# sun_path's 107 bytes: from a 51-character checkout every guest failed.)
# Copies the source tree (the working tree as it is, mtimes kept) to a
# folder of at least 180 characters, configures a plain build there, builds
# only test-kms and runs the clone's own kernel-boot and kernel-kms-enum (the
# KMS driver on vkms against drm_info) through meson test. Not kernel-kms:
# it froze guests on a deadlock of Debian 6.1's vkms (hrtimer_cancel in
# vkms_disable_vblank under DRM's vblank locks, now patched by
# build-modules.sh), and its flip-timing checks are for a machine's load to
# judge, not the path.
# The clone is always a plain build, whatever this one's
# options: the path is under test, not the code, and a sanitized build
# would double the cost for nothing.
# The modules and initramfs of this build's cache (WLA_KERNEL_CACHE, else
# WLA_BUILD_ROOT/kernel-tier) are copied into the clone's default cache, so
# that the jobs lie as deep as the clone without rebuilding anything.
# usage: test-long-path.sh SOURCE_ROOT
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 SOURCE_ROOT" >&2
	exit 2
fi
src=$(readlink -f "$1")
min_len=180

skip() {
	echo "SKIP: $*"
	exit 77
}
fail() {
	echo "FAIL: $*"
	exit 1
}

"$src/tests/kernel/run-guest.sh" --check || exit $?
for tool in meson ninja tar; do
	command -v "$tool" >/dev/null || skip "no $tool on the host"
done

top=$(mktemp -d "${TMPDIR:-/tmp}/wla-long-path.XXXXXX")
# A failed guest's job (console.log, monitor.log) is kept in this build's
# tree before the clone goes.
keep_failed_jobs() {
	local dest
	[ -n "${WLA_BUILD_ROOT:-}" ] && [ -d "$top" ] || return 0
	find "$top" -path '*/kernel-tier/*/job.*' -prune -type d | grep -q . || return 0
	dest=$(mktemp -d "$WLA_BUILD_ROOT/long-path-jobs.XXXXXX") || return 0
	find "$top" -path '*/kernel-tier/*/job.*' -prune -type d -exec cp -r {} "$dest/" \;
	echo "clone: the failed guests' jobs are kept in $dest"
}
trap 'status=$?; [ $status -eq 0 ] || keep_failed_jobs; rm -rf "$top"; exit $status' EXIT
# bash runs no EXIT trap on a signal it does not handle: meson's timeout
# (TERM) or ^C must still remove the clone.
trap 'exit 143' TERM
trap 'exit 130' INT
# The clone's guests are told to make their socket folders here, so that
# one left behind is seen.
run_dir=$top/run
mkdir -m 0700 "$run_dir"

# Folder names of 50 characters, nested until the clone's path is long.
clone=$top
while [ ${#clone} -lt "$min_len" ]; do
	clone=$clone/a-checkout-path-longer-than-a-unix-socket-can-name
done
mkdir -p "$clone"
echo "clone: path=$clone length=${#clone}"

# The source tree without .git and without build trees in it.
entries=()
for entry in "$src"/* "$src"/.[!.]* "$src"/..?*; do
	[ -e "$entry" ] || continue
	name=${entry##*/}
	if [ "$name" = .git ] || [ -d "$entry/meson-private" ]; then
		continue
	fi
	entries+=("$name")
done
[ ${#entries[@]} -gt 0 ] || fail "source tree $src: nothing to copy"
tar -C "$src" -cf - -- "${entries[@]}" | tar -C "$clone" -xf -
echo "clone: copied ${#entries[@]} entries of $src, $(du -sk "$clone" | cut -f1) KiB"

build=$clone/build
log=$top/setup.log
start=$(date +%s)
if ! meson setup "$build" "$clone" -Db_sanitize=none >"$log" 2>&1; then
	tail -n 40 "$log"
	fail "meson setup in the clone failed (log above)"
fi
if ! ninja -C "$build" tests/kernel/test-kms >"$log" 2>&1; then
	tail -n 40 "$log"
	fail "building tests/kernel/test-kms in the clone failed (log above)"
fi
echo "clone: configured and built test-kms in $(($(date +%s) - start)) s"

# Seed the clone's default cache (BUILD/kernel-tier/KVER) from this build's.
seeded=0
outer_cache=${WLA_KERNEL_CACHE:-${WLA_BUILD_ROOT:-}/kernel-tier}
if [ -n "${WLA_KERNEL_CACHE:-}${WLA_BUILD_ROOT:-}" ]; then
	for dir in "$outer_cache"/*/; do
		dir=${dir%/}
		if [ -f "$dir/initramfs.cpio.gz" ] && [ -f "$dir/vkms.ko" ] &&
			[ -f "$dir/gpio-sim-mod.ko" ]; then
			mkdir -p "$build/kernel-tier/${dir##*/}"
			# -p: the freshness checks compare mtimes with the copied scripts.
			cp -p "$dir/initramfs.cpio.gz" "$dir/vkms.ko" "$dir/gpio-sim-mod.ko" \
				"$build/kernel-tier/${dir##*/}/"
			seeded=$((seeded + 1))
		fi
	done
fi
echo "clone: kernel cache seeded from $outer_cache for $seeded kernel(s)" \
	"(0: the clone builds its own)"

status=0
env -u WLA_KERNEL_CACHE XDG_RUNTIME_DIR="$run_dir" \
	meson test -C "$build" --no-rebuild --print-errorlogs kernel-boot kernel-kms-enum ||
	status=$?

results=$(python3 - "$build/meson-logs/testlog.json" <<-'PY'
	import json, sys
	for line in open(sys.argv[1]):
	    r = json.loads(line)
	    # Named "project:suite / test" by newer meson, "test" by older.
	    print(r['name'].split(' / ')[-1], r['result'])
	PY
)
while read -r name result; do
	echo "clone: test=$name result=$result"
done <<<"$results"
for t in kernel-boot kernel-kms-enum; do
	result=$(awk -v t="$t" '$1 == t { print $2 }' <<<"$results")
	case $result in
	OK) ;;
	SKIP) skip "the clone's $t skipped (its output is above)" ;;
	*) fail "the clone's $t: result ${result:-missing} (meson test status $status)" ;;
	esac
done
[ "$status" -eq 0 ] || fail "meson test in the clone exited with $status"

# Every job of a passed guest is gone, and so is its socket folder.
left=$(find "$run_dir" -mindepth 1 | head -n 5)
[ -z "$left" ] || fail "XDG_RUNTIME_DIR=$run_dir: left behind by the guests: $left"
jobs=$(find "$build/kernel-tier" -maxdepth 2 -name 'job.*' | head -n 5)
[ -z "$jobs" ] || fail "kernel cache: jobs of passed guests left: $jobs"
echo "ok: kernel-boot and kernel-kms-enum pass from a clone at a ${#clone}-character path"
