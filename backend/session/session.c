/*
 * The session (include/backend/session.h): what acquiring a DRM card takes,
 * kept out of the KMS driver as wlroots keeps it in backend/session/ apart
 * from backend/drm/. This file holds the session itself: the seat's session
 * (a wlr_session, made on first need, which may end before us) and the
 * uevent monitor that reports the cards' hot-plugs; card.c finds and opens
 * the cards.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libudev.h>
#include <wlr/backend/session.h>
#include <wlr/util/log.h>
#include "backend/session.h"
#include "session-private.h"

static void session_free(void *data);

/* An input device's fd the seat opened, until libinput closes it. */
struct wla_seat_input {
	struct wl_list link; /* wla_session.inputs */
	int fd;
	/* The seat's handle; NULL once the seat's session ended (it closed
	 * the fd then). */
	struct wlr_device *dev;
	char path[PATH_MAX];
};

struct wla_session *wla_session_create(struct wl_event_loop *loop,
	struct wl_display *display)
{
	struct wla_session *session = calloc(1, sizeof(*session));
	if (!session) {
		wlr_log(WLR_ERROR, "session: out of memory");
		return NULL;
	}
	session->loop = loop;
	session->display = display;
	wl_list_init(&session->cards);
	wl_list_init(&session->inputs);
	wl_signal_init(&session->events.seat_end);
	return session;
}

/* The seat's session ends (the display goes, with the compositor): each
 * card's driver hears it while the fd is open; those opened through the
 * seat are closed by it right after. */
static void handle_seat_destroy(struct wl_listener *listener, void *data)
{
	struct wla_session *session = wl_container_of(listener, session, seat_destroy);
	wl_list_remove(&session->seat_destroy.link);
	wl_list_remove(&session->seat_active.link);
	/* A listener may destroy the backend, and the session with it: freed
	 * once this is over. */
	wla_hold(&session->hold);
	/* Input first: libinput lets go of the fds the seat closes next
	 * (else it would go on with their numbers, another file's later). */
	wl_signal_emit(&session->events.seat_end, session);
	/* Still open (a listener kept one): closed by the seat now; its
	 * close later closes nothing. */
	struct wla_seat_input *in;
	wl_list_for_each(in, &session->inputs, link) {
		if (in->dev) {
			wlr_log(WLR_INFO, "session: input device %s (fd %d) still open when the "
				"seat's session ended: closed by the seat", in->path, in->fd);
		}
		in->dev = NULL;
	}
	struct wla_card *card, *tmp;
	wl_list_for_each_safe(card, tmp, &session->cards, link) {
		/* Told even when a listener destroyed the backend meanwhile:
		 * a driver whose destroy waits hears its fd goes (one that is
		 * gone removed its listener). */
		wl_signal_emit(&card->events.session_end, card);
		wlr_log(WLR_INFO, "session: card %s: the seat's session ended: fd %s",
			card->path, card->through_seat ? "closed by the seat" : "still ours");
		if (card->through_seat) {
			card->fd = -1;
			card->seat_dev = NULL;
		}
	}
	session->seat = NULL;
	session->seat_borrowed = false;
	wla_release(&session->hold, session_free, session);
}

/* The seat's session went inactive or active again (a VT switch): the
 * drivers of the cards opened through it stop or start again. Told on
 * every event, also one that changes nothing in card->active: a driver
 * may have stopped on its own (a commit refused because the seat took
 * master first) and waits for this to start again; stopping or starting
 * twice is nothing. */
static void handle_seat_active(struct wl_listener *listener, void *data)
{
	struct wla_session *session = wl_container_of(listener, session, seat_active);
	bool active = session->seat->active;
	wlr_log(WLR_INFO, "session: the seat's session is %s", active ? "active again" :
		"inactive (another VT or session has the seat)");
	wla_hold(&session->hold);
	struct wla_card *card, *tmp;
	wl_list_for_each_safe(card, tmp, &session->cards, link) {
		if (card->through_seat) {
			card->active = active;
			wl_signal_emit(&card->events.active, card);
		}
		if (wla_doomed(&session->hold)) {
			break;
		}
	}
	wla_release(&session->hold, session_free, session);
}

static void listen_seat(struct wla_session *session)
{
	session->seat_destroy.notify = handle_seat_destroy;
	wl_signal_add(&session->seat->events.destroy, &session->seat_destroy);
	session->seat_active.notify = handle_seat_active;
	wl_signal_add(&session->seat->events.active, &session->seat_active);
}

void wla_session_borrow_seat(struct wla_session *session, struct wlr_session *seat)
{
	if (!seat || session->seat) {
		return;
	}
	session->seat = seat;
	session->seat_borrowed = true;
	listen_seat(session);
	wlr_log(WLR_INFO, "session: the compositor's seat session (%s, VT %u) opens the cards",
		seat->active ? "active" : "inactive", seat->vtnr);
}

struct wlr_session *wla_session_get_seat(struct wla_session *session)
{
	if (!session->seat && session->display && !session->seat_failed) {
		session->seat = wlr_session_create(session->display);
		session->seat_failed = session->seat == NULL;
		if (session->seat) {
			listen_seat(session);
			wlr_log(WLR_INFO, "session: a seat session of our own (%s, seat %s, VT %u) "
				"opens the cards", session->seat->active ? "active" : "inactive",
				session->seat->seat, session->seat->vtnr);
		} else {
			wlr_log(WLR_INFO, "session: no seat session could be had (wlroots says "
				"why above): cards are opened directly");
		}
	}
	return session->seat;
}

