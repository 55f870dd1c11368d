/*
 * The session (backend/session/): how the glue gets the DRM card it hands
 * the KMS driver, as wlroots' backend/session gives wlr_drm_backend_create
 * a wlr_session and a wlr_device. It finds the card (drm-device, else the
 * boot VGA card, then the others), opens it through the seat where one can
 * be had (a wlr_session made on first need: seatd, logind, or libseat's
 * built-in backend as root), which is what tells the driver of VT switches,
 * else directly, and watches the card's uevents.
 *
 * A driver sees a struct wla_card only: an open fd, its path and two
 * signals. It knows nothing of libseat or udev.
 */
#ifndef BACKEND_SESSION_H
#define BACKEND_SESSION_H

#include <stdbool.h>
#include <sys/types.h>
#include <wayland-server-core.h>
#include <wlatomic/config.h>
#include "backend/hold.h"

struct udev;
struct udev_monitor;
struct wlr_device;
struct wlr_session;

struct wla_card {
	struct wla_session *session;
	struct wl_list link; /* wla_session.cards */
	/* Checked to be a KMS device with atomic modesetting (the client
	 * caps universal planes and atomic are set on it). -1 once the seat
	 * closed it. */
	int fd;
	char path[WLA_DRM_DEVICE_MAX];
	dev_t devnum;
	/* The fd is the seat's: it is closed when the seat's session ends. */
	bool through_seat;
	struct wlr_device *seat_dev; /* when through_seat */
	struct {
		/* A hot-plug uevent (HOTPLUG=1) of this card: its connectors
		 * are to be read again. data: the card. */
		struct wl_signal change;
		/* The seat's session ends (its display goes): told while the
		 * fd is still open; when through_seat it is closed (-1)
		 * right after. data: the card. */
		struct wl_signal session_end;
		/* The seat's session went inactive (another VT, another
		 * session: the seat takes DRM master away once the listeners
		 * returned) or active again (master is ours again); active says
		 * which. Only for cards opened through the seat. data: the
		 * card. */
		struct wl_signal active;
	} events;
	bool active;
};

struct wla_session {
	/* Where uevents are read (NULL: hot-plugs are not watched). */
	struct wl_event_loop *loop;
	/* What a seat's session lives on (NULL: none is asked for). */
	struct wl_display *display;
	struct wlr_session *seat; /* made on first need, or the compositor's */
	bool seat_failed;
	bool seat_borrowed; /* the compositor's (wla_session_borrow_seat) */
	struct wl_listener seat_destroy;
	struct wl_listener seat_active;
	/* Uevents of the drm subsystem, from the first card opened on. */
	struct udev *udev;
	struct udev_monitor *monitor;
	struct wl_event_source *monitor_source;
	struct wl_list cards; /* wla_card.link */
	/* Input devices opened through the seat (wla_session_open_input). */
	struct wl_list inputs; /* wla_seat_input.link */
	struct {
		/* The seat's session ends: what was opened through it (input
		 * devices) is to be closed now, while the seat can still close
		 * it (right after, it closes every fd it gave). Told before
		 * the cards' session_end. data: the session. */
		struct wl_signal seat_end;
	} events;
	/* Held while a card is told of a uevent (its listeners may destroy
	 * the backend, and the session with it): the destroy waits for the
	 * release (backend/hold.h). */
	struct wla_hold hold;
};

/*
 * A session to open cards in. With a display, cards are opened through the
 * seat where one can be had, else directly; with a loop, the cards' hot-plug
 * uevents are read on it. NULL (logged) without memory. The caller owns it.
 */
struct wla_session *wla_session_create(struct wl_event_loop *loop,
	struct wl_display *display);
/* Use the compositor's seat session (wlroots' libinput backend made one)
 * rather than a second of our own: libseat gives a VT-bound seat to one
 * client, and both must follow the same VT switches. Before the first card
 * is opened; the seat is not destroyed with the session. */
void wla_session_borrow_seat(struct wla_session *session, struct wlr_session *seat);
/* Close every card still open (with the seat's session if one was made),
 * then free the session. NULL is a no-op. */
void wla_session_destroy(struct wla_session *session);

/*
 * Open an input device's event node for libinput (flags: open(2)'s): an fd,
 * or -errno. Through the seat where the session has one (the cards came
 * through it: seatd gives an unprivileged compositor its devices, and
 * revokes them while another session has the seat), else directly. The fd
 * goes back through wla_session_close_input.
 */
int wla_session_open_input(struct wla_session *session, const char *path, int flags);
/* Close an fd wla_session_open_input gave. */
void wla_session_close_input(struct wla_session *session, int fd);
/* Whether input devices are opened through the seat (it has the right to
 * open them, not this process). */
bool wla_session_seats_input(const struct wla_session *session);

/*
 * Open the card cfg->drm_device, or the first that supports atomic
 * modesetting (the boot VGA card first). The card belongs to the session:
 * closed by wla_session_close_card or with the session. NULL when there is
 * none, logged once naming the card (drm-device, or the last one tried)
 * and why (errno, the refused client cap, no seat session).
 */
struct wla_card *wla_session_open_card(struct wla_session *session,
	const struct wla_config *cfg);
/* Close the card (through the seat if it was opened there) and free it;
 * its listeners must be gone. NULL is a no-op. */
void wla_session_close_card(struct wla_card *card);

#endif
