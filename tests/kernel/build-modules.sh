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

# The patches below replace texts of vkms' sources, each found exactly once
# (else the script stops, naming the patch to update): patch(name, pairs).
cat >"$work/vkms_patch.py" <<'PY'
import functools
import sys


def _patch(src, what, name, pairs):
    path = src + "/" + name
    text = open(path).read()
    for old, new in pairs:
        n = text.count(old)
        if n != 1:
            sys.exit("build-modules: %s: expected text found %d times, not once; update the "
                     "%s patch:\n%s" % (name, n, what, old))
        text = text.replace(old, new)
    open(path, "w").write(text)


patch = functools.partial(_patch, sys.argv[1], sys.argv[2])
PY

# Debian's 6.1 vkms can freeze the guest: DRM calls ->disable_vblank with
# its vblank locks held (drm_crtc_vblank_off(): event_lock, vbl_lock,
# vblank_time_lock; the vblank off timer: vbl_lock, vblank_time_lock), and
# vkms_disable_vblank() waits there in hrtimer_cancel() for a running
# vkms_vblank_simulate(), which spins in drm_crtc_handle_vblank() on
# event_lock or vblank_time_lock: each CPU waits for the other forever.
# As upstream DRM's vblank timer does (2025, "drm/vblank: Add vblank
# timer"), disabling only tells the timer to stop (period_ns = 0,
# hrtimer_try_to_cancel()) and the callback stops by itself when it finds
# vblank off; the timer is set up once instead of at each enable (a callback
# may still run then), waited for only when the device goes, and a left-over
# callback counts no vblank. Steady vblank timestamps and events are as before.
python3 - "$src" vblank "$work" <<'PY'
import sys
sys.path.insert(0, sys.argv[3])
from vkms_patch import patch


patch("vkms_crtc.c", [
    # The callback: stop when vblank went off while it was pending or running.
    ("""	struct vkms_crtc_state *state;
	u64 ret_overrun;
	bool ret, fence_cookie;

	fence_cookie = dma_fence_begin_signalling();

	ret_overrun = hrtimer_forward_now(&output->vblank_hrtimer,
					  output->period_ns);
	if (ret_overrun != 1)
		pr_warn("%s: vblank timer overrun\\n", __func__);

	spin_lock(&output->lock);
	ret = drm_crtc_handle_vblank(crtc);
	if (!ret)
		DRM_ERROR("vkms failure on handling vblank");
""", """	struct vkms_crtc_state *state;
	ktime_t period = READ_ONCE(output->period_ns);
	u64 ret_overrun;
	bool ret, fence_cookie;

	/* vkms_disable_vblank() set period_ns to 0 but could not wait. */
	if (!period)
		return HRTIMER_NORESTART;

	fence_cookie = dma_fence_begin_signalling();

	ret_overrun = hrtimer_forward_now(&output->vblank_hrtimer, period);
	if (ret_overrun != 1)
		pr_warn("%s: vblank timer overrun\\n", __func__);

	spin_lock(&output->lock);
	ret = drm_crtc_handle_vblank(crtc);
	if (!ret) {
		/* vblank went off while this waited for DRM's locks. */
		spin_unlock(&output->lock);
		dma_fence_end_signalling(fence_cookie);
		return HRTIMER_NORESTART;
	}
"""),
    # Enable: the timer is set up once, in vkms_crtc_init(): a callback of
    # the previous enable may still be running here.
    ("""	hrtimer_init(&out->vblank_hrtimer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	out->vblank_hrtimer.function = &vkms_vblank_simulate;
	out->period_ns = ktime_set(0, vblank->framedur_ns);
	hrtimer_start(&out->vblank_hrtimer, out->period_ns, HRTIMER_MODE_REL);
""", """	WRITE_ONCE(out->period_ns, ktime_set(0, vblank->framedur_ns));
	hrtimer_start(&out->vblank_hrtimer, out->period_ns, HRTIMER_MODE_REL);
"""),
    # The timestamp, under vblank_time_lock: from a callback that
    # vkms_disable_vblank() left running while vblank went off and on again
    # (the timer is queued again), no vblank has passed.
    ("""	*vblank_time = READ_ONCE(output->vblank_hrtimer.node.expires);
""", """	if (in_vblank_irq && hrtimer_is_queued(&output->vblank_hrtimer)) {
		*vblank_time = vblank->time;
		return true;
	}

	*vblank_time = READ_ONCE(output->vblank_hrtimer.node.expires);
"""),
    # Disable: called under DRM's event_lock/vbl_lock/vblank_time_lock,
    # which the callback takes: never wait for it here.
    ("""	hrtimer_cancel(&out->vblank_hrtimer);
}
""", """	WRITE_ONCE(out->period_ns, 0);
	hrtimer_try_to_cancel(&out->vblank_hrtimer);
}
"""),
    ("""	spin_lock_init(&vkms_out->lock);
	spin_lock_init(&vkms_out->composer_lock);
""", """	spin_lock_init(&vkms_out->lock);
	spin_lock_init(&vkms_out->composer_lock);
	hrtimer_init(&vkms_out->vblank_hrtimer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	vkms_out->vblank_hrtimer.function = &vkms_vblank_simulate;
"""),
])
# The device's end: no lock held, so wait there for a callback that
# vkms_disable_vblank() left running (set up only if vkms_crtc_init() ran).
patch("vkms_drv.c", [
    ("""	if (vkms->output.composer_workq)
		destroy_workqueue(vkms->output.composer_workq);
""", """	if (vkms->output.vblank_hrtimer.function)
		hrtimer_cancel(&vkms->output.vblank_hrtimer);
	if (vkms->output.composer_workq)
		destroy_workqueue(vkms->output.composer_workq);
"""),
])
PY

