/*
 * Layer-to-plane assignment (wla_output_assign_layers): which of a
 * compositor's surfaces go on overlay planes, and whether the bottom one can
 * be the primary plane's buffer itself.
 *
 * libliftoff 0.3 searches depth first over planes, trying every layer on
 * each and asking the kernel (TEST_ONLY) at every step; a refused pair is
 * asked again in every branch, and a search where the kernel refuses much
 * grows exponentially. Here:
 * - Each layer first gets a mask of the overlay planes that can take it at
 *   all, from the limits the core knows (format and modifier, scaling, fb
 *   size, crop, position), and refusals remembered from earlier frames.
 * - The search runs on the CPU alone, top layer first: a layer may go on a
 *   plane only if nothing composited above it overlaps it, and planes keep
 *   the layers' order. The bound is min(planes left, layers left), and a
 *   full placement ends the search.
 * - Only the best placement is checked, by the core (and then by the
 *   driver: KMS TEST_ONLY). A refusal the core pins on one plane removes
 *   that layer/plane pair and the search runs again; one the driver cannot
 *   pin drops the smallest layer. At most WLA_ASSIGN_MAX_CHECKS checks per
 *   frame; past that everything is composited.
 * - A frame whose layers differ from the last one's only in their buffers
 *   keeps the last placement without a check; one whose layers only moved,
 *   with the same overlaps, tries it with one check.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/util/box.h>
#include <wlr/util/log.h>
#include <wlatomic/planes.h>
#include "backend/wlr.h"
#include "util.h"

/* Checks (core, and driver) per frame before the helper gives up. */
#define WLA_ASSIGN_MAX_CHECKS 16
/* Layers the search considers; those above are composited. */
#define WLA_ASSIGN_MAX_LAYERS 64
/* Search nodes per run, a bound on CPU whatever the layers. */
#define WLA_ASSIGN_MAX_NODES 20000
/* Refusals remembered across frames, and for how many frames (a refusal
 * that depended on other planes, memory bandwidth say, is tried again). */
#define WLA_ASSIGN_REFUSALS 64
#define WLA_ASSIGN_REFUSAL_FRAMES 300

/* What makes a layer's placement on a plane succeed or fail. */
struct layer_key {
	bool has_buffer;
	uint32_t format;
	uint64_t modifier;
	uint32_t width, height;
	uint32_t src_x, src_y, src_w, src_h;
	int32_t dst_x, dst_y;
	uint32_t dst_w, dst_h;
	bool opaque;
};

struct refusal {
	struct layer_key key;
	uint64_t hash; /* of key: compared first */
	uint32_t plane_id;
	enum wla_overlay_status why;
	uint64_t frame; /* when it was learnt */
};

struct last_layer {
	struct layer_key key;
	uint32_t plane; /* 0: composited */
	bool primary;
};

struct wla_assign_cache {
	struct refusal refused[WLA_ASSIGN_REFUSALS];
	size_t n_refused, next_refused;
	uint64_t frame; /* assignments so far */
	uint64_t last_refusal; /* frame of the newest refusal learnt */
	struct last_layer *last;
	size_t n_last;
	bool has_last;
	int32_t mode_w, mode_h;
	uint64_t overlap_hash;
};

void wla_assign_forget(struct wla_output_planes *planes)
{
	planes->assign->has_last = false;
}

void wla_assign_finish(struct wla_output_planes *planes)
{
	if (planes->assign) {
		free(planes->assign->last);
		free(planes->assign);
		planes->assign = NULL;
	}
}

/* One layer during a run. */
struct layer {
	struct wla_layer *in;
	struct wla_fb *fb; /* wrapper reference, NULL: composited only */
	struct layer_key key;
	bool visible;
	struct wlr_box box; /* dst clipped to the output */
	uint32_t mask;      /* bit k: overlay plane k of the run can take it */
	enum wla_overlay_status why; /* when mask is 0 */
	uint64_t area;
	bool has_dmabuf;
};

