/*
 * Capture of what the display controller scans out: the planes of the next
 * latched frame composed in z-order, as an XRGB8888 image.
 */
#ifndef WLATOMIC_CAPTURE_H
#define WLATOMIC_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wlr_output;

/* An image in DRM_FORMAT_XRGB8888 (or ARGB8888 when read from a PNG with
 * alpha), rows of stride bytes. */
struct wla_image {
	uint32_t width, height;
	uint32_t stride;
	uint32_t format;
	uint32_t *data;
};

/* Allocate a zeroed width x height XRGB8888 image; NULL on ENOMEM or a zero or
 * too large size. The caller owns it and frees it with wla_image_destroy. */
struct wla_image *wla_image_create(uint32_t width, uint32_t height);
void wla_image_destroy(struct wla_image *image);

/* Pixel at (x, y) as 0xAARRGGBB; x and y must be inside the image. */
uint32_t wla_image_pixel(const struct wla_image *image, uint32_t x, uint32_t y);

/* Write as an 8-bit RGB PNG. Returns 0 or a negative errno (logged). */
int wla_image_write_png(const struct wla_image *image, const char *path);

/* Read a PNG (any colour type libpng can expand to RGBA) into a new image
 * that the caller owns; NULL on error (logged). */
struct wla_image *wla_image_read_png(const char *path);

/* CRC-32 (IEEE) of the pixels in row order, 4 bytes per pixel little-endian,
 * alpha byte forced to 0xff for XRGB8888; stride padding is not included. */
uint32_t wla_image_crc32(const struct wla_image *image);

/* A rectangle of an image, in pixels. */
struct wla_image_rect {
	int32_t x, y;
	int32_t width, height;
};

/* How far an image may differ from its reference and still match. Zeroed:
 * every pixel compared, none may differ. */
struct wla_compare_options {
	/* The largest difference of a colour channel (0..255) by which a
	 * pixel still counts as equal. */
	uint32_t tolerance;
	/* Pixels that may differ beyond the tolerance in a matching image. */
	uint64_t max_pixels;
	/* Rectangles left out (a cursor, a clock); they may reach outside the
	 * image. */
	const struct wla_image_rect *ignore;
	size_t n_ignore;
};

struct wla_compare_result {
	bool match;            /* differing <= max_pixels */
	uint64_t differing;    /* pixels differing beyond the tolerance */
	uint64_t compared;     /* pixels outside the ignored rectangles */
	uint64_t ignored;      /* pixels inside them */
	uint32_t max_delta;    /* the largest channel difference compared */
	uint32_t first_x, first_y; /* the first differing pixel, row by row */
};

/*
 * Compare image with reference, pixel by pixel on the red, green and blue
 * channels (alpha is not compared: a capture has none, a reference PNG may
 * have one). options may be NULL (exact). With diff non-NULL, *diff is a
 * new image the caller owns: differing pixels red, ignored ones dark blue,
 * equal ones the reference at a quarter of its brightness. Returns 0 with
 * result filled in, or a negative errno (logged): -EINVAL for sizes that
 * differ, a tolerance above 255 or an empty ignored rectangle, -ENOMEM.
 */
int wla_image_compare(const struct wla_image *image, const struct wla_image *reference,
	const struct wla_compare_options *options, struct wla_compare_result *result,
	struct wla_image **diff);

struct wla_capture;

/*
 * Called once per capture. image is the composed frame latched at the vblank
 * of sequence number seq; it is valid only during the call (copy what you
 * keep). image is NULL if the capture failed (output disabled or destroyed,
 * out of memory); the capture is freed after the call either way.
 */
typedef void (*wla_capture_func_t)(struct wla_capture *capture,
	const struct wla_image *image, uint64_t seq, void *data);

/*
 * Ask for the frame on screen after the next vblank of a wlatomic output.
 * Returns NULL (logged) if output is not a wlatomic output. The capture is
 * owned by the output until the callback has run or wla_capture_cancel is
 * called.
 */
struct wla_capture *wla_output_capture(struct wlr_output *output, wla_capture_func_t func,
	void *data);

/* Cancel a capture whose callback has not run yet; the callback never runs. */
void wla_capture_cancel(struct wla_capture *capture);

#endif
