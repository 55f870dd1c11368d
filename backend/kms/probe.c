/*
 * Enumeration of the KMS driver: the card's CRTCs, planes (their formats)
 * and connectors (their modes) described to the core at create, and the
 * connectors read again on a hot-plug (re-probe): outputs announced and
 * removed.
 */
#include <drm_fourcc.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "backend/edid.h"
#include "kms-private.h"
#include "util.h"

static bool add_plane_formats(struct wla_kms *kms, struct wla_kms_plane *kp,
	const drmModePlane *plane, uint64_t in_formats_blob)
{
	static const uint64_t implicit = DRM_FORMAT_MOD_INVALID;
	/* Every format with the implicit modifier (AddFB2 without
	 * modifiers), then what IN_FORMATS lists. */
	for (uint32_t i = 0; i < plane->count_formats; i++) {
		if (!wla_plane_add_format(&kp->base, plane->formats[i], &implicit, 1)) {
			return false;
		}
	}
	if (!in_formats_blob) {
		return true;
	}
	drmModePropertyBlobRes *blob = drmModeGetPropertyBlob(kms->fd, (uint32_t)in_formats_blob);
	if (!blob) {
		wla_kms_log_errno(kms, WLR_INFO, "plane %" PRIu32 ": IN_FORMATS blob",
			kp->id);
		return true;
	}
	drmModeFormatModifierIterator iter = { 0 };
	bool ok = true;
	while (ok && drmModeFormatModifierBlobIterNext(blob, &iter)) {
		if (iter.mod != DRM_FORMAT_MOD_INVALID) {
			ok = wla_plane_add_format(&kp->base, iter.fmt, &iter.mod, 1);
		}
	}
	drmModeFreePropertyBlob(blob);
	return ok;
}

static bool init_plane(struct wla_kms *kms, uint32_t plane_id, unsigned order)
{
	drmModePlane *plane = drmModeGetPlane(kms->fd, plane_id);
	if (!plane) {
		wla_kms_log_errno(kms, WLR_ERROR, "drmModeGetPlane %" PRIu32, plane_id);
		return false;
	}
	struct wla_kms_plane *kp = &kms->planes[kms->n_planes];
	memset(kp, 0, sizeof(*kp));
	kp->id = plane_id;
	struct wla_kms_plane_props *p = &kp->props;
	uint64_t type = DRM_PLANE_TYPE_OVERLAY, in_formats = 0, zpos = 0;
	struct prop_want want[] = {
		{ "type", &p->type, &type },
		{ "FB_ID", &p->fb_id, NULL },
		{ "CRTC_ID", &p->crtc_id, NULL },
		{ "SRC_X", &p->src_x, NULL },
		{ "SRC_Y", &p->src_y, NULL },
		{ "SRC_W", &p->src_w, NULL },
		{ "SRC_H", &p->src_h, NULL },
		{ "CRTC_X", &p->crtc_x, NULL },
		{ "CRTC_Y", &p->crtc_y, NULL },
		{ "CRTC_W", &p->crtc_w, NULL },
		{ "CRTC_H", &p->crtc_h, NULL },
		{ "IN_FORMATS", &p->in_formats, &in_formats },
		{ "zpos", &p->zpos, &zpos },
		{ "FB_DAMAGE_CLIPS", &p->fb_damage_clips, NULL },
	};
	bool ok = wla_kms_get_props(kms->fd, plane_id, DRM_MODE_OBJECT_PLANE, want,
		WLA_ARRAY_SIZE(want));
	struct wla_plane *base = &kp->base;
	base->type = type == DRM_PLANE_TYPE_PRIMARY ? WLA_PLANE_PRIMARY :
		type == DRM_PLANE_TYPE_CURSOR ? WLA_PLANE_CURSOR : WLA_PLANE_OVERLAY;
	uint32_t crtc_mask = kms->n_crtcs >= 32 ? UINT32_MAX : (1u << kms->n_crtcs) - 1;
	base->possible_crtcs = plane->possible_crtcs & crtc_mask;
	/* Without zpos: the primary at the bottom, the cursor on top. */
	base->zpos = p->zpos ? (unsigned)zpos : base->type == WLA_PLANE_PRIMARY ? 0 :
		base->type == WLA_PLANE_CURSOR ? WLA_MAX_PLANES : order + 1;
	/* The kernel says what it scales with TEST_ONLY. */
	base->min_scale = 1;
	base->max_scale = UINT32_MAX;
	if (base->type == WLA_PLANE_CURSOR) {
		base->max_fb_width = kms->cursor_width;
		base->max_fb_height = kms->cursor_height;
	}
	base->driver_data = kp;
	snprintf(base->name, sizeof(base->name), "plane-%" PRIu32, plane_id);
	ok = ok && add_plane_formats(kms, kp, plane, in_formats);
	drmModeFreePlane(plane);
	if (!ok || !wla_device_add_plane(&kms->dev, base)) {
		wla_kms_log(kms, WLR_ERROR, "cannot describe plane %" PRIu32, plane_id);
		return false;
	}
	kms->n_planes++;
	return true;
}

