/*
 * Checking an atomic state as a whole: the modeset rules, then every plane,
 * then the drivers' own limits. Nothing here touches a current state.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include "backend/atomic.h"
#include "backend/log.h"
#include "util.h"

/* Hardware position registers are commonly 16-bit signed. */
#define WLA_COORD_LIMIT 32767

/* A refusal: an error, or debug output in a trial (state->quiet). */
#define refuse_log(state, ...) wla_log((state)->quiet ? WLA_LOG_DEBUG : WLA_LOG_ERROR, __VA_ARGS__)

/* Record why the state is refused (the first refusal wins) and return err. */
static int refuse(struct wla_atomic_state *state, struct wla_plane *plane,
	enum wla_check_reason reason, int err)
{
	if (state->refused == WLA_CHECK_OK) {
		state->refused = reason;
		state->refused_plane = plane;
	}
	return err;
}

/* "1.5000": a 16.16 value for messages, four decimals. */
#define FIXED_FMT "%" PRIu32 ".%04" PRIu32
#define FIXED_ARG(v) (uint32_t)((v) >> 16), (uint32_t)((((uint64_t)(v) & 0xffff) * 10000) >> 16)

static int check_connectors(struct wla_atomic_state *state)
{
	wla_for_each_connector_in_state(state, e) {
		struct wla_connector *conn = e->ptr;
		if (state->legacy_cursor_update) {
			/* It would replace the connector state of a frame queued
			 * ahead of it. */
			refuse_log(state, "connector %s: a cursor update may not carry a "
				"connector state", conn->name);
			return refuse(state, NULL, WLA_CHECK_ROUTING, -EINVAL);
		}
		struct wla_crtc *crtc = e->new_state->crtc;
		if (crtc && !(conn->possible_crtcs & (1u << crtc->index))) {
			refuse_log(state, "connector %s: crtc %s is not one of its possible "
				"crtcs (0x%" PRIx32 ")", conn->name, crtc->name, conn->possible_crtcs);
			return refuse(state, NULL, WLA_CHECK_ROUTING, -EINVAL);
		}
		if (crtc == e->old_state->crtc) {
			continue;
		}
		struct wla_crtc *ends[] = { e->old_state->crtc, crtc };
		for (size_t i = 0; i < 2; i++) {
			if (!ends[i]) {
				continue;
			}
			struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, ends[i]);
			if (!cs) {
				return -ENOMEM;
			}
			cs->connectors_changed = true;
		}
	}
	return 0;
}

static const char *first_connector_name(struct wla_device *dev, uint32_t mask)
{
	for (size_t i = 0; i < dev->n_connectors; i++) {
		if (dev->connectors[i] && (mask & (1u << i))) {
			return dev->connectors[i]->name;
		}
	}
	return "?";
}

static int check_crtcs(struct wla_atomic_state *state)
{
	wla_for_each_crtc_in_state(state, e) {
		struct wla_crtc *crtc = e->ptr;
		const struct wla_crtc_state *old = e->old_state;
		struct wla_crtc_state *new = e->new_state;

		new->mode_changed = old->enable != new->enable ||
			(new->enable && !wla_mode_equal(&old->mode, &new->mode));
		new->active_changed = old->active != new->active;
		new->gamma_changed = !wla_gamma_lut_equal(old->gamma, new->gamma);

		if (new->gamma && new->gamma->size != crtc->gamma_size) {
			if (crtc->gamma_size == 0) {
				refuse_log(state, "%s: a gamma LUT of %" PRIu32 " entries, but "
					"the CRTC has no gamma LUT", crtc->name, new->gamma->size);
			} else {
				refuse_log(state, "%s: a gamma LUT of %" PRIu32 " entries, but "
					"its gamma_size is %" PRIu32, crtc->name, new->gamma->size,
					crtc->gamma_size);
			}
			return refuse(state, NULL, WLA_CHECK_ROUTING, -EINVAL);
		}
		for (size_t i = 0; new->vrr_enabled && i < state->dev->n_connectors; i++) {
			const struct wla_connector *conn = state->dev->connectors[i];
			if (conn && (new->connector_mask & (1u << i)) && !conn->vrr_capable) {
				refuse_log(state, "%s: adaptive sync asked for, but connector %s "
					"is not vrr_capable", crtc->name, conn->name);
				return refuse(state, NULL, WLA_CHECK_ROUTING, -EINVAL);
			}
		}
		if (new->active && !new->enable) {
			refuse_log(state, "%s: active=1 without a mode (enable=0)", crtc->name);
			return refuse(state, NULL, WLA_CHECK_ROUTING, -EINVAL);
		}
		const char *why;
		if (new->enable && !wla_mode_valid(&new->mode, &why)) {
			char desc[128];
			refuse_log(state, "%s: mode %s is invalid: %s", crtc->name,
				wla_mode_describe(&new->mode, desc, sizeof(desc)), why);
			return refuse(state, NULL, WLA_CHECK_ROUTING, -EINVAL);
		}
		if (new->enable && !new->connector_mask) {
			refuse_log(state, "%s: enable=1 without a connector", crtc->name);
			return refuse(state, NULL, WLA_CHECK_ROUTING, -EINVAL);
		}
		if (!new->enable && new->connector_mask) {
			refuse_log(state, "connector %s: routed to %s, which has enable=0",
				first_connector_name(state->dev, new->connector_mask), crtc->name);
			return refuse(state, NULL, WLA_CHECK_ROUTING, -EINVAL);
		}
		bool modeset = new->mode_changed || new->active_changed ||
			new->connectors_changed;
		if (modeset && !state->allow_modeset) {
			refuse_log(state, "%s: the change needs a modeset (mode_changed=%d "
				"active_changed=%d connectors_changed=%d) but allow_modeset is off",
				crtc->name, new->mode_changed, new->active_changed,
				new->connectors_changed);
			return refuse(state, NULL, WLA_CHECK_ROUTING, -EINVAL);
		}
		if (modeset && state->legacy_cursor_update) {
			refuse_log(state, "%s: a cursor update cannot change the mode",
				crtc->name);
			return refuse(state, NULL, WLA_CHECK_ROUTING, -EINVAL);
		}
	}
	return 0;
}

