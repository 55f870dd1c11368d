#!/usr/bin/env bash
# Run a command as root in a qemu guest booted from the host's own Debian
# kernel, with vkms (and optionally gpio-sim) loaded, the host's root mounted
# read-only and the build tree visible at its host path.
#
# usage: run-guest.sh [OPTIONS] -- COMMAND [ARGS...]
#   --timeout SEC      kill the guest after SEC s of wall time (default 300)
#   --vkms PARAMS      vkms.ko parameters, space- or comma-separated
#                      (default enable_cursor=1,enable_overlay=1,enable_writeback=1)
#   --no-vkms          do not load vkms
#   --card CARD        the guest's DRM card: vkms (the default), virtio-gpu
#                      (one head, with an EDID), virtio-gpu-2 (two heads; qemu
#                      connects the second only for a display, so the kernel
#                      forces it on with video=),
#                      qxl (-vga qxl), cirrus (-vga cirrus) or bochs
#                      (-vga std); any card but vkms comes without vkms
#   --gpio-sim N       a gpio-sim chip labelled panel-gpio with N lines
#   --mem MB           guest memory (default $WLA_GUEST_MEM, else 4096)
#   --accel tcg|kvm    default $WLA_GUEST_ACCEL, else tcg (KVM hangs nested)
#   --cwd DIR          the command's working folder (default: the current one)
#   --env NAME=VALUE   set a variable for the command (repeatable)
#   --udev             start systemd-udevd in the guest (for libinput)
#   --check            only check that guests can run here: 0, or 77 and why
#
# Exit status: the command's 0 or 77 (skip); 1 for any other status, a
# timeout or a guest that did not boot, after printing the console's tail.
# The command gets PATH, HOME=/root, XDG_RUNTIME_DIR=/run/user/0 and the
# host's WLA_*, *SAN_OPTIONS, MALLOC_PERTURB_, LANG and LC_ALL.
# Modules and initramfs are cached in $WLA_KERNEL_CACHE/KVER (default
# $WLA_BUILD_ROOT/kernel-tier/KVER); the guest kernel is the newest
# /boot/vmlinuz-KVER with headers, or KVER=$WLA_GUEST_KVER.
set -euo pipefail

here=$(dirname "$(readlink -f "$0")")
tail_lines=120

timeout=300
vkms=enable_cursor=1,enable_overlay=1,enable_writeback=1
card=vkms
gpio_lines=0
mem=${WLA_GUEST_MEM:-4096}
accel=${WLA_GUEST_ACCEL:-tcg}
cwd=$PWD
udev=false
check_only=false
extra_env=()

usage() {
	sed -n '/^# usage:/,/^set -euo/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--timeout) timeout=$2; shift 2 ;;
	--vkms) vkms=$(echo "$2" | tr -s ' ' ','); shift 2 ;;
	--no-vkms) vkms=off; shift ;;
	--card) card=$2; shift 2 ;;
	--gpio-sim) gpio_lines=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--accel) accel=$2; shift 2 ;;
	--cwd) cwd=$2; shift 2 ;;
	--env) extra_env+=("$2"); shift 2 ;;
	--udev) udev=true; shift ;;
	--check) check_only=true; shift ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
if ! $check_only && [ $# -eq 0 ]; then
	usage
fi
for n in "$timeout" "$gpio_lines" "$mem"; do
	[[ $n =~ ^[0-9]+$ ]] || usage
done
case $accel in
tcg | kvm) ;;
*) usage ;;
esac
# The card: qemu's device and the guest's driver module (guest-init.sh).
card_args=()
card_module=none
card_cmdline=""
case $card in
vkms) ;;
virtio-gpu)
	card_args=(-device virtio-gpu-pci,edid=on,xres=1024,yres=768)
	card_module=virtio-gpu ;;
virtio-gpu-2)
	card_args=(-device virtio-gpu-pci,max_outputs=2,edid=on,xres=1024,yres=768)
	card_cmdline=" video=Virtual-2:1024x768@60e"
	card_module=virtio-gpu ;;
qxl) card_args=(-vga qxl); card_module=qxl ;;
cirrus) card_args=(-vga cirrus); card_module=cirrus ;;
bochs) card_args=(-vga std); card_module=bochs ;;
*) usage ;;
esac
if [ "$card" != vkms ]; then
	vkms=off
fi

skip() {
	echo "guest: skipped: $*"
	exit 77
}

# --- What the host must offer; a missing piece skips, it does not fail.
command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64 (package qemu-system-x86)"
for tool in modprobe cpio make readelf strip; do
	command -v "$tool" >/dev/null || skip "no $tool on the host"