bool wla_session_seats_input(const struct wla_session *session)
{
	if (!session || !session->seat) {
		return false;
	}
	/* The seat that gave the card: one that did not (its session was
	 * inactive at start) would not give input devices either. */
	const struct wla_card *card;
	wl_list_for_each(card, &session->cards, link) {
		if (card->through_seat) {
			return true;
		}
	}
	return false;
}

int wla_session_open_input(struct wla_session *session, const char *path, int flags)
{
	if (!wla_session_seats_input(session)) {
		int fd = open(path, flags | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	struct wla_seat_input *in = calloc(1, sizeof(*in));
	if (!in) {
		wlr_log(WLR_ERROR, "session: input device %s: out of memory", path);
		return -ENOMEM;
	}
	in->dev = wlr_session_open_file(session->seat, path);
	if (!in->dev) {
		/* Why is wlroots' line before this one: errno is not kept
		 * across its logging. */
		wlr_log(WLR_ERROR, "session: input device %s: seat %s does not open it", path,
			session->seat->seat);
		free(in);
		return -EPERM;
	}
	in->fd = in->dev->fd;
	snprintf(in->path, sizeof(in->path), "%s", path);
	wl_list_insert(&session->inputs, &in->link);
	wlr_log(WLR_INFO, "session: input device %s opened through seat %s (fd %d)", path,
		session->seat->seat, in->fd);
	return in->fd;
}

void wla_session_close_input(struct wla_session *session, int fd)
{
	struct wla_seat_input *in;
	wl_list_for_each(in, &session->inputs, link) {
		if (in->fd != fd) {
			continue;
		}
		if (in->dev) {
			wlr_session_close_file(session->seat, in->dev);
			wlr_log(WLR_DEBUG, "session: input device %s (fd %d) closed through the seat",
				in->path, fd);
		}
		wl_list_remove(&in->link);
		free(in);
		return;
	}
	close(fd);
}

/* Hot-plug: uevents of the drm subsystem (from udevd when it runs, else
 * the kernel's own) with HOTPLUG=1, told to the card they name. */
static int handle_uevent(int fd, uint32_t mask, void *data)
{
	struct wla_session *session = data;
	struct udev_device *dev = udev_monitor_receive_device(session->monitor);
	if (!dev) {
		return 0;
	}
	const char *hotplug = udev_device_get_property_value(dev, "HOTPLUG");
	if (hotplug && strcmp(hotplug, "1") == 0) {
		dev_t devnum = udev_device_get_devnum(dev);
		const char *action = udev_device_get_action(dev);
		wla_hold(&session->hold);
		struct wla_card *card, *tmp;
		wl_list_for_each_safe(card, tmp, &session->cards, link) {
			if (card->devnum != devnum) {
				continue;
			}
			wlr_log(WLR_DEBUG, "session: card %s: hot-plug uevent, action %s",
				card->path, action ? action : "?");
			wl_signal_emit(&card->events.change, card);
			if (wla_doomed(&session->hold)) {
				break;
			}
		}
		wla_release(&session->hold, session_free, session);
	}
	udev_device_unref(dev);
	return 0;
}

/* What a failed watch made, or all of it at the end. */
static void unwatch_uevents(struct wla_session *session)
{
	if (session->monitor_source) {
		wl_event_source_remove(session->monitor_source);
		session->monitor_source = NULL;
	}
	if (session->monitor) {
		udev_monitor_unref(session->monitor);
		session->monitor = NULL;
	}
	if (session->udev) {
		udev_unref(session->udev);
		session->udev = NULL;
	}
}

void wla_session_watch_uevents(struct wla_session *session, const struct wla_card *card)
{
	if (!session->loop || session->monitor_source) {
		return;
	}
	session->udev = udev_new();
	/* Without udevd (a bare system, the test guest) the kernel's
	 * netlink group carries the same events. */
	const char *source = access("/run/udev/control", F_OK) == 0 ? "udev" : "kernel";
	session->monitor = session->udev ?
		udev_monitor_new_from_netlink(session->udev, source) : NULL;
	if (!session->monitor ||
			udev_monitor_filter_add_match_subsystem_devtype(session->monitor, "drm",
				NULL) < 0 ||
			udev_monitor_enable_receiving(session->monitor) < 0) {
		wlr_log(WLR_ERROR, "session: card %s: no uevent monitor (source %s): connectors "
			"plugged or unplugged later are not seen", card->path, source);
		unwatch_uevents(session);
		return;
	}
	session->monitor_source = wl_event_loop_add_fd(session->loop,
		udev_monitor_get_fd(session->monitor), WL_EVENT_READABLE, handle_uevent, session);
	if (!session->monitor_source) {
		wlr_log(WLR_ERROR, "session: card %s: uevent monitor fd %d not added to the loop: "
			"connectors plugged or unplugged later are not seen", card->path,
			udev_monitor_get_fd(session->monitor));
		unwatch_uevents(session);
	}
}

void wla_session_destroy(struct wla_session *session)
{
	/* From a card's uevent listener: all of it once that returns. */
	if (session && wla_hold_doom(&session->hold)) {
		session_free(session);
	}
}

static void session_free(void *data)
{
	struct wla_session *session = data;
	struct wla_card *card, *tmp;
	wl_list_for_each_safe(card, tmp, &session->cards, link) {
		wla_session_close_card(card);
	}
	unwatch_uevents(session);
	/* Input is gone before its session: none is left, unless libinput
	 * kept one. */
	while (!wl_list_empty(&session->inputs)) {
		struct wla_seat_input *in = wl_container_of(session->inputs.next, in, link);
		wla_session_close_input(session, in->fd);
	}
	if (session->seat) {
		wl_list_remove(&session->seat_destroy.link);
		wl_list_remove(&session->seat_active.link);
		if (!session->seat_borrowed) {
			wlr_session_destroy(session->seat);
		}
	}
	free(session);
}