bool wla_kms_init_crtcs(struct wla_kms *kms, const drmModeRes *res)
{
	for (int i = 0; i < res->count_crtcs && kms->n_crtcs < WLA_MAX_CRTCS; i++) {
		struct wla_kms_crtc *kc = &kms->crtcs[kms->n_crtcs];
		kc->kms = kms;
		kc->id = res->crtcs[i];
		kc->pipe = (unsigned)i;
		uint64_t gamma_size = 0;
		uint32_t prop_gamma_size = 0;
		struct prop_want want[] = {
			{ "ACTIVE", &kc->prop_active, NULL },
			{ "MODE_ID", &kc->prop_mode_id, NULL },
			{ "GAMMA_LUT", &kc->prop_gamma_lut, NULL },
			{ "GAMMA_LUT_SIZE", &prop_gamma_size, &gamma_size },
			{ "VRR_ENABLED", &kc->prop_vrr_enabled, NULL },
		};
		if (!wla_kms_get_props(kms->fd, kc->id, DRM_MODE_OBJECT_CRTC, want, WLA_ARRAY_SIZE(want)) ||
				!kc->prop_active || !kc->prop_mode_id) {
			wla_kms_log(kms, WLR_ERROR, "crtc %" PRIu32 " has no ACTIVE or MODE_ID", kc->id);
			return false;
		}
		snprintf(kc->base.name, sizeof(kc->base.name), "crtc-%" PRIu32, kc->id);
		if (kc->prop_gamma_lut && prop_gamma_size && gamma_size >= 2 &&
				gamma_size <= UINT16_MAX) {
			kc->base.gamma_size = (uint32_t)gamma_size;
		} else {
			kc->prop_gamma_lut = 0;
		}
		wla_kms_log(kms, WLR_DEBUG, "%s: gamma LUT of %" PRIu32 " entries%s",
			kc->base.name, kc->base.gamma_size, kc->prop_gamma_lut ? "" : " (none)");
		kc->base.max_slots = 1; /* one flip in flight per CRTC */
		kc->base.rearm = false; /* a flip in flight is final */
		kc->base.driver_data = kc;
		if (!wla_device_add_crtc(&kms->dev, &kc->base)) {
			return false;
		}
		kms->n_crtcs++;
	}
	if (res->count_crtcs > WLA_MAX_CRTCS) {
		wla_kms_log(kms, WLR_INFO, "%d crtcs, only the first %d are used",
			res->count_crtcs, WLA_MAX_CRTCS);
	}
	return true;
}

bool wla_kms_init_planes(struct wla_kms *kms)
{
	drmModePlaneRes *res = drmModeGetPlaneResources(kms->fd);
	if (!res) {
		wla_kms_log_errno(kms, WLR_ERROR, "drmModeGetPlaneResources");
		return false;
	}
	bool ok = true;
	for (uint32_t i = 0; ok && i < res->count_planes && kms->n_planes < WLA_MAX_PLANES; i++) {
		ok = init_plane(kms, res->planes[i], i);
	}
	if (res->count_planes > WLA_MAX_PLANES) {
		wla_kms_log(kms, WLR_INFO, "%" PRIu32 " planes, only the first %d are used",
			res->count_planes, WLA_MAX_PLANES);
	}
	drmModeFreePlaneResources(res);
	if (!ok) {
		return false;
	}
	/* Each CRTC its own primary and cursor plane, the first free one
	 * that can go there. */
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		struct wla_crtc *crtc = &kms->crtcs[c].base;
		for (size_t i = 0; i < kms->n_planes; i++) {
			struct wla_plane *p = &kms->planes[i].base;
			if (!(p->possible_crtcs & (1u << crtc->index))) {
				continue;
			}
			bool taken = false;
			for (size_t o = 0; o < c; o++) {
				taken |= kms->crtcs[o].base.primary == p || kms->crtcs[o].base.cursor == p;
			}
			if (taken) {
				continue;
			}
			if (p->type == WLA_PLANE_PRIMARY && !crtc->primary) {
				crtc->primary = p;
			} else if (p->type == WLA_PLANE_CURSOR && !crtc->cursor) {
				crtc->cursor = p;
			}
		}
	}
	return true;
}

