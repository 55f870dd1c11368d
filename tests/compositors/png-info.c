/*
 * png-info: facts about PNG files for the compositor tests.
 *   png-info FILE                 prints "WxH crc32=XXXXXXXX colours=N"
 *                                 (wla_image_crc32; distinct colours up to 1000)
 *   png-info FILE OTHER [X,Y,W,H] prints "differ=N" : pixels whose RGB differ,
 *                                 outside the rectangle if one is given;
 *                                 sizes that differ print "size WxH vs WxH"
 *   png-info --pixel X,Y FILE     prints "RRGGBB", the pixel at X,Y
 * Exit 0, or 2 when a file cannot be read.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <wlatomic/capture.h>

int main(int argc, char *argv[])
{
	if (argc == 4 && strcmp(argv[1], "--pixel") == 0) {
		unsigned long x, y;
		char extra;
		struct wla_image *img = NULL;
		if (sscanf(argv[2], "%lu,%lu%c", &x, &y, &extra) != 2) {
			fprintf(stderr, "png-info: pixel '%s': expected X,Y\n", argv[2]);
			return 2;
		}
		if (!(img = wla_image_read_png(argv[3]))) {
			fprintf(stderr, "png-info: cannot read %s\n", argv[3]);
			return 2;
		}
		if (x >= img->width || y >= img->height) {
			fprintf(stderr, "png-info: pixel %lu,%lu is outside %s (%ux%u)\n", x, y,
				argv[3], img->width, img->height);
			wla_image_destroy(img);
			return 2;
		}
		printf("%06x\n", wla_image_pixel(img, (uint32_t)x, (uint32_t)y) & 0xffffff);
		wla_image_destroy(img);
		return 0;
	}
	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: png-info FILE [OTHER [X,Y,W,H]] | --pixel X,Y FILE\n");
		return 2;
	}
	struct wla_image *a = wla_image_read_png(argv[1]);
	if (!a) {
		fprintf(stderr, "png-info: cannot read %s\n", argv[1]);
		return 2;
	}
	if (argc == 2) {
		/* Distinct colours, up to 1000: a flat fill has 1. */
		uint32_t seen[1000];
		size_t n = 0;
		for (uint32_t y = 0; y < a->height && n < 1000; y++) {
			for (uint32_t x = 0; x < a->width && n < 1000; x++) {
				uint32_t p = wla_image_pixel(a, x, y) & 0xffffff;
				size_t i = 0;
				while (i < n && seen[i] != p) {
					i++;
				}
				if (i == n) {
					seen[n++] = p;
				}
			}
		}
		printf("%ux%u crc32=%08x colours=%zu\n", a->width, a->height,
			wla_image_crc32(a), n);
		wla_image_destroy(a);
		return 0;
	}
	struct wla_image *b = wla_image_read_png(argv[2]);
	if (!b) {
		fprintf(stderr, "png-info: cannot read %s\n", argv[2]);
		wla_image_destroy(a);
		return 2;
	}
	long rx = 0, ry = 0, rw = 0, rh = 0;
	if (argc == 4 && sscanf(argv[3], "%ld,%ld,%ld,%ld", &rx, &ry, &rw, &rh) != 4) {
		fprintf(stderr, "png-info: rectangle '%s': expected X,Y,W,H\n", argv[3]);
		return 2;
	}
	if (a->width != b->width || a->height != b->height) {
		printf("size %ux%u vs %ux%u\n", a->width, a->height, b->width, b->height);
	} else {
		unsigned long differ = 0;
		for (uint32_t y = 0; y < a->height; y++) {
			for (uint32_t x = 0; x < a->width; x++) {
				if ((long)x >= rx && (long)x < rx + rw && (long)y >= ry &&
						(long)y < ry + rh) {
					continue;
				}
				uint32_t pa = wla_image_pixel(a, x, y), pb = wla_image_pixel(b, x, y);
				differ += (pa & 0xffffff) != (pb & 0xffffff);
			}
		}
		printf("differ=%lu\n", differ);
	}
	wla_image_destroy(a);
	wla_image_destroy(b);
	return 0;
}
