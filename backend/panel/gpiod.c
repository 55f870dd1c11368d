/*
 * The libgpiod 1.6 (v1 API) line provider.
 *
 * Two things about libgpiod 1.6 shape this file:
 * - request flags apply to a whole bulk, so per-line active-low cannot be
 *   asked for in one request: the panel inverts active-low lines itself and
 *   this provider only ever sees physical levels;
 * - gpiod_line_set_value_bulk() hands its values to the kernel's v1 line
 *   handle by position in the original request (GPIOHANDLE_SET_LINE_VALUES
 *   sets every line of the handle), so a bulk holding a subset of the lines
 *   would drive the wrong ones. Each set therefore writes the whole bulk,
 *   lines outside the step at the level they already have: still one call,
 *   and no transition on the lines the step does not name.
 */
#include <errno.h>
#include <gpiod.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/util/log.h>
#include "backend/panel.h"

struct gpiod_lines {
	struct wla_gpio_lines base;
	struct gpiod_chip *chip;
	struct gpiod_line_bulk bulk;
	size_t n_lines;
	uint32_t levels; /* physical levels held now */
};

static const struct wla_gpio_lines_funcs gpiod_lines_funcs;

static struct gpiod_lines *gpiod_lines_from_base(struct wla_gpio_lines *base)
{
	return (struct gpiod_lines *)base;
}

static int lines_set(struct wla_gpio_lines *base, uint32_t mask, uint32_t values)
{
	struct gpiod_lines *lines = gpiod_lines_from_base(base);
	uint32_t levels = (lines->levels & ~mask) | (values & mask);
	int vals[WLA_PANEL_MAX_LINES];
	for (size_t i = 0; i < lines->n_lines; i++) {
		vals[i] = (levels >> i) & 1;
	}
	errno = 0;
	if (gpiod_line_set_value_bulk(&lines->bulk, vals) < 0) {
		return errno ? -errno : -EIO;
	}
	lines->levels = levels;
	if (wlr_log_get_verbosity() < WLR_DEBUG) {
		return 0;
	}
	char desc[256];
	size_t len = 0;
	desc[0] = '\0';
	for (size_t i = 0; i < lines->n_lines && len < sizeof(desc); i++) {
		if (mask & (1u << i)) {
			struct gpiod_line *line = gpiod_line_bulk_get_line(&lines->bulk, (unsigned)i);
			int n = snprintf(desc + len, sizeof(desc) - len, "%s%u=%d", len ? " " : "",
				gpiod_line_offset(line), vals[i]);
			len += n > 0 ? (size_t)n : 0;
		}
	}
	wlr_log(WLR_DEBUG, "panel gpio: chip %s: set %s", gpiod_chip_name(lines->chip), desc);
	return 0;
}

static void lines_release(struct wla_gpio_lines *base)
{
	struct gpiod_lines *lines = gpiod_lines_from_base(base);
	gpiod_line_release_bulk(&lines->bulk);
	gpiod_chip_close(lines->chip);
	free(lines);
}

static const struct wla_gpio_lines_funcs gpiod_lines_funcs = {
	.set = lines_set,
	.release = lines_release,
};

static void open_failed(struct wla_gpio_error *err, const char *missing)
{
	err->code = errno ? -errno : -ENOENT;
	err->open = true;
	if (err->code == -ENOENT) {
		snprintf(err->detail, sizeof(err->detail), "%s", missing);
	} else if (err->code == -ENOTTY || err->code == -EINVAL || err->code == -ENODEV) {
		snprintf(err->detail, sizeof(err->detail), "not a GPIO chip");
	}
}

static struct gpiod_chip *open_chip(const char *chip, struct wla_gpio_error *err)
{
	struct gpiod_chip *c;
	errno = 0;
	if (strchr(chip, '/')) {
		c = gpiod_chip_open(chip);
		if (!c) {
			open_failed(err, "no such path");
		}
		return c;
	}
	c = gpiod_chip_open_by_name(chip);
	if (c || errno != ENOENT) {
		if (!c) {
			open_failed(err, "");
		}
		return c;
	}
	errno = 0;
	c = gpiod_chip_open_by_label(chip);
	if (!c) {
		open_failed(err, "no GPIO chip with that name or label");
	}
	return c;
}

/* After EBUSY, finds the first line someone else holds. */
static void find_busy_line(struct gpiod_lines *lines, struct wla_gpio_error *err)
{
	for (size_t i = 0; i < lines->n_lines; i++) {
		struct gpiod_line *line = gpiod_line_bulk_get_line(&lines->bulk, (unsigned int)i);
		if (gpiod_line_update(line) == 0 && gpiod_line_is_used(line)) {
			const char *consumer = gpiod_line_consumer(line);
			err->line = (int)i;
			snprintf(err->detail, sizeof(err->detail), "held by '%s'",
				consumer ? consumer : "the kernel");
			return;
		}
	}
}

static struct wla_gpio_lines *provider_request(struct wla_gpio_provider *provider,
	const struct wla_gpio_request *req, struct wla_gpio_error *err)
{
	*err = (struct wla_gpio_error){ .code = -EINVAL, .line = -1 };
	if (req->n_lines == 0 || req->n_lines > WLA_PANEL_MAX_LINES) {
		snprintf(err->detail, sizeof(err->detail), "%zu lines requested", req->n_lines);
		return NULL;
	}
	struct gpiod_lines *lines = calloc(1, sizeof(*lines));
	if (!lines) {
		err->code = -ENOMEM;
		return NULL;
	}
	lines->base.funcs = &gpiod_lines_funcs;
	lines->n_lines = req->n_lines;

	lines->chip = open_chip(req->chip, err);
	if (!lines->chip) {
		free(lines);
		return NULL;
	}
	unsigned int n_chip_lines = gpiod_chip_num_lines(lines->chip);
	unsigned int offsets[WLA_PANEL_MAX_LINES];
	int initial[WLA_PANEL_MAX_LINES];
	for (size_t i = 0; i < req->n_lines; i++) {
		if (req->offsets[i] >= n_chip_lines) {
			err->code = -EINVAL;
			err->line = (int)i;
			snprintf(err->detail, sizeof(err->detail), "the chip has %u lines",
				n_chip_lines);
			goto error_chip;
		}
		offsets[i] = req->offsets[i];
		initial[i] = (req->initial >> i) & 1;
	}
	if (gpiod_chip_get_lines(lines->chip, offsets, (unsigned int)req->n_lines,
			&lines->bulk) < 0) {
		err->code = errno ? -errno : -EIO;
		goto error_chip;
	}
	errno = 0;
	if (gpiod_line_request_bulk_output(&lines->bulk, req->consumer, initial) < 0) {
		err->code = errno ? -errno : -EIO;
		if (errno == EBUSY) {
			find_busy_line(lines, err);
		}
		goto error_chip;
	}
	lines->levels = req->initial;
	return &lines->base;

error_chip:
	gpiod_chip_close(lines->chip);
	free(lines);
	return NULL;
}

static const struct wla_gpio_provider_funcs gpiod_provider_funcs = {
	.request = provider_request,
};

static struct wla_gpio_provider gpiod_provider = {
	.funcs = &gpiod_provider_funcs,
};

struct wla_gpio_provider *wla_gpiod_provider(void)
{
	return &gpiod_provider;
}