# Colour and timing properties for the KMS driver's tests: no card qemu
# emulates for Debian's 6.1 kernel has a gamma LUT or variable refresh.
# vkms gets a 256-entry GAMMA_LUT, applied after blending to what it
# composes (writeback shows it, as later upstream vkms does), interpolated
# between entries; and its connector says vrr_capable, so VRR_ENABLED is
# accepted (the kernel keeps it in the CRTC state; vkms' vblank timer stays
# fixed, so it proves the property path, not the timing); and writing 1 to
# /sys/module/vkms/parameters/link_bad sets its link-status BAD with a
# hot-plug uevent, as a DisplayPort driver does when the link fails; the
# parameter panel_orientation=0..3 gives the connector a "panel orientation"
# (DSI and eDP panels mounted turned have one); and its planes take
# FB_DAMAGE_CLIPS (kept in the plane state; vkms composes all of the fb).
python3 - "$src" colour "$work" <<'PY'
import sys
sys.path.insert(0, sys.argv[3])
from vkms_patch import patch


patch("vkms_crtc.c", [
    ("""	drm_crtc_helper_add(crtc, &vkms_crtc_helper_funcs);
""", """	drm_crtc_helper_add(crtc, &vkms_crtc_helper_funcs);
	drm_crtc_enable_color_mgmt(crtc, 0, false, 256);
"""),
])
patch("vkms_output.c", [
    ("""	drm_connector_helper_add(connector, &vkms_conn_helper_funcs);
""", """	drm_connector_helper_add(connector, &vkms_conn_helper_funcs);
	drm_connector_attach_vrr_capable_property(connector);
	drm_connector_set_vrr_capable_property(connector, true);
	{
		extern int vkms_panel_orientation;

		drm_connector_set_panel_orientation(connector, vkms_panel_orientation);
	}
"""),
])
patch("vkms_drv.c", [
    ("""MODULE_PARM_DESC(enable_overlay, "Enable/Disable overlay support");
""", """MODULE_PARM_DESC(enable_overlay, "Enable/Disable overlay support");

/* Writing 1 marks the connector's link BAD and sends a hot-plug uevent,
 * as a driver does when a DisplayPort link fails. */
static int vkms_link_bad_set(const char *val, const struct kernel_param *kp)
{
	struct vkms_device *vkmsdev = default_config ? default_config->dev : NULL;
	bool bad;
	int ret = kstrtobool(val, &bad);

	if (ret)
		return ret;
	if (!vkmsdev)
		return -ENODEV;
	if (bad) {
		drm_connector_set_link_status_property(&vkmsdev->output.connector,
						       DRM_MODE_LINK_STATUS_BAD);
		drm_kms_helper_hotplug_event(&vkmsdev->drm);
	}
	return 0;
}

static const struct kernel_param_ops vkms_link_bad_ops = {
	.set = vkms_link_bad_set,
};
module_param_cb(link_bad, &vkms_link_bad_ops, NULL, 0200);

int vkms_panel_orientation = DRM_MODE_PANEL_ORIENTATION_UNKNOWN;
module_param_named(panel_orientation, vkms_panel_orientation, int, 0444);
MODULE_PARM_DESC(panel_orientation, "The connector's panel orientation (0..3; -1: none)");
"""),
])
patch("vkms_plane.c", [
    ("""	drm_plane_helper_add(&plane->base, funcs);
""", """	drm_plane_helper_add(&plane->base, funcs);
	drm_plane_enable_fb_damage_clips(&plane->base);
"""),
])
patch("vkms_composer.c", [
    ("""#include "vkms_drv.h"
""", """#include "vkms_drv.h"
#include <drm/drm_color_mgmt.h>

/* One channel through the LUT: the position value / 0xffff * (n - 1),
 * linear between the two entries around it. */
static u16 lut_channel(const struct drm_color_lut *lut, size_t n, u16 v, int ch)
{
	u64 pos = (u64)v * (n - 1);
	size_t i = pos / 0xffff;
	u64 frac = pos % 0xffff;
	const struct drm_color_lut *a = &lut[i], *b = &lut[i + 1 < n ? i + 1 : i];
	u64 lo = ch == 0 ? a->red : ch == 1 ? a->green : a->blue;
	u64 hi = ch == 0 ? b->red : ch == 1 ? b->green : b->blue;

	return (u16)((lo * (0xffff - frac) + hi * frac + 0x7fff) / 0xffff);
}

static void apply_lut(const struct drm_property_blob *blob, struct line_buffer *buf)
{
	const struct drm_color_lut *lut = blob->data;
	size_t n = drm_color_lut_size(blob);

	if (n < 2)
		return;
	for (size_t x = 0; x < buf->n_pixels; x++) {
		struct pixel_argb_u16 *p = &buf->pixels[x];

		p->r = lut_channel(lut, n, p->r, 0);
		p->g = lut_channel(lut, n, p->g, 1);
		p->b = lut_channel(lut, n, p->b, 2);
	}
}
"""),
    ("""		*crc32 = crc32_le(*crc32, (void *)output_buffer->pixels, row_size);
""", """		if (crtc_state->base.gamma_lut)
			apply_lut(crtc_state->base.gamma_lut, output_buffer);

		*crc32 = crc32_le(*crc32, (void *)output_buffer->pixels, row_size);
"""),
])
PY

