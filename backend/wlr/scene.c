/*
 * Planes for wlr_scene compositors (include/wlatomic/scene.h): the scene's
 * nodes on an output become layers for wla_output_assign_layers, the nodes
 * it puts on planes are disabled in the scene (an "entry" each, owned by
 * one output), and the helper does for them what the scene no longer does:
 * frame events at the present of the commit that carried their buffer,
 * presentation feedback, and a commit when only they changed.
 */
#include <drm_fourcc.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <wayland-server-core.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_damage.h>
#include <wlr/types/wlr_presentation_time.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_screencopy_v1.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/util/box.h>
#include <wlr/util/log.h>
#include <wlatomic/backend.h>
#include <wlatomic/planes.h>
#include <wlatomic/scene.h>
#include "util.h"

/* Layers per frame, the clear colour at the bottom included; nodes above
 * the last are composited. */
#define WLA_SCENE_MAX_LAYERS 33

struct wla_scene {
	struct wlr_scene *scene;
	struct wlr_screencopy_manager_v1 *screencopy; /* NULL: none, or destroyed */
	struct wl_list outputs; /* wla_scene_output.link */
	struct wl_listener scene_destroy, screencopy_destroy;
};

/* What the helper keeps of an output it committed. */
struct wla_scene_output {
	struct wl_list link;
	struct wla_scene *wla_scene;
	struct wlr_output *output;
	struct wl_list entries;   /* wla_scene_entry.link: nodes on its planes */
	struct wl_list feedbacks; /* wla_scene_feedback.link */
	/* The last primary buffer committed (locked), to commit again when only
	 * the planes changed; whether it was a node's own buffer. */
	struct wlr_buffer *last_primary;
	bool direct;
	uint64_t placement; /* a hash of the last placement, to log changes */
	struct wl_listener output_destroy, output_commit, output_present;
};

/* A node on one of an output's planes, disabled in the scene meanwhile. */
struct wla_scene_entry {
	struct wl_list link;
	struct wla_scene_output *so;
	struct wlr_scene_node *node;
	struct wlr_surface *surface; /* a surface node's; NULL for a buffer node */
	bool primary; /* on the primary plane */
	bool dirty;   /* its surface committed since it was last offered */
	bool seen;    /* placed in the frame being built */
	/* A frame event is owed for its surface's last commit (owed_frame),
	 * and waits for the present of the output commit that carried it
	 * (frame_seq; 0: none). */
	bool owed_frame;
	uint32_t frame_seq;
	struct wl_listener node_destroy, surface_commit;
};

/* Feedback of a surface on an overlay: sent at the present of its commit,
 * zero-copy, which the output's present event cannot say for it. */
struct wla_scene_feedback {
	struct wl_list link;
	struct wlr_presentation_feedback *feedback;
	uint32_t commit_seq; /* 0: its commit is still to come */
};

/* One layer of the frame being built and the node it came from. */
struct scene_layer {
	struct wlr_scene_node *node; /* NULL: the clear colour, or the nodes past the cap */
	struct wlr_surface *surface;
};

struct frame {
	struct wla_scene *ws;
	struct wlr_scene_output *scene_output;
	struct wlr_box box; /* the output in layout coordinates */
	bool planes_ok;     /* the output is neither scaled nor transformed */
	size_t n;
	bool full; /* the cap was reached: what follows is composited */
	struct wla_layer layers[WLA_SCENE_MAX_LAYERS];
	struct scene_layer from[WLA_SCENE_MAX_LAYERS];
};

static void listen(struct wl_listener *listener, struct wl_signal *signal,
	wl_notify_func_t notify)
{
	listener->notify = notify;
	wl_signal_add(signal, listener);
}

static struct wla_scene_entry *find_entry(struct wla_scene *ws, struct wlr_scene_node *node)
{
	struct wla_scene_output *so;
	struct wla_scene_entry *e;
	wl_list_for_each(so, &ws->outputs, link) {
		wl_list_for_each(e, &so->entries, link) {
			if (e->node == node) {
				return e;
			}
		}
	}
	return NULL;
}

static void entry_destroy(struct wla_scene_entry *e)
{
	wl_list_remove(&e->node_destroy.link);
	wl_list_remove(&e->surface_commit.link);
	wl_list_remove(&e->link);
	free(e);
}