static int check_scale(struct wla_atomic_state *state, struct wla_plane *plane,
	const char *axis, uint32_t src, uint32_t dst)
{
	/* src is 16.16 and dst whole pixels, so the quotient is the 16.16
	 * ratio src/dst. */
	uint64_t scale = (uint64_t)src / dst;
	if (scale < plane->min_scale || scale > plane->max_scale) {
		refuse_log(state, "plane %s: %s scale " FIXED_FMT " (src/dst) outside "
			FIXED_FMT ".." FIXED_FMT, plane->name, axis, FIXED_ARG(scale),
			FIXED_ARG(plane->min_scale), FIXED_ARG(plane->max_scale));
		return refuse(state, plane, WLA_CHECK_SCALING, -ERANGE);
	}
	return 0;
}

/* Clip dst against [0, size) on one axis and move src by the same share. */
static void clip_axis(int64_t dst_pos, int64_t dst_len, uint64_t src_pos, uint64_t src_len,
	int64_t size, int32_t *out_dst, int32_t *out_dst_len, uint64_t *out_src,
	uint64_t *out_src_len)
{
	int64_t start = dst_pos < 0 ? 0 : dst_pos;
	int64_t end = dst_pos + dst_len > size ? size : dst_pos + dst_len;
	if (end <= start) {
		*out_dst = 0;
		*out_dst_len = 0;
		*out_src = src_pos;
		*out_src_len = 0;
		return;
	}
	uint64_t cut_lo = (uint64_t)(start - dst_pos);
	uint64_t cut_hi = (uint64_t)(dst_pos + dst_len - end);
	uint64_t lo = src_len * cut_lo / (uint64_t)dst_len;
	uint64_t hi = src_len * cut_hi / (uint64_t)dst_len;
	*out_dst = (int32_t)start;
	*out_dst_len = (int32_t)(end - start);
	*out_src = src_pos + lo;
	*out_src_len = src_len - lo - hi;
}