# More connectors than CRTCs, as display engines with more ports than
# pipes have (no card qemu emulates for Debian's 6.1 has the shape): the
# parameter extra_connectors=N (0..3) adds Virtual-2.. to vkms' one CRTC,
# each connected, with its own encoder, modes as Virtual-1's.
python3 - "$src" connectors "$work" <<'PY'
import sys
sys.path.insert(0, sys.argv[3])
from vkms_patch import patch


patch("vkms_output.c", [
    ("""static const struct drm_connector_helper_funcs vkms_conn_helper_funcs = {
	.get_modes    = vkms_conn_get_modes,
};
""", """static const struct drm_connector_helper_funcs vkms_conn_helper_funcs = {
	.get_modes    = vkms_conn_get_modes,
};

static int extra_connectors;
module_param(extra_connectors, int, 0444);
MODULE_PARM_DESC(extra_connectors, "Connectors beside Virtual-1 on its one CRTC (0..3)");

/* One more connected virtual connector, with its own encoder, that only
 * the one CRTC can drive; both freed with the mode config. */
static void vkms_extra_connector_destroy(struct drm_connector *connector)
{
	drm_connector_cleanup(connector);
	kfree(connector);
}

static const struct drm_connector_funcs vkms_extra_connector_funcs = {
	.fill_modes = drm_helper_probe_single_connector_modes,
	.destroy = vkms_extra_connector_destroy,
	.reset = drm_atomic_helper_connector_reset,
	.atomic_duplicate_state = drm_atomic_helper_connector_duplicate_state,
	.atomic_destroy_state = drm_atomic_helper_connector_destroy_state,
};

static void vkms_extra_encoder_destroy(struct drm_encoder *encoder)
{
	drm_encoder_cleanup(encoder);
	kfree(encoder);
}

static const struct drm_encoder_funcs vkms_extra_encoder_funcs = {
	.destroy = vkms_extra_encoder_destroy,
};

static int vkms_add_extra_connector(struct drm_device *dev)
{
	struct drm_connector *connector;
	struct drm_encoder *encoder;
	int ret;

	connector = kzalloc(sizeof(*connector), GFP_KERNEL);
	if (!connector)
		return -ENOMEM;
	ret = drm_connector_init(dev, connector, &vkms_extra_connector_funcs,
				 DRM_MODE_CONNECTOR_VIRTUAL);
	if (ret) {
		kfree(connector);
		return ret;
	}
	drm_connector_helper_add(connector, &vkms_conn_helper_funcs);
	encoder = kzalloc(sizeof(*encoder), GFP_KERNEL);
	if (!encoder)
		return -ENOMEM;
	ret = drm_encoder_init(dev, encoder, &vkms_extra_encoder_funcs,
			       DRM_MODE_ENCODER_VIRTUAL, NULL);
	if (ret) {
		kfree(encoder);
		return ret;
	}
	encoder->possible_crtcs = 1;
	return drm_connector_attach_encoder(connector, encoder);
}
"""),
    ("""	drm_mode_config_reset(dev);

	return 0;
""", """	for (n = 0; extra_connectors > 0 && n < (unsigned int)extra_connectors && n < 3; n++) {
		ret = vkms_add_extra_connector(dev);
		if (ret) {
			DRM_ERROR("Failed to add extra connector %u: %d\\n", n, ret);
			return ret;
		}
	}
	/* All encoders of the one CRTC can clone each other, as on a card
	 * whose console clones on every head (the kernel's clone check
	 * refuses two connectors on the CRTC otherwise). */
	if (extra_connectors > 0) {
		struct drm_encoder *enc;
		u32 all = 0;

		drm_for_each_encoder(enc, dev)
			all |= drm_encoder_mask(enc);
		drm_for_each_encoder(enc, dev)
			enc->possible_clones = all;
	}

	drm_mode_config_reset(dev);

	return 0;
"""),
])
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
