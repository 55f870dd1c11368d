/*
 * Requests of the KMS driver: a state of the core built into one atomic
 * request, tested (TEST_ONLY, the driver's atomic_check) and programmed
 * (commit_tail): the commit flags, the kernel's refusals, and the CRTCs'
 * books once a commit went out.
 */
#include <drm_fourcc.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "backend/session.h"
#include "kms-private.h"
#include "util.h"

void wla_kms_add_prop(struct kms_req *r, const char *what, uint32_t obj, uint32_t prop,
	uint64_t value)
{
	if (r->err) {
		return;
	}
	if (!prop) {
		wla_kms_log(r->kms, WLR_ERROR, "object %" PRIu32 " has no %s property",
			obj, what);
		r->err = -EINVAL;
		return;
	}
	if (drmModeAtomicAddProperty(r->req, obj, prop, value) < 0) {
		r->err = -ENOMEM;
	}
}

static void add_crtc(struct kms_req *r, struct wla_kms_crtc *kc,
	const struct wla_crtc_state *cs, bool with_wb)
{
	uint32_t blob = 0;
	if (cs->enable) {
		blob = wla_kms_mode_blob(r->kms, &cs->mode);
		if (!blob) {
			r->err = r->err ? r->err : -ENOMEM;
			return;
		}
	}
	wla_kms_add_prop(r, "MODE_ID", kc->id, kc->prop_mode_id, blob);
	wla_kms_add_prop(r, "ACTIVE", kc->id, kc->prop_active, cs->active);
	if (cs->active && (r->restore || cs->mode_changed || cs->active_changed ||
			cs->connectors_changed)) {
		/* A modeset trains the links again: the kernel's documented
		 * answer to link-status BAD, written for every connector the
		 * CRTC drives. */
		for (size_t i = 0; i < r->kms->n_connectors; i++) {
			struct wla_kms_connector *conn = r->kms->connectors[i];
			if (conn->prop_link_status &&
					(cs->connector_mask & (1u << conn->base.index))) {
				wla_kms_add_prop(r, "link-status", conn->id,
					conn->prop_link_status, DRM_MODE_LINK_STATUS_GOOD);
			}
		}
	}
	if (kc->prop_gamma_lut) {
		/* The LUT is programmed with every state, as the mode is: NULL
		 * (blob 0) is the kernel's pass-through. */
		uint32_t lut = 0;
		if (cs->gamma && !(lut = wla_kms_gamma_blob(r->kms, kc, cs->gamma))) {
			r->err = r->err ? r->err : -ENOMEM;
			return;
		}
		wla_kms_add_prop(r, "GAMMA_LUT", kc->id, kc->prop_gamma_lut, lut);
	}
	if (kc->prop_vrr_enabled) {
		wla_kms_add_prop(r, "VRR_ENABLED", kc->id, kc->prop_vrr_enabled,
			cs->active && cs->vrr_enabled);
	} else if (cs->vrr_enabled) {
		wla_kms_log(r->kms, WLR_ERROR, "%s: adaptive sync asked for, but the CRTC has "
			"no VRR_ENABLED property", kc->base.name);
		r->err = r->err ? r->err : -EINVAL;
	}
	wla_kms_add_writeback_route(r, kc, cs, with_wb);
}

static uint32_t crtc_id_of(struct wla_crtc *crtc)
{
	return crtc ? wla_kms_crtc_from_crtc(crtc)->id : 0;
}

/* The frame's damage as FB_DAMAGE_CLIPS (a hint: the kernel takes the
 * whole fb without it), as wlroots sends it; the blob goes once the request
 * was sent. */
static void add_damage(struct kms_req *r, struct wla_kms_plane *kp,
	const struct wla_plane_state *ps)
{
	uint32_t blob = 0;
	/* A restore after another session: the plane shows someone else's
	 * pixels, so all of the fb is damage. */
	if (ps->n_damage > 0 && !r->restore && r->n_damage_blobs < WLA_MAX_PLANES) {
		struct drm_mode_rect rects[WLA_MAX_DAMAGE_RECTS];
		for (size_t i = 0; i < ps->n_damage; i++) {
			const struct wla_rect *d = &ps->damage[i];
			rects[i] = (struct drm_mode_rect){ d->x, d->y, d->x + d->w, d->y + d->h };
		}
		if (drmModeCreatePropertyBlob(r->kms->fd, rects, ps->n_damage * sizeof(rects[0]),
				&blob) != 0) {
			wla_kms_log_errno(r->kms, WLR_DEBUG, "plane %s: no FB_DAMAGE_CLIPS blob: "
				"the whole fb is damage", kp->base.name);
			blob = 0;
		} else {
			r->damage_blobs[r->n_damage_blobs++] = blob;
		}
	}
	/* 0 also clears a blob of an earlier commit. */
	wla_kms_add_prop(r, "FB_DAMAGE_CLIPS", kp->id, kp->props.fb_damage_clips, blob);
}

