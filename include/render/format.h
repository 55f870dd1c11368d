#ifndef RENDER_FORMAT_H
#define RENDER_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include <pixman.h>

/* One row of the format table: how a DRM fourcc maps to pixman. */
struct wla_format_info {
	uint32_t drm_format;
	pixman_format_code_t pixman_format;
	uint32_t bytes_per_pixel;
	bool has_alpha;
	const char *name; /* "XRGB8888" */
};

/* NULL if the format is not one we can compose. */
const struct wla_format_info *wla_format_get(uint32_t drm_format);

/* Every format in the table, terminated by a row with drm_format 0. */
const struct wla_format_info *wla_format_table(void);

/* Printable name for logs ("XRGB8888", or the fourcc's four characters). The
 * returned string lives in buf, which must hold 16 bytes. */
const char *wla_format_name(uint32_t drm_format, char buf[static 16]);

#endif
