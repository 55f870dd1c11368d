/*
 * The cards of the session: the one to drive found (drm-device, else the
 * boot VGA card, then the others), opened through the seat's session where
 * one can be had (then VT switches reach the driver) or else directly, and
 * checked for atomic modesetting, as wlroots' session finds
 * its GPUs for the DRM backend. A card that is no KMS device or has no
 * atomic modesetting is skipped here; the driver checks the fd it is
 * handed again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wlr/backend/session.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "session-private.h"

#define SESSION_MAX_CARDS 16

static int set_caps(int fd, char *why, size_t why_size)
{
	if (drmSetClientCap(fd, DRM_CLIENT_CAP_UNIVERSAL_PLANES, 1) != 0) {
		snprintf(why, why_size, "DRM_CLIENT_CAP_UNIVERSAL_PLANES: %s", strerror(errno));
		return -EOPNOTSUPP;
	}
	if (drmSetClientCap(fd, DRM_CLIENT_CAP_ATOMIC, 1) != 0) {
		snprintf(why, why_size, "no atomic modesetting (DRM_CLIENT_CAP_ATOMIC: %s)",
			strerror(errno));
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Check that fd is a KMS card with atomic modesetting: 0, or -1 with why
 * filled in. */
static int check_card(int fd, char *why, size_t why_size)
{
	drmModeRes *res = drmModeGetResources(fd);
	if (!res) {
		snprintf(why, why_size, "not a KMS device (drmModeGetResources: %s)",
			strerror(errno));
		return -1;
	}
	drmModeFreeResources(res);
	return set_caps(fd, why, why_size);
}

/*
 * Open path through the seat where there is one (seatd, logind, or libseat's
 * built-in backend as root: what gives VT switches), else directly, as
 * wlroots' session opens its GPUs; check it. The card (in the session's
 * list), or NULL with why filled in.
 */
static struct wla_card *open_card(struct wla_session *session, const char *path, char *why,
	size_t why_size)
{
	struct wlr_session *seat = wla_session_get_seat(session);
	struct wlr_device *seat_dev = seat ? wlr_session_open_file(seat, path) : NULL;
	int fd = seat_dev ? seat_dev->fd : -1;
	/* A seat that refuses while its session is inactive is either another
	 * VT's or session's (seatd: "client is not active") or one that can
	 * never be active (libseat's built-in backend as a user who may not
	 * open the VT): the card is then opened directly, and kept only where
	 * the kernel makes this process its DRM master, so that it never
	 * writes to a card a compositor of another session drives. */
	bool seat_inactive = seat && !seat_dev && !seat->active;
	if (seat && !seat_dev) {
		/* Why is wlroots' line before this one: errno is not kept
		 * across its logging. */
		wlr_log(WLR_INFO, "session: %s: the seat did not open it%s; opening it "
			"directly", path, seat_inactive ? " (its session is inactive)" : "");
	}
	if (!seat_dev) {
		fd = open(path, O_RDWR | O_CLOEXEC);
	}
	if (fd < 0) {
		int err = errno;
		if (err == EACCES || err == EPERM) {
			snprintf(why, why_size, "cannot open it (%s) and %s", strerror(err),
				seat ? "the seat did not open it either" :
				session->display ? "no seat session could be had (seatd, logind, or "
				"libseat's built-in backend as root)" :
				"no seat session was asked for");
		} else {
			snprintf(why, why_size, "cannot open it: %s", strerror(err));
		}
		return NULL;
	}
	bool ok = check_card(fd, why, why_size) == 0;
	/* The seat hands the fd over even where it could not make it DRM
	 * master; an inactive seat (libseat's no-op backend never says it is
	 * active) is not asked. */
	if (ok && (!seat_dev || seat->active) && !drmIsMaster(fd)) {
		snprintf(why, why_size, "%sanother process is its DRM master (a compositor or a "
			"display manager runs on it)", seat_inactive ? "the seat's session is "
			"inactive and " : "");
		ok = false;
	}
	struct wla_card *card = ok ? calloc(1, sizeof(*card)) : NULL;
	if (ok && !card) {
		snprintf(why, why_size, "out of memory");
	}
	if (!card) {
		if (seat_dev) {
			wlr_session_close_file(seat, seat_dev);
		} else {
			close(fd);
		}
		return NULL;
	}
	card->session = session;
	card->fd = fd;
	snprintf(card->path, sizeof(card->path), "%s", path);
	struct stat st;
	card->devnum = fstat(fd, &st) == 0 ? st.st_rdev : 0;
	card->through_seat = seat_dev != NULL;
	card->seat_dev = seat_dev;
	wl_signal_init(&card->events.change);
	wl_signal_init(&card->events.session_end);
	wl_signal_init(&card->events.active);
	/* Active, as wlroots' DRM backend starts (libseat's no-op backend
	 * never says its seat is): a seat that goes inactive says so, and
	 * every later event is told to the driver (handle_seat_active). */
	card->active = true;
	wl_list_insert(session->cards.prev, &card->link);
	if (seat_dev) {
		wlr_log(WLR_INFO, "session: %s opened through the seat (fd %d)", path, fd);
	} else {
		wlr_log(WLR_INFO, "session: %s opened directly (fd %d): no VT switches without "
			"a seat", path, fd);
	}
	return card;
}