static void add_plane(struct kms_req *r, struct wla_kms_plane *kp,
	const struct wla_plane_state *ps, bool test)
{
	const struct wla_kms_plane_props *p = &kp->props;
	if (!ps->crtc || !ps->fb) {
		wla_kms_add_prop(r, "FB_ID", kp->id, p->fb_id, 0);
		wla_kms_add_prop(r, "CRTC_ID", kp->id, p->crtc_id, 0);
		return;
	}
	uint32_t fb_id = 0;
	struct kms_fb *import = ps->fb->import_dev == &r->kms->dev ? ps->fb->import : NULL;
	if (!import && test) {
		/* Kept on the fb: its prepare_fb finds it. */
		import = wla_kms_import_fb(r->kms, ps->fb);
		if (!import) {
			r->err = r->err ? r->err : -EINVAL;
			return;
		}
	}
	if (import) {
		fb_id = import->fb_id;
	} else {
		wla_kms_log(r->kms, WLR_ERROR, "plane %s: fb %p was not prepared",
			kp->base.name, (void *)ps->fb);
		r->err = -EINVAL;
		return;
	}
	wla_kms_add_prop(r, "FB_ID", kp->id, p->fb_id, fb_id);
	wla_kms_add_prop(r, "CRTC_ID", kp->id, p->crtc_id, crtc_id_of(ps->crtc));
	wla_kms_add_prop(r, "SRC_X", kp->id, p->src_x, ps->src_x);
	wla_kms_add_prop(r, "SRC_Y", kp->id, p->src_y, ps->src_y);
	wla_kms_add_prop(r, "SRC_W", kp->id, p->src_w, ps->src_w);
	wla_kms_add_prop(r, "SRC_H", kp->id, p->src_h, ps->src_h);
	wla_kms_add_prop(r, "CRTC_X", kp->id, p->crtc_x, (uint64_t)(int64_t)ps->crtc_x);
	wla_kms_add_prop(r, "CRTC_Y", kp->id, p->crtc_y, (uint64_t)(int64_t)ps->crtc_y);
	wla_kms_add_prop(r, "CRTC_W", kp->id, p->crtc_w, ps->crtc_w);
	wla_kms_add_prop(r, "CRTC_H", kp->id, p->crtc_h, ps->crtc_h);
	if (!test && p->fb_damage_clips) {
		add_damage(r, kp, ps);
	}
}

static bool in_mask(struct wla_crtc *crtc, uint32_t mask)
{
	return crtc && (mask & (1u << crtc->index));
}

/* Whether the state has plane. */
static bool state_has_plane(struct wla_atomic_state *state, const struct wla_plane *plane)
{
	wla_for_each_plane_in_state(state, e) {
		if (e->ptr == plane) {
			return true;
		}
	}
	return false;
}

/* The planes (bits of their core index) showing a framebuffer not ours
 * (wla_kms_plane.foreign_crtc) that a request of mask turns off: those of
 * a CRTC it turns off or gives another mode, where the state does not set
 * them. Elsewhere they stay as the kernel has them until a state sets
 * them: a CRTC kept lit at start goes on showing what it showed. */
static uint32_t foreign_planes_off(struct wla_atomic_state *state, uint32_t mask)
{
	uint32_t planes = 0;
	wla_for_each_crtc_in_state(state, e) {
		const struct wla_crtc_state *cs = e->new_state;
		if (!in_mask(e->ptr, mask) || (cs->active && !cs->mode_changed)) {
			continue;
		}
		struct wla_kms_crtc *kc = wla_kms_crtc_from_crtc(e->ptr);
		for (size_t i = 0; i < kc->kms->n_planes; i++) {
			struct wla_kms_plane *kp = &kc->kms->planes[i];
			if (kp->foreign_crtc == kc->id && !state_has_plane(state, &kp->base)) {
				planes |= 1u << kp->base.index;
			}
		}
	}
	return planes;
}

/* After a commit of mask in the state: planes it set or turned off show
 * what the core has. */
static void foreign_planes_gone(struct wla_kms *kms, struct wla_atomic_state *state,
	uint32_t mask)
{
	uint32_t off = foreign_planes_off(state, mask);
	wla_for_each_plane_in_state(state, e) {
		if (in_mask(e->new_state->crtc, mask) || in_mask(e->old_state->crtc, mask)) {
			off |= 1u << e->ptr->index;
		}
	}
	for (size_t i = 0; i < kms->n_planes; i++) {
		struct wla_kms_plane *kp = &kms->planes[i];
		if (off & (1u << kp->base.index)) {
			kp->foreign_crtc = 0;
		}
	}
}

/* The CRTCs of mask in the state, with their planes and connectors, into
 * r; test: a TEST_ONLY (unprepared fbs imported for it). */