/* The node is the scene's again: drawn, and sent frame events, by it. */
static void entry_release(struct wla_scene_entry *e)
{
	struct wlr_scene_node *node = e->node;
	entry_destroy(e);
	wlr_scene_node_set_enabled(node, true);
}

static void release_all(struct wla_scene_output *so)
{
	struct wla_scene_entry *e, *tmp;
	wl_list_for_each_safe(e, tmp, &so->entries, link) {
		entry_release(e);
	}
}

/* Destroyed while a plane shows (or showed) its buffer: the plane keeps a
 * lock on the buffer until the output's next state latched; the output is
 * asked for that state. */
static void handle_node_destroy(struct wl_listener *listener, void *data)
{
	struct wla_scene_entry *e = wl_container_of(listener, e, node_destroy);
	wlr_log(WLR_DEBUG, "scene planes: output %s: node %p on a %s plane destroyed",
		e->so->output->name, (void *)e->node, e->primary ? "primary" : "overlay");
	wlr_output_schedule_frame(e->so->output);
	entry_destroy(e);
}

/* What a plane shows is no damage of the scene: a frame is asked for, of
 * every output the helper drives, as tinywl did before the helper existed
 * (wlatomic-ctl's frame waits on an otherwise idle output count on those
 * frames: the control socket does not ask for frames itself). */
static void handle_surface_commit(struct wl_listener *listener, void *data)
{
	struct wla_scene_entry *e = wl_container_of(listener, e, surface_commit);
	e->dirty = true;
	e->owed_frame = true;
	struct wla_scene_output *so;
	wl_list_for_each(so, &e->so->wla_scene->outputs, link) {
		wlr_output_schedule_frame(so->output);
	}
}

static struct wla_scene_entry *entry_create(struct wla_scene_output *so,
	const struct scene_layer *from)
{
	struct wla_scene_entry *e = calloc(1, sizeof(*e));
	if (e == NULL) {
		wlr_log(WLR_ERROR, "scene planes: output %s: node %p: out of memory for its "
			"plane entry", so->output->name, (void *)from->node);
		return NULL;
	}
	e->so = so;
	e->node = from->node;
	e->surface = from->surface;
	/* Whatever its surface committed last, the scene will not answer it
	 * now: the frame that puts it on a plane owes its frame event. */
	e->owed_frame = true;
	listen(&e->node_destroy, &from->node->events.destroy, handle_node_destroy);
	wl_list_init(&e->surface_commit.link);
	if (from->surface != NULL) {
		listen(&e->surface_commit, &from->surface->events.commit, handle_surface_commit);
	}
	wl_list_insert(&so->entries, &e->link);
	wlr_scene_node_set_enabled(from->node, false);
	return e;
}

/* ---- Presentation feedback and frame events ---- */

static void drop_feedback(struct wla_scene_feedback *fb)
{
	wl_list_remove(&fb->link);
	wlr_presentation_feedback_destroy(fb->feedback);
	free(fb);
}

static void sample_surface(struct wla_scene_output *so, struct wlr_surface *surface)
{
	struct wlr_presentation *presentation = so->wla_scene->scene->presentation;
	struct wlr_presentation_feedback *feedback = presentation == NULL ? NULL :
		wlr_presentation_surface_sampled(presentation, surface);
	if (feedback == NULL) {
		return; /* nobody asked */
	}
	struct wla_scene_feedback *fb = calloc(1, sizeof(*fb));
	if (fb == NULL) {
		wlr_log(WLR_ERROR, "scene planes: output %s: surface %p: out of memory for its "
			"presentation feedback (discarded)", so->output->name, (void *)surface);
		wlr_presentation_feedback_destroy(feedback);
		return;
	}
	fb->feedback = feedback;
	wl_list_insert(so->feedbacks.prev, &fb->link);
}

/* The commit was made (or not): what waited for it belongs to it. */
static void after_commit(struct wla_scene_output *so, bool committed)
{
	struct wla_scene_feedback *fb, *fb_tmp;
	wl_list_for_each_safe(fb, fb_tmp, &so->feedbacks, link) {
		if (fb->commit_seq == 0) {
			if (committed) {
				fb->commit_seq = so->output->commit_seq;
			} else {
				drop_feedback(fb);
			}
		}
	}
	struct wla_scene_entry *e;
	wl_list_for_each(e, &so->entries, link) {
		if (committed && e->owed_frame) {
			e->owed_frame = false;
			e->frame_seq = so->output->commit_seq;
		}
	}
}

