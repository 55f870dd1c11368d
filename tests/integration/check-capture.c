/*
 * check-capture: assert on a PNG that tinywl captured from the wlatomic
 * display controller. Every pixel is accounted for: the client window must
 * show the pattern client's four quadrants exactly, the cursor box must hold
 * both the dark and the light pixels of an arrow, and everything else must be
 * exactly the background tinywl clears to.
 *
 * Usage: check-capture PNG --size WxH --background 0xRRGGBB --window X,Y,W,H
 *                      --cursor X,Y
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wlatomic/capture.h>

/* What the pattern client draws (see tests/clients/pattern-client.c). */
#define PATTERN_TOP_LEFT 0xff0000u
#define PATTERN_TOP_RIGHT 0x00ff00u
#define PATTERN_BOTTOM_LEFT 0x0000ffu
#define PATTERN_BOTTOM_RIGHT 0xffffffu

/*
 * The cursor plane's image sits at the cursor position minus its hotspot; a
 * 64x64 box reaching 16 pixels up and left of the position holds any sane
 * left_ptr at the 24 px tinywl loads, whatever the theme.
 */
#define CURSOR_BOX_SIZE 64
#define CURSOR_BOX_BEFORE 16
/* Enough pixels of each kind that a stray pixel cannot pass for an arrow. */
#define CURSOR_MIN_PIXELS 8

struct rect {
	long x, y, w, h;
};

struct expect {
	long width, height;
	uint32_t background;
	struct rect window;
	struct rect cursor_box;
	bool have_size, have_background, have_window, have_cursor;
};

static bool in_rect(const struct rect *r, long x, long y)
{
	return x >= r->x && x < r->x + r->w && y >= r->y && y < r->y + r->h;
}

static uint32_t pattern_at(const struct rect *window, long x, long y)
{
	bool left = x - window->x < window->w / 2;
	bool top = y - window->y < window->h / 2;
	if (top) {
		return left ? PATTERN_TOP_LEFT : PATTERN_TOP_RIGHT;
	}
	return left ? PATTERN_BOTTOM_LEFT : PATTERN_BOTTOM_RIGHT;
}

static bool parse_longs(const char *str, char sep, long *out, int n)
{
	const char *p = str;
	for (int i = 0; i < n; i++) {
		char *end;
		errno = 0;
		out[i] = strtol(p, &end, 10);
		if (errno != 0 || end == p) {
			return false;
		}
		if (i < n - 1) {
			if (*end != sep) {
				return false;
			}
			p = end + 1;
		} else if (*end != '\0') {
			return false;
		}
	}
	return true;
}

static int parse_args(int argc, char *argv[], struct expect *e, const char **path)
{
	static const struct option options[] = {
		{"size", required_argument, NULL, 's'},
		{"background", required_argument, NULL, 'b'},
		{"window", required_argument, NULL, 'w'},
		{"cursor", required_argument, NULL, 'c'},
		{0},
	};
	long v[4];
	char *end;
	int c;
	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!parse_longs(optarg, 'x', v, 2) || v[0] <= 0 || v[1] <= 0) {
				fprintf(stderr, "check-capture: bad --size '%s'\n", optarg);
				return -1;
			}
			e->width = v[0];
			e->height = v[1];
			e->have_size = true;
			break;
		case 'b':
			errno = 0;
			e->background = (uint32_t)strtoul(optarg, &end, 0);
			if (errno != 0 || end == optarg || *end != '\0' ||
					e->background > 0xffffff) {
				fprintf(stderr, "check-capture: bad --background '%s'\n", optarg);
				return -1;
			}
			e->have_background = true;
			break;
		case 'w':
			if (!parse_longs(optarg, ',', v, 4) || v[2] < 2 || v[3] < 2) {
				fprintf(stderr, "check-capture: bad --window '%s'\n", optarg);
				return -1;
			}
			e->window = (struct rect){v[0], v[1], v[2], v[3]};
			e->have_window = true;
			break;
		case 'c':
			if (!parse_longs(optarg, ',', v, 2)) {
				fprintf(stderr, "check-capture: bad --cursor '%s'\n", optarg);
				return -1;
			}
			e->cursor_box = (struct rect){v[0] - CURSOR_BOX_BEFORE,
				v[1] - CURSOR_BOX_BEFORE, CURSOR_BOX_SIZE, CURSOR_BOX_SIZE};
			e->have_cursor = true;
			break;
		default:
			return -1;
		}
	}
	if (optind != argc - 1 || !e->have_size || !e->have_background || !e->have_window ||
			!e->have_cursor) {
		fprintf(stderr, "usage: check-capture PNG --size WxH --background 0xRRGGBB "
			"--window X,Y,W,H --cursor X,Y\n");
		return -1;
	}
	*path = argv[optind];
	return 0;
}

