#!/usr/bin/env bash
# Build the real-kernel tier's initramfs: busybox-static, guest-init.sh as
# /init, Debian's modules the guest needs (in dependency order, listed in
# /lib/modules/load.list), the emulated cards' drivers (loaded on request,
# their dependencies in load.list) and our vkms.ko and gpio-sim-mod.ko.
# Usage: make-initramfs.sh OUT KVER MODDIR   (MODDIR: from build-modules.sh)
# Does nothing when OUT is newer than every input.
set -euo pipefail

if [ $# -ne 3 ]; then
	echo "usage: $0 OUT KVER MODDIR" >&2
	exit 2
fi
out=$1
kver=$2
moddir=$3
here=$(dirname "$(readlink -f "$0")")
busybox=${WLA_BUSYBOX:-/bin/busybox}
# virtio-pci and 9p carry the host's root; the rest is what tests drive.
modules=(virtio_pci 9pnet_virtio 9p configfs drm drm_kms_helper drm_shmem_helper uinput evdev)
# The drivers of the cards qemu emulates (run-guest.sh --card): their
# dependencies load at boot, each driver only when its card is asked for.
cards=(virtio-gpu qxl cirrus bochs)

inputs=("$here/make-initramfs.sh" "$here/guest-init.sh" "$moddir/vkms.ko"
	"$moddir/gpio-sim-mod.ko" "/lib/modules/$kver/modules.dep" "$busybox")
up_to_date=true
for f in "${inputs[@]}"; do
	if [ ! -f "$f" ]; then
		echo "make-initramfs: missing $f" >&2
		exit 1
	fi
	if [ ! -f "$out" ] || [ "$f" -nt "$out" ]; then
		up_to_date=false
	fi
done
if $up_to_date; then
	exit 0
fi

# The guest has no C library of its own: busybox must be static.
if readelf -l "$busybox" | grep -q 'Requesting program interpreter'; then
	echo "make-initramfs: $busybox is dynamically linked (install busybox-static)" >&2
	exit 1
fi

root=$(mktemp -d "$(dirname "$out")/initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,dev,proc,sys,tmp,lib/modules}
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
	if [ "$applet" != busybox ]; then
		ln -s busybox "$root/bin/$applet"
	fi
done
install -m 0755 "$here/guest-init.sh" "$root/init"

# modprobe prints "insmod PATH [OPTIONS]" per module, dependencies first;
# modules shared by several (drm) are loaded once, at their first place.
card_paths=$(for m in "${cards[@]}"; do
	modprobe --show-depends -S "$kver" "$m" | awk '$1 == "insmod" { p = $2 } END { print p }'
done)
paths=$(for m in "${modules[@]}" "${cards[@]}"; do
	modprobe --show-depends -S "$kver" "$m" || exit 1
done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }')
for path in $paths; do
	name=$(basename "$path")
	case $name in
	*.ko.xz) xz -dc "$path" >"$root/lib/modules/${name%.xz}" ;;
	*.ko.zst) zstd -qdc "$path" >"$root/lib/modules/${name%.zst}" ;;
	*.ko.gz) gzip -dc "$path" >"$root/lib/modules/${name%.gz}" ;;
	*) cp "$path" "$root/lib/modules/$name" ;;
	esac
	if ! grep -qxF "$path" <<<"$card_paths"; then
		echo "${name%.ko*}.ko" >>"$root/lib/modules/load.list"
	fi
done
cp "$moddir/vkms.ko" "$moddir/gpio-sim-mod.ko" "$root/lib/modules/"

(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
	gzip -6 >"$out.tmp"
mv -f "$out.tmp" "$out"
echo "make-initramfs: $out ($(du -k "$out" | cut -f1) KiB, modules: $(wc -w <<<"$paths") + vkms, gpio-sim)"