static void handle_output_present(struct wl_listener *listener, void *data)
{
	struct wla_scene_output *so = wl_container_of(listener, so, output_present);
	struct wlr_output_event_present *event = data;
	/* A surface on a plane draws its next frame once its buffer is on
	 * screen: the one it replaced is released then (a client with two
	 * buffers would find none free right after the commit). */
	if (event->presented) {
		struct timespec now = { 0 };
		struct wla_scene_entry *e;
		wl_list_for_each(e, &so->entries, link) {
			if (e->surface != NULL && e->frame_seq != 0 &&
					(int32_t)(event->commit_seq - e->frame_seq) >= 0) {
				e->frame_seq = 0;
				/* Read once, where a surface is told. */
				if (now.tv_sec == 0 && now.tv_nsec == 0) {
					clock_gettime(CLOCK_MONOTONIC, &now);
				}
				wlr_surface_send_frame_done(e->surface, &now);
			}
		}
	}
	struct wla_scene_feedback *fb, *tmp;
	wl_list_for_each_safe(fb, tmp, &so->feedbacks, link) {
		if (fb->commit_seq == 0 || fb->commit_seq != event->commit_seq) {
			continue;
		}
		if (event->presented) {
			struct wlr_presentation_event pe;
			wlr_presentation_event_from_output(&pe, event);
			/* The card scanned the client's buffer out, unless it
			 * scans out only copies. */
			if (!wla_output_scanout_copies(so->output)) {
				pe.flags |= WLR_OUTPUT_PRESENT_ZERO_COPY;
			}
			wlr_presentation_feedback_send_presented(fb->feedback, &pe);
		}
		drop_feedback(fb);
	}
}

static void handle_output_commit(struct wl_listener *listener, void *data)
{
	struct wla_scene_output *so = wl_container_of(listener, so, output_commit);
	struct wlr_output_event_commit *event = data;
	if (!so->output->enabled) {
		/* Its planes show nothing any more. */
		release_all(so);
	}
	if (event->buffer != NULL && event->buffer != so->last_primary) {
		wlr_buffer_unlock(so->last_primary);
		so->last_primary = wlr_buffer_lock(event->buffer);
	}
}

/* Without re-enabling the nodes: for the scene's destruction. */
static void output_state_destroy(struct wla_scene_output *so)
{
	struct wla_scene_entry *e, *e_tmp;
	wl_list_for_each_safe(e, e_tmp, &so->entries, link) {
		entry_destroy(e);
	}
	struct wla_scene_feedback *fb, *fb_tmp;
	wl_list_for_each_safe(fb, fb_tmp, &so->feedbacks, link) {
		drop_feedback(fb);
	}
	wlr_buffer_unlock(so->last_primary);
	wl_list_remove(&so->output_destroy.link);
	wl_list_remove(&so->output_commit.link);
	wl_list_remove(&so->output_present.link);
	wl_list_remove(&so->link);
	free(so);
}

static void handle_output_destroy(struct wl_listener *listener, void *data)
{
	struct wla_scene_output *so = wl_container_of(listener, so, output_destroy);
	release_all(so);
	output_state_destroy(so);
}

static struct wla_scene_output *output_state(struct wla_scene *ws, struct wlr_output *output)
{
	struct wla_scene_output *so;
	wl_list_for_each(so, &ws->outputs, link) {
		if (so->output == output) {
			return so;
		}
	}
	so = calloc(1, sizeof(*so));
	if (so == NULL) {
		wlr_log(WLR_ERROR, "scene planes: output %s: out of memory for its state",
			output->name);
		return NULL;
	}
	so->wla_scene = ws;
	so->output = output;
	wl_list_init(&so->entries);
	wl_list_init(&so->feedbacks);
	listen(&so->output_destroy, &output->events.destroy, handle_output_destroy);
	listen(&so->output_commit, &output->events.commit, handle_output_commit);
	listen(&so->output_present, &output->events.present, handle_output_present);
	wl_list_insert(&ws->outputs, &so->link);
	return so;
}

/* ---- The scene's nodes as layers ---- */