struct run {
	struct wla_output *out;
	struct wla_output_planes *p;
	struct wla_plane *overlays[WLA_MAX_PLANES]; /* bottom to top */
	size_t n_overlays;
	struct layer *layers;
	size_t n;     /* layers the search considers */
	size_t n_all; /* layers given */
	bool *overlap; /* n x n */
	int32_t mode_w, mode_h;
	struct wla_assign_stats *stats;
	/* The search */
	bool best_chosen[WLA_ASSIGN_MAX_LAYERS];
	int best_plane[WLA_ASSIGN_MAX_LAYERS];
	size_t best_count;
	uint64_t best_area;
	bool cur_chosen[WLA_ASSIGN_MAX_LAYERS];
	int cur_plane[WLA_ASSIGN_MAX_LAYERS];
	size_t nodes;
	size_t max_placed; /* min(overlay planes, eligible layers) */
	bool scans_out_cpu; /* the driver reads fbs with the CPU (the VDC) */
};

static bool key_equal(const struct layer_key *a, const struct layer_key *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

static bool key_equal_unmoved(const struct layer_key *a, const struct layer_key *b)
{
	struct layer_key x = *a, y = *b;
	x.dst_x = y.dst_x = 0;
	x.dst_y = y.dst_y = 0;
	return key_equal(&x, &y);
}

static bool overlaps(const struct wlr_box *a, const struct wlr_box *b)
{
	return a->x < b->x + b->width && b->x < a->x + a->width &&
		a->y < b->y + b->height && b->y < a->y + a->height;
}

/* The core's limits for one layer on one plane, without building a state. */
static enum wla_overlay_status prefilter(const struct run *r, const struct layer *l,
	const struct wla_plane *plane)
{
	const struct wla_fb *fb = l->fb;
	const struct layer_key *k = &l->key;
	if (!r->scans_out_cpu && !l->has_dmabuf) {
		return WLA_OVERLAY_BUFFER; /* KMS: only a dmabuf is imported */
	}
	if (!wla_plane_supports(plane, fb->format, fb->modifier)) {
		return WLA_OVERLAY_FORMAT;
	}
	if ((plane->max_fb_width && fb->width > plane->max_fb_width) ||
			(plane->max_fb_height && fb->height > plane->max_fb_height)) {
		return WLA_OVERLAY_SIZE;
	}
	if (k->src_w == 0 || k->src_h == 0 ||
			(uint64_t)k->src_x + k->src_w > (uint64_t)fb->width << 16 ||
			(uint64_t)k->src_y + k->src_h > (uint64_t)fb->height << 16) {
		return WLA_OVERLAY_CROP;
	}
	if (k->dst_w == 0 || k->dst_h == 0 || k->dst_w > INT32_MAX || k->dst_h > INT32_MAX) {
		return WLA_OVERLAY_POSITION;
	}
	uint64_t sx = (uint64_t)k->src_w / k->dst_w, sy = (uint64_t)k->src_h / k->dst_h;
	if (sx < plane->min_scale || sx > plane->max_scale || sy < plane->min_scale ||
			sy > plane->max_scale) {
		return WLA_OVERLAY_SCALING;
	}
	if (plane->full_screen_only && (k->dst_x != 0 || k->dst_y != 0 ||
			k->dst_w != (uint32_t)r->mode_w || k->dst_h != (uint32_t)r->mode_h)) {
		return WLA_OVERLAY_POSITION;
	}
	return WLA_OVERLAY_OK;
}

/* FNV-1a over the key's bytes (it is memset-initialised: no padding
 * garbage). */
static uint64_t key_hash(const struct layer_key *key)
{
	const unsigned char *b = (const unsigned char *)key;
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < sizeof(*key); i++) {
		h = (h ^ b[i]) * 1099511628211ull;
	}
	return h;
}

static const struct refusal *find_refusal(const struct wla_assign_cache *c,
	const struct layer_key *key, uint64_t hash, uint32_t plane_id)
{
	if (c->n_refused == 0 || c->frame - c->last_refusal >= WLA_ASSIGN_REFUSAL_FRAMES) {
		return NULL; /* none, or all too old */
	}
	for (size_t i = 0; i < c->n_refused; i++) {
		if (c->refused[i].plane_id == plane_id && c->refused[i].hash == hash &&
				c->frame - c->refused[i].frame < WLA_ASSIGN_REFUSAL_FRAMES &&
				key_equal(&c->refused[i].key, key)) {
			return &c->refused[i];
		}
	}
	return NULL;
}