static int failures;

/* Report the first few mismatches of a kind, then only count them. */
static void mismatch(const char *what, long x, long y, uint32_t got, uint32_t want,
	long *count)
{
	if (++*count <= 5) {
		fprintf(stderr, "FAIL: %s pixel at %ld,%ld is 0x%06x, expected 0x%06x\n", what, x,
			y, got, want);
	}
	failures++;
}

static void check_point(const struct wla_image *image, const char *what, long x, long y,
	uint32_t want)
{
	if (x < 0 || y < 0 || x >= (long)image->width || y >= (long)image->height) {
		return;
	}
	uint32_t got = wla_image_pixel(image, (uint32_t)x, (uint32_t)y) & 0xffffff;
	printf("%s at %ld,%ld: 0x%06x (expected 0x%06x)\n", what, x, y, got, want);
	if (got != want) {
		failures++;
	}
}

int main(int argc, char *argv[])
{
	struct expect e = {0};
	const char *path;
	if (parse_args(argc, argv, &e, &path) < 0) {
		return 2;
	}
	struct wla_image *image = wla_image_read_png(path);
	if (image == NULL) {
		fprintf(stderr, "FAIL: cannot read %s\n", path);
		return 1;
	}
	if ((long)image->width != e.width || (long)image->height != e.height) {
		fprintf(stderr, "FAIL: %s is %ux%u, expected %ldx%ld\n", path, image->width,
			image->height, e.width, e.height);
		wla_image_destroy(image);
		return 1;
	}

	const struct rect *w = &e.window;
	long qx[2] = {w->x + w->w / 4, w->x + w->w * 3 / 4};
	long qy[2] = {w->y + w->h / 4, w->y + w->h * 3 / 4};
	check_point(image, "window top-left centre", qx[0], qy[0], PATTERN_TOP_LEFT);
	check_point(image, "window top-right centre", qx[1], qy[0], PATTERN_TOP_RIGHT);
	check_point(image, "window bottom-left centre", qx[0], qy[1], PATTERN_BOTTOM_LEFT);
	check_point(image, "window bottom-right centre", qx[1], qy[1], PATTERN_BOTTOM_RIGHT);
	check_point(image, "left of the window", w->x - 1, w->y, e.background);
	check_point(image, "above the window", w->x, w->y - 1, e.background);
	check_point(image, "right of the window", w->x + w->w, w->y + w->h - 1, e.background);
	check_point(image, "below the window", w->x + w->w - 1, w->y + w->h, e.background);

	long window_bad = 0, background_bad = 0, dark = 0, light = 0, cursor_changed = 0;
	for (long y = 0; y < e.height; y++) {
		for (long x = 0; x < e.width; x++) {
			uint32_t px = wla_image_pixel(image, (uint32_t)x, (uint32_t)y) & 0xffffff;
			if (in_rect(w, x, y)) {
				uint32_t want = pattern_at(w, x, y);
				if (px != want) {
					mismatch("window", x, y, px, want, &window_bad);
				}
			} else if (in_rect(&e.cursor_box, x, y)) {
				uint32_t r = px >> 16, g = (px >> 8) & 0xff, b = px & 0xff;
				if (r < 0x40 && g < 0x40 && b < 0x40) {
					dark++;
				} else if (r > 0xc0 && g > 0xc0 && b > 0xc0) {
					light++;
				}
				if (px != e.background) {
					cursor_changed++;
				}
			} else if (px != e.background) {
				mismatch("background", x, y, px, e.background, &background_bad);
			}
		}
	}
	printf("window mismatches: %ld, background mismatches: %ld\n", window_bad,
		background_bad);
	printf("cursor box %ld,%ld %ldx%ld: %ld pixels differ from the background, %ld dark, "
		"%ld light\n", e.cursor_box.x, e.cursor_box.y, e.cursor_box.w, e.cursor_box.h,
		cursor_changed, dark, light);
	if (dark < CURSOR_MIN_PIXELS || light < CURSOR_MIN_PIXELS) {
		fprintf(stderr, "FAIL: no cursor arrow in the cursor box (need %d dark and %d "
			"light pixels)\n", CURSOR_MIN_PIXELS, CURSOR_MIN_PIXELS);
		failures++;
	}
	wla_image_destroy(image);
	if (failures > 0) {
		fprintf(stderr, "FAIL: %d check(s) failed on %s\n", failures, path);
		return 1;
	}
	printf("PASS: %s\n", path);
	return 0;
}