static int check_plane(struct wla_atomic_state *state, struct wla_plane *plane,
	struct wla_plane_state *ps)
{
	char fmt[8];
	ps->visible = false;
	if (!ps->crtc && !ps->fb) {
		return 0;
	}
	if (ps->crtc && !ps->fb) {
		refuse_log(state, "plane %s: crtc %s set but fb is NULL", plane->name,
			ps->crtc->name);
		return refuse(state, plane, WLA_CHECK_ROUTING, -EINVAL);
	}
	if (!ps->crtc) {
		refuse_log(state, "plane %s: fb set but crtc is NULL", plane->name);
		return refuse(state, plane, WLA_CHECK_ROUTING, -EINVAL);
	}
	struct wla_crtc *crtc = ps->crtc;
	if (!(plane->possible_crtcs & (1u << crtc->index))) {
		refuse_log(state, "plane %s: crtc %s is not one of its possible crtcs "
			"(0x%" PRIx32 ")", plane->name, crtc->name, plane->possible_crtcs);
		return refuse(state, plane, WLA_CHECK_ROUTING, -EINVAL);
	}
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
	if (!cs) {
		return refuse(state, plane, WLA_CHECK_NOMEM, -ENOMEM);
	}
	if (!cs->enable) {
		refuse_log(state, "plane %s: crtc %s has enable=0", plane->name, crtc->name);
		return refuse(state, plane, WLA_CHECK_ROUTING, -EINVAL);
	}
	const struct wla_fb *fb = ps->fb;
	if (!wla_plane_supports(plane, fb->format, fb->modifier)) {
		refuse_log(state, "plane %s: format %s (0x%08" PRIx32 ") with modifier 0x%016"
			PRIx64 " is not supported", plane->name, wla_fourcc_str(fb->format, fmt),
			fb->format, fb->modifier);
		return refuse(state, plane, WLA_CHECK_FORMAT, -EINVAL);
	}
	if ((plane->max_fb_width && fb->width > plane->max_fb_width) ||
			(plane->max_fb_height && fb->height > plane->max_fb_height)) {
		refuse_log(state, "plane %s: fb size %" PRIu32 "x%" PRIu32 " exceeds the "
			"plane's %" PRIu32 "x%" PRIu32, plane->name, fb->width, fb->height,
			plane->max_fb_width, plane->max_fb_height);
		return refuse(state, plane, WLA_CHECK_SIZE, -EINVAL);
	}
	if (ps->src_w == 0 || ps->src_h == 0 ||
			(uint64_t)ps->src_x + ps->src_w > (uint64_t)fb->width << 16 ||
			(uint64_t)ps->src_y + ps->src_h > (uint64_t)fb->height << 16) {
		refuse_log(state, "plane %s: src " FIXED_FMT "," FIXED_FMT " " FIXED_FMT "x"
			FIXED_FMT " is outside the fb %" PRIu32 "x%" PRIu32, plane->name,
			FIXED_ARG(ps->src_x), FIXED_ARG(ps->src_y), FIXED_ARG(ps->src_w),
			FIXED_ARG(ps->src_h), fb->width, fb->height);
		return refuse(state, plane, WLA_CHECK_CROP, -ENOSPC);
	}
	if (ps->crtc_w == 0 || ps->crtc_h == 0 ||
			ps->crtc_x < -WLA_COORD_LIMIT || ps->crtc_y < -WLA_COORD_LIMIT ||
			(int64_t)ps->crtc_x + ps->crtc_w > WLA_COORD_LIMIT ||
			(int64_t)ps->crtc_y + ps->crtc_h > WLA_COORD_LIMIT) {
		refuse_log(state, "plane %s: dst %" PRId32 ",%" PRId32 " %" PRIu32 "x%" PRIu32
			" is empty or outside the coordinate range -%d..%d", plane->name,
			ps->crtc_x, ps->crtc_y, ps->crtc_w, ps->crtc_h, WLA_COORD_LIMIT,
			WLA_COORD_LIMIT);
		return refuse(state, plane, WLA_CHECK_POSITION, -ERANGE);
	}
	int ret = check_scale(state, plane, "horizontal", ps->src_w, ps->crtc_w);
	if (ret == 0) {
		ret = check_scale(state, plane, "vertical", ps->src_h, ps->crtc_h);
	}
	if (ret < 0) {
		return ret;
	}
	const struct wla_mode *mode = &cs->mode;
	if (plane->full_screen_only && (ps->crtc_x != 0 || ps->crtc_y != 0 ||
			ps->crtc_w != (uint32_t)mode->width || ps->crtc_h != (uint32_t)mode->height)) {
		refuse_log(state, "plane %s: dst %" PRId32 ",%" PRId32 " %" PRIu32 "x%" PRIu32
			" must cover %s's mode %" PRId32 "x%" PRId32 " exactly", plane->name,
			ps->crtc_x, ps->crtc_y, ps->crtc_w, ps->crtc_h, crtc->name, mode->width,
			mode->height);
		return refuse(state, plane, WLA_CHECK_POSITION, -EINVAL);
	}

	uint64_t sx, sw, sy, sh;
	clip_axis(ps->crtc_x, ps->crtc_w, ps->src_x, ps->src_w, mode->width, &ps->dst.x,
		&ps->dst.w, &sx, &sw);
	clip_axis(ps->crtc_y, ps->crtc_h, ps->src_y, ps->src_h, mode->height, &ps->dst.y,
		&ps->dst.h, &sy, &sh);
	ps->src.x = (int32_t)sx;
	ps->src.y = (int32_t)sy;
	ps->src.w = (int32_t)sw;
	ps->src.h = (int32_t)sh;
	ps->visible = ps->dst.w > 0 && ps->dst.h > 0;
	return 0;
}