static void build_request(struct kms_req *r, struct wla_atomic_state *state, uint32_t mask,
	bool test, bool with_wb, bool with_job)
{
	wla_for_each_crtc_in_state(state, e) {
		if (in_mask(e->ptr, mask)) {
			add_crtc(r, wla_kms_crtc_from_crtc(e->ptr), e->new_state, with_wb);
		}
	}
	wla_for_each_connector_in_state(state, e) {
		const struct wla_connector_state *ns = e->new_state;
		if (!in_mask(ns->crtc, mask) && !in_mask(e->old_state->crtc, mask)) {
			continue;
		}
		struct wla_kms_connector *kc = e->ptr->driver_data;
		wla_kms_add_prop(r, "CRTC_ID", kc->id, kc->prop_crtc_id, crtc_id_of(ns->crtc));
	}
	wla_for_each_plane_in_state(state, e) {
		const struct wla_plane_state *ns = e->new_state;
		if (!in_mask(ns->crtc, mask) && !in_mask(e->old_state->crtc, mask)) {
			continue;
		}
		add_plane(r, e->ptr->driver_data, ns, test);
	}
	uint32_t foreign = foreign_planes_off(state, mask);
	for (size_t i = 0; i < r->kms->n_planes; i++) {
		struct wla_kms_plane *kp = &r->kms->planes[i];
		if (foreign & (1u << kp->base.index)) {
			wla_kms_add_prop(r, "FB_ID", kp->id, kp->props.fb_id, 0);
			wla_kms_add_prop(r, "CRTC_ID", kp->id, kp->props.crtc_id, 0);
		}
	}
	if (!test && with_job) {
		wla_for_each_crtc_in_state(state, e) {
			if (in_mask(e->ptr, mask) && e->latch) {
				wla_kms_add_writeback_job(r, wla_kms_crtc_from_crtc(e->ptr), e->new_state);
			}
		}
	}
}

void wla_kms_finish_request(struct kms_req *r)
{
	drmModeAtomicFree(r->req);
	for (size_t i = 0; i < r->n_damage_blobs; i++) {
		drmModeDestroyPropertyBlob(r->kms->fd, r->damage_blobs[i]);
	}
	r->n_damage_blobs = 0;
}

/* "crtc-0 plane-0 plane-3 Virtual-1" into buf: the objects of a state. */
static const char *describe_state(struct wla_atomic_state *state, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
#define APPEND(name) \
	do { \
		int n = snprintf(buf + len, size - len, "%s%s", len ? " " : "", name); \
		if (n > 0 && (size_t)n < size - len) { \
			len += (size_t)n; \
		} \
	} while (0)
	wla_for_each_crtc_in_state(state, e) {
		APPEND(e->ptr->name);
	}
	wla_for_each_plane_in_state(state, e) {
		APPEND(e->ptr->name);
	}
	wla_for_each_connector_in_state(state, e) {
		APPEND(e->ptr->name);
	}
#undef APPEND
	return buf;
}

/* Whether the state changes a mode, turns a CRTC on or off or reroutes a
 * connector (the core's check computed it): KMS needs ALLOW_MODESET. */
static bool needs_modeset(struct wla_atomic_state *state, uint32_t mask)
{
	wla_for_each_crtc_in_state(state, e) {
		const struct wla_crtc_state *cs = e->new_state;
		if (in_mask(e->ptr, mask) &&
				(cs->mode_changed || cs->active_changed || cs->connectors_changed)) {
			return true;
		}
	}
	return false;
}

static uint32_t state_mask(struct wla_atomic_state *state)
{
	uint32_t mask = 0;
	wla_for_each_crtc_in_state(state, e) {
		mask |= 1u << e->ptr->index;
	}
	return mask;
}

/* The CRTCs (bits of their index) a request of mask in the state names:
 * its own, and those a plane or connector of it leaves or joins. The
 * kernel sends each of them an event. */
static uint32_t event_crtcs(struct wla_atomic_state *state, uint32_t mask)
{
	uint32_t crtcs = 0;
	wla_for_each_crtc_in_state(state, e) {
		if (in_mask(e->ptr, mask)) {
			crtcs |= 1u << e->ptr->index;
		}
	}
	wla_for_each_connector_in_state(state, e) {
		struct wla_crtc *nc = e->new_state->crtc, *oc = e->old_state->crtc;
		if (in_mask(nc, mask) || in_mask(oc, mask)) {
			crtcs |= (nc ? 1u << nc->index : 0) | (oc ? 1u << oc->index : 0);
		}
	}
	wla_for_each_plane_in_state(state, e) {
		struct wla_crtc *nc = e->new_state->crtc, *oc = e->old_state->crtc;
		if (in_mask(nc, mask) || in_mask(oc, mask)) {
			crtcs |= (nc ? 1u << nc->index : 0) | (oc ? 1u << oc->index : 0);
		}
	}
	return crtcs;
}

/*
 * Whether a state only puts other framebuffers, of the same format,
 * modifier and size, on the planes of the configuration it replaces, with
 * the same rectangles: that configuration passed the kernel's check, and a
 * TEST_ONLY of this one would say what that one said. wlroots' DRM backend
 * does not test such page flips either; a change of anything else is tested.
 */