static void remember_refusal(struct wla_assign_cache *c, const struct layer_key *key,
	uint32_t plane_id, enum wla_overlay_status why)
{
	uint64_t hash = key_hash(key);
	if (find_refusal(c, key, hash, plane_id)) {
		return;
	}
	struct refusal *slot = &c->refused[c->next_refused];
	c->next_refused = (c->next_refused + 1) % WLA_ASSIGN_REFUSALS;
	if (c->n_refused < WLA_ASSIGN_REFUSALS) {
		c->n_refused++;
	}
	*slot = (struct refusal){ .key = *key, .hash = hash, .plane_id = plane_id, .why = why,
		.frame = c->frame };
	c->last_refusal = c->frame;
}

/* The search, top layer first: layer i on the highest plane below `limit`
 * its mask allows, or composited. */
static void search(struct run *r, int i, int limit, size_t count, uint64_t area)
{
	if (++r->nodes > WLA_ASSIGN_MAX_NODES) {
		return;
	}
	if (count > r->best_count || (count == r->best_count && area > r->best_area)) {
		r->best_count = count;
		r->best_area = area;
		memcpy(r->best_chosen, r->cur_chosen, sizeof(r->best_chosen));
		memcpy(r->best_plane, r->cur_plane, sizeof(r->best_plane));
	}
	if (i < 0 || limit <= 0) {
		return;
	}
	/* Bound: every plane left, or every eligible layer left, placed. */
	size_t eligible = 0;
	for (int j = i; j >= 0; j--) {
		eligible += r->layers[j].mask != 0 && r->layers[j].visible;
	}
	size_t room = eligible < (size_t)limit ? eligible : (size_t)limit;
	if (count + room < r->best_count || r->best_count == r->max_placed) {
		return;
	}
	struct layer *l = &r->layers[i];
	bool free_above = true;
	for (size_t j = (size_t)i + 1; j < r->n && free_above; j++) {
		if (!r->cur_chosen[j] && r->layers[j].visible && r->overlap[(size_t)i * r->n + j]) {
			free_above = false;
		}
	}
	if (l->mask && l->visible && free_above) {
		int k = limit - 1;
		while (k >= 0 && !(l->mask & (1u << k))) {
			k--;
		}
		if (k >= 0) {
			r->cur_chosen[i] = true;
			r->cur_plane[i] = k;
			search(r, i - 1, k, count + 1, area + l->area);
			r->cur_chosen[i] = false;
			r->cur_plane[i] = -1;
			if (r->best_count == r->max_placed) {
				return; /* a full placement: nothing beats it */
			}
		}
	}
	search(r, i - 1, limit, count, area);
}

/* Layer i as an overlay on the run's overlay plane k (no buffer set). */
static struct wla_overlay overlay_of(const struct run *r, size_t i, int k)
{
	const struct layer_key *key = &r->layers[i].key;
	return (struct wla_overlay){
		.dst_x = key->dst_x, .dst_y = key->dst_y,
		.dst_w = key->dst_w, .dst_h = key->dst_h,
		.src_x = key->src_x, .src_y = key->src_y,
		.src_w = key->src_w, .src_h = key->src_h,
		.z = (int32_t)i,
		.plane = wla_output_plane_id(r->overlays[k]),
	};
}

/* Make the helper's trial the chosen overlays. false on ENOMEM. */
static bool set_trial(struct run *r, struct wla_overlay_slot *slots, const bool *chosen,
	const int *plane)
{
	size_t m = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (!chosen[i]) {
			continue;
		}
		slots[m++] = (struct wla_overlay_slot){
			.ov = overlay_of(r, i, plane[i]),
			.fb = r->layers[i].fb,
		};
	}
	r->p->trial = slots;
	r->p->n_trial = m;
	/* An empty trial still replaces the offer: every overlay off. */
	return wla_output_status_reset(r->p, m);
}

/* Check the trial (and primary on the primary plane, NULL: as it is).
 * 0, or the check's negative errno with the refused overlay's index. */
static int check(struct run *r, struct wlr_buffer *primary, bool driver, size_t *refused)
{
	r->stats->checks++;
	r->stats->driver_tests += driver;
	int ret = wla_output_check_trial(r->out, primary, driver);
	/* Pinned on one overlay only where the check named its plane (a
	 * refusal of the whole state, KMS's TEST_ONLY, names none). */
	*refused = ret < 0 && r->p->refused_slot < r->p->n_trial ? r->p->refused_slot : SIZE_MAX;
	return ret;
}

/* The layer index of trial slot s. */
static size_t layer_of_slot(const struct run *r, size_t s)
{
	return (size_t)r->p->trial[s].ov.z;
}