static bool surface_opaque(struct wlr_surface *surface)
{
	struct wlr_shm_attributes shm;
	struct wlr_buffer *source = surface->buffer->source;
	if (source != NULL && wlr_buffer_get_shm(source, &shm) &&
			(shm.format == DRM_FORMAT_XRGB8888 || shm.format == DRM_FORMAT_XBGR8888)) {
		return true;
	}
	pixman_box32_t box = { 0, 0, surface->current.width, surface->current.height };
	return pixman_region32_contains_rectangle(&surface->opaque_region, &box) ==
		PIXMAN_REGION_IN;
}

/* Whether another enabled output of the scene shows part of box. */
static bool on_other_output(struct frame *f, const struct wlr_box *box)
{
	struct wlr_scene_output *other;
	wl_list_for_each(other, &f->ws->scene->outputs, link) {
		struct wlr_box obox = { other->x, other->y, 0, 0 }, inside;
		if (other == f->scene_output || !other->output->enabled) {
			continue;
		}
		wlr_output_effective_resolution(other->output, &obox.width, &obox.height);
		if (wlr_box_intersection(&inside, &obox, box)) {
			return true;
		}
	}
	return false;
}

/* A leaf node's size and, if a plane may show it as it is, its buffer and
 * crop (the layer's src); false if it draws nothing. */
static bool node_layer(struct frame *f, struct wlr_scene_node *node, struct wla_layer *l,
	struct wlr_surface **surface_out)
{
	*surface_out = NULL;
	switch (node->type) {
	case WLR_SCENE_NODE_SURFACE: {
		struct wlr_surface *surface = wlr_scene_surface_from_node(node)->surface;
		l->dst_w = (uint32_t)surface->current.width;
		l->dst_h = (uint32_t)surface->current.height;
		if (surface->buffer == NULL || surface->current.viewport.has_src ||
				surface->current.viewport.has_dst ||
				surface->current.transform != WL_OUTPUT_TRANSFORM_NORMAL ||
				surface->current.scale != 1 ||
				surface->buffer->base.width != surface->current.width ||
				surface->buffer->base.height != surface->current.height) {
			return surface->buffer != NULL;
		}
		l->buffer = &surface->buffer->base;
		l->opaque = surface_opaque(surface);
		*surface_out = surface;
		return true;
	}
	case WLR_SCENE_NODE_BUFFER: {
		struct wlr_scene_buffer *sb = (struct wlr_scene_buffer *)node;
		if (sb->buffer == NULL) {
			return false;
		}
		/* As the scene sizes it. */
		bool dst = sb->dst_width > 0 && sb->dst_height > 0;
		bool swap = (sb->transform & WL_OUTPUT_TRANSFORM_90) != 0;
		l->dst_w = (uint32_t)(dst ? sb->dst_width : swap ? sb->buffer->height :
			sb->buffer->width);
		l->dst_h = (uint32_t)(dst ? sb->dst_height : swap ? sb->buffer->width :
			sb->buffer->height);
		if (sb->transform != WL_OUTPUT_TRANSFORM_NORMAL) {
			return true;
		}
		if (!wlr_fbox_empty(&sb->src_box)) {
			l->src_x = (uint32_t)(sb->src_box.x * 65536.0);
			l->src_y = (uint32_t)(sb->src_box.y * 65536.0);
			l->src_w = (uint32_t)(sb->src_box.width * 65536.0);
			l->src_h = (uint32_t)(sb->src_box.height * 65536.0);
		}
		l->buffer = sb->buffer;
		return true;
	}
	case WLR_SCENE_NODE_RECT: {
		struct wlr_scene_rect *rect = (struct wlr_scene_rect *)node;
		l->dst_w = (uint32_t)rect->width;
		l->dst_h = (uint32_t)rect->height;
		l->opaque = rect->color[3] >= 1.0f;
		return true;
	}
	default:
		return false;
	}
}

