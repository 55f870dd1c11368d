#include <ctype.h>
#include <drm_fourcc.h>
#include <stdio.h>
#include "render/format.h"
#include "util.h"

/*
 * DRM fourccs name the layout of a little-endian word, pixman codes the layout
 * of a native-endian one: the two line up only on a little-endian host.
 */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the DRM to pixman format table assumes a little-endian host"
#endif

static const struct wla_format_info formats[] = {
	{ DRM_FORMAT_XRGB8888, PIXMAN_x8r8g8b8, 4, false, "XRGB8888" },
	{ DRM_FORMAT_ARGB8888, PIXMAN_a8r8g8b8, 4, true, "ARGB8888" },
	{ DRM_FORMAT_XBGR8888, PIXMAN_x8b8g8r8, 4, false, "XBGR8888" },
	{ DRM_FORMAT_ABGR8888, PIXMAN_a8b8g8r8, 4, true, "ABGR8888" },
	{ DRM_FORMAT_RGBX8888, PIXMAN_r8g8b8x8, 4, false, "RGBX8888" },
	{ DRM_FORMAT_RGBA8888, PIXMAN_r8g8b8a8, 4, true, "RGBA8888" },
	{ DRM_FORMAT_BGRX8888, PIXMAN_b8g8r8x8, 4, false, "BGRX8888" },
	{ DRM_FORMAT_BGRA8888, PIXMAN_b8g8r8a8, 4, true, "BGRA8888" },
	{ DRM_FORMAT_XRGB2101010, PIXMAN_x2r10g10b10, 4, false, "XRGB2101010" },
	{ DRM_FORMAT_ARGB2101010, PIXMAN_a2r10g10b10, 4, true, "ARGB2101010" },
	{ DRM_FORMAT_XBGR2101010, PIXMAN_x2b10g10r10, 4, false, "XBGR2101010" },
	{ DRM_FORMAT_ABGR2101010, PIXMAN_a2b10g10r10, 4, true, "ABGR2101010" },
	{ DRM_FORMAT_RGB565, PIXMAN_r5g6b5, 2, false, "RGB565" },
	{ DRM_FORMAT_BGR565, PIXMAN_b5g6r5, 2, false, "BGR565" },
	{ 0 },
};

const struct wla_format_info *wla_format_table(void)
{
	return formats;
}

const struct wla_format_info *wla_format_get(uint32_t drm_format)
{
	/* A fourcc of 0 is the terminator, not a format. */
	if (drm_format == 0) {
		return NULL;
	}
	for (const struct wla_format_info *f = formats; f->drm_format != 0; f++) {
		if (f->drm_format == drm_format) {
			return f;
		}
	}
	return NULL;
}

const char *wla_format_name(uint32_t drm_format, char buf[static 16])
{
	const struct wla_format_info *info = wla_format_get(drm_format);
	if (info) {
		snprintf(buf, 16, "%s", info->name);
		return buf;
	}

	for (int i = 0; i < 4; i++) {
		/* A value that is no fourcc at all reads better as a number. */
		if (!isprint((int)((drm_format >> (8 * i)) & 0xff))) {
			snprintf(buf, 16, "0x%08x", drm_format);
			return buf;
		}
	}
	return wla_fourcc_str(drm_format, buf);
}