static bool has_driver_check(const struct wla_output *out)
{
	return out->dev->funcs->atomic_check != NULL;
}

/* Search and check until a placement passes or the budget is spent. */
static void place(struct run *r, struct wla_overlay_slot *slots, bool *chosen, int *plane)
{
	bool driver = has_driver_check(r->out);
	/* A candidate costs the core's check and, with a driver's, its test. */
	while (r->stats->checks + (driver ? 2u : 1u) <= WLA_ASSIGN_MAX_CHECKS) {
		r->best_count = 0;
		r->best_area = 0;
		r->nodes = 0;
		for (size_t i = 0; i < WLA_ASSIGN_MAX_LAYERS; i++) {
			r->best_chosen[i] = r->cur_chosen[i] = false;
			r->best_plane[i] = r->cur_plane[i] = -1;
		}
		size_t eligible = 0;
		for (size_t i = 0; i < r->n; i++) {
			eligible += r->layers[i].mask != 0 && r->layers[i].visible;
		}
		r->max_placed = eligible < r->n_overlays ? eligible : r->n_overlays;
		search(r, (int)r->n - 1, (int)r->n_overlays, 0, 0);
		if (r->best_count == 0) {
			break;
		}
		if (!set_trial(r, slots, r->best_chosen, r->best_plane)) {
			break;
		}
		size_t s;
		int ret = check(r, NULL, false, &s);
		if (ret == 0 && driver) {
			ret = check(r, NULL, true, &s);
		}
		if (ret == 0) {
			memcpy(chosen, r->best_chosen, r->n * sizeof(*chosen));
			memcpy(plane, r->best_plane, r->n * sizeof(*plane));
			return;
		}
		if (s != SIZE_MAX) {
			/* Pinned on one overlay: that pair never works. */
			size_t i = layer_of_slot(r, s);
			struct layer *l = &r->layers[i];
			int k = r->best_plane[i];
			l->mask &= ~(1u << k);
			l->why = r->p->status[s];
			remember_refusal(r->p->assign, &l->key,
				wla_output_plane_id(r->overlays[k]), r->p->status[s]);
			continue;
		}
		/* Refused as a whole (the driver, or a rule of no one plane):
		 * the smallest layer is composited this frame. */
		size_t smallest = SIZE_MAX;
		for (size_t i = 0; i < r->n; i++) {
			if (r->best_chosen[i] && (smallest == SIZE_MAX ||
					r->layers[i].area < r->layers[smallest].area)) {
				smallest = i;
			}
		}
		r->layers[smallest].mask = 0;
		r->layers[smallest].why = WLA_OVERLAY_HARDWARE;
	}
	/* Nothing passed within the budget: everything is composited. */
	for (size_t i = 0; i < r->n; i++) {
		chosen[i] = false;
		plane[i] = -1;
	}
}

/* The bottom layer as the primary plane's buffer: it covers the output
 * unscaled and opaque, and every other visible layer is on an overlay. */
static bool primary_candidate(const struct run *r)
{
	const struct layer *l = &r->layers[0];
	const struct layer_key *k = &l->key;
	const struct wla_plane *primary = r->out->crtc->primary;
	return l->fb && k->opaque && k->dst_x == 0 && k->dst_y == 0 &&
		k->dst_w == (uint32_t)r->mode_w && k->dst_h == (uint32_t)r->mode_h &&
		k->src_x == 0 && k->src_y == 0 && k->src_w == k->dst_w << 16 &&
		k->src_h == k->dst_h << 16 && l->fb->width == k->dst_w &&
		l->fb->height == k->dst_h &&
		wla_plane_supports(primary, l->fb->format, l->fb->modifier);
}

static bool try_primary(struct run *r, struct wla_overlay_slot *slots, const bool *chosen,
	const int *plane)
{
	const struct layer *l = &r->layers[0];
	for (size_t i = 1; i < r->n; i++) {
		if (r->layers[i].visible && !chosen[i]) {
			return false;
		}
	}
	if (r->stats->checks + (has_driver_check(r->out) ? 2u : 1u) > WLA_ASSIGN_MAX_CHECKS ||
			!set_trial(r, slots, chosen, plane)) {
		return false;
	}
	struct wlr_buffer *buffer = l->in->buffer;
	size_t s;
	int ret = check(r, buffer, false, &s);
	if (ret == 0 && has_driver_check(r->out)) {
		ret = check(r, buffer, true, &s);
	}
	return ret == 0;
}

