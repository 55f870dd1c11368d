/*
 * The card of the KMS driver: found (drm-device, else the boot VGA card,
 * then the others), opened directly or through the seat's session (a
 * wlr_session, which may end before the driver), checked for atomic
 * modesetting; and the uevent monitor that reports its hot-plugs. This is
 * what the glue is to take over (issue 29): the driver handed its card.
 */
#include <errno.h>
#include <fcntl.h>
#include <libudev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wlr/backend/session.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "kms-private.h"

#define KMS_MAX_CARDS 16

/* Hot-plug: the card's uevents (from udevd when it runs, else the
 * kernel's own) with HOTPLUG=1 make the driver read its connectors. */

static int handle_uevent(int fd, uint32_t mask, void *data)
{
	struct wla_kms *kms = data;
	struct udev_device *dev = udev_monitor_receive_device(kms->udev_monitor);
	if (!dev) {
		return 0;
	}
	const char *hotplug = udev_device_get_property_value(dev, "HOTPLUG");
	bool ours = udev_device_get_devnum(dev) == kms->devnum;
	if (ours && hotplug && strcmp(hotplug, "1") == 0) {
		wlr_log(WLR_DEBUG, "kms %s: hot-plug uevent (%s)", kms->path,
			udev_device_get_action(dev) ? udev_device_get_action(dev) : "?");
		wla_kms_reprobe(kms, 0, -1);
	}
	udev_device_unref(dev);
	return 0;
}

void wla_kms_init_hotplug(struct wla_kms *kms)
{
	struct stat st;
	if (fstat(kms->fd, &st) != 0) {
		return;
	}
	kms->devnum = st.st_rdev;
	kms->udev = udev_new();
	/* Without udevd (a bare system, the test guest) the kernel's
	 * netlink group carries the same events. */
	const char *source = access("/run/udev/control", F_OK) == 0 ? "udev" : "kernel";
	kms->udev_monitor = kms->udev ? udev_monitor_new_from_netlink(kms->udev, source) : NULL;
	if (!kms->udev_monitor ||
			udev_monitor_filter_add_match_subsystem_devtype(kms->udev_monitor, "drm",
				NULL) < 0 ||
			udev_monitor_enable_receiving(kms->udev_monitor) < 0) {
		wlr_log(WLR_ERROR, "kms %s: no uevent monitor: connectors plugged or unplugged "
			"later are not seen", kms->path);
		return;
	}
	kms->udev_source = wl_event_loop_add_fd(kms->loop,
		udev_monitor_get_fd(kms->udev_monitor), WL_EVENT_READABLE, handle_uevent, kms);
}

void wla_kms_finish_hotplug(struct wla_kms *kms)
{
	if (kms->udev_source) {
		wl_event_source_remove(kms->udev_source);
	}
	if (kms->udev_monitor) {
		udev_monitor_unref(kms->udev_monitor);
	}
	if (kms->udev) {
		udev_unref(kms->udev);
	}
}

/* The seat's session ends (the display goes, with the compositor): the
 * CRTCs off while the card is still open, then nothing more is sent. */
static void handle_session_destroy(struct wl_listener *listener, void *data)
{
	struct wla_kms *kms = wl_container_of(listener, kms, session_destroy);
	wl_list_remove(&kms->session_destroy.link);
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		struct wla_crtc *crtc = &kms->crtcs[c].base;
		if (crtc->state && (crtc->state->enable || crtc->state->active ||
				!wl_list_empty(&crtc->queue))) {
			wla_crtc_force_off(crtc);
		}
	}
	wlr_log(WLR_INFO, "kms %s: the seat's session ended: the card is closed", kms->path);
	kms->session = NULL;
	if (!kms->session_dev) {
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
	kms->session_dev = NULL;
}

/* Opening the card */

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

/* The session, made on first need: a seat (seatd, logind or libseat's
 * built-in backend) opens what this process may not. */
static struct wlr_session *get_session(struct wla_kms *kms)
{
	if (!kms->session && kms->display && !kms->session_failed) {
		kms->session = wlr_session_create(kms->display);
		kms->session_failed = kms->session == NULL;
		if (kms->session) {
			kms->session_destroy.notify = handle_session_destroy;
			wl_signal_add(&kms->session->events.destroy, &kms->session_destroy);
		}
	}
	return kms->session;
}

/* Open path directly, or through the seat where this process may not;
 * check it. The fd, or -1 with why filled in. */
static int open_card(struct wla_kms *kms, const char *path, char *why, size_t why_size)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		int err = errno;
		struct wlr_session *session = get_session(kms);
		struct wlr_device *dev = session ? wlr_session_open_file(session, path) : NULL;
		if (!dev) {
			snprintf(why, why_size, "cannot open it (%s) and %s", strerror(err),
				session ? "the seat did not open it either" :
				kms->display ? "no seat session could be had (seatd or logind)" :
				"no seat session was asked for");
			return -1;
		}
		if (check_card(dev->fd, why, why_size) < 0) {
			wlr_session_close_file(session, dev);
			return -1;
		}
		kms->session_dev = dev;
		wlr_log(WLR_INFO, "kms: %s opened through the seat", path);
		return dev->fd;
	}
	if (fd < 0) {
		snprintf(why, why_size, "cannot open it: %s", strerror(errno));
		return -1;
	}
	if (check_card(fd, why, why_size) < 0) {
		close(fd);
		return -1;
	}
	if (!drmIsMaster(fd)) {
		snprintf(why, why_size, "another process is its DRM master (a compositor or a "
			"display manager runs on it)");
		close(fd);
		return -1;
	}
	return fd;
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

int wla_kms_find_card(struct wla_kms *kms, const struct wla_config *cfg)
{
	char why[200];
	if (cfg->drm_device[0]) {
		snprintf(kms->path, sizeof(kms->path), "%s", cfg->drm_device);
		int fd = open_card(kms, cfg->drm_device, why, sizeof(why));
		if (fd < 0) {
			wlr_log(WLR_ERROR, "kms: drm-device %s: %s", cfg->drm_device, why);
		}
		return fd;
	}
	char last[WLA_DRM_DEVICE_MAX + sizeof(why) + 4] = "";
	/* The card the firmware booted on first (boot_vga), as wlroots picks
	 * its primary GPU, then the others in order. */
	for (int n = 0; n < 2 * KMS_MAX_CARDS; n++) {
		int i = n % KMS_MAX_CARDS;
		bool boot = is_boot_vga(i);
		if ((n < KMS_MAX_CARDS) != boot) {
			continue;
		}
		char path[WLA_DRM_DEVICE_MAX];
		snprintf(path, sizeof(path), "%s/card%d", DRM_DIR_NAME, i);
		if (access(path, F_OK) != 0) {
			continue;
		}
		int fd = open_card(kms, path, why, sizeof(why));
		if (fd >= 0) {
			snprintf(kms->path, sizeof(kms->path), "%s", path);
			return fd;
		}
		wlr_log(WLR_INFO, "kms: %s skipped: %s", path, why);
		snprintf(last, sizeof(last), "%s: %s", path, why);
	}
	if (last[0]) {
		wlr_log(WLR_ERROR, "kms: no usable DRM card in " DRM_DIR_NAME " (the last one, %s)",
			last);
	} else {
		wlr_log(WLR_ERROR, "kms: no DRM device: " DRM_DIR_NAME " has no card (set "
			"drm-device, or driver=vdc for the virtual display controller)");
	}
	return -1;
}
