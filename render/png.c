#include <drm_fourcc.h>
#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/util/log.h>
#include "util.h"
#include "render/compose.h"
#include "wlatomic/capture.h"

static void handle_png_error(png_structp png, png_const_charp msg)
{
	const char *path = png_get_error_ptr(png);
	wlr_log(WLR_ERROR, "png %s: %s", path, msg);
	png_longjmp(png, 1);
}

static void handle_png_warning(png_structp png, png_const_charp msg)
{
	const char *path = png_get_error_ptr(png);
	wlr_log(WLR_DEBUG, "png %s: %s", path, msg);
}

/* Kept apart from its caller so that no local is live across the setjmp. */
static bool write_rows(png_structp png, png_infop info, FILE *f, const struct wla_image *image,
	uint8_t *row)
{
	if (setjmp(png_jmpbuf(png))) {
		return false;
	}
	png_init_io(png, f);
	png_set_IHDR(png, info, image->width, image->height, 8, PNG_COLOR_TYPE_RGB,
		PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (uint32_t y = 0; y < image->height; y++) {
		const uint32_t *src = (const uint32_t *)((const uint8_t *)image->data +
			(size_t)y * image->stride);
		/* Premultiplied colour is the pixel as seen over black, which is what a
		 * screen shows where nothing is below it; alpha itself is dropped. */
		for (uint32_t x = 0; x < image->width; x++) {
			row[3 * x + 0] = (uint8_t)(src[x] >> 16);
			row[3 * x + 1] = (uint8_t)(src[x] >> 8);
			row[3 * x + 2] = (uint8_t)src[x];
		}
		png_write_row(png, row);
	}
	png_write_end(png, NULL);
	return true;
}

WLA_EXPORT int wla_image_write_png(const struct wla_image *image, const char *path)
{
	if (image->format != DRM_FORMAT_XRGB8888 && image->format != DRM_FORMAT_ARGB8888) {
		wlr_log(WLR_ERROR, "png %s: image format 0x%08x is neither XRGB8888 nor ARGB8888",
			path, image->format);
		return -EINVAL;
	}
	if (image->width == 0 || image->height == 0 || image->stride < image->width * 4) {
		wlr_log(WLR_ERROR, "png %s: image %ux%u stride %u is not writable", path,
			image->width, image->height, image->stride);
		return -EINVAL;
	}

	uint8_t *row = malloc((size_t)image->width * 3);
	if (!row) {
		wlr_log(WLR_ERROR, "png %s: cannot allocate a %u pixel row", path, image->width);
		return -ENOMEM;
	}
	FILE *f = fopen(path, "wb");
	if (!f) {
		int err = errno;
		wlr_log(WLR_ERROR, "png %s: cannot create: %s", path, strerror(err));
		free(row);
		return -err;
	}

	int ret = 0;
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, (void *)path,
		handle_png_error, handle_png_warning);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	if (!info) {
		wlr_log(WLR_ERROR, "png %s: cannot allocate a libpng writer", path);
		ret = -ENOMEM;
	} else if (!write_rows(png, info, f, image, row)) {
		ret = -EIO;
	}
	png_destroy_write_struct(&png, &info);
	free(row);

	if (fclose(f) != 0 && ret == 0) {
		int err = errno;
		wlr_log(WLR_ERROR, "png %s: cannot finish writing: %s", path, strerror(err));
		ret = -err;
	}
	return ret;
}

static uint32_t premultiply(uint32_t c, uint32_t a)
{
	/* Round to nearest; c * a / 255 is never exactly halfway since 255 is odd. */
	return (c * a + 127) / 255;
}

int wla_png_size(const char *path, uint32_t *width, uint32_t *height)
{
	png_image png = { .version = PNG_IMAGE_VERSION };
	if (!png_image_begin_read_from_file(&png, path)) {
		wlr_log(WLR_DEBUG, "png %s: %s", path, png.message);
		png_image_free(&png);
		return -EINVAL;
	}
	*width = png.width;
	*height = png.height;
	png_image_free(&png);
	return 0;
}

WLA_EXPORT struct wla_image *wla_image_read_png(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		wlr_log(WLR_ERROR, "png %s: cannot open: %s", path, strerror(errno));
		return NULL;
	}

	png_image png = { .version = PNG_IMAGE_VERSION };
	if (!png_image_begin_read_from_stdio(&png, f)) {
		wlr_log(WLR_ERROR, "png %s: %s", path, png.message);
		png_image_free(&png);
		fclose(f);
		return NULL;
	}
	bool has_alpha = png.format & PNG_FORMAT_FLAG_ALPHA;

	struct wla_image *image = wla_image_create(png.width, png.height);
	if (!image) {
		wlr_log(WLR_ERROR, "png %s: cannot hold its %ux%u pixels", path, png.width,
			png.height);
		png_image_free(&png);
		fclose(f);
		return NULL;
	}

	/* libpng expands palette, grey, 16-bit and tRNS files to this one layout. */
	png.format = PNG_FORMAT_BGRA;
	if (!png_image_finish_read(&png, NULL, image->data, (png_int_32)image->stride, NULL)) {
		wlr_log(WLR_ERROR, "png %s: %s", path, png.message);
		png_image_free(&png);
		fclose(f);
		wla_image_destroy(image);
		return NULL;
	}
	fclose(f);

	/* PNG alpha is straight, our pixels are premultiplied as DRM's are, so that a
	 * PNG can serve directly as a plane's contents. */
	image->format = has_alpha ? DRM_FORMAT_ARGB8888 : DRM_FORMAT_XRGB8888;
	for (uint32_t y = 0; y < image->height; y++) {
		uint32_t *row = (uint32_t *)((uint8_t *)image->data + (size_t)y * image->stride);
		for (uint32_t x = 0; x < image->width; x++) {
			const uint8_t *p = (const uint8_t *)&row[x];
			uint32_t b = p[0], g = p[1], r = p[2], a = p[3];
			if (a != 0xff) {
				r = premultiply(r, a);
				g = premultiply(g, a);
				b = premultiply(b, a);
			}
			row[x] = a << 24 | r << 16 | g << 8 | b;
		}
	}
	return image;
}
