/*
 * The card the glue hands the KMS driver (a struct wla_card of
 * include/backend/session.h, as wlroots hands its DRM backend a
 * wlr_device): its fd checked for what the driver needs, and what the card
 * tells, a hot-plug (the connectors read again) and the end of the session
 * that opened it. Finding, opening and watching the card is the session's
 * (backend/session/): the driver knows neither libseat nor udev.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "backend/session.h"
#include "kms-private.h"

int wla_kms_check_fd(struct wla_kms *kms)
{
	const char *what = NULL;
	int err = 0;
	drmModeRes *res = drmModeGetResources(kms->fd);
	if (!res) {
		what = "not a KMS device (drmModeGetResources)";
		err = errno;
	} else if (drmSetClientCap(kms->fd, DRM_CLIENT_CAP_UNIVERSAL_PLANES, 1) != 0) {
		what = "DRM_CLIENT_CAP_UNIVERSAL_PLANES refused";
		err = errno;
	} else if (drmSetClientCap(kms->fd, DRM_CLIENT_CAP_ATOMIC, 1) != 0) {
		what = "no atomic modesetting (DRM_CLIENT_CAP_ATOMIC refused)";
		err = errno;
	}
	drmModeFreeResources(res);
	if (what) {
		wla_kms_log(kms, WLR_ERROR, "fd %d: %s: %s", kms->fd, what,
			strerror(err));
		return -(err ? err : EINVAL);
	}
	return 0;
}

/* Hot-plug: the card's uevent (HOTPLUG=1) makes the driver read its
 * connectors. */
static void handle_card_change(struct wl_listener *listener, void *data)
{
	struct wla_kms *kms = wl_container_of(listener, kms, card_change);
	wla_kms_log(kms, WLR_DEBUG, "hot-plug: connectors read again (re-probe %" PRIu64 ")",
		kms->reprobes + 1);
	wla_kms_reprobe(kms, 0, -1);
}

/* The session that opened the card ends (the display goes, with the
 * compositor): the CRTCs off while the card is still open, then, when the
 * seat held the fd, nothing more is sent. */
static void handle_card_session_end(struct wl_listener *listener, void *data)
{
	struct wla_kms *kms = wl_container_of(listener, kms, card_session_end);
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		struct wla_crtc *crtc = &kms->crtcs[c].base;
		if (crtc->state && (crtc->state->enable || crtc->state->active ||
				!wl_list_empty(&crtc->queue))) {
			wla_crtc_force_off(crtc);
		}
	}
	wla_kms_log(kms, WLR_INFO, "the seat's session ended: every CRTC off, fd %d %s", kms->fd,
		kms->card->through_seat ? "closed with it" : "still open");
	if (!kms->card->through_seat) {
		/* The card was opened directly: it stays ours. */
		return;
	}
	/* The session closes the fd: nothing of ours may touch it again. */
	kms->lost = true;
	if (kms->fd_source) {
		wl_event_source_remove(kms->fd_source);
		kms->fd_source = NULL;
	}
	kms->fd = -1;
	kms->dev.drm_fd = -1;
}

/* The seat's session went inactive (a VT switch: the seat takes DRM master
 * once this returns) or active again (master is ours again). */
static void handle_card_active(struct wl_listener *listener, void *data)
{
	struct wla_kms *kms = wl_container_of(listener, kms, card_active);
	wla_device_hold(&kms->dev);
	if (kms->card->active) {
		wla_kms_resume(kms);
	} else {
		wla_kms_pause(kms);
	}
	wla_device_deliver_events(&kms->dev);
	wla_device_release(&kms->dev);
}

void wla_kms_listen_card(struct wla_kms *kms)
{
	kms->card_active.notify = handle_card_active;
	wl_signal_add(&kms->card->events.active, &kms->card_active);
	kms->card_change.notify = handle_card_change;
	wl_signal_add(&kms->card->events.change, &kms->card_change);
	kms->card_session_end.notify = handle_card_session_end;
	wl_signal_add(&kms->card->events.session_end, &kms->card_session_end);
}

void wla_kms_unlisten_card(struct wla_kms *kms)
{
	wl_list_remove(&kms->card_change.link);
	wl_list_remove(&kms->card_session_end.link);
	wl_list_remove(&kms->card_active.link);
}