uint32_t wla_kms_connector_crtcs(struct wla_kms *kms, const drmModeConnector *conn)
{
	uint32_t mask = 0;
	for (int i = 0; i < conn->count_encoders; i++) {
		drmModeEncoder *enc = drmModeGetEncoder(kms->fd, conn->encoders[i]);
		if (enc) {
			mask |= enc->possible_crtcs;
			drmModeFreeEncoder(enc);
		}
	}
	uint32_t crtc_mask = kms->n_crtcs >= 32 ? UINT32_MAX : (1u << kms->n_crtcs) - 1;
	return mask & crtc_mask;
}

/* The connector's modes, the kernel's preferred one first. */
static bool update_modes(struct wla_kms *kms, struct wla_kms_connector *kc,
	const drmModeConnector *conn)
{
	struct wla_mode *modes = calloc((size_t)conn->count_modes + 1, sizeof(*modes));
	if (!modes) {
		return false;
	}
	size_t n = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < conn->count_modes; i++) {
			const drmModeModeInfo *info = &conn->modes[i];
			bool preferred = (info->type & DRM_MODE_TYPE_PREFERRED) != 0;
			if (preferred != (pass == 0)) {
				continue;
			}
			if (wla_kms_mode_from_drm(info, &modes[n])) {
				modes[n].preferred = n == 0 && preferred;
				n++;
			} else {
				wla_kms_obj_log(kms, kc, WLR_DEBUG, "mode %s skipped (interlaced, "
					"doublescan or an inconsistent timing)", info->name);
			}
		}
	}
	bool ok = wla_connector_set_modes(&kc->base, modes, n);
	free(modes);
	return ok;
}

static struct wla_kms_connector *find_connector(struct wla_kms *kms, uint32_t id)
{
	for (size_t i = 0; i < kms->n_connectors; i++) {
		if (kms->connectors[i]->id == id) {
			return kms->connectors[i];
		}
	}
	return NULL;
}

/* A new connector of the card; NULL (logged) if it cannot be had. */
static struct wla_kms_connector *add_connector(struct wla_kms *kms,
	const drmModeConnector *conn)
{
	if (kms->n_connectors == WLA_MAX_CONNECTORS) {
		wla_kms_log(kms, WLR_INFO, "connector %" PRIu32 " ignored: at most %d",
			conn->connector_id, WLA_MAX_CONNECTORS);
		return NULL;
	}
	struct wla_kms_connector *kc = calloc(1, sizeof(*kc));
	if (!kc) {
		wla_kms_log(kms, WLR_ERROR, "out of memory for a connector");
		return NULL;
	}
	kc->kms = kms;
	kc->id = conn->connector_id;
	const char *type = drmModeGetConnectorTypeName(conn->connector_type);
	snprintf(kc->base.name, sizeof(kc->base.name), "%s-%" PRIu32, type ? type : "Unknown",
		conn->connector_type_id);
	struct prop_want want[] = {
		{ "CRTC_ID", &kc->prop_crtc_id, NULL },
		{ "link-status", &kc->prop_link_status, NULL },
	};
	if (!wla_kms_get_props(kms->fd, kc->id, DRM_MODE_OBJECT_CONNECTOR, want,
			WLA_ARRAY_SIZE(want)) || !kc->prop_crtc_id) {
		wla_kms_log(kms, WLR_ERROR, "connector %s has no CRTC_ID", kc->base.name);
		free(kc);
		return NULL;
	}
	kc->base.driver_data = kc;
	kc->base.possible_crtcs = wla_kms_connector_crtcs(kms, conn);
	kc->base.status = WLA_CONNECTOR_DISCONNECTED;
	if (!wla_device_add_connector(&kms->dev, &kc->base)) {
		free(kc);
		return NULL;
	}
	kc->added = true;
	kms->connectors[kms->n_connectors++] = kc;
	return kc;
}

/* The monitor's make, model and serial from the connector's EDID blob; a
 * missing or broken one names it "<Unknown>" as wlroots does, with one
 * debug line. */
