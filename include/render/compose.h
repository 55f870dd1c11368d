#ifndef RENDER_COMPOSE_H
#define RENDER_COMPOSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wla_image;

/*
 * One plane as the composer sees it: the pixels of its framebuffer and the
 * already clipped source (16.16 fixed point, in fb pixels) and destination
 * (integer CRTC pixels) rectangles. The composer only reads data.
 */
struct wla_compose_layer {
	const void *data;
	uint32_t stride;
	uint32_t width, height; /* fb size */
	uint32_t format;        /* DRM fourcc, must be in the format table */
	uint32_t src_x, src_y, src_w, src_h; /* 16.16 */
	int32_t dst_x, dst_y;
	uint32_t dst_w, dst_h;
};

/*
 * Compose layers (bottom first) onto dst: dst is cleared to opaque black,
 * each layer is scaled from src to dst with nearest filtering, blended with
 * OVER if its format has alpha (premultiplied, as DRM formats are) or copied
 * with SRC otherwise, and clipped to dst's size. Returns false (logged) on an
 * unknown format or allocation failure; dst is then undefined.
 */
bool wla_compose(struct wla_image *dst, const struct wla_compose_layer *layers, size_t n_layers);

/*
 * Where a layer's pixels may only be read while they are held open: before
 * layer i is composited, begin(data, i, &pixels, &stride) opens them (false:
 * not readable, the composition fails), and end(data, i) closes them before
 * the next layer is opened. A client's wl_shm buffers are such: libwayland
 * lets a thread hold one client pool open at a time (its SIGBUS guard).
 */
struct wla_compose_access {
	/* Open layer i's pixels; false (logged by it, naming the object whose
	 * pixels they are) if they cannot be read. */
	bool (*begin)(void *data, size_t i, const void **pixels, uint32_t *stride);
	void (*end)(void *data, size_t i);
	void *data;
};

/* wla_compose with each layer's data and stride (ignored in layers) given
 * by access, one layer open at a time. */
bool wla_compose_each(struct wla_image *dst, const struct wla_compose_layer *layers,
	size_t n_layers, const struct wla_compose_access *access);

/* wla_image_create without clearing the pixels: for an image wla_compose
 * writes whole. */
struct wla_image *wla_image_create_uninit(uint32_t width, uint32_t height);
/* The size a PNG file's header gives, without decoding it: 0, or -EINVAL
 * (logged at debug level) for a file that cannot be read as a PNG. */
int wla_png_size(const char *path, uint32_t *width, uint32_t *height);

#endif