/* A cheap summary of which visible layers overlap which. */
static uint64_t overlap_hash(const struct run *r)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < r->n * r->n; i++) {
		h = (h ^ (uint64_t)r->overlap[i]) * 1099511628211ull;
	}
	return h;
}

/* Keep the last frame's placement if the layers are the same but for
 * buffers (0 checks) or positions with the same overlaps (1 check). */
static bool reuse_last(struct run *r, struct wla_overlay_slot *slots, bool *chosen,
	int *plane, bool *primary)
{
	struct wla_assign_cache *c = r->p->assign;
	if (!c->has_last || c->n_last != r->n || r->n_all > WLA_ASSIGN_MAX_LAYERS ||
			c->mode_w != r->mode_w ||
			c->mode_h != r->mode_h) {
		return false;
	}
	bool moved = false;
	for (size_t i = 0; i < r->n; i++) {
		const struct last_layer *last = &c->last[i];
		if (!key_equal(&last->key, &r->layers[i].key)) {
			if (!key_equal_unmoved(&last->key, &r->layers[i].key)) {
				return false;
			}
			moved = true;
		}
		chosen[i] = last->plane != 0;
		plane[i] = -1;
		for (size_t k = 0; k < r->n_overlays && chosen[i]; k++) {
			if (wla_output_plane_id(r->overlays[k]) == last->plane) {
				plane[i] = (int)k;
			}
		}
		if (chosen[i] && (plane[i] < 0 || !r->layers[i].visible)) {
			return false;
		}
	}
	*primary = r->n > 0 && c->last[0].primary;
	if (!moved) {
		return set_trial(r, slots, chosen, plane);
	}
	if (overlap_hash(r) != c->overlap_hash || !set_trial(r, slots, chosen, plane)) {
		return false;
	}
	size_t s;
	struct wlr_buffer *buffer = *primary ? r->layers[0].in->buffer : NULL;
	int ret = check(r, buffer, false, &s);
	if (ret == 0 && has_driver_check(r->out)) {
		ret = check(r, buffer, true, &s);
	}
	return ret == 0;
}

static void remember_last(struct run *r, const bool *chosen, const int *plane, bool primary)
{
	struct wla_assign_cache *c = r->p->assign;
	struct last_layer *last = r->n ? calloc(r->n, sizeof(*last)) : NULL;
	free(c->last);
	c->last = last;
	c->n_last = last ? r->n : 0;
	c->has_last = last != NULL;
	c->mode_w = r->mode_w;
	c->mode_h = r->mode_h;
	c->overlap_hash = overlap_hash(r);
	for (size_t i = 0; last && i < r->n; i++) {
		last[i].key = r->layers[i].key;
		last[i].plane = chosen[i] ? wla_output_plane_id(r->overlays[plane[i]]) : 0;
		last[i].primary = i == 0 && primary;
	}
}

/* Set up the run's n layers: keys, visibility and, for the r->n the
 * search considers, masks and overlaps. */