static void read_edid(struct wla_kms *kms, struct wla_kms_connector *kc)
{
	snprintf(kc->base.make, sizeof(kc->base.make), "<Unknown>");
	snprintf(kc->base.model, sizeof(kc->base.model), "<Unknown>");
	kc->base.serial[0] = '\0';
	uint32_t prop = 0;
	uint64_t blob_id = 0;
	struct prop_want want[] = {
		{ "EDID", &prop, &blob_id },
	};
	if (!wla_kms_get_props(kms->fd, kc->id, DRM_MODE_OBJECT_CONNECTOR, want, 1) ||
			!prop || !blob_id) {
		wla_kms_obj_log(kms, kc, WLR_DEBUG, "no EDID: make and model <Unknown>");
		return;
	}
	drmModePropertyBlobRes *blob = drmModeGetPropertyBlob(kms->fd, (uint32_t)blob_id);
	if (!blob) {
		wla_kms_obj_log_errno(kms, kc, WLR_DEBUG, "EDID blob %" PRIu64 " unreadable: "
			"make and model <Unknown>", blob_id);
		return;
	}
	struct wla_edid_info info;
	char why[128];
	if (!wla_edid_parse(blob->data, blob->length, &info, why, sizeof(why))) {
		wla_kms_obj_log(kms, kc, WLR_DEBUG, "EDID blob %" PRIu64 " broken (%s): make and "
			"model <Unknown>", blob_id, why);
	} else {
		snprintf(kc->base.make, sizeof(kc->base.make), "%s", info.make);
		snprintf(kc->base.model, sizeof(kc->base.model), "%s", info.model);
		snprintf(kc->base.serial, sizeof(kc->base.serial), "%s", info.serial);
		if (!kc->base.phys_width_mm || !kc->base.phys_height_mm) {
			kc->base.phys_width_mm = info.phys_width_mm;
			kc->base.phys_height_mm = info.phys_height_mm;
		}
		wla_kms_obj_log(kms, kc, WLR_DEBUG, "EDID: make \"%s\" (%s), model \"%s\", "
			"serial \"%s\"", info.make, info.pnp_id, info.model, info.serial);
	}
	drmModeFreePropertyBlob(blob);
}

/* FNV-1a, 64 bits, over len bytes, continuing from h. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;
	for (size_t i = 0; i < len; i++) {
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	}
	return h;
}

/* What identifies the monitor on a connector: its EDID's bytes, or for a
 * monitor without one (qxl's, vkms') the kernel's mode list. Not the list
 * where there is an EDID: after link-status BAD the kernel may prune the
 * modes of the same monitor. */
static uint64_t monitor_signature(struct wla_kms *kms, struct wla_kms_connector *kc,
	const drmModeConnector *conn)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	uint32_t prop = 0;
	uint64_t blob_id = 0;
	struct prop_want want[] = {
		{ "EDID", &prop, &blob_id },
	};
	if (wla_kms_get_props(kms->fd, kc->id, DRM_MODE_OBJECT_CONNECTOR, want, 1) && prop &&
			blob_id) {
		drmModePropertyBlobRes *blob = drmModeGetPropertyBlob(kms->fd, (uint32_t)blob_id);
		if (blob) {
			h = fnv1a(h, blob->data, blob->length);
			drmModeFreePropertyBlob(blob);
			return h;
		}
	}
	for (int i = 0; i < conn->count_modes; i++) {
		drmModeModeInfo m = conn->modes[i];
		/* The timing and whether it is preferred; not the name. */
		memset(m.name, 0, sizeof(m.name));
		m.type &= DRM_MODE_TYPE_PREFERRED;
		h = fnv1a(h, &m, sizeof(m));
	}
	return h;
}

/* The connector's "panel orientation" (an enum property of panels the
 * kernel knows to be mounted turned). */