/* Whether cardN is the one the firmware booted on (sysfs boot_vga). */
static bool is_boot_vga(int n)
{
	char path[96], value[4] = "";
	snprintf(path, sizeof(path), "/sys/class/drm/card%d/device/boot_vga", n);
	FILE *f = fopen(path, "r");
	if (!f) {
		return false;
	}
	bool boot = fgets(value, sizeof(value), f) && value[0] == '1';
	fclose(f);
	return boot;
}

static struct wla_card *find_card(struct wla_session *session, const struct wla_config *cfg)
{
	char why[200];
	if (cfg->drm_device[0]) {
		struct wla_card *card = open_card(session, cfg->drm_device, why, sizeof(why));
		if (!card) {
			wlr_log(WLR_ERROR, "session: drm-device %s: %s", cfg->drm_device, why);
		}
		return card;
	}
	char last[WLA_DRM_DEVICE_MAX + sizeof(why) + 4] = "";
	/* The card the firmware booted on first (boot_vga), as wlroots picks
	 * its primary GPU, then the others in order. */
	for (int n = 0; n < 2 * SESSION_MAX_CARDS; n++) {
		int i = n % SESSION_MAX_CARDS;
		bool boot = is_boot_vga(i);
		if ((n < SESSION_MAX_CARDS) != boot) {
			continue;
		}
		char path[WLA_DRM_DEVICE_MAX];
		snprintf(path, sizeof(path), "%s/card%d", DRM_DIR_NAME, i);
		if (access(path, F_OK) != 0) {
			continue;
		}
		struct wla_card *card = open_card(session, path, why, sizeof(why));
		if (card) {
			return card;
		}
		wlr_log(WLR_INFO, "session: %s skipped: %s", path, why);
		snprintf(last, sizeof(last), "%s: %s", path, why);
	}
	if (last[0]) {
		wlr_log(WLR_ERROR, "session: no usable DRM card in " DRM_DIR_NAME " (the last one, "
			"%s)", last);
	} else {
		wlr_log(WLR_ERROR, "session: no DRM device: " DRM_DIR_NAME " has no card (set "
			"drm-device, or driver=vdc for the virtual display controller)");
	}
	return NULL;
}

struct wla_card *wla_session_open_card(struct wla_session *session,
	const struct wla_config *cfg)
{
	struct wla_card *card = find_card(session, cfg);
	if (card) {
		wla_session_watch_uevents(session, card);
	}
	return card;
}

void wla_session_close_card(struct wla_card *card)
{
	if (!card) {
		return;
	}
	wl_list_remove(&card->link);
	if (card->seat_dev) {
		wlr_session_close_file(card->session->seat, card->seat_dev);
	} else if (!card->through_seat && card->fd >= 0) {
		close(card->fd);
	}
	free(card);
}
