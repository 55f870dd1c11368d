/*
 * The recording line provider: no hardware, every call kept with its
 * physical levels and the injected time, failures on demand.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "backend/panel.h"

static struct wla_gpio_record *record_from_lines(struct wla_gpio_lines *lines)
{
	return (struct wla_gpio_record *)((char *)lines - offsetof(struct wla_gpio_record, lines));
}

static uint64_t record_now(struct wla_gpio_record *rec)
{
	return rec->now ? rec->now(rec->now_data) : 0;
}

static void record_call(struct wla_gpio_record *rec, enum wla_gpio_call_kind kind, int result,
	uint32_t mask, uint32_t values)
{
	if (rec->n_calls < WLA_GPIO_RECORD_MAX_CALLS) {
		rec->calls[rec->n_calls] = (struct wla_gpio_call){
			.kind = kind,
			.time_ns = record_now(rec),
			.result = result,
			.mask = mask,
			.values = values,
			.levels = rec->levels,
		};
	}
	rec->n_calls++;
}

static int lines_set(struct wla_gpio_lines *base, uint32_t mask, uint32_t values)
{
	struct wla_gpio_record *rec = record_from_lines(base);
	rec->n_sets++;
	int ret = 0;
	if (rec->fail_set && (rec->n_sets == rec->fail_set_index ||
			(rec->fail_set_after && rec->n_sets > rec->fail_set_index))) {
		ret = rec->fail_set;
	} else {
		rec->levels = (rec->levels & ~mask) | (values & mask);
	}
	record_call(rec, WLA_GPIO_CALL_SET, ret, mask, values);
	return ret;
}

static void lines_release(struct wla_gpio_lines *base)
{
	struct wla_gpio_record *rec = record_from_lines(base);
	rec->requested = false;
	record_call(rec, WLA_GPIO_CALL_RELEASE, 0, 0, 0);
	/* The handle lives in rec, which the caller owns: nothing to free. */
}

static const struct wla_gpio_lines_funcs record_lines_funcs = {
	.set = lines_set,
	.release = lines_release,
};

static struct wla_gpio_lines *provider_request(struct wla_gpio_provider *provider,
	const struct wla_gpio_request *req, struct wla_gpio_error *err)
{
	struct wla_gpio_record *rec = (struct wla_gpio_record *)provider;

	snprintf(rec->chip, sizeof(rec->chip), "%s", req->chip);
	snprintf(rec->consumer, sizeof(rec->consumer), "%s", req->consumer);
	rec->n_lines = req->n_lines < WLA_PANEL_MAX_LINES ? req->n_lines : WLA_PANEL_MAX_LINES;
	memcpy(rec->offsets, req->offsets, rec->n_lines * sizeof(rec->offsets[0]));

	uint32_t all = req->n_lines >= 32 ? UINT32_MAX : (UINT32_C(1) << req->n_lines) - 1;
	int ret = 0;
	if (rec->requested) {
		ret = -EBUSY;
		*err = (struct wla_gpio_error){ .code = ret, .line = 0 };
		snprintf(err->detail, sizeof(err->detail), "held by an earlier request");
	} else if (rec->fail_request) {
		ret = rec->fail_request;
		*err = (struct wla_gpio_error){
			.code = ret,
			.line = rec->fail_request_line,
			.open = rec->fail_request_line < 0 && ret == -ENOENT,
		};
		if (ret == -EBUSY && rec->fail_request_line >= 0) {
			snprintf(err->detail, sizeof(err->detail), "held by 'recording-test'");
		} else if (ret == -ENOENT) {
			snprintf(err->detail, sizeof(err->detail), "no such chip (recording)");
		}
	} else {
		rec->levels = req->initial & all;
		rec->requested = true;
	}
	record_call(rec, WLA_GPIO_CALL_REQUEST, ret, all, req->initial & all);
	if (ret < 0) {
		return NULL;
	}
	rec->lines.funcs = &record_lines_funcs;
	return &rec->lines;
}

static const struct wla_gpio_provider_funcs record_provider_funcs = {
	.request = provider_request,
};

void wla_gpio_record_init(struct wla_gpio_record *rec, uint64_t (*now)(void *data),
	void *now_data)
{
	memset(rec, 0, sizeof(*rec));
	rec->provider.funcs = &record_provider_funcs;
	rec->now = now;
	rec->now_data = now_data;
}