static void add_layer(struct frame *f, struct wlr_scene_node *node, int lx, int ly)
{
	struct wla_layer l = { 0 };
	struct wlr_surface *surface;
	if (!node_layer(f, node, &l, &surface) || l.dst_w == 0 || l.dst_h == 0) {
		return;
	}
	struct wlr_box box = { lx, ly, (int)l.dst_w, (int)l.dst_h }, inside;
	if (!wlr_box_intersection(&inside, &box, &f->box)) {
		return;
	}
	if (f->n == WLA_SCENE_MAX_LAYERS - 1) {
		/* More nodes than layers: the rest, on top, are composited,
		 * over anything below. */
		f->layers[f->n] = (struct wla_layer){ .dst_w = (uint32_t)f->box.width,
			.dst_h = (uint32_t)f->box.height };
		f->from[f->n++] = (struct scene_layer){ 0 };
		f->full = true;
		return;
	}
	bool whole = inside.width == box.width && inside.height == box.height;
	if (!f->planes_ok || !whole || on_other_output(f, &box)) {
		/* Composited: only the part on this output matters. */
		l = (struct wla_layer){ .dst_w = (uint32_t)inside.width,
			.dst_h = (uint32_t)inside.height, .opaque = l.opaque };
		box = inside;
		surface = NULL;
	}
	l.dst_x = box.x - f->box.x;
	l.dst_y = box.y - f->box.y;
	f->layers[f->n] = l;
	f->from[f->n++] = (struct scene_layer){ .node = node, .surface = surface };
}

/* The enabled nodes (and those on planes) under node, in the order the
 * scene draws them. */
static void add_layers(struct frame *f, struct wlr_scene_node *node, int lx, int ly)
{
	if (f->full || (!node->state.enabled && find_entry(f->ws, node) == NULL)) {
		return;
	}
	lx += node->state.x;
	ly += node->state.y;
	add_layer(f, node, lx, ly);
	struct wlr_scene_node *child;
	wl_list_for_each(child, &node->state.children, state.link) {
		add_layers(f, child, lx, ly);
	}
}

static bool screencopy_waits(struct wla_scene *ws, struct wlr_output *output)
{
	struct wlr_screencopy_frame_v1 *frame;
	if (ws->screencopy == NULL) {
		return false;
	}
	wl_list_for_each(frame, &ws->screencopy->frames, link) {
		if (frame->output == output) {
			return true;
		}
	}
	return false;
}

/* ---- The frame ---- */

/* Which nodes are on this output's planes now; returns the entry on the
 * primary plane, if any, and whether the planes changed (dirty). */
static struct wla_scene_entry *apply_placement(struct wla_scene_output *so, struct frame *f,
	size_t first, bool placed, bool *dirty)
{
	struct wla_scene_entry *e, *tmp, *primary = NULL;
	wl_list_for_each(e, &so->entries, link) {
		e->seen = false;
	}
	/* A node another output's plane shows but this output composites
	 * (it moved, or is on both): the scene draws it from now on, and that
	 * output is asked for the frame that takes it off its plane. */
	for (size_t i = 0; i < f->n; i++) {
		bool here = placed && i >= first && f->layers[i].on_plane;
		e = f->from[i].node != NULL && !here ? find_entry(f->ws, f->from[i].node) : NULL;
		if (e != NULL && e->so != so) {
			wlr_output_schedule_frame(e->so->output);
			entry_release(e);
		}
	}
	uint64_t placement = 1469598103934665603ull;
	bool failed = false;
	for (size_t i = first; i < f->n && placed && !failed; i++) {
		const struct wla_layer *l = &f->layers[i];
		struct wlr_scene_node *node = f->from[i].node;
		if (node == NULL || !l->on_plane) {
			continue;
		}
		e = find_entry(f->ws, node);
		if (e != NULL && e->so != so) {
			/* From another output's plane to ours: that one must take
			 * it off. */
			wlr_output_schedule_frame(e->so->output);
			wl_list_remove(&e->link);
			wl_list_insert(&so->entries, &e->link);
			e->so = so;
			e->dirty = true;
		} else if (e == NULL && (e = entry_create(so, &f->from[i])) != NULL) {
			e->dirty = true;
		}
		failed = e == NULL; /* logged */
		if (failed) {
			break;
		}
		e->seen = true;
		e->primary = l->primary;
		primary = l->primary ? e : primary;
		placement = (placement ^ (uintptr_t)node ^ ((uint64_t)l->plane << 48)) *
			1099511628211ull;
	}
	*dirty = false;
	if (failed) {
		/* Its buffer is offered but the scene would draw it too: nothing
		 * on planes this frame. */
		wla_output_set_overlays(so->output, NULL, 0);
		primary = NULL;
	}
	wl_list_for_each_safe(e, tmp, &so->entries, link) {
		if (!e->seen || failed) {
			entry_release(e); /* composited again, or gone from this output */
			*dirty = true;
		} else {
			*dirty |= e->dirty;
			e->dirty = false;
		}
	}
	if (placement != so->placement) {
		*dirty = true;
		for (size_t i = first; i < f->n; i++) {
			const struct wla_layer *l = &f->layers[i];
			wlr_log(WLR_DEBUG, "scene planes: output %s: layer %zu (node %p %d,%d "
				"%ux%u): %s%s", so->output->name, i, (void *)f->from[i].node,
				l->dst_x, l->dst_y, l->dst_w, l->dst_h,
				l->primary ? "primary plane" : l->on_plane ? "overlay plane" :
				l->buffer == NULL ? "composited (no buffer a plane can show)" :
				"composited: ", l->on_plane || l->buffer == NULL ? "" :
				wla_overlay_status_name(l->status));
		}
	}
	so->placement = placement;
	return primary;
}