static bool only_fbs_change(struct wla_atomic_state *state, uint32_t mask)
{
	if (needs_modeset(state, mask)) {
		return false;
	}
	wla_for_each_crtc_in_state(state, e) {
		const struct wla_crtc_state *ns = e->new_state, *os = e->old_state;
		if (!ns->active || !os->active || ns->plane_mask != os->plane_mask ||
				!wla_gamma_lut_equal(ns->gamma, os->gamma) ||
				ns->vrr_enabled != os->vrr_enabled) {
			return false;
		}
	}
	wla_for_each_plane_in_state(state, e) {
		const struct wla_plane_state *ns = e->new_state, *os = e->old_state;
		if (ns->crtc != os->crtc || ns->src_x != os->src_x || ns->src_y != os->src_y ||
				ns->src_w != os->src_w || ns->src_h != os->src_h ||
				ns->crtc_x != os->crtc_x || ns->crtc_y != os->crtc_y ||
				ns->crtc_w != os->crtc_w || ns->crtc_h != os->crtc_h ||
				!ns->fb != !os->fb) {
			return false;
		}
		if (ns->fb && (ns->fb->format != os->fb->format ||
				ns->fb->modifier != os->fb->modifier || ns->fb->width != os->fb->width ||
				ns->fb->height != os->fb->height)) {
			return false;
		}
	}
	return true;
}

/* The kernel refused a commit because we are not DRM master (EACCES) on a
 * card the seat gave us: the seat has taken master away for another
 * session, and tells us right after. */
static bool seat_took_master(const struct wla_kms *kms, int err)
{
	return err == -EACCES && kms->card && kms->card->through_seat && !drmIsMaster(kms->fd);
}

/* TEST_ONLY of the whole state: 0 or -errno, the kernel's refusal logged
 * (log false: quietly). trusted: only_fbs_change said yes, so the request
 * is built (its fbs imported, which can still fail) but not sent, unless
 * it routes the writeback connector. */
static int test_state(struct wla_kms *kms, struct wla_atomic_state *state, bool with_wb,
	bool *wb_routed, bool log, bool trusted)
{
	struct kms_req r = { .kms = kms, .req = drmModeAtomicAlloc() };
	if (!r.req) {
		wla_kms_log(kms, WLR_ERROR, "out of memory for a request");
		return -ENOMEM;
	}
	uint32_t mask = state_mask(state);
	build_request(&r, state, mask, true, with_wb, false);
	*wb_routed = r.wb_routes && r.wb_crtc;
	int ret = r.err;
	if (ret == 0 && trusted && !*wb_routed) {
		kms->tests_skipped++;
	} else if (ret == 0) {
		/* Attaching the writeback connector (for a capture on a CRTC
		 * kept lit at start) is a modeset the commit allows too. */
		bool modeset = (state->allow_modeset && needs_modeset(state, mask)) ||
			*wb_routed;
		uint32_t flags = DRM_MODE_ATOMIC_TEST_ONLY |
			(modeset ? DRM_MODE_ATOMIC_ALLOW_MODESET : 0);
		kms->test_commits++;
		if (drmModeAtomicCommit(kms->fd, r.req, flags, NULL) != 0) {
			ret = -errno;
			if (seat_took_master(kms, ret)) {
				/* The seat took DRM master away before telling us
				 * (seatd does): the session is going inactive. */
				wla_kms_finish_request(&r);
				wla_kms_pause(kms);
				return 0;
			}
			char objs[256];
			/* A frame the card cannot scan out is composited by the
			 * compositor instead: not an error worth a line per frame.
			 * Nor is a probe's (wlroots tests whether an enable needs a
			 * buffer; a card that must scan one out refuses). */
			if (log) {
				wla_kms_log(kms, modeset && !state->quiet ? WLR_ERROR : WLR_DEBUG,
					"the kernel refused "
					"the state (TEST_ONLY%s) of %s: %s (errno %d)",
					modeset ? ", ALLOW_MODESET" : "",
					describe_state(state, objs, sizeof(objs)), strerror(-ret), -ret);
			}
		}
	}
	wla_kms_finish_request(&r);
	return ret;
}

int wla_kms_atomic_check(struct wla_device *dev, struct wla_atomic_state *state)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	if (kms->lost) {
		/* Turning off still works (there is nothing left to stop). */
		bool lights = false;
		wla_for_each_crtc_in_state(state, e) {
			lights |= e->new_state->active;
		}
		if (!lights) {
			return 0;
		}
		char objs[256];
		wla_kms_log(kms, state->quiet ? WLR_DEBUG : WLR_ERROR, "the device is gone; the "
			"state of %s is refused", describe_state(state, objs, sizeof(objs)));
		return -ENODEV;
	}
	if (kms->dev.inactive) {
		/* Another session has the card: the restore tests it all. */
		return 0;
	}
	bool wb_routed = false;
	int ret = test_state(kms, state, true, &wb_routed, !kms->writeback.usable,
		only_fbs_change(state, state_mask(state)));
	if (ret < 0 && ret != -ENOMEM && wb_routed) {
		/* Whether it is the writeback connector the kernel refused:
		 * then the outputs go on without capture. */
		bool again;
		ret = test_state(kms, state, false, &again, true, false);
		if (ret == 0) {
			kms->writeback.usable = false;
			wla_kms_log(kms, WLR_ERROR, "the kernel refuses to attach writeback connector "
				"%" PRIu32 ": capture is off", kms->writeback.id);
		}
	} else if (ret < 0 && kms->writeback.usable) {
		char objs[256];
		bool modeset = state->allow_modeset && needs_modeset(state, state_mask(state));
		wla_kms_log(kms, modeset && !state->quiet ? WLR_ERROR : WLR_DEBUG, "the kernel "
			"refused the state (TEST_ONLY%s) of %s: %s (errno %d)",
			modeset ? ", ALLOW_MODESET" : "", describe_state(state, objs, sizeof(objs)),
			strerror(-ret), -ret);
	}
	if (ret == -ENODEV) {
		wla_kms_mark_lost(kms, ret);
	}
	return ret;
}