static void describe_layers(struct run *r, size_t n)
{
	struct wla_assign_cache *c = r->p->assign;
	struct wlr_box output_box = { 0, 0, r->mode_w, r->mode_h };
	for (size_t i = 0; i < n; i++) {
		struct layer *l = &r->layers[i];
		const struct wla_layer *in = l->in;
		l->why = WLA_OVERLAY_COMPOSITED;
		/* Compared and hashed as bytes: padding zeroed too. */
		memset(&l->key, 0, sizeof(l->key));
		l->key.has_buffer = in->buffer != NULL;
		l->key.dst_x = in->dst_x;
		l->key.dst_y = in->dst_y;
		l->key.dst_w = in->dst_w;
		l->key.dst_h = in->dst_h;
		l->key.opaque = in->opaque;
		/* Clipped to the output in 64 bits: dst may reach past INT32_MAX. */
		int64_t x0 = in->dst_x > 0 ? in->dst_x : 0, y0 = in->dst_y > 0 ? in->dst_y : 0;
		int64_t x1 = (int64_t)in->dst_x + in->dst_w, y1 = (int64_t)in->dst_y + in->dst_h;
		x1 = x1 < output_box.width ? x1 : output_box.width;
		y1 = y1 < output_box.height ? y1 : output_box.height;
		l->visible = x1 > x0 && y1 > y0;
		l->box = l->visible ? (struct wlr_box){ (int)x0, (int)y0, (int)(x1 - x0),
			(int)(y1 - y0) } : (struct wlr_box){ 0 };
		l->area = l->visible ? (uint64_t)l->box.width * (uint64_t)l->box.height : 0;
		if (i >= r->n) {
			continue; /* past the search's limit: composited */
		}
		l->fb = in->buffer ? wla_fb_from_wlr_buffer(r->out->backend, in->buffer) : NULL;
		if (in->buffer && !l->fb) {
			l->why = WLA_OVERLAY_BUFFER;
		}
		if (!l->fb) {
			continue;
		}
		if (l->fb->width > 32767 || l->fb->height > 32767) {
			l->why = WLA_OVERLAY_SIZE;
			continue;
		}
		struct wla_dmabuf dmabuf;
		l->has_dmabuf = l->fb->funcs->get_dmabuf && l->fb->funcs->get_dmabuf(l->fb, &dmabuf);
		l->key.format = l->fb->format;
		l->key.modifier = l->fb->modifier;
		l->key.width = l->fb->width;
		l->key.height = l->fb->height;
		bool whole = in->src_w == 0 || in->src_h == 0;
		l->key.src_x = whole ? 0 : in->src_x;
		l->key.src_y = whole ? 0 : in->src_y;
		l->key.src_w = whole ? l->fb->width << 16 : in->src_w;
		l->key.src_h = whole ? l->fb->height << 16 : in->src_h;
		if (!l->visible) {
			continue;
		}
		bool first = true;
		uint64_t hash = key_hash(&l->key);
		for (size_t k = 0; k < r->n_overlays; k++) {
			uint32_t id = wla_output_plane_id(r->overlays[k]);
			enum wla_overlay_status why = prefilter(r, l, r->overlays[k]);
			const struct refusal *known = why == WLA_OVERLAY_OK ?
				find_refusal(c, &l->key, hash, id) : NULL;
			if (known) {
				r->stats->cache_hits++;
				why = known->why;
			}
			if (why == WLA_OVERLAY_OK) {
				l->mask |= 1u << k;
			} else if (first) {
				l->why = why;
				first = false;
			}
		}
	}
	for (size_t i = 0; i < r->n; i++) {
		for (size_t j = 0; j < r->n; j++) {
			r->overlap[i * r->n + j] = i != j && r->layers[i].visible &&
				r->layers[j].visible && overlaps(&r->layers[i].box, &r->layers[j].box);
		}
	}
}

/* The chosen overlays become the output's offer for its next commit. */
static int offer(struct run *r, const bool *chosen, const int *plane)
{
	struct wla_overlay ovs[WLA_MAX_PLANES];
	size_t m = 0;
	for (size_t i = 0; i < r->n && m < WLA_MAX_PLANES; i++) {
		if (!chosen[i]) {
			continue;
		}
		ovs[m] = overlay_of(r, i, plane[i]);
		ovs[m++].buffer = r->layers[i].in->buffer;
	}
	return wla_output_set_overlays(&r->out->base, ovs, m);
}

