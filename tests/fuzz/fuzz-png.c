/*
 * Fuzz target: the PNG reader (render/png.c, wla_image_read_png()) and the
 * writer whose files it reads back.
 *
 * Input: a PNG file, read with wla_image_read_png(); or, if it starts with
 * 'w' instead of the PNG signature, an image to write and read back: u8
 * width - 1 and u8 height - 1 (up to 64x64), u8 flags (bit 0: ARGB8888, else
 * XRGB8888; bits 1..2: stride padding in pixels), then its pixels, repeated.
 *
 * Invariants:
 *   - a file that is read gives the size of its IHDR, XRGB8888 if libpng
 *     finds no alpha in it and ARGB8888 if it does, and the pixels libpng's
 *     own decoder gives from memory, premultiplied (opaque ones unchanged);
 *     what is refused is refused after an error line, and nothing read is
 *     accepted by one and refused by the other; no read or write out of
 *     bounds (ASan);
 *   - what was read, written and read again is the same picture over black;
 *   - an image written and read back has its size and colours, opaque.
 */
#include <drm_fourcc.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "wlatomic/capture.h"

/* Larger images are checked against their header only: libpng's own decode
 * of them would cost more memory than it is worth. */
#define REFERENCE_MAX_PIXELS (1024 * 1024)
#define ROUND_TRIP_MAX_PIXELS (256 * 256)

static const uint8_t png_signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