/* The CRTCs' books after the state of mask went out (serial: its commit's,
 * whose page-flip events latch it; 0: it waits for the restore). */
static void update_books(struct wla_kms *kms, struct wla_atomic_state *state, uint32_t mask,
	uint64_t serial)
{
	wla_for_each_crtc_in_state(state, e) {
		if (!in_mask(e->ptr, mask)) {
			continue;
		}
		struct wla_kms_crtc *kc = wla_kms_crtc_from_crtc(e->ptr);
		const struct wla_crtc_state *cs = e->new_state;
		if (!cs->active) {
			if (kc->active) {
				wla_kms_obj_log(kms, kc, WLR_INFO, "disabled");
			}
			/* An event still to come for it names a state the core
			 * completes now: dropped. So is a state it deferred. */
			kc->armed_serial = 0;
			kc->held = false;
			kc->deferred = NULL;
			kc->active = false;
			kc->have_vblank = false;
			/* A CRTC off has no refresh cycles: a count of our own
			 * goes on from the last one at the next enable. */
			kc->last_vblank_ns = 0;
			wla_kms_fail_captures(kms, kc);
			continue;
		}
		if (!kc->active || !wla_mode_equal(&kc->mode, &cs->mode)) {
			char buf[128];
			wla_kms_obj_log(kms, kc, WLR_INFO, "%s %s",
				kc->active ? "mode set to" : "enabled",
				wla_mode_describe(&cs->mode, buf, sizeof(buf)));
			kc->mode = cs->mode;
			kc->period_ns = wla_mode_period_ns(&cs->mode);
			kc->counters.refresh_ns = kc->period_ns;
			if (!kc->active) {
				kc->have_vblank = false;
				/* Asked again at the first event (an EINVAL may have
				 * meant a CRTC whose vblanks were off). */
				kc->no_vblank = false;
			}
			kc->active = true;
		}
		if (e->latch) {
			kc->armed_serial = serial;
			kc->held = serial == 0;
		}
	}
}

/* Program the CRTCs of mask in the state: one commit. */
int wla_kms_program(struct wla_kms *kms, struct wla_atomic_state *state, uint32_t mask)
{
	bool turns_off = false, latches = false;
	wla_for_each_crtc_in_state(state, e) {
		if (!in_mask(e->ptr, mask)) {
			continue;
		}
		if (!e->new_state->active) {
			turns_off = true;
		} else if (e->latch) {
			latches = true;
		}
	}
	if (kms->lost) {
		/* Nothing to stop: the device is gone. Turning off never fails. */
		return latches ? -ENODEV : 0;
	}
	bool modeset = needs_modeset(state, mask) || turns_off;
	struct kms_req r;
	int ret;
	uint64_t serial;
	for (int attempt = 0;; attempt++) {
		r = (struct kms_req){ .kms = kms, .req = drmModeAtomicAlloc() };
		if (!r.req) {
			wla_kms_log(kms, WLR_ERROR, "out of memory for a request");
			return -ENOMEM;
		}
		build_request(&r, state, mask, false, true, attempt == 0);
		ret = r.err;
		serial = ++kms->serial;
		if (ret == 0) {
			/* A modeset is blocking, as in wlroots' DRM backend: the
			 * kernel may pull other CRTCs in, whose flips in flight
			 * would make a NONBLOCK one fail with EBUSY. A CRTC turned
			 * off stops before this returns. */
			uint32_t flags = (latches ? DRM_MODE_PAGE_FLIP_EVENT : 0) |
				(modeset ? 0 : DRM_MODE_ATOMIC_NONBLOCK) |
				(modeset || r.wb_routes ? DRM_MODE_ATOMIC_ALLOW_MODESET : 0);
			/* A refusal injected by a test takes the same path as the
			 * kernel's. */
			int injected = latches ? kms->fail_commit : 0;
			kms->fail_commit = injected ? 0 : kms->fail_commit;
			if (injected) {
				errno = injected;
			}
			/* The kernel hands the slot back with each CRTC's event. */
			struct wla_kms_flip *flip = latches && !injected ?
				wla_kms_flip_take(kms, serial, event_crtcs(state, mask)) : NULL;
			if (injected || drmModeAtomicCommit(kms->fd, r.req, flags, flip) != 0) {
				ret = -errno;
				wla_kms_flip_drop(flip);
				if (seat_took_master(kms, ret)) {
					break;
				}
				char objs[256];
				wla_kms_log(kms, WLR_ERROR, "the kernel refused the commit of %s%s: %s "
					"(errno %d%s)", describe_state(state, objs,
					sizeof(objs)), r.job ? " with a writeback job" : "",
					strerror(-ret), -ret, injected ? ", injected" : "");
				kms->refused++;
			}
		}
		if (ret < 0 && r.job) {
			/* The capture fails, not the frame: again without it. */
			wl_list_insert_list(&kms->failed_captures, &r.job->captures);
			wl_list_init(&r.job->captures);
			wla_kms_job_free(r.job);
			r.job = NULL;
			if (ret != -ENODEV && attempt == 0) {
				wla_kms_finish_request(&r);
				continue;
			}
		}
		break;
	}
	struct kms_wb_job *job = r.job;
	bool wb_routes = r.wb_routes;
	uint32_t wb_crtc = r.wb_crtc;
	wla_kms_finish_request(&r);
	if (seat_took_master(kms, ret)) {
		/* The session is going inactive (the seat tells us next): the
		 * state waits for the restore, as those handed over later. */
		if (job) {
			wl_list_insert_list(&kms->failed_captures, &job->captures);
			wl_list_init(&job->captures);
			wla_kms_job_free(job);
		}
		wla_kms_pause(kms);
		update_books(kms, state, mask, 0);
		return 0;
	}
	if (ret == -ENODEV) {
		/* The core turns this state's CRTCs off when it hears the
		 * error; the others go off once it is done (never from in
		 * here: the core is in the middle of its books). */
		wla_kms_mark_lost(kms, ret);
	}
	if (ret < 0) {
		return ret;
	}
	kms->commits++;
	foreign_planes_gone(kms, state, mask);
	if (wb_routes) {
		kms->writeback.routed_crtc = wb_crtc;
	}
	if (job) {
		wla_kms_start_job(kms, job, serial, state);
	}
	update_books(kms, state, mask, serial);
	return 0;
}