static enum wla_panel_orientation read_orientation(struct wla_kms *kms,
	struct wla_kms_connector *kc)
{
	static const struct {
		const char *name;
		enum wla_panel_orientation value;
	} names[] = {
		{ "Normal", WLA_ORIENTATION_NORMAL },
		{ "Upside Down", WLA_ORIENTATION_UPSIDE_DOWN },
		{ "Left Side Up", WLA_ORIENTATION_LEFT_UP },
		{ "Right Side Up", WLA_ORIENTATION_RIGHT_UP },
	};
	uint32_t prop_id = 0;
	uint64_t value = 0;
	struct prop_want want[] = {
		{ "panel orientation", &prop_id, &value },
	};
	if (!wla_kms_get_props(kms->fd, kc->id, DRM_MODE_OBJECT_CONNECTOR, want, 1) || !prop_id) {
		return WLA_ORIENTATION_NORMAL;
	}
	enum wla_panel_orientation orientation = WLA_ORIENTATION_NORMAL;
	drmModePropertyRes *prop = drmModeGetProperty(kms->fd, prop_id);
	for (int i = 0; prop && i < prop->count_enums; i++) {
		if (prop->enums[i].value != value) {
			continue;
		}
		size_t n;
		for (n = 0; n < WLA_ARRAY_SIZE(names); n++) {
			if (strcmp(prop->enums[i].name, names[n].name) == 0) {
				orientation = names[n].value;
				break;
			}
		}
		if (n == WLA_ARRAY_SIZE(names)) {
			wla_kms_obj_log(kms, kc, WLR_INFO, "unknown panel orientation \"%s\": "
				"taken as Normal", prop->enums[i].name);
		} else if (orientation != WLA_ORIENTATION_NORMAL) {
			wla_kms_obj_log(kms, kc, WLR_INFO, "panel orientation \"%s\"",
				prop->enums[i].name);
		}
	}
	drmModeFreeProperty(prop);
	return orientation;
}

/* The connector's link-status is BAD (the kernel lost the link). */
static bool link_bad(struct wla_kms *kms, struct wla_kms_connector *kc)
{
	uint32_t prop = 0;
	uint64_t status = DRM_MODE_LINK_STATUS_GOOD;
	struct prop_want want[] = {
		{ "link-status", &prop, &status },
	};
	return kc->prop_link_status &&
		wla_kms_get_props(kms->fd, kc->id, DRM_MODE_OBJECT_CONNECTOR, want, 1) && prop &&
		status == DRM_MODE_LINK_STATUS_BAD;
}

/* Read one connector's status, size, monitor and modes into kc. */
static void read_connector(struct wla_kms *kms, struct wla_kms_connector *kc,
	const drmModeConnector *conn, int status_override)
{
	bool connected = status_override >= 0 ? status_override != 0 :
		conn->connection == DRM_MODE_CONNECTED;
	kc->base.status = connected ? WLA_CONNECTOR_CONNECTED : WLA_CONNECTOR_DISCONNECTED;
	kc->base.phys_width_mm = conn->mmWidth;
	kc->base.phys_height_mm = conn->mmHeight;
	uint32_t prop = 0, prop_vrr = 0;
	uint64_t non_desktop = 0, vrr_capable = 0;
	struct prop_want want[] = {
		{ "non-desktop", &prop, &non_desktop },
		{ "vrr_capable", &prop_vrr, &vrr_capable },
	};
	bool have = wla_kms_get_props(kms->fd, kc->id, DRM_MODE_OBJECT_CONNECTOR, want,
		WLA_ARRAY_SIZE(want));
	kc->base.non_desktop = have && prop && non_desktop;
	/* The kernel does not say the range (it is in the EDID's range
	 * descriptor, which the driver reads); the monitor follows what it
	 * gets within it. */
	kc->base.vrr_capable = have && prop_vrr && vrr_capable;
	read_edid(kms, kc);
	kc->base.orientation = read_orientation(kms, kc);
	kc->monitor_sig = monitor_signature(kms, kc, conn);
	if (!update_modes(kms, kc, conn)) {
		wla_kms_log(kms, WLR_ERROR, "out of memory for the modes of %s",
			kc->base.name);
	}
}

bool wla_kms_init_connectors(struct wla_kms *kms, const drmModeRes *res)
{
	for (int i = 0; i < res->count_connectors; i++) {
		drmModeConnector *conn = drmModeGetConnector(kms->fd, res->connectors[i]);
		if (!conn) {
			wla_kms_log_errno(kms, WLR_ERROR, "drmModeGetConnector %" PRIu32,
				res->connectors[i]);
			continue;
		}
		if (conn->connector_type == DRM_MODE_CONNECTOR_WRITEBACK) {
			wla_kms_init_writeback(kms, conn);
		} else {
			struct wla_kms_connector *kc = add_connector(kms, conn);
			if (kc) {
				read_connector(kms, kc, conn, -1);
			}
		}
		drmModeFreeConnector(conn);
	}
	return true;
}

