/*
 * Runs a panel on a wl_event_loop: an absolute CLOCK_MONOTONIC timerfd is
 * armed at the panel's next deadline, and its expiry calls
 * wla_panel_advance(). wl_event_loop_add_timer() would round delays to
 * milliseconds relative to when it is armed; the timerfd keeps the deadline
 * exact.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <wlr/util/log.h>
#include "backend/panel.h"

struct wla_panel_loop {
	struct wla_panel *panel;
	int timer_fd;
	struct wl_event_source *source;
};

static uint64_t monotonic_ns(void *data)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static void schedule(void *data, uint64_t deadline_ns)
{
	struct wla_panel_loop *pl = data;
	struct itimerspec its = { 0 };
	if (deadline_ns != WLA_PANEL_NO_DEADLINE) {
		/* 0 would disarm the timer; any past time fires at once. */
		if (deadline_ns == 0) {
			deadline_ns = 1;
		}
		its.it_value.tv_sec = (time_t)(deadline_ns / UINT64_C(1000000000));
		its.it_value.tv_nsec = (long)(deadline_ns % UINT64_C(1000000000));
	}
	if (timerfd_settime(pl->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) != 0) {
		wlr_log_errno(WLR_ERROR, "panel timer: timerfd_settime");
	}
}

static int handle_timer(int fd, uint32_t mask, void *data)
{
	struct wla_panel_loop *pl = data;
	uint64_t expirations;
	if (read(fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN) {
		wlr_log_errno(WLR_ERROR, "panel timer: read");
	}
	/* Last: the notify callback may destroy pl. */
	wla_panel_advance(pl->panel, monotonic_ns(NULL));
	return 0;
}

struct wla_panel_loop *wla_panel_loop_create(struct wl_event_loop *loop,
	const struct wla_config_panel *desc, const char *name, struct wla_gpio_provider *provider,
	wla_panel_notify_func_t notify, void *notify_data, int *error)
{
	struct wla_panel_loop *pl = calloc(1, sizeof(*pl));
	if (!pl) {
		wlr_log(WLR_ERROR, "panel %s: cannot allocate the loop adapter", name);
		if (error) {
			*error = -ENOMEM;
		}
		return NULL;
	}
	pl->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (pl->timer_fd < 0) {
		int err = -errno;
		wlr_log_errno(WLR_ERROR, "panel %s: timerfd_create", name);
		free(pl);
		if (error) {
			*error = err;
		}
		return NULL;
	}
	pl->source = wl_event_loop_add_fd(loop, pl->timer_fd, WL_EVENT_READABLE, handle_timer, pl);
	if (!pl->source) {
		wlr_log(WLR_ERROR, "panel %s: cannot add the panel timer to the event loop", name);
		close(pl->timer_fd);
		free(pl);
		if (error) {
			*error = -ENOMEM;
		}
		return NULL;
	}
	const struct wla_panel_clock clock = {
		.now = monotonic_ns,
		.schedule = schedule,
		.data = pl,
	};
	pl->panel = wla_panel_create(desc, name, provider, &clock, notify, notify_data, error);
	if (!pl->panel) {
		wl_event_source_remove(pl->source);
		close(pl->timer_fd);
		free(pl);
		return NULL;
	}
	return pl;
}

void wla_panel_loop_destroy(struct wla_panel_loop *pl)
{
	if (!pl) {
		return;
	}
	wla_panel_destroy(pl->panel);
	wl_event_source_remove(pl->source);
	close(pl->timer_fd);
	free(pl);
}

struct wla_panel *wla_panel_loop_get_panel(struct wla_panel_loop *pl)
{
	return pl->panel;
}