static struct wlr_buffer *entry_buffer(struct wla_scene_entry *e)
{
	if (e->surface != NULL) {
		return e->surface->buffer != NULL ? &e->surface->buffer->base : NULL;
	}
	return ((struct wlr_scene_buffer *)e->node)->buffer;
}

static void sample_overlays(struct wla_scene_output *so)
{
	struct wla_scene_entry *e;
	wl_list_for_each(e, &so->entries, link) {
		if (!e->primary && e->surface != NULL) {
			sample_surface(so, e->surface);
		}
	}
}

/* The primary plane shows a node's own buffer: no render. */
static bool commit_direct(struct wla_scene_output *so, struct wla_scene_entry *primary)
{
	struct wlr_output *output = so->output;
	struct wlr_buffer *buffer = entry_buffer(primary);
	if (buffer != NULL) {
		wlr_output_attach_buffer(output, buffer);
		if (wlr_output_test(output)) {
			sample_overlays(so);
			struct wlr_presentation *presentation = so->wla_scene->scene->presentation;
			if (primary->surface != NULL && presentation != NULL) {
				/* zero-copy, as the output's present event says */
				wlr_presentation_surface_sampled_on_output(presentation,
					primary->surface, output);
			}
			bool ok = wlr_output_commit(output);
			after_commit(so, ok);
			so->direct = ok;
			return true;
		}
		wlr_output_rollback(output);
	}
	wlr_log(WLR_DEBUG, "scene planes: output %s: node %p refused on the primary plane, "
		"composited", output->name, (void *)primary->node);
	entry_release(primary);
	return false;
}

/* Whether the last frame can go out again as it is: nothing else pending
 * (a gamma table, a mode, ... that wlr_output_rollback would drop when the
 * commit is refused), and nothing wlroots 0.15 refuses a buffer it did not
 * render for (a frame pending, a capture's lock, a software cursor, another
 * size). */
static bool can_repeat(struct wla_scene_output *so)
{
	struct wlr_output *output = so->output;
	struct wlr_buffer *last = so->last_primary;
	if (last == NULL || output->pending.committed != 0 || output->frame_pending ||
			output->attach_render_locks > 0 || last->width != output->width ||
			last->height != output->height) {
		return false;
	}
	struct wlr_output_cursor *cursor;
	wl_list_for_each(cursor, &output->cursors, link) {
		if (cursor->enabled && cursor->visible && cursor != output->hardware_cursor) {
			return false;
		}
	}
	return true;
}

/* The scene's surfaces whose primary output this is were sampled by the
 * frame shown again, as the scene's render would have told: a surface
 * committed without damage gets its presentation feedback. */
static void sample_scene_surfaces(struct wlr_scene_node *node, struct wlr_output *output,
	struct wlr_presentation *presentation)
{
	if (!node->state.enabled) {
		return;
	}
	if (node->type == WLR_SCENE_NODE_SURFACE) {
		struct wlr_scene_surface *ss = wlr_scene_surface_from_node(node);
		if (ss->primary_output == output) {
			wlr_presentation_surface_sampled_on_output(presentation, ss->surface, output);
		}
	}
	struct wlr_scene_node *child;
	wl_list_for_each(child, &node->state.children, state.link) {
		sample_scene_surfaces(child, output, presentation);
	}
}

