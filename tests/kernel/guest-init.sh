#!/bin/sh
# /init of the real-kernel tier's initramfs, run by busybox sh as PID 1.
# Loads the modules, mounts the host's root read-only over 9p at /host, runs
# the job's command chrooted there and reports its status on the console as
# "WLA-GUEST-EXIT <status>"; a setup failure is "WLA-GUEST-ERROR <what>".
# Kernel command line: wla.vkms=off|PARAM=V,PARAM=V (vkms.ko's parameters),
# wla.card=none|MODULE (the emulated card's driver, from the initramfs),
# wla.gpio_lines=N (a gpio-sim chip "panel-gpio" of N lines; 0: none).
# The job (tag wlajob, from run-guest.sh): cmd.sh, the command as a bash
# script, and expose, host folders under /tmp or /run that the guest's own
# tmpfs there must not hide (the build tree may live in /tmp).

PATH=/bin
export PATH

# The kernel found no /dev/console in the initramfs: take it once devtmpfs is up.
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1

fail() {
	echo
	echo "WLA-GUEST-ERROR $*"
	poweroff -f
	sleep 1000000
}

mount -t proc proc /proc || fail "mount /proc"
mount -t sysfs sysfs /sys || fail "mount /sys"
mkdir -p /dev/pts /dev/shm
mount -t devpts -o mode=0620,ptmxmode=0666 devpts /dev/pts || fail "mount /dev/pts"
mount -t tmpfs -o mode=1777 shm /dev/shm || fail "mount /dev/shm"

vkms=off
card=none
gpio_lines=0
# shellcheck disable=SC2013 # the command line is words, none with spaces
for arg in $(cat /proc/cmdline); do
	case $arg in
	wla.vkms=*) vkms=${arg#wla.vkms=} ;;
	wla.card=*) card=${arg#wla.card=} ;;
	wla.gpio_lines=*) gpio_lines=${arg#wla.gpio_lines=} ;;
	esac
done

# Debian's modules in dependency order (virtio, 9p, configfs, drm, input).
while read -r ko; do
	insmod "/lib/modules/$ko" || fail "insmod $ko"
done </lib/modules/load.list

if [ "$vkms" != off ]; then
	# shellcheck disable=SC2046 # one word per parameter
	insmod /lib/modules/vkms.ko $(echo "$vkms" | tr , ' ') || fail "insmod vkms.ko $vkms"
	[ -c /dev/dri/card0 ] || fail "vkms loaded but no /dev/dri/card0"
fi

if [ "$card" != none ]; then
	insmod "/lib/modules/$card.ko" || fail "insmod $card.ko"
	[ -c /dev/dri/card0 ] || fail "$card loaded but no /dev/dri/card0"
fi

if [ "$gpio_lines" -gt 0 ]; then
	insmod /lib/modules/gpio-sim-mod.ko || fail "insmod gpio-sim-mod.ko"
	mount -t configfs configfs /sys/kernel/config || fail "mount configfs"
	chip=/sys/kernel/config/gpio-sim/panel
	mkdir -p "$chip/bank0" || fail "gpio-sim: mkdir $chip/bank0"
	echo "$gpio_lines" >"$chip/bank0/num_lines" || fail "gpio-sim: num_lines $gpio_lines"
	echo panel-gpio >"$chip/bank0/label" || fail "gpio-sim: label"
	echo 1 >"$chip/live" || fail "gpio-sim: live"
fi

# 9p with large messages (the default, 8 KiB, makes loading binaries slow)
# and a page and dentry cache (halves the cost of a start with many files,
# Python's); the export is read-only and a guest lives for one command.
opts=trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro
mkdir -p /host /job /orig
mount -t 9p -o "$opts" host /host || fail "mount the host's root (9p tag host)"
mount -t 9p -o "$opts" wlajob /job || fail "mount the job (9p tag wlajob)"
[ -f /job/cmd.sh ] || fail "the job has no cmd.sh"

# /orig keeps the host's view of /tmp and /run once tmpfs covers them.
mount -o bind /host /orig || fail "bind /orig"
mount -t tmpfs -o mode=1777 tmp /host/tmp || fail "tmpfs /host/tmp"
mount -t tmpfs -o mode=0755 run /host/run || fail "tmpfs /host/run"
mkdir -p /host/run/user /host/run/wla-job
mkdir -m 0700 /host/run/user/0
mount -o bind /job /host/run/wla-job || fail "bind the job"
# Sorted, so that a parent comes before its children (then already visible).
while read -r dir; do
	if [ -n "$dir" ] && [ ! -e "/host$dir" ]; then
		mkdir -p "/host$dir" || fail "expose $dir: mkdir"
		mount -o bind "/orig$dir" "/host$dir" || fail "expose $dir: bind"
	fi
done </job/expose
for fs in proc sys dev; do
	mount -o rbind "/$fs" "/host/$fs" || fail "rbind /$fs"
done

# Each marker on a line of its own, whatever came before (firmware escapes,
# a command's last line without a newline).
echo
echo "WLA-GUEST-START uptime $(cut -d' ' -f1 /proc/uptime) s"
chroot /host /usr/bin/env -i /bin/bash /run/wla-job/cmd.sh </dev/null
status=$?
echo
echo "WLA-GUEST-EXIT $status"
poweroff -f
sleep 1000000
