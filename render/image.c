#include <drm_fourcc.h>
#include <stdlib.h>
#include <wlr/util/log.h>
#include "util.h"
#include "render/compose.h"
#include "wlatomic/capture.h"

/* Matches the largest CRTC any current display controller drives. */
#define WLA_IMAGE_MAX_SIZE 16384

static struct wla_image *image_alloc(uint32_t width, uint32_t height, bool zeroed);

WLA_EXPORT struct wla_image *wla_image_create(uint32_t width, uint32_t height)
{
	return image_alloc(width, height, true);
}

struct wla_image *wla_image_create_uninit(uint32_t width, uint32_t height)
{
	return image_alloc(width, height, false);
}

static struct wla_image *image_alloc(uint32_t width, uint32_t height, bool zeroed)
{
	if (width == 0 || height == 0 || width > WLA_IMAGE_MAX_SIZE ||
			height > WLA_IMAGE_MAX_SIZE) {
		wlr_log(WLR_ERROR, "image: size %ux%u is outside 1..%d", width, height,
			WLA_IMAGE_MAX_SIZE);
		return NULL;
	}
	struct wla_image *image = calloc(1, sizeof(*image));
	if (!image) {
		wlr_log(WLR_ERROR, "image: cannot allocate %ux%u image", width, height);
		return NULL;
	}
	image->width = width;
	image->height = height;
	image->stride = width * 4;
	image->format = DRM_FORMAT_XRGB8888;
	/* Large blocks come back from the heap after the first is freed,
	 * where calloc has to clear them: a pass over the image that a
	 * composition writing every pixel does not need. */
	size_t size = (size_t)height * image->stride;
	image->data = zeroed ? calloc(1, size) : malloc(size);
	if (!image->data) {
		wlr_log(WLR_ERROR, "image: cannot allocate %ux%u pixels", width, height);
		free(image);
		return NULL;
	}
	return image;
}

WLA_EXPORT void wla_image_destroy(struct wla_image *image)
{
	if (!image) {
		return;
	}
	free(image->data);
	free(image);
}

static const uint32_t *image_row(const struct wla_image *image, uint32_t y)
{
	return (const uint32_t *)((const uint8_t *)image->data + (size_t)y * image->stride);
}

/* The X byte of XRGB8888 is undefined; reading it as opaque keeps comparisons and
 * checksums independent of whatever the producer left there. */
static uint32_t alpha_mask(const struct wla_image *image)
{
	return image->format == DRM_FORMAT_XRGB8888 ? 0xff000000 : 0;
}

WLA_EXPORT uint32_t wla_image_pixel(const struct wla_image *image, uint32_t x, uint32_t y)
{
	if (x >= image->width || y >= image->height) {
		wlr_log(WLR_ERROR, "image: pixel %u,%u is outside the %ux%u image", x, y,
			image->width, image->height);
		return 0;
	}
	return image_row(image, y)[x] | alpha_mask(image);
}

WLA_EXPORT uint32_t wla_image_crc32(const struct wla_image *image)
{
	/* Building the table costs 2048 steps, nothing next to hashing even a cursor,
	 * and keeps the function reentrant without a once-guard. */
	uint32_t table[256];
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;
		for (int k = 0; k < 8; k++) {
			c = c & 1 ? 0xedb88320 ^ (c >> 1) : c >> 1;
		}
		table[n] = c;
	}

	uint32_t mask = alpha_mask(image);
	uint32_t crc = 0xffffffff;
	for (uint32_t y = 0; y < image->height; y++) {
		const uint32_t *row = image_row(image, y);
		for (uint32_t x = 0; x < image->width; x++) {
			uint32_t p = row[x] | mask;
			for (int b = 0; b < 4; b++) {
				crc = table[(crc ^ (p >> (8 * b))) & 0xff] ^ (crc >> 8);
			}
		}
	}
	return crc ^ 0xffffffff;
}