static bool commit_composited(struct wla_scene_output *so, struct wlr_scene_output *scene_output,
	bool dirty)
{
	struct wlr_output *output = so->output;
	if (so->direct) {
		/* The swapchain's buffers are older than the scene thinks. */
		wlr_output_damage_add_whole(scene_output->damage);
		so->direct = false;
	}
	sample_overlays(so);
	uint32_t seq = output->commit_seq;
	bool ok = true;
	/* Render only what the scene has changed. A frame asked for without
	 * damage here (wlroots 0.15's scene asks every output for a frame at
	 * any damage, a node on a plane asks for one) is the last frame
	 * again where wlroots takes it (can_repeat; a capture or a pending
	 * gamma table gets a render): rendered, it would take another of the
	 * swapchain's buffers, whose age, with a flip queue deeper than 1,
	 * soon outgrows the damage wlroots keeps, and the whole output would
	 * be drawn again (the swapchain's buffers do not age while the last
	 * frame is committed again). */
	if (pixman_region32_not_empty(&scene_output->damage->current) ||
			so->last_primary == NULL) {
		ok = wlr_scene_output_commit(scene_output);
	} else if (dirty || output->needs_frame) {
		/* Nothing to render, but the planes changed or a frame was
		 * asked for: the last frame again, or (it cannot go again,
		 * or it is refused) a new one, whole if the planes changed. */
		bool again = false;
		if (can_repeat(so)) {
			wlr_output_attach_buffer(output, so->last_primary);
			if (!(again = wlr_output_commit(output))) {
				wlr_output_rollback(output); /* only the buffer was pending */
			}
		}
		struct wlr_presentation *presentation = so->wla_scene->scene->presentation;
		if (again && presentation != NULL) {
			sample_scene_surfaces(&so->wla_scene->scene->node, output, presentation);
		}
		if (!again) {
			if (dirty) {
				wlr_output_damage_add_whole(scene_output->damage);
			}
			ok = wlr_scene_output_commit(scene_output);
		}
	}
	after_commit(so, output->commit_seq != seq);
	return ok;
}

WLA_EXPORT bool wla_scene_output_commit(struct wla_scene *ws,
	struct wlr_scene_output *scene_output)
{
	if (ws == NULL || scene_output == NULL) {
		wlr_log(WLR_ERROR, "scene planes: commit: %s is NULL",
			ws == NULL ? "wla_scene" : "scene_output");
		return false;
	}
	struct wlr_output *output = scene_output->output;
	if (scene_output->scene != ws->scene) {
		wlr_log(WLR_ERROR, "scene planes: output %s: scene output %p is of scene %p, "
			"not of the helper's scene %p", output->name, (void *)scene_output,
			(void *)scene_output->scene, (void *)ws->scene);
		return false;
	}
	if (!output->enabled) {
		/* A frame timer may fire after the output went off: not an error. */
		wlr_log(WLR_DEBUG, "scene planes: output %s: enabled=0, nothing committed",
			output->name);
		return false;
	}
	if (!wla_output_is_wla(output)) {
		return wlr_scene_output_commit(scene_output);
	}
	struct wla_scene_output *so = output_state(ws, output);
	if (so == NULL) {
		return wlr_scene_output_commit(scene_output);
	}
	struct frame *f = calloc(1, sizeof(*f));
	if (f == NULL) {
		wlr_log(WLR_ERROR, "scene planes: output %s: out of memory for a frame",
			output->name);
		release_all(so);
		wla_output_set_overlays(output, NULL, 0);
		return wlr_scene_output_commit(scene_output);
	}
	*f = (struct frame){ .ws = ws, .scene_output = scene_output,
		.box = { scene_output->x, scene_output->y, output->width, output->height },
		.planes_ok = output->scale == 1.0f &&
			output->transform == WL_OUTPUT_TRANSFORM_NORMAL &&
			/* Pending, the frame's geometry is not known yet. */
			!(output->pending.committed & (WLR_OUTPUT_STATE_SCALE |
				WLR_OUTPUT_STATE_TRANSFORM | WLR_OUTPUT_STATE_MODE)) };
	wlr_output_effective_resolution(output, &f->box.width, &f->box.height);
	/* The clear colour, at the bottom. */
	f->layers[f->n++] = (struct wla_layer){ .dst_w = (uint32_t)f->box.width,
		.dst_h = (uint32_t)f->box.height };
	add_layers(f, &ws->scene->node, 0, 0);
	/* An opaque layer over the whole output hides all below it. */
	size_t first = 0;
	for (size_t i = 1; i < f->n; i++) {
		const struct wla_layer *l = &f->layers[i];
		if (l->buffer != NULL && l->opaque && l->dst_x <= 0 && l->dst_y <= 0 &&
				l->dst_x + (int64_t)l->dst_w >= f->box.width &&
				l->dst_y + (int64_t)l->dst_h >= f->box.height) {
			first = i;
		}
	}
	int placed = screencopy_waits(ws, output) ? wla_output_set_overlays(output, NULL, 0) :
		wla_output_assign_layers(output, f->layers + first, f->n - first, NULL);
	bool dirty;
	struct wla_scene_entry *primary = apply_placement(so, f, first, placed > 0, &dirty);
	free(f);
	if (primary != NULL && commit_direct(so, primary)) {
		return true;
	}
	return commit_composited(so, scene_output, dirty);
}

