/*
 * The legacy entry points (update_plane, disable_plane, set_config,
 * page_flip) written on top of atomic commits, as the kernel's helpers do:
 * each builds one state from the current ones and commits it.
 */
#include <errno.h>
#include "backend/log.h"
#include "lib/legacy.h"

static int commit_or_free(struct wla_atomic_state *state, int ret)
{
	if (ret == 0) {
		ret = wla_atomic_commit(state);
	}
	if (ret < 0) {
		wla_atomic_state_free(state);
	}
	return ret;
}

int wla_atomic_update_plane(struct wla_plane *plane, struct wla_crtc *crtc, struct wla_fb *fb,
	int32_t crtc_x, int32_t crtc_y, uint32_t crtc_w, uint32_t crtc_h, uint32_t src_x,
	uint32_t src_y, uint32_t src_w, uint32_t src_h)
{
	struct wla_atomic_state *state = wla_atomic_state_alloc(plane->dev);
	if (!state) {
		return -ENOMEM;
	}
	state->legacy_cursor_update = plane->type == WLA_PLANE_CURSOR;
	struct wla_plane_state *ps = wla_atomic_get_plane_state(state, plane);
	int ret = ps ? wla_atomic_set_crtc_for_plane(state, ps, crtc) : -ENOMEM;
	if (ret == 0) {
		wla_atomic_set_fb_for_plane(ps, fb);
		ps->crtc_x = crtc_x;
		ps->crtc_y = crtc_y;
		ps->crtc_w = crtc_w;
		ps->crtc_h = crtc_h;
		ps->src_x = src_x;
		ps->src_y = src_y;
		ps->src_w = src_w;
		ps->src_h = src_h;
	}
	return commit_or_free(state, ret);
}

int wla_atomic_disable_plane(struct wla_plane *plane)
{
	struct wla_atomic_state *state = wla_atomic_state_alloc(plane->dev);
	if (!state) {
		return -ENOMEM;
	}
	state->legacy_cursor_update = plane->type == WLA_PLANE_CURSOR;
	struct wla_plane_state *ps = wla_atomic_get_plane_state(state, plane);
	int ret = ps ? wla_atomic_set_crtc_for_plane(state, ps, NULL) : -ENOMEM;
	if (ret == 0) {
		wla_atomic_set_fb_for_plane(ps, NULL);
	}
	return commit_or_free(state, ret);
}

int wla_atomic_set_config(struct wla_crtc *crtc, struct wla_connector *conn,
	const struct wla_mode *mode, struct wla_fb *fb, uint64_t commit_seq)
{
	struct wla_atomic_state *state = wla_atomic_state_alloc(crtc->dev);
	if (!state) {
		return -ENOMEM;
	}
	state->allow_modeset = true;
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
	struct wla_connector_state *conn_state = conn ?
		wla_atomic_get_connector_state(state, conn) : NULL;
	int ret = cs && (!conn || conn_state) ? 0 : -ENOMEM;
	if (ret == 0 && !mode) {
		cs->enable = cs->active = false;
		if (conn_state) {
			ret = wla_atomic_set_crtc_for_connector(state, conn_state, NULL);
		}
		return commit_or_free(state, ret);
	}
	if (ret == 0) {
		cs->enable = cs->active = true;
		cs->mode = *mode;
		cs->commit_seq = commit_seq;
		cs->want_event = true;
		ret = conn_state ? wla_atomic_set_crtc_for_connector(state, conn_state, crtc) : 0;
	}
	if (ret == 0 && crtc->primary) {
		struct wla_plane_state *ps = wla_atomic_get_plane_state(state, crtc->primary);
		ret = ps ? wla_atomic_set_crtc_for_plane(state, ps, fb ? crtc : NULL) : -ENOMEM;
		if (ret == 0) {
			wla_atomic_set_fb_for_plane(ps, fb);
			wla_plane_state_set_full(ps, 0, 0);
		}
	}
	return commit_or_free(state, ret);
}

int wla_atomic_page_flip(struct wla_crtc *crtc, struct wla_fb *fb, uint64_t commit_seq)
{
	if (!crtc->primary) {
		wla_log(WLA_LOG_ERROR, "%s: page_flip without a primary plane", crtc->name);
		return -EINVAL;
	}
	struct wla_atomic_state *state = wla_atomic_state_alloc(crtc->dev);
	if (!state) {
		return -ENOMEM;
	}
	struct wla_crtc_state *cs = wla_atomic_get_crtc_state(state, crtc);
	struct wla_plane_state *ps = cs ?
		wla_atomic_get_plane_state(state, crtc->primary) : NULL;
	int ret = ps ? wla_atomic_set_crtc_for_plane(state, ps, crtc) : -ENOMEM;
	if (ret == 0) {
		cs->commit_seq = commit_seq;
		cs->want_event = true;
		wla_atomic_set_fb_for_plane(ps, fb);
		wla_plane_state_set_full(ps, 0, 0);
	}
	return commit_or_free(state, ret);
}