static int check_planes(struct wla_atomic_state *state)
{
	wla_for_each_plane_in_state(state, e) {
		struct wla_plane *plane = e->ptr;
		if (state->legacy_cursor_update && plane->type != WLA_PLANE_CURSOR) {
			refuse_log(state, "plane %s: a cursor update may only touch cursor "
				"planes", plane->name);
			return refuse(state, plane, WLA_CHECK_ROUTING, -EINVAL);
		}
		int ret = check_plane(state, plane, e->new_state);
		if (ret < 0) {
			return ret;
		}
		struct wla_crtc *ends[] = { e->old_state->crtc, e->new_state->crtc };
		for (size_t i = 0; i < 2; i++) {
			struct wla_crtc_state *cs = ends[i] ?
				wla_atomic_new_crtc_state(state, ends[i]) : NULL;
			if (cs) {
				cs->planes_changed = true;
			}
		}
		if (plane->funcs && plane->funcs->atomic_check) {
			ret = plane->funcs->atomic_check(plane, state, e->new_state);
			if (ret < 0) {
				return refuse(state, plane, WLA_CHECK_DRIVER, ret);
			}
		}
	}
	return 0;
}

/*
 * A modeset affects every plane on the CRTC: pull them in so that they are
 * checked against the new mode. A CRTC that turns off takes its planes with
 * it, as the kernel's helpers do for legacy set_config.
 */
static int add_affected_planes(struct wla_atomic_state *state)
{
	wla_for_each_crtc_in_state(state, e) {
		const struct wla_crtc_state *old = e->old_state, *new = e->new_state;
		/* active too: a CRTC switched back on must be given its planes
		 * again, not only the ones this state happens to carry. */
		if (old->enable == new->enable && old->active == new->active &&
				wla_mode_equal(&old->mode, &new->mode)) {
			continue;
		}
		for (size_t i = 0; i < state->dev->n_planes; i++) {
			struct wla_plane *plane = state->dev->planes[i];
			if (!plane) {
				continue;
			}
			struct wla_plane_state *ps = wla_atomic_new_plane_state(state, plane);
			if (!ps && plane->state->crtc == e->ptr) {
				ps = wla_atomic_get_plane_state(state, plane);
				if (!ps) {
					return -ENOMEM;
				}
			}
			if (ps && ps->crtc == e->ptr && !new->enable) {
				int ret = wla_atomic_set_crtc_for_plane(state, ps, NULL);
				if (ret < 0) {
					return ret;
				}
				wla_atomic_set_fb_for_plane(ps, NULL);
			}
		}
	}
	return 0;
}

int wla_atomic_check(struct wla_atomic_state *state)
{
	state->refused = WLA_CHECK_OK;
	state->refused_plane = NULL;
	if (state->removed[0]) {
		/* Its entries of the object are gone; the rest may point at it. */
		wla_dev_log(state->dev, WLA_LOG_ERROR, "%s was removed after an atomic state named it; "
			"check refused", state->removed);
		return -ENODEV;
	}
	if (wla_atomic_state_is_stale(state)) {
		return -EAGAIN;
	}
	int ret = check_connectors(state);
	if (ret == 0) {
		ret = add_affected_planes(state);
	}
	if (ret == 0) {
		ret = check_crtcs(state);
	}
	if (ret == 0) {
		ret = check_planes(state);
	}
	if (ret < 0) {
		return refuse(state, NULL, ret == -ENOMEM ? WLA_CHECK_NOMEM : WLA_CHECK_ROUTING, ret);
	}
	wla_for_each_crtc_in_state(state, e) {
		struct wla_crtc *crtc = e->ptr;
		if (crtc->funcs && crtc->funcs->atomic_check) {
			ret = crtc->funcs->atomic_check(crtc, state);
			if (ret < 0) {
				return refuse(state, NULL, WLA_CHECK_DRIVER, ret);
			}
		}
	}
	if (!state->skip_driver_check && state->dev->funcs && state->dev->funcs->atomic_check) {
		ret = state->dev->funcs->atomic_check(state->dev, state);
		if (ret < 0) {
			return refuse(state, NULL, WLA_CHECK_DRIVER, ret);
		}
	}
	return ret;
}