int wla_kms_commit_tail(struct wla_device *dev, struct wla_atomic_state *state)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	uint32_t mask = 0;
	bool turns_off = false;
	struct wla_kms_crtc *busy = NULL;
	wla_for_each_crtc_in_state(state, e) {
		if (!e->program) {
			continue;
		}
		mask |= 1u << e->ptr->index;
		struct wla_kms_crtc *kc = wla_kms_crtc_from_crtc(e->ptr);
		turns_off |= !e->new_state->active;
		if (kc->own_serial) {
			busy = kc;
		}
	}
	if (kms->dev.inactive && !kms->lost) {
		/* Another session has the card: nothing goes to it. A CRTC
		 * turned off is off in the books (the restore turns it off on the
		 * card); a state that latches waits for the restore. */
		update_books(kms, state, mask, 0);
		return 0;
	}
	if (busy && !turns_off && !kms->lost) {
		/* A writeback commit of the driver's own is in flight there:
		 * the kernel takes this one when it completed. */
		busy->deferred = state;
		busy->deferred_mask = mask;
		return 0;
	}
	return wla_kms_program(kms, state, mask);
}

void wla_kms_pause(struct wla_kms *kms)
{
	if (kms->dev.inactive) {
		return;
	}
	wla_device_set_inactive(&kms->dev, true);
	/* What another session shows meanwhile is not what the console left:
	 * the restore programs every plane as the core has it (a primary the
	 * core has nothing on gets black, blank_primary). */
	for (size_t i = 0; i < kms->n_planes; i++) {
		kms->planes[i].foreign_crtc = 0;
	}
	wla_kms_log(kms, WLR_INFO, "session inactive: nothing goes to the card until it is "
		"back (DRM master is the seat's to give)");
	if (kms->dev.listener.active) {
		kms->dev.listener.active(&kms->dev, kms->dev.listener.data);
	}
}

static void blank_remove(struct wla_kms *kms, uint32_t *fb, uint32_t *handle)
{
	if (*fb && kms->fd >= 0) {
		drmModeRmFB(kms->fd, *fb);
	}
	if (*handle && kms->fd >= 0) {
		struct drm_mode_destroy_dumb destroy = { .handle = *handle };
		drmIoctl(kms->fd, DRM_IOCTL_MODE_DESTROY_DUMB, &destroy);
	}
	*fb = *handle = 0;
}

void wla_kms_blank_free(struct wla_kms *kms, struct wla_kms_crtc *kc)
{
	blank_remove(kms, &kc->blank_fb, &kc->blank_handle);
	blank_remove(kms, &kc->blank_old_fb, &kc->blank_old_handle);
	kc->blank_w = kc->blank_h = 0;
}

/* kc's black framebuffer of w x h (made once, again for another size):
 * false (logged) if the card cannot make it. */
