/*
 * Helpers for the panel tests: an injected clock, a recording provider, the
 * events a panel emitted, and a driver that plays the timer owner by
 * advancing exactly to each deadline the panel asks for.
 */
#ifndef TESTS_PANEL_HELPERS_H
#define TESTS_PANEL_HELPERS_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "backend/panel.h"
#include "harness.h"
#include "wlatomic/config.h"

#define MS UINT64_C(1000000)
#define MAX_EVENTS 32

struct fixture {
	uint64_t now;
	struct wla_gpio_record rec;
	struct wla_config cfg;
	struct wla_panel *panel;
	uint64_t scheduled; /* last deadline given to clock.schedule */
	size_t n_schedules;
	enum wla_panel_event events[MAX_EVENTS];
	int event_errors[MAX_EVENTS];
	uint64_t event_times[MAX_EVENTS];
	size_t n_events;
	bool destroy_on_event;
	enum wla_panel_event destroy_event;
};

static struct fixture fx;

static uint64_t fx_now(void *data)
{
	return ((struct fixture *)data)->now;
}

static void fx_schedule(void *data, uint64_t deadline_ns)
{
	struct fixture *f = data;
	f->scheduled = deadline_ns;
	f->n_schedules++;
}

static void fx_notify(struct wla_panel *panel, enum wla_panel_event event, int error, void *data)
{
	struct fixture *f = data;
	if (f->n_events < MAX_EVENTS) {
		f->events[f->n_events] = event;
		f->event_errors[f->n_events] = error;
		f->event_times[f->n_events] = f->now;
	}
	f->n_events++;
	if (f->destroy_on_event && event == f->destroy_event) {
		wla_panel_destroy(panel);
		f->panel = NULL;
	}
}

static const struct wla_panel_clock fx_clock = {
	.now = fx_now,
	.schedule = fx_schedule,
	.data = &fx,
};

/* Parses text as a config file and creates the first output's panel at time 0. */
static bool fx_setup(const char *text)
{
	memset(&fx, 0, sizeof(fx));
	fx.scheduled = WLA_PANEL_NO_DEADLINE;
	wla_gpio_record_init(&fx.rec, fx_now, &fx);
	wla_config_init(&fx.cfg);
	if (wla_config_parse_text(&fx.cfg, "test.conf", text) != 0) {
		fprintf(stderr, "  config did not parse\n");
		return false;
	}
	return true;
}

static bool fx_create(void)
{
	int err;
	fx.panel = wla_panel_create(&fx.cfg.outputs[0].panel, fx.cfg.outputs[0].name,
		&fx.rec.provider, &fx_clock, fx_notify, &fx, &err);
	return fx.panel != NULL;
}

/* Plays the timer: advances to every deadline up to t, then sets the clock to t. */
static void fx_run_until(uint64_t t)
{
	for (int guard = 0; guard < 1000 && fx.panel; guard++) {
		uint64_t d = wla_panel_next_deadline_ns(fx.panel);
		if (d == WLA_PANEL_NO_DEADLINE || d > t) {
			break;
		}
		if (d > fx.now) {
			fx.now = d;
		}
		wla_panel_advance(fx.panel, fx.now);
	}
	if (t > fx.now) {
		fx.now = t;
	}
}

static void fx_teardown(void)
{
	if (fx.panel) {
		wla_panel_destroy(fx.panel);
		fx.panel = NULL;
	}
}

#define CHECK_CALL(i, kind_, t_ms, mask_, values_) \
	do { \
		CHECK((size_t)(i) < fx.rec.n_calls); \
		if ((size_t)(i) < fx.rec.n_calls) { \
			const struct wla_gpio_call *c_ = &fx.rec.calls[i]; \
			CHECK_INT(c_->kind, kind_); \
			CHECK_INT(c_->time_ns, (uint64_t)(t_ms) * MS); \
			CHECK_INT(c_->mask, mask_); \
			CHECK_INT(c_->values, values_); \
		} \
	} while (0)

#define CHECK_SET(i, t_ms, mask_, values_) CHECK_CALL(i, WLA_GPIO_CALL_SET, t_ms, mask_, values_)

#define CHECK_EVENT(i, event_, t_ms) \
	do { \
		CHECK((size_t)(i) < fx.n_events); \
		if ((size_t)(i) < fx.n_events) { \
			CHECK_INT(fx.events[i], event_); \
			CHECK_INT(fx.event_times[i], (uint64_t)(t_ms) * MS); \
		} \
	} while (0)

#endif