static uint32_t pixel_at(const struct wla_image *img, uint32_t x, uint32_t y)
{
	return img->data[(size_t)y * (img->stride / 4) + x];
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Writes img and reads it back: the same picture, as seen over black, opaque. */
static void check_round_trip(const struct wla_image *img)
{
	fuzz_log_clear();
	const char *path = fuzz_file(NULL, 0);
	int ret = wla_image_write_png(img, path);
	FUZZ_CHECK(ret == 0 && fuzz_log_errors == 0, "writing a %ux%u image failed (%d)",
		img->width, img->height, ret);
	struct wla_image *back = wla_image_read_png(path);
	FUZZ_CHECK(back && fuzz_log_errors == 0, "a PNG we wrote cannot be read back");
	FUZZ_CHECK(back->width == img->width && back->height == img->height &&
		back->format == DRM_FORMAT_XRGB8888, "%ux%u written, %ux%u format 0x%x read back",
		img->width, img->height, back->width, back->height, back->format);
	for (uint32_t y = 0; y < img->height; y++) {
		for (uint32_t x = 0; x < img->width; x++) {
			uint32_t want = 0xff000000u | (pixel_at(img, x, y) & 0xffffff);
			FUZZ_CHECK(pixel_at(back, x, y) == want, "pixel %u,%u written 0x%08x, read "
				"back 0x%08x", x, y, pixel_at(img, x, y), pixel_at(back, x, y));
		}
	}
	wla_image_destroy(back);
}

/* libpng's decode of the same bytes, from memory, as straight BGRA. */
static void check_against_libpng(const struct wla_image *img, const uint8_t *data,
	size_t size)
{
	png_image ref = { .version = PNG_IMAGE_VERSION };
	FUZZ_CHECK(png_image_begin_read_from_memory(&ref, data, size),
		"read from a file but refused from memory: %s", ref.message);
	FUZZ_CHECK(ref.width == img->width && ref.height == img->height,
		"%ux%u from memory, %ux%u read", ref.width, ref.height, img->width, img->height);
	bool alpha = ref.format & PNG_FORMAT_FLAG_ALPHA;
	FUZZ_CHECK(img->format == (alpha ? DRM_FORMAT_ARGB8888 : DRM_FORMAT_XRGB8888),
		"format 0x%x read, libpng says alpha %d", img->format, alpha);
	if ((uint64_t)ref.width * ref.height > REFERENCE_MAX_PIXELS) {
		png_image_free(&ref);
		return;
	}
	ref.format = PNG_FORMAT_BGRA;
	uint8_t *px = malloc((size_t)ref.width * ref.height * 4);
	FUZZ_CHECK(px, "out of memory");
	FUZZ_CHECK(png_image_finish_read(&ref, NULL, px, 0, NULL),
		"decoded from a file but not from memory: %s", ref.message);
	for (uint32_t y = 0; y < img->height; y++) {
		for (uint32_t x = 0; x < img->width; x++) {
			const uint8_t *p = px + ((size_t)y * img->width + x) * 4;
			uint32_t got = pixel_at(img, x, y), a = got >> 24;
			FUZZ_CHECK(a == p[3], "pixel %u,%u alpha 0x%02x, libpng 0x%02x", x, y, a, p[3]);
			for (int c = 0; c < 3; c++) {
				/* Premultiplied, rounded to nearest: |v * 255 - straight * a| <= 127. */
				int64_t v = (got >> (8 * c)) & 0xff;
				int64_t diff = v * 255 - (int64_t)p[c] * a;
				FUZZ_CHECK(v <= a && diff <= 127 && diff >= -127, "pixel %u,%u channel %d "
					"is 0x%02x, libpng's is 0x%02x at alpha 0x%02x", x, y, c,
					(unsigned)v, p[c], a);
			}
		}
	}
	free(px);
}

static void fuzz_read(const uint8_t *data, size_t size)
{
	fuzz_log_clear();
	struct wla_image *img = wla_image_read_png(fuzz_file(data, size));
	FUZZ_TRACE("read: %s %ux%u format 0x%x\n", img ? "ok" : "refused", img ? img->width : 0,
		img ? img->height : 0, img ? img->format : 0);
	if (!img) {
		FUZZ_CHECK(fuzz_log_errors >= 1, "a refused PNG logged no error");
		return;
	}
	FUZZ_CHECK(fuzz_log_errors == 0, "a PNG was read after %d error lines", fuzz_log_errors);
	/* libpng insists on the signature and IHDR first. */
	FUZZ_CHECK(size >= 24 && memcmp(data, png_signature, 8) == 0 &&
		memcmp(data + 12, "IHDR", 4) == 0, "read something without a PNG header");
	FUZZ_CHECK(img->width == be32(data + 16) && img->height == be32(data + 20),
		"%ux%u read, IHDR says %ux%u", img->width, img->height, be32(data + 16),
		be32(data + 20));
	FUZZ_CHECK(img->stride == img->width * 4, "stride %u for width %u", img->stride,
		img->width);
	check_against_libpng(img, data, size);
	if ((uint64_t)img->width * img->height <= ROUND_TRIP_MAX_PIXELS) {
		check_round_trip(img);
	}
	wla_image_destroy(img);
}

static void fuzz_write(struct fuzz_input *in)
{
	struct wla_image img = {
		.width = 1 + fuzz_u8(in) % 64,
		.height = 1 + fuzz_u8(in) % 64,
	};
	uint8_t flags = fuzz_u8(in);
	img.format = flags & 1 ? DRM_FORMAT_ARGB8888 : DRM_FORMAT_XRGB8888;
	img.stride = (img.width + (flags >> 1 & 3)) * 4;
	size_t words = (size_t)img.stride / 4 * img.height;
	img.data = malloc(words * 4);
	FUZZ_CHECK(img.data, "out of memory");
	const uint8_t *bytes = in->data + in->pos;
	size_t n = in->size - in->pos;
	for (size_t i = 0; i < words * 4; i++) {
		((uint8_t *)img.data)[i] = n ? bytes[i % n] : (uint8_t)(i * 37 + 1);
	}
	check_round_trip(&img);
	free(img.data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_init();
	if (size > 0 && data[0] == 'w') {
		struct fuzz_input in = { .data = data, .size = size, .pos = 1 };
		fuzz_write(&in);
	} else {
		fuzz_read(data, size);
	}
	return 0;
}