WLA_EXPORT struct wlr_scene_node *wla_scene_node_at(struct wla_scene *ws,
	struct wlr_scene_node *node, double lx, double ly, double *nx, double *ny)
{
	if (ws == NULL || node == NULL) {
		wlr_log(WLR_ERROR, "scene planes: node at %.1f,%.1f: %s is NULL", lx, ly,
			ws == NULL ? "wla_scene" : "node");
		return NULL;
	}
	/* Shown for the hit test only: set without the damage
	 * wlr_scene_node_set_enabled would add. */
	struct wla_scene_output *so;
	struct wla_scene_entry *e;
	wl_list_for_each(so, &ws->outputs, link) {
		wl_list_for_each(e, &so->entries, link) {
			e->node->state.enabled = true;
		}
	}
	struct wlr_scene_node *found = wlr_scene_node_at(node, lx, ly, nx, ny);
	wl_list_for_each(so, &ws->outputs, link) {
		wl_list_for_each(e, &so->entries, link) {
			e->node->state.enabled = false;
		}
	}
	return found;
}

/* ---- The helper's life ---- */

static void destroy(struct wla_scene *ws, bool release)
{
	struct wla_scene_output *so, *tmp;
	wl_list_for_each_safe(so, tmp, &ws->outputs, link) {
		if (release) {
			release_all(so);
		}
		output_state_destroy(so);
	}
	wl_list_remove(&ws->scene_destroy.link);
	wl_list_remove(&ws->screencopy_destroy.link);
	free(ws);
}

static void handle_scene_destroy(struct wl_listener *listener, void *data)
{
	struct wla_scene *ws = wl_container_of(listener, ws, scene_destroy);
	destroy(ws, false); /* the nodes go with the scene */
}

static void handle_screencopy_destroy(struct wl_listener *listener, void *data)
{
	struct wla_scene *ws = wl_container_of(listener, ws, screencopy_destroy);
	wl_list_remove(&ws->screencopy_destroy.link);
	wl_list_init(&ws->screencopy_destroy.link);
	ws->screencopy = NULL;
}

WLA_EXPORT struct wla_scene *wla_scene_create(struct wlr_scene *scene,
	struct wlr_screencopy_manager_v1 *screencopy)
{
	if (scene == NULL) {
		wlr_log(WLR_ERROR, "scene planes: create: scene is NULL");
		return NULL;
	}
	struct wla_scene *ws = calloc(1, sizeof(*ws));
	if (ws == NULL) {
		wlr_log(WLR_ERROR, "scene planes: scene %p: out of memory", (void *)scene);
		return NULL;
	}
	ws->scene = scene;
	ws->screencopy = screencopy;
	wl_list_init(&ws->outputs);
	listen(&ws->scene_destroy, &scene->node.events.destroy, handle_scene_destroy);
	wl_list_init(&ws->screencopy_destroy.link);
	if (screencopy != NULL) {
		listen(&ws->screencopy_destroy, &screencopy->events.destroy,
			handle_screencopy_destroy);
	}
	return ws;
}

WLA_EXPORT void wla_scene_destroy(struct wla_scene *ws)
{
	if (ws != NULL) {
		destroy(ws, true);
	}
}