WLA_EXPORT int wla_output_assign_layers(struct wlr_output *output, struct wla_layer *layers,
	size_t n, struct wla_assign_stats *stats)
{
	struct wla_assign_stats ignored;
	stats = stats ? stats : &ignored;
	*stats = (struct wla_assign_stats){ 0 };
	if (!wla_output_is_wla(output)) {
		wlr_log(WLR_ERROR, "assign: output %s is not a wlatomic output",
			output ? output->name : "(null)");
		return -ENODEV;
	}
	struct wla_output *out = wl_container_of(output, out, base);
	struct wla_output_planes *p = out->planes;
	for (size_t i = 0; i < n; i++) {
		layers[i].on_plane = layers[i].primary = false;
		layers[i].plane = 0;
		layers[i].status = WLA_OVERLAY_COMPOSITED;
	}
	if (!output->enabled || !out->crtc || !out->crtc->state->active || !p) {
		for (size_t i = 0; i < n; i++) {
			layers[i].status = WLA_OVERLAY_OUTPUT_OFF;
		}
		return 0;
	}
	if (!p->assign && !(p->assign = calloc(1, sizeof(*p->assign)))) {
		wlr_log(WLR_ERROR, "output %s: out of memory for plane assignment", output->name);
		return -ENOMEM;
	}
	p->assign->frame++;
	uint32_t caps = out->dev->buffer_caps;
	struct run r = {
		.out = out,
		.p = p,
		.n = n,
		.n_all = n,
		.stats = stats,
		.scans_out_cpu = (caps & (WLA_BUFFER_CAP_DATA_PTR | WLA_BUFFER_CAP_SHM)) != 0,
		.mode_w = out->crtc->state->mode.width,
		.mode_h = out->crtc->state->mode.height,
	};
	for (size_t k = 0; k < p->n; k++) {
		if (p->planes[k]->type == WLA_PLANE_OVERLAY &&
				wla_output_plane_free(out, p->planes[k])) {
			r.overlays[r.n_overlays++] = p->planes[k];
		}
	}
	/* Layers past the search's limit stay composited, and so does
	 * everything below them that they overlap. */
	if (r.n > WLA_ASSIGN_MAX_LAYERS) {
		r.n = WLA_ASSIGN_MAX_LAYERS;
	}
	r.layers = calloc(n ? n : 1, sizeof(*r.layers));
	r.overlap = calloc(r.n ? r.n * r.n : 1, sizeof(*r.overlap));
	struct wla_overlay_slot slots[WLA_MAX_PLANES];
	bool chosen[WLA_ASSIGN_MAX_LAYERS] = { 0 };
	int plane[WLA_ASSIGN_MAX_LAYERS];
	if (!r.layers || !r.overlap) {
		free(r.layers);
		free(r.overlap);
		wlr_log(WLR_ERROR, "output %s: out of memory for %zu layers", output->name, n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		r.layers[i].in = &layers[i];
	}
	describe_layers(&r, n);
	for (size_t i = r.n; i < n; i++) {
		for (size_t j = 0; j < r.n; j++) {
			if (r.layers[i].visible && r.layers[j].visible &&
					overlaps(&r.layers[i].box, &r.layers[j].box)) {
				r.layers[j].mask = 0;
				r.layers[j].why = WLA_OVERLAY_OCCLUDED;
			}
		}
	}
	bool primary = false;
	if (reuse_last(&r, slots, chosen, plane, &primary)) {
		stats->reused = true;
	} else {
		/* A bottom layer the primary plane can show goes there rather
		 * than on an overlay; if the primary refuses it, it competes for
		 * the overlays like the others. */
		uint32_t mask0 = r.n ? r.layers[0].mask : 0;
		bool candidate = r.n && primary_candidate(&r);
		if (candidate) {
			r.layers[0].mask = 0;
		}
		place(&r, slots, chosen, plane);
		primary = candidate && try_primary(&r, slots, chosen, plane);
		if (candidate && !primary && mask0) {
			r.layers[0].mask = mask0;
			place(&r, slots, chosen, plane);
		}
	}
	p->trial = NULL;
	p->n_trial = 0;
	int ret = offer(&r, chosen, plane);
	int placed = 0;
	for (size_t i = 0; i < r.n; i++) {
		struct layer *l = &r.layers[i];
		struct wla_layer *in = l->in;
		if (ret == 0 && chosen[i]) {
			in->on_plane = true;
			in->plane = wla_output_plane_id(r.overlays[plane[i]]);
			in->status = WLA_OVERLAY_OK;
			placed++;
			continue;
		}
		if (ret == 0 && i == 0 && primary) {
			in->on_plane = in->primary = true;
			in->plane = wla_output_plane_id(out->crtc->primary);
			in->status = WLA_OVERLAY_OK;
			placed++;
			continue;
		}
		in->status = l->why;
		if (l->mask && l->visible && l->why == WLA_OVERLAY_COMPOSITED) {
			for (size_t j = i + 1; j < r.n; j++) {
				if (!chosen[j] && r.overlap[i * r.n + j]) {
					in->status = WLA_OVERLAY_OCCLUDED;
				}
			}
		}
	}
	if (ret == 0) {
		remember_last(&r, chosen, plane, primary);
	} else {
		p->assign->has_last = false;
		placed = 0;
	}
	for (size_t i = 0; i < n; i++) {
		wla_fb_put(r.layers[i].fb);
	}
	free(r.layers);
	free(r.overlap);
	return ret < 0 ? ret : placed;
}