static bool blank_make(struct wla_kms *kms, struct wla_kms_crtc *kc, uint32_t w, uint32_t h)
{
	if (kc->blank_fb && kc->blank_w == w && kc->blank_h == h) {
		return true;
	}
	if (kc->blank_fb) {
		/* It may be on screen: removed after the restore replaced it
		 * (removed while shown, the kernel would turn the plane off). */
		blank_remove(kms, &kc->blank_old_fb, &kc->blank_old_handle);
		kc->blank_old_fb = kc->blank_fb;
		kc->blank_old_handle = kc->blank_handle;
		kc->blank_fb = kc->blank_handle = 0;
	}
	struct drm_mode_create_dumb create = { .width = w, .height = h, .bpp = 32 };
	if (drmIoctl(kms->fd, DRM_IOCTL_MODE_CREATE_DUMB, &create) != 0) {
		wla_kms_obj_log_errno(kms, kc, WLR_ERROR, "a black %" PRIu32 "x%" PRIu32 " dumb "
			"buffer for the restore", w, h);
		return false;
	}
	kc->blank_handle = create.handle;
	/* Dumb buffers in a card's own memory (qxl, bochs) need not start
	 * zeroed: black written through a mapping. */
	struct drm_mode_map_dumb map = { .handle = create.handle };
	void *pixels = drmIoctl(kms->fd, DRM_IOCTL_MODE_MAP_DUMB, &map) == 0 ?
		mmap(NULL, create.size, PROT_WRITE, MAP_SHARED, kms->fd, (off_t)map.offset) :
		MAP_FAILED;
	uint32_t handles[4] = { create.handle }, pitches[4] = { create.pitch };
	uint32_t offsets[4] = { 0 };
	if (pixels == MAP_FAILED || drmModeAddFB2(kms->fd, w, h, DRM_FORMAT_XRGB8888, handles,
			pitches, offsets, &kc->blank_fb, 0) != 0) {
		wla_kms_obj_log_errno(kms, kc, WLR_ERROR, "the black %" PRIu32 "x%" PRIu32
			" framebuffer for the restore", w, h);
		if (pixels != MAP_FAILED) {
			munmap(pixels, create.size);
		}
		kc->blank_fb = 0;
		blank_remove(kms, &kc->blank_fb, &kc->blank_handle);
		return false;
	}
	memset(pixels, 0, create.size);
	munmap(pixels, create.size);
	kc->blank_w = w;
	kc->blank_h = h;
	return true;
}

/*
 * An active CRTC whose primary plane the core has no framebuffer on (kept
 * lit at start, the compositor's first frame still to come): the restore
 * puts a black framebuffer of the driver's own there, as wlroots commits a
 * black frame, since simple display pipes (cirrus, bochs) refuse a lit CRTC
 * whose primary plane is off; what another session showed is neither kept
 * nor relied on. The plane counts as not the core's (foreign_crtc) until
 * a state sets it. false: none could be made (the plane goes off).
 */
static bool blank_primary(struct kms_req *r, struct wla_kms_crtc *kc)
{
	struct wla_plane *primary = kc->base.primary;
	const struct wla_mode *mode = &kc->base.state->mode;
	if (!kc->base.state->active || !primary || primary->state->fb || mode->width <= 0 ||
			mode->height <= 0) {
		return false;
	}
	struct wla_kms *kms = r->kms;
	uint32_t w = (uint32_t)mode->width, h = (uint32_t)mode->height;
	if (!blank_make(kms, kc, w, h)) {
		return false;
	}
	struct wla_kms_plane *kp = primary->driver_data;
	const struct wla_kms_plane_props *p = &kp->props;
	wla_kms_add_prop(r, "FB_ID", kp->id, p->fb_id, kc->blank_fb);
	wla_kms_add_prop(r, "CRTC_ID", kp->id, p->crtc_id, kc->id);
	wla_kms_add_prop(r, "SRC_X", kp->id, p->src_x, 0);
	wla_kms_add_prop(r, "SRC_Y", kp->id, p->src_y, 0);
	wla_kms_add_prop(r, "SRC_W", kp->id, p->src_w, (uint64_t)w << 16);
	wla_kms_add_prop(r, "SRC_H", kp->id, p->src_h, (uint64_t)h << 16);
	wla_kms_add_prop(r, "CRTC_X", kp->id, p->crtc_x, 0);
	wla_kms_add_prop(r, "CRTC_Y", kp->id, p->crtc_y, 0);
	wla_kms_add_prop(r, "CRTC_W", kp->id, p->crtc_w, w);
	wla_kms_add_prop(r, "CRTC_H", kp->id, p->crtc_h, h);
	kp->foreign_crtc = kc->id;
	wla_kms_obj_log(kms, kc, WLR_DEBUG, "nothing drawn on it yet: black framebuffer %"
		PRIu32 " (%" PRIu32 "x%" PRIu32 ") on primary plane %" PRIu32 " for the restore",
		kc->blank_fb, w, h, kp->id);
	return true;
}

/* One modeset of everything as the core has it: another session may have
 * changed any property of any object. */