done
[ -x "${WLA_BUSYBOX:-/bin/busybox}" ] || skip "no busybox (package busybox-static)"
source_tar=${WLA_KERNEL_SOURCE_TAR:-/usr/src/linux-source-6.1.tar.xz}
[ -f "$source_tar" ] || skip "no $source_tar (package linux-source-6.1)"
if [ -n "${WLA_GUEST_KVER:-}" ]; then
	kver=$WLA_GUEST_KVER
else
	kver=$(for img in /boot/vmlinuz-*; do
		v=${img#/boot/vmlinuz-}
		if [ -d "/lib/modules/$v/build" ]; then
			echo "$v"
		fi
	done | sort -V | tail -n 1)
	[ -n "$kver" ] || skip "no /boot/vmlinuz-KVER with headers in /lib/modules/KVER/build" \
		"(packages linux-image-amd64, linux-headers-amd64)"
fi
kernel=/boot/vmlinuz-$kver
[ -r "$kernel" ] || skip "cannot read the kernel image $kernel"
[ -d "/lib/modules/$kver/build" ] || skip "no headers for $kver (package linux-headers-$kver)"
if [ "$accel" = kvm ] && [ ! -w /dev/kvm ]; then
	skip "--accel kvm but /dev/kvm is not usable"
fi
if $check_only; then
	echo "guest: can run $kernel ($accel)"
	exit 0
fi

# --- Modules and initramfs, built once per kernel and cached.
if [ -n "${WLA_KERNEL_CACHE:-}" ]; then
	cache=$WLA_KERNEL_CACHE/$kver
elif [ -n "${WLA_BUILD_ROOT:-}" ]; then
	cache=$WLA_BUILD_ROOT/kernel-tier/$kver
else
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/wlatomic/kernel-tier/$kver
fi
mkdir -p "$cache"
initramfs=$cache/initramfs.cpio.gz
(
	# One builder at a time; others wait and find the cache filled.
	flock 9
	"$here/build-modules.sh" "$cache" "$kver"
	"$here/make-initramfs.sh" "$initramfs" "$kver" "$cache"
) 9>"$cache/.lock" || { echo "guest: building the modules or the initramfs failed"; exit 1; }

# --- The job: the command as a bash script, read by the guest over 9p.
job=$(mktemp -d "$cache/job.XXXXXX")
log=$job/console.log
keep_job=true
qemu_pid=""
sock_dir=""

# The console without carriage returns and the firmware's terminal escapes.
clean_log() {
	tr -d '\r' <"$log" | sed -E 's/\x1b(\[[0-9;?]*)?[A-Za-z]//g'
}
console_tail() {
	echo "guest: last $tail_lines lines of the console (full log: $log):"
	clean_log | tail -n "$tail_lines" | sed 's/^/  | /'
}
# shellcheck disable=SC2317 # called by the traps below
# A failed guest's job stays, for its console.log.
cleanup() {
	if [ -n "$qemu_pid" ]; then
		kill "$qemu_pid" 2>/dev/null || true
	fi
	if [ -n "$sock_dir" ]; then
		rm -rf "$sock_dir"
	fi
	if ! $keep_job; then
		rm -rf "$job"
	fi
}
# Killed from outside (meson's own timeout): show what the guest was doing.
# shellcheck disable=SC2317
interrupted() {
	echo "guest: interrupted"
	if [ -s "$log" ]; then
		console_tail
	fi
	exit 1
}
trap cleanup EXIT
trap interrupted INT TERM

# qemu's monitor is a UNIX socket, and a socket's path must fit sun_path (107
# bytes): the job lies under the build tree or the cache, as deep as the
# checkout, so the socket gets a private (0700) folder of its own where the
# path is short, removed on exit. Without one the guest runs without a
# monitor, which only the dump at a timeout needs.
monitor_name=monitor.sock
for base in "${XDG_RUNTIME_DIR:-}" /tmp; do
	# The folder mktemp makes: BASE/wla-guest.XXXXXX/monitor.sock.
	if [ -n "$base" ] && [ -d "$base" ] && [ -w "$base" ] &&
		[ $(($(printf %s "$base/wla-guest.XXXXXX/$monitor_name" | wc -c))) -le 107 ]; then
		sock_dir=$(mktemp -d "$base/wla-guest.XXXXXX") && break
		sock_dir=""
	fi
done
monitor=""
if [ -n "$sock_dir" ]; then
	monitor=$sock_dir/$monitor_name
else
	echo "guest: no short private folder for qemu's monitor socket (tried" \
		"XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-unset} and /tmp): running without a monitor"
fi

{
	echo '#!/bin/bash'
	echo '# Written by run-guest.sh, run by the guest chrooted into the host root.'
	printf 'export PATH=%q\n' "$PATH"
	echo 'export HOME=/root XDG_RUNTIME_DIR=/run/user/0'
	for name in $(compgen -e); do
		case $name in
		WLA_* | *SAN_OPTIONS | MALLOC_PERTURB_ | LANG | LC_ALL)
			printf 'export %s=%q\n' "$name" "${!name}" ;;
		esac
	done
	for assignment in ${extra_env[@]+"${extra_env[@]}"}; do
		[[ $assignment =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage
		printf 'export %s=%q\n' "${assignment%%=*}" "${assignment#*=}"
	done
	if $udev; then
		# udev tools ignore requests in a chroot unless told otherwise.
		echo 'export SYSTEMD_IGNORE_CHROOT=1'
		echo '/lib/systemd/systemd-udevd --daemon || exit 1'
		echo 'udevadm trigger --action=add && udevadm settle --timeout=60 || exit 1'
	fi
	# Near the timeout, what every process still there waits on, so that a
	# hang says where it is (the console's tail is printed on a timeout).
	cat <<-EOF
	(
		sleep $((timeout > 70 ? timeout - 50 : 20))
		echo "WLA-GUEST-WATCHDOG: still running after $((timeout > 70 ? timeout - 50 : 20)) s"
		ps -eo pid,ppid,stat,wchan:24,etime,time,args | awk '\$NF !~ /^\\[/' | cut -c1-160
		for task in /proc/[0-9]*/task/[0-9]*; do
			state=\$(awk '{ print \$3 }' "\$task/stat" 2>/dev/null)
			case \$state in
			D | T | t) echo "-- \$task (\$state) \$(tr '\\0' ' ' <"\${task%/task/*}/cmdline" | cut -c1-100)"
				head -n 8 "\$task/stack" 2>/dev/null ;;
			esac
		done
		dmesg | tail -n 15
	) &
	EOF
	printf 'cd -- %q || exit 1\n' "$cwd"
	printf 'exec'
	printf ' %q' "$@"
	printf '\n'
} >"$job/cmd.sh"

# Host folders the guest's tmpfs on /tmp and /run would hide: the working
# folder, the build and source trees and the folders of absolute arguments.
{
	for path in "$cwd" "${WLA_BUILD_ROOT:-}" "${WLA_SOURCE_ROOT:-}" "$@"; do
		if [[ $path == /* ]] && [ -e "$path" ]; then
			[ -d "$path" ] || path=$(dirname "$path")
			readlink -f "$path"
		fi
	done | grep -E '^/(tmp|run)/' | LC_ALL=C sort -u
} >"$job/expose" || true

# --- Boot.
virtfs() { # PATH TAG: a read-only 9p export (qemu wants commas doubled)
	echo "local,path=${1//,/,,},mount_tag=$2,security_model=none,readonly=on,multidevs=remap"
}
qemu_args=(
	-accel "$accel" -m "$mem" -smp 2
	-nographic -no-reboot -nic none
	-kernel "$kernel" -initrd "$initramfs"
	-append "console=ttyS0 loglevel=5 nokaslr panic=-1 edd=off wla.vkms=$vkms wla.card=$card_module wla.gpio_lines=$gpio_lines$card_cmdline"
	-virtfs "$(virtfs / host)" -virtfs "$(virtfs "$job" wlajob)"
)
case $card in
vkms) qemu_args+=(-vga none) ;;
virtio-gpu | virtio-gpu-2) qemu_args+=(-vga none "${card_args[@]}") ;;
*) qemu_args+=("${card_args[@]}") ;;
esac
if [ -n "$monitor" ]; then
	# qemu wants commas doubled here too.
	qemu_args+=(-monitor "unix:${monitor//,/,,},server=on,wait=off")
else
	qemu_args+=(-monitor none)
fi
if [ "$accel" = kvm ]; then
	qemu_args+=(-cpu host)
fi

# What a guest that is still running at its timeout is doing, from qemu's
# monitor: the vCPUs' state and registers twice, a second apart, so that a
# guest spinning, halted for good or waiting on a lost interrupt can be told
# apart (the kernel is booted without KASLR: RIP maps to /boot/System.map-*).
monitor_dump() {
	[ -n "$monitor" ] && [ -S "$monitor" ] || return 0
	/usr/bin/python3 - "$monitor" <<-'PY' >"$job/monitor.log" 2>&1 || true
	import socket, sys, time
	s = socket.socket(socket.AF_UNIX)
	s.settimeout(5)
	s.connect(sys.argv[1])
	def ask(cmd):
	    s.sendall((cmd + "\n").encode())
	    time.sleep(1)
	    out = b""
	    try:
	        while True:
	            chunk = s.recv(65536)
	            if not chunk:
	                break
	            out += chunk
	            if len(chunk) < 65536:
	                break
	    except socket.timeout:
	        pass
	    print("== " + cmd)
	    print(out.decode(errors="replace"))
	for cmd in ("info status", "info cpus", "info registers -a", "info registers -a",
	            "cpu 0", "x/64gx $rsp", "cpu 1", "x/64gx $rsp"):
	    ask(cmd)
	PY
	echo "guest: qemu's view of the guest at the timeout (full: $job/monitor.log):"
	tr -d '\r' <"$job/monitor.log" | grep -E '^(==|VM status|\*? *CPU|RIP)' \
		| sed 's/^/  # /' | head -n 20
	# Kernel text addresses in the registers and on the stacks, by name,
	# where the cache holds the guest's /proc/kallsyms (Debian's System.map
	# is a placeholder; make it once with a guest that prints
	# `awk '$2 ~ /^[tTwW]$/' /proc/kallsyms`, sorted, into $cache/kallsyms).
	local map=$cache/kallsyms
	if [ -r "$map" ]; then
		echo "guest: kernel symbols of RIP and of the stacks' words:"
		tr -d '\r' <"$job/monitor.log" | grep -oE '(ffffffff8[0-9a-f]{7})' | sort -u |
			awk -v map="$map" '
			BEGIN { while ((getline line < map) > 0) { split(line, f, " ")
				if (f[2] ~ /^[tTwW]$/) { n++; addr[n] = f[1]; name[n] = f[3] } } }
			{ lo = 1; hi = n; want = $1
			  if (want < addr[1]) next
			  while (lo < hi) { mid = int((lo + hi + 1) / 2); if (addr[mid] <= want) lo = mid; else hi = mid - 1 }
			  print "  # " want " " name[lo] }' | head -n 60
	fi
}

start=$(date +%s%N)
qemu-system-x86_64 "${qemu_args[@]}" </dev/null >"$log" 2>&1 &
qemu_pid=$!
booted=false
timed_out=false
while kill -0 "$qemu_pid" 2>/dev/null; do
	now=$(date +%s%N)
	if ! $booted && grep -qa '^WLA-GUEST-START' "$log"; then
		booted=true
		echo "guest: booted in $(awk -v ns=$((now - start)) 'BEGIN { printf "%.1f", ns / 1e9 }') s"
	fi
	if [ $(((now - start) / 1000000000)) -ge "$timeout" ]; then
		timed_out=true
		monitor_dump
		kill "$qemu_pid" 2>/dev/null || true
		sleep 5
		kill -KILL "$qemu_pid" 2>/dev/null || true
		break
	fi
	sleep 0.1
done
qemu_status=0
wait "$qemu_pid" || qemu_status=$?
qemu_pid=""
if $timed_out; then
	qemu_status=124
fi

# The command's own output: the console between the two markers, without
# the empty line the guest prints before the second.
# awk reads to the end: leaving early would break the pipe of what feeds it,
# and pipefail would end this script with 141 before the guest's status.
clean_log | awk '
	done { next }
	/^WLA-GUEST-EXIT / { if (held != "") print held; on = 0; done = 1; next }
	on == 2 { print held }
	on { held = $0; on = 2 }
	/^WLA-GUEST-START/ { on = 1 }
	END { if (on == 2 && held != "") print held }'

status=$(clean_log | sed -n 's/^WLA-GUEST-EXIT \([0-9]\{1,\}\)$/\1/p' | tail -n 1)
if [ "$qemu_status" -eq 124 ] || [ "$qemu_status" -eq 137 ]; then
	echo "guest: timed out after $timeout s ($(
		$booted && echo "the command was still running" || echo "the guest had not booted"))"
	console_tail
	exit 1
fi
if [ -z "$status" ]; then
	error=$(clean_log | sed -n 's/^WLA-GUEST-ERROR //p' | tail -n 1)
	if [ -n "$error" ]; then
		echo "guest: setup failed: $error"
	elif $booted; then
		echo "guest: the guest stopped before the command finished (qemu status $qemu_status)"
	else
		echo "guest: the guest did not boot (qemu status $qemu_status)"
	fi
	console_tail
	exit 1
fi
case $status in
0)
	keep_job=false
	exit 0 ;;
77)
	keep_job=false
	echo "guest: the command skipped (status 77)"
	exit 77 ;;
*)
	echo "guest: the command exited with status $status"
	console_tail
	exit 1 ;;
esac
