/*
 * The dry-run line provider: grants every request and logs each bulk set
 * with its lines and physical levels instead of driving hardware. For
 * bringing up a panel description, or a compositor's power handling, on a
 * machine without the GPIO chip.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/util/log.h>
#include "backend/panel.h"

struct dryrun_lines {
	struct wla_gpio_lines base;
	char chip[WLA_PANEL_CHIP_MAX];
	size_t n_lines;
	char names[WLA_PANEL_MAX_LINES][WLA_PANEL_LINE_NAME_MAX];
	uint32_t offsets[WLA_PANEL_MAX_LINES];
	uint32_t levels;
};

/* "enable(3)=1 reset(4)=0" for the lines in mask. */
static void describe(const struct dryrun_lines *l, uint32_t mask, uint32_t values, char *buf,
	size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < l->n_lines && len < size; i++) {
		if (mask & (1u << i)) {
			int n = snprintf(buf + len, size - len, "%s%s(%u)=%u", len ? " " : "",
				l->names[i], l->offsets[i], (values >> i) & 1);
			len += n > 0 ? (size_t)n : 0;
		}
	}
}

static int dryrun_set(struct wla_gpio_lines *base, uint32_t mask, uint32_t values)
{
	struct dryrun_lines *l = wl_container_of(base, l, base);
	l->levels = (l->levels & ~mask) | (values & mask);
	char desc[512];
	describe(l, mask, values, desc, sizeof(desc));
	wlr_log(WLR_INFO, "panel dry run: chip %s: set %s", l->chip, desc);
	return 0;
}

static void dryrun_release(struct wla_gpio_lines *base)
{
	struct dryrun_lines *l = wl_container_of(base, l, base);
	wlr_log(WLR_INFO, "panel dry run: chip %s: lines released", l->chip);
	free(l);
}

static const struct wla_gpio_lines_funcs dryrun_lines_funcs = {
	.set = dryrun_set,
	.release = dryrun_release,
};

static struct wla_gpio_lines *dryrun_request(struct wla_gpio_provider *provider,
	const struct wla_gpio_request *req, struct wla_gpio_error *err)
{
	struct dryrun_lines *l = calloc(1, sizeof(*l));
	if (!l) {
		err->code = -ENOMEM;
		err->line = -1;
		return NULL;
	}
	l->base.funcs = &dryrun_lines_funcs;
	snprintf(l->chip, sizeof(l->chip), "%s", req->chip);
	l->n_lines = req->n_lines;
	for (size_t i = 0; i < req->n_lines; i++) {
		snprintf(l->names[i], sizeof(l->names[i]), "%s", req->names[i]);
		l->offsets[i] = req->offsets[i];
	}
	l->levels = req->initial;
	char desc[512];
	describe(l, (req->n_lines >= 32 ? 0 : (1u << req->n_lines)) - 1, req->initial, desc,
		sizeof(desc));
	wlr_log(WLR_INFO, "panel dry run: chip %s: requested for %s at %s", l->chip,
		req->consumer, desc);
	return &l->base;
}

static const struct wla_gpio_provider_funcs dryrun_provider_funcs = {
	.request = dryrun_request,
};

struct wla_gpio_provider *wla_dryrun_provider(void)
{
	static struct wla_gpio_provider provider = { .funcs = &dryrun_provider_funcs };
	return &provider;
}