static int restore(struct wla_kms *kms)
{
	struct kms_req r = { .kms = kms, .req = drmModeAtomicAlloc(), .restore = true };
	if (!r.req) {
		wla_kms_log(kms, WLR_ERROR, "out of memory for the restore");
		return -ENOMEM;
	}
	uint32_t active = 0, held = 0;
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		struct wla_kms_crtc *kc = &kms->crtcs[c];
		blank_primary(&r, kc);
		add_crtc(&r, kc, kc->base.state, false);
		active |= kc->base.state->active ? 1u << kc->base.index : 0;
		held |= kc->held && kc->base.state->active ? 1u << kc->base.index : 0;
	}
	for (size_t p = 0; p < kms->n_planes; p++) {
		/* A primary plane given a black framebuffer (blank_primary):
		 * set already. */
		struct wla_kms_plane *kp = &kms->planes[p];
		if (!kp->foreign_crtc) {
			add_plane(&r, kp, kp->base.state, false);
		}
	}
	for (size_t i = 0; i < kms->n_connectors; i++) {
		struct wla_kms_connector *kc = kms->connectors[i];
		wla_kms_add_prop(&r, "CRTC_ID", kc->id, kc->prop_crtc_id,
			crtc_id_of(kc->base.state->crtc));
	}
	struct wla_kms_writeback *wb = &kms->writeback;
	if (kms->has_writeback) {
		bool keep = false;
		for (size_t c = 0; c < kms->n_crtcs; c++) {
			keep |= kms->crtcs[c].id == wb->routed_crtc && kms->crtcs[c].base.state->active;
		}
		wb->routed_crtc = keep ? wb->routed_crtc : 0;
		wla_kms_add_prop(&r, "CRTC_ID", wb->id, wb->prop_crtc_id, wb->routed_crtc);
	}
	int ret = r.err;
	/* Blocking, without events (an event on a CRTC that stays off is
	 * refused): the modeset is on screen when it returns. */
	if (ret == 0 && drmModeAtomicCommit(kms->fd, r.req, DRM_MODE_ATOMIC_ALLOW_MODESET,
			NULL) != 0) {
		ret = -errno;
	}
	wla_kms_finish_request(&r);
	if (ret < 0) {
		char names[128] = "";
		size_t len = 0;
		for (size_t c = 0; c < kms->n_crtcs && len < sizeof(names); c++) {
			if (active & (1u << kms->crtcs[c].base.index)) {
				int n = snprintf(names + len, sizeof(names) - len, "%s%s", len ? " " : "",
					kms->crtcs[c].base.name);
				len += n > 0 ? (size_t)n : 0;
			}
		}
		wla_kms_log(kms, WLR_ERROR, "the kernel refused the restore after the session came "
			"back (active: %s): %s (errno %d)", len ? names : "none", strerror(-ret), -ret);
		return ret;
	}
	kms->commits++;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	for (size_t c = 0; c < kms->n_crtcs; c++) {
		struct wla_kms_crtc *kc = &kms->crtcs[c];
		/* A black framebuffer of another size: replaced on screen. */
		blank_remove(kms, &kc->blank_old_fb, &kc->blank_old_handle);
		bool latch = kc->held && (held & (1u << kc->base.index));
		kc->held = false;
		if (!kc->base.state->active) {
			continue;
		}
		/* A modeset: the vblank counter is learnt again at the next
		 * event. A held state is on screen now: its latch, at the
		 * kernel's vblank count where it has one, without VSYNC (no
		 * event stamped it). */
		kc->have_vblank = false;
		kc->no_vblank = false;
		if (latch) {
			uint64_t now_ns = wla_timespec_to_ns(&now);
			uint64_t kseq = 0, ns = 0;
			bool counter = drmCrtcGetSequence(kms->fd, kc->id, &kseq, &ns) == 0;
			uint64_t seq = kseq + kc->seq_bias;
			struct timespec when = now;
			if (!counter || seq <= kc->counters.seq || ns == 0 || ns > now_ns) {
				/* No counter (or none ahead): the clock's, and the
				 * kernel's counter from there on (seq_bias). */
				seq = wla_kms_counted_seq(kc, now_ns);
				seq = seq > kc->counters.seq ? seq : kc->counters.seq + 1;
				if (counter) {
					kc->seq_bias = seq - kseq;
				}
				kc->last_vblank_ns = now_ns;
			} else {
				/* The blocking modeset completed at the kernel's last
				 * vblank: its count with its time stamp, not behind
				 * the clock since the last event (the kernel's count
				 * may have lost a cycle while vblank interrupts were
				 * off: vkms, whose count after re-enabling them is
				 * one short under load). */
				uint64_t on = kc->last_vblank_ns ? wla_kms_counted_seq(kc, ns) : 0;
				if (seq < on) {
					kc->seq_bias += on - seq;
					seq = on;
				}
				when.tv_sec = (time_t)(ns / 1000000000u);
				when.tv_nsec = (long)(ns % 1000000000u);
				kc->last_vblank_ns = ns;
			}
			kc->last_vblank_seq = seq;
			kc->counters.seq = seq;
			wla_crtc_handle_latch(&kc->base, seq, &when, kc->period_ns,
				kms->copy_scanout ? 0 : WLA_PRESENT_ZERO_COPY);
		}
	}
	return 0;
}

void wla_kms_resume(struct wla_kms *kms)
{
	if (!kms->dev.inactive || kms->lost) {
		return;
	}
	wla_device_set_inactive(&kms->dev, false);
	kms->restores++;
	int ret = restore(kms);
	if (ret < 0) {
		/* What the core believes on screen is not: turned off, its
		 * frames reported failed; the compositor may enable again. */
		kms->restores_failed++;
		for (size_t c = 0; c < kms->n_crtcs; c++) {
			struct wla_crtc *crtc = &kms->crtcs[c].base;
			if (crtc->state->active || !wl_list_empty(&crtc->queue)) {
				wla_crtc_force_off(crtc);
			}
		}
	} else {
		wla_kms_log(kms, WLR_INFO, "session active again: every CRTC and plane restored in "
			"one modeset");
	}
	if (kms->dev.listener.active) {
		kms->dev.listener.active(&kms->dev, kms->dev.listener.data);
	}
}