void wla_kms_reprobe(struct wla_kms *kms, uint32_t conn_id, int status_override)
{
	if (kms->lost) {
		return;
	}
	kms->reprobes++;
	drmModeRes *res = drmModeGetResources(kms->fd);
	if (!res) {
		wla_kms_log_errno(kms, WLR_ERROR, "drmModeGetResources on hot-plug");
		return;
	}
	/* The listeners told may destroy the backend, and this driver with
	 * it: that waits for the release, and nothing more is told. */
	wla_device_hold(&kms->dev);
	for (int i = 0; i < res->count_connectors && !wla_doomed(&kms->dev.hold); i++) {
		drmModeConnector *conn = drmModeGetConnector(kms->fd, res->connectors[i]);
		if (!conn || conn->connector_type == DRM_MODE_CONNECTOR_WRITEBACK) {
			drmModeFreeConnector(conn);
			continue;
		}
		struct wla_kms_connector *kc = find_connector(kms, conn->connector_id);
		if (!kc) {
			kc = add_connector(kms, conn);
		}
		if (!kc) {
			drmModeFreeConnector(conn);
			continue;
		}
		bool was = kc->base.status == WLA_CONNECTOR_CONNECTED;
		int override = conn->connector_id == conn_id ? status_override : -1;
		bool now = override >= 0 ? override != 0 : conn->connection == DRM_MODE_CONNECTED;
		/* A failed link first: the kernel may have pruned its modes. */
		bool bad_link = was && now && link_bad(kms, kc);
		uint64_t sig = was && now && !bad_link ? monitor_signature(kms, kc, conn) : 0;
		bool swapped = was && now && !bad_link && sig != kc->monitor_sig;
		if (swapped) {
			/* A new monitor on a port that stayed connected: it is
			 * unplugged and plugged in again, so that the compositor
			 * sees its names and modes (and configures it afresh). */
			wla_kms_log(kms, WLR_INFO, "connector %s: another monitor while connected "
				"(%s changed; was \"%s %s\")", kc->base.name,
				strcmp(kc->base.make, "<Unknown>") == 0 ? "mode list" : "EDID",
				kc->base.make, kc->base.model);
		}
		if ((was && !now) || swapped) {
			wla_kms_log(kms, WLR_INFO, "connector %s unplugged", kc->base.name);
			struct wla_crtc *crtc = kc->base.state->crtc;
			if (crtc) {
				wla_crtc_force_off(crtc);
			}
			kc->base.status = WLA_CONNECTOR_DISCONNECTED;
			if (kms->dev.listener.connector_removed) {
				kms->dev.listener.connector_removed(&kms->dev, &kc->base,
					kms->dev.listener.data);
			}
			was = false;
		}
		if (wla_doomed(&kms->dev.hold)) {
			drmModeFreeConnector(conn);
			break;
		}
		if (bad_link) {
			wla_kms_log(kms, WLR_INFO, "connector %s: link-status BAD: set up again with "
				"its mode", kc->base.name);
			if (kms->dev.listener.connector_link_bad) {
				kms->dev.listener.connector_link_bad(&kms->dev, &kc->base,
					kms->dev.listener.data);
			}
		} else if (!was && now) {
			read_connector(kms, kc, conn, override);
			wla_kms_log(kms, WLR_INFO, "connector %s plugged in, %zu modes",
				kc->base.name, kc->base.n_modes);
			if (kms->dev.listener.connector_added) {
				kms->dev.listener.connector_added(&kms->dev, &kc->base,
					kms->dev.listener.data);
			}
		}
		drmModeFreeConnector(conn);
	}
	/* Connectors no longer in the card's list (a DP-MST branch gone) are
	 * unplugged too. */
	for (size_t i = 0; i < kms->n_connectors && !wla_doomed(&kms->dev.hold); i++) {
		struct wla_kms_connector *kc = kms->connectors[i];
		bool listed = false;
		for (int j = 0; j < res->count_connectors; j++) {
			listed |= res->connectors[j] == kc->id;
		}
		if (listed || kc->base.status != WLA_CONNECTOR_CONNECTED) {
			continue;
		}
		wla_kms_log(kms, WLR_INFO, "connector %s is gone", kc->base.name);
		if (kc->base.state->crtc) {
			wla_crtc_force_off(kc->base.state->crtc);
		}
		kc->base.status = WLA_CONNECTOR_DISCONNECTED;
		if (kms->dev.listener.connector_removed) {
			kms->dev.listener.connector_removed(&kms->dev, &kc->base,
				kms->dev.listener.data);
		}
	}
	drmModeFreeResources(res);
	wla_device_release(&kms->dev);
}
