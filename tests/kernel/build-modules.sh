#!/usr/bin/env bash
# Build vkms.ko and gpio-sim-mod.ko (gpio-sim with irq_sim linked in) out of
# tree for kernel KVER, from Debian's linux-source-6.1: Debian's kernel ships
# neither driver. Usage: build-modules.sh OUTDIR KVER
# Does nothing when both modules in OUTDIR are newer than this script.
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 OUTDIR KVER" >&2
	exit 2
fi
outdir=$1
kver=$2
self=$(readlink -f "$0")
source_tar=${WLA_KERNEL_SOURCE_TAR:-/usr/src/linux-source-6.1.tar.xz}
kbuild_dir=/lib/modules/$kver/build

if [ -f "$outdir/vkms.ko" ] && [ -f "$outdir/gpio-sim-mod.ko" ] &&
	[ "$outdir/vkms.ko" -nt "$self" ] && [ "$outdir/gpio-sim-mod.ko" -nt "$self" ]; then
	exit 0
fi
if [ ! -f "$source_tar" ]; then
	echo "build-modules: no kernel source at $source_tar (package linux-source-6.1)" >&2
	exit 1
fi
if [ ! -d "$kbuild_dir" ]; then
	echo "build-modules: no kernel headers at $kbuild_dir (package linux-headers-$kver)" >&2
	exit 1
fi

mkdir -p "$outdir"
work=$(mktemp -d "$outdir/build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The tarball's top folder is its own name (linux-source-6.1/); take only the
# members the two modules need (xz cannot seek: this still reads it all).
top=$(basename "$source_tar" .tar.xz)
members=(
	"$top/drivers/gpu/drm/vkms/*.c"
	"$top/drivers/gpu/drm/vkms/*.h"
	"$top/drivers/gpio/gpio-sim.c"
	"$top/drivers/gpio/gpiolib.h"
	"$top/kernel/irq/irq_sim.c"
)
tar -xJf "$source_tar" -C "$work" --wildcards "${members[@]}"
src=$work/src
mkdir -p "$src"
cp "$work/$top"/drivers/gpu/drm/vkms/*.[ch] "$work/$top"/drivers/gpio/gpio-sim.c \
	"$work/$top"/drivers/gpio/gpiolib.h "$work/$top"/kernel/irq/irq_sim.c "$src/"

# irq_to_desc() is not exported to modules; generic_handle_irq() does the
# same for irq_sim's purpose (running the handler of a simulated interrupt).
old='handle_simple_irq(irq_to_desc(irqnum));'
if ! grep -qF "$old" "$src/irq_sim.c"; then
	echo "build-modules: irq_sim.c no longer contains '$old'; update the patch" >&2
	exit 1
fi
sed -i "s/handle_simple_irq(irq_to_desc(irqnum));/generic_handle_irq(irqnum);/" "$src/irq_sim.c"

# Debian's 6.1 has drm_atomic_check_valid_clones() (backported from 6.14) but
# not the vkms fix that came with it upstream: each encoder may only be
# cloned with itself, so the writeback connector cannot share the CRTC with
# Virtual-1 and capture through writeback is refused with EINVAL. Declare the
# two encoders clones of each other, as upstream vkms does.
old_wb='			DRM_ERROR("Failed to init writeback connector\n");'
if [ "$(grep -cF "$old_wb" "$src/vkms_output.c")" -ne 1 ]; then
	echo "build-modules: vkms_output.c no longer matches the clone patch; update it" >&2
	exit 1
fi
python3 - "$src/vkms_output.c" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
old = """		if (writeback)
			DRM_ERROR("Failed to init writeback connector\\n");
"""
new = """		if (writeback) {
			DRM_ERROR("Failed to init writeback connector\\n");
		} else {
			struct drm_encoder *wb_enc = &vkmsdev->output.wb_connector.encoder;
			u32 clones = drm_encoder_mask(encoder) | drm_encoder_mask(wb_enc);

			encoder->possible_clones = clones;
			wb_enc->possible_clones = clones;
		}
"""
assert text.count(old) == 1, "vkms_output.c: writeback init not found"
open(path, "w").write(text.replace(old, new))
PY

cat >"$src/Kbuild" <<'EOF'
vkms-y := vkms_drv.o vkms_plane.o vkms_output.o vkms_crtc.o vkms_composer.o \
	vkms_writeback.o vkms_formats.o
obj-m += vkms.o
gpio-sim-mod-y := gpio-sim.o irq_sim.o
obj-m += gpio-sim-mod.o
EOF

log=$work/make.log
if ! make -C "$kbuild_dir" M="$src" -j"$(nproc)" modules >"$log" 2>&1; then
	cat "$log" >&2
	echo "build-modules: building vkms and gpio-sim for $kver failed (make output above)" >&2
	exit 1
fi
for ko in vkms.ko gpio-sim-mod.ko; do
	if [ ! -f "$src/$ko" ]; then
		cat "$log" >&2
		echo "build-modules: make succeeded but produced no $ko" >&2
		exit 1
	fi
	# Without debug information (vkms.ko: 2 MB to about 0.3); renamed into
	# place so that a half-written module is never taken as cached.
	strip --strip-debug -o "$outdir/$ko.tmp" "$src/$ko"
	mv -f "$outdir/$ko.tmp" "$outdir/$ko"
done
echo "build-modules: built vkms.ko and gpio-sim-mod.ko for $kver in $outdir"
