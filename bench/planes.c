/*
 * wla-bench planes: what planes save, in one run.
 *
 * 1. The example compositor (tinywl-measured) with a client that redraws
 *    every frame, for N frames at 60 Hz: a fullscreen 1920x1080 client, and a
 *    1280x720 client in a window (video-like), each composited (tinywl
 *    --no-planes), on a plane (the fullscreen one on the primary plane, the
 *    window on an overlay), and on wlroots' headless backend as the
 *    reference. Compositor CPU per frame (tinywl's process, user+system),
 *    frames presented, missed vblanks, and how many frames had the client's
 *    own buffer on a plane, as the backend counts them. Median of R runs by
 *    CPU. Goal (issue 14): with planes at most a tenth of the composited CPU.
 * 2. The layer-to-plane helper's cost per frame with 1, 4 and 8 windows:
 *    a steady scene (new buffers), windows moving without new overlaps, and
 *    windows reshuffled every frame (a full search); checks and driver tests
 *    per frame, against one wlr_output_test of the same output.
 * 3. Capture: the VDC composing a 1080p primary with a 64x64 cursor (what a
 *    capture does), against a plain copy of the same bytes.
 * Goals are reported, not asserted; the exit status says whether every run
 * worked.
 */
#include <drm_fourcc.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/render/allocator.h>
#include <wlr/render/wlr_renderer.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/types/wlr_output.h>
#include <wlr/util/log.h>
#include <wlatomic/backend.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>
#include <wlatomic/planes.h>
#include "backend/vdc.h"
#include "backend/wlr.h"
#include "commands.h"
#include "runner.h"
#include "util.h"
/* Shared with the tests, which make their backends the same way. */
#include "../tests/lib/backend.h"

#define RUN_TIMEOUT_MS 180000
#define CLIENT_EXTRA_FRAMES 50
/* Frames before CPU time is counted: the client starting, its first frames
 * composited before its window is placed, its buffers' pages faulted in. */
#define WARMUP_FRAMES 60
#define MAX_RUNS 9
#define GOAL_PLANE_CPU 0.1    /* planes: at most a tenth of the composited CPU */
#define GOAL_CAPTURE_RATIO 1.2 /* capture within 1.2x of a plain copy */

/* ---- 1. The compositor with a client ---- */

enum kind { COMPOSITED, PLANES, HEADLESS };

struct scene_config {
	const char *name;
	const char *scene; /* rows with the same scene compare */
	enum kind kind;
	int width, height; /* the client's */
	const char *window_pos;
};

static const struct scene_config scene_configs[] = {
	{ "fullscreen composited", "fullscreen", COMPOSITED, 1920, 1080, "0,0" },
	{ "fullscreen on primary", "fullscreen", PLANES, 1920, 1080, "0,0" },
	{ "fullscreen headless", "fullscreen", HEADLESS, 1920, 1080, "0,0" },
	{ "video composited", "video", COMPOSITED, 1280, 720, "200,150" },
	{ "video on overlay", "video", PLANES, 1280, 720, "200,150" },
	{ "video headless", "video", HEADLESS, 1280, 720, "200,150" },
};
#define N_SCENES (sizeof(scene_configs) / sizeof(scene_configs[0]))

struct scene_result {
	double presented, missed, cpu_us, client_planes;
};

static void scene_env(const void *data)
{
	const struct scene_config *c = data;
	if (c->kind == HEADLESS) {
		bench_env_headless("1");
	} else {
		setenv("WLA_OUTPUTS", "1920x1080@60", 1);
		setenv("WLA_FLIP_DEPTH", "1", 1);
		setenv("WLA_CONTROL", "off", 1);
	}
}

static bool run_scene(const char *tinywl, const char *client, long frames,
	const struct scene_config *c, struct scene_result *r, bool verbose)
{
	char quoted[PATH_MAX * 4], startup[PATH_MAX * 4 + 128], n[32], warmup[32];
	if (!bench_quote(quoted, sizeof(quoted), client)) {
		fprintf(stderr, "%s: the client's path is too long\n", bench_prog);
		return false;
	}
	snprintf(startup, sizeof(startup), "%s -W %d -H %d --frames %ld", quoted, c->width,
		c->height, frames + WARMUP_FRAMES + CLIENT_EXTRA_FRAMES);
	snprintf(n, sizeof(n), "%ld", frames + WARMUP_FRAMES);
	snprintf(warmup, sizeof(warmup), "%d", WARMUP_FRAMES);
	/* The client redraws every frame: the probe need not damage the scene
	 * to keep frames coming (it would make tinywl render what planes
	 * show). */
	const char *argv[20] = { tinywl, "-s", startup, "--exit-after-frames", n,
		"--cpu-after", warmup, "--window-pos", c->window_pos, "--cursor", "1900,1060",
		"--no-forced-damage" };
	size_t argc = 12;
	if (c->kind == COMPOSITED) {
		argv[argc++] = "--no-planes";
	} else if (c->kind == HEADLESS) {
		argc = bench_args_headless(argv, argc);
	}
	char line[8192];
	double forced;
	if (!bench_run_stats(c->name, argv, scene_env, c, RUN_TIMEOUT_MS, line, sizeof(line))) {
		return false;
	}
	if (verbose) {
		printf("  %s: %s", c->name, line);
	}
	if (!bench_stats_field(line, "frames_presented", &r->presented) ||
			!bench_stats_field(line, "missed_vblanks", &r->missed) ||
			!bench_stats_field(line, "cpu_us_per_frame", &r->cpu_us) ||
			!bench_stats_field(line, "frames_client_planes", &r->client_planes) ||
			!bench_stats_field(line, "forced_renders", &forced)) {
		return false;
	}
	if (forced > 0) {
		fprintf(stderr, "%s: %s: the probe forced renders: %s", bench_prog, c->name, line);
		return false;
	}
	if (isnan(r->cpu_us) || isnan(r->presented)) {
		fprintf(stderr, "%s: %s: the stats line lacks figures: %s", bench_prog, c->name,
			line);
		return false;
	}
	return true;
}

static bool bench_scenes(long runs, long frames, bool verbose)
{
	char *tinywl = NULL, *client = NULL;
	if (bench_program(NULL, BENCH_TINYWL, &tinywl) == NULL ||
			bench_program(NULL, BENCH_PATTERN_CLIENT, &client) == NULL) {
		free(tinywl);
		free(client);
		return false;
	}
	static struct scene_result results[N_SCENES][MAX_RUNS];
	struct scene_result median[N_SCENES];
	bool ok = true;
	/* Rows interleaved run by run, so that a slow spell of the machine
	 * hits every row alike. */
	for (long i = 0; i < runs && ok; i++) {
		for (size_t c = 0; c < N_SCENES && ok; c++) {
			ok = run_scene(tinywl, client, frames, &scene_configs[c], &results[c][i],
				verbose);
		}
	}
	free(tinywl);
	free(client);
	if (!ok) {
		return false;
	}
	for (size_t c = 0; c < N_SCENES; c++) {
		double cpu[MAX_RUNS];
		for (long i = 0; i < runs; i++) {
			cpu[i] = results[c][i].cpu_us;
		}
		median[c] = results[c][bench_median_index(cpu, (size_t)runs)];
	}
	printf("\nThe example compositor with a client redrawing every frame, %ld frames at "
		"60 Hz on a 1920x1080 output after %d of\nwarm-up (all counted in presented, "
		"missed, client frames), median of %ld runs by CPU per frame (tinywl's\nprocess, "
		"user+system, over the %ld); cpu x = against the composited row of the scene; "
		"client frames = frames\npresented with the client's own buffer on a plane\n\n",
		frames, WARMUP_FRAMES, runs, frames);
	printf("%-24s %9s %6s %10s %7s %13s\n", "config", "presented", "missed", "cpu us/f",
		"cpu x", "client frames");
	for (size_t c = 0; c < N_SCENES; c++) {
		const struct scene_result *r = &median[c];
		const struct scene_result *comp = NULL;
		for (size_t k = 0; k < N_SCENES; k++) {
			if (scene_configs[k].kind == COMPOSITED &&
					strcmp(scene_configs[k].scene, scene_configs[c].scene) == 0) {
				comp = &median[k];
			}
		}
		char b[5][32];
		printf("%-24s %9s %6s %10s %7s %13s\n", scene_configs[c].name,
			bench_fmt(b[0], r->presented, 0, false), bench_fmt(b[1], r->missed, 0, false),
			bench_fmt(b[2], r->cpu_us, 1, false),
			bench_fmt(b[3], comp ? r->cpu_us / comp->cpu_us : NAN, 3, false),
			bench_fmt(b[4], r->client_planes, 0, false));
	}
	printf("Goals (issue 14):\n");
	for (size_t c = 0; c < N_SCENES; c++) {
		if (scene_configs[c].kind != PLANES) {
			continue;
		}
		const struct scene_result *r = &median[c], *comp = &median[c - 1];
		double ratio = r->cpu_us / comp->cpu_us;
		bool on_plane = r->client_planes >= 0.9 * r->presented;
		printf("  %-22s CPU per frame <= %.1fx composited   %-6s %.3fx%s\n",
			scene_configs[c].name, GOAL_PLANE_CPU,
			bench_verdict(ratio <= GOAL_PLANE_CPU && on_plane), ratio,
			on_plane ? "" : " (the client was not on a plane)");
	}
	return true;
}

/* ---- 2 and 3: in this process, on the VDC ---- */

struct mem_buffer {
	struct wlr_buffer base;
	uint32_t format;
	uint32_t *pixels;
};

static void mem_destroy(struct wlr_buffer *b)
{
	struct mem_buffer *m = wl_container_of(b, m, base);
	free(m->pixels);
	free(m);
}

static bool mem_begin(struct wlr_buffer *b, uint32_t flags, void **data, uint32_t *format,
	size_t *stride)
{
	struct mem_buffer *m = wl_container_of(b, m, base);
	*data = m->pixels;
	*format = m->format;
	*stride = (size_t)b->width * 4;
	return true;
}

static void mem_end(struct wlr_buffer *b)
{
}

static const struct wlr_buffer_impl mem_impl = {
	.destroy = mem_destroy,
	.begin_data_ptr_access = mem_begin,
	.end_data_ptr_access = mem_end,
};

static struct wlr_buffer *mem_buffer(int w, int h, uint32_t format, uint32_t color)
{
	struct mem_buffer *m = calloc(1, sizeof(*m));
	m->pixels = malloc((size_t)w * (size_t)h * 4);
	if (!m->pixels) {
		abort();
	}
	for (size_t i = 0; i < (size_t)w * (size_t)h; i++) {
		m->pixels[i] = color;
	}
	m->format = format;
	wlr_buffer_init(&m->base, &mem_impl, w, h);
	return &m->base;
}

struct vdc_bench {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct wlr_backend *backend;
	struct wlr_output *output;
	struct wl_listener new_output, present;
	int presented;
	struct wlr_buffer *primary[2];
	int next;
};

static void handle_present(struct wl_listener *l, void *data)
{
	struct vdc_bench *b = wl_container_of(l, b, present);
	b->presented += ((struct wlr_output_event_present *)data)->presented;
}

static void handle_new_output(struct wl_listener *l, void *data)
{
	struct vdc_bench *b = wl_container_of(l, b, new_output);
	b->output = data;
	b->present.notify = handle_present;
	wl_signal_add(&b->output->events.present, &b->present);
}

/* Commit the next primary buffer and wait for it to latch. */
static bool vdc_frame(struct vdc_bench *b)
{
	int want = b->presented + 1;
	wlr_output_attach_buffer(b->output, b->primary[b->next++ % 2]);
	if (!wlr_output_commit(b->output)) {
		return false;
	}
	uint64_t end = bench_now_ns() + 2000000000u;
	while (b->presented < want && bench_now_ns() < end) {
		wl_event_loop_dispatch(b->loop, 5);
	}
	return b->presented >= want;
}

static bool vdc_setup(struct vdc_bench *b, uint32_t overlays)
{
	memset(b, 0, sizeof(*b));
	bench_scrub_env();
	setenv("WLA_CONTROL", "off", 1);
	setenv("WLA_VIRTUAL_INPUT", "off", 1);
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.outputs[0].modes[0] = (struct wla_config_mode){ 1920, 1080, 60000 };
	cfg.outputs[0].n_modes = 1;
	cfg.overlay_planes = overlays;
	cfg.flip_depth = 1;
	b->new_output.notify = handle_new_output;
	b->backend = test_backend_create(&b->display, &b->loop, &cfg, &b->new_output);
	if (!b->backend) {
		return false;
	}
	if (!wlr_backend_start(b->backend) || !b->output) {
		return false;
	}
	b->primary[0] = mem_buffer(1920, 1080, DRM_FORMAT_XRGB8888, 0xff203040);
	b->primary[1] = mem_buffer(1920, 1080, DRM_FORMAT_XRGB8888, 0xff304050);
	wlr_output_set_mode(b->output, wlr_output_preferred_mode(b->output));
	wlr_output_enable(b->output, true);
	return vdc_frame(b);
}

static void vdc_finish(struct vdc_bench *b)
{
	wlr_buffer_drop(b->primary[0]);
	wlr_buffer_drop(b->primary[1]);
	wl_list_remove(&b->new_output.link);
	wl_list_remove(&b->present.link);
	wl_display_destroy(b->display);
}

enum motion { STEADY, MOVING, RESHUFFLED, REFUSING };
static const char *const motion_names[] = { "steady", "moving", "reshuffled", "refusing" };

/* Windows of the scene at frame f: 300x200, in a row that wraps; moving
 * shifts them by f % 8 pixels, reshuffled changes which overlap which. */
static void scene_layers(struct wla_layer *l, struct wlr_buffer **bufs, size_t n,
	enum motion m, long f)
{
	l[0] = (struct wla_layer){ .dst_w = 1920, .dst_h = 1080 }; /* the background */
	for (size_t i = 0; i < n; i++) {
		int32_t x = 40 + (int32_t)(i % 5) * 360, y = 40 + (int32_t)(i / 5) * 300;
		if (m == MOVING) {
			x += (int32_t)(f % 8);
		} else if (m == RESHUFFLED || m == REFUSING) {
			x = 40 + (int32_t)((i * 7 + (size_t)f * 3) % 16) * 100;
			y = 40 + (int32_t)((i * 3 + (size_t)f) % 6) * 120;
		}
		l[1 + i] = (struct wla_layer){
			.buffer = bufs[2 * i + (size_t)(f % 2)],
			.dst_x = x, .dst_y = y, .dst_w = 300, .dst_h = 200, .opaque = true,
		};
	}
}

/*
 * The peer search, as libliftoff 0.3 allocates (alloc.c, written here from
 * its description): planes from the top down, at each every free layer
 * tried and the partial placement tested at once (its TEST_ONLY: here
 * wla_output_set_overlays and wlr_output_test), the bound best >= score +
 * planes left, a layer only below the layers on higher planes and not under
 * a composited layer that overlaps it; the last placement kept with one
 * test when no layer moved. Counts its tests.
 */
struct liftoff_peer {
	struct wlr_output *output;
	const struct wla_output_plane *planes; /* overlays, top first */
	size_t n_planes;
	struct wla_layer *layers;
	size_t n;
	int cur[16], best[16]; /* plane index per layer, -1 */
	size_t best_score;
	uint64_t tests;
	struct wla_layer last[16];
	size_t n_last;
};

static bool peer_boxes_overlap(const struct wla_layer *a, const struct wla_layer *b)
{
	return a->dst_x < b->dst_x + (int32_t)b->dst_w && b->dst_x < a->dst_x + (int32_t)a->dst_w &&
		a->dst_y < b->dst_y + (int32_t)b->dst_h && b->dst_y < a->dst_y + (int32_t)a->dst_h;
}

static bool peer_test(struct liftoff_peer *p, const int *alloc)
{
	struct wla_overlay ovs[16];
	size_t m = 0;
	for (size_t i = 0; i < p->n; i++) {
		if (alloc[i] >= 0) {
			const struct wla_layer *l = &p->layers[i];
			ovs[m++] = (struct wla_overlay){ .buffer = l->buffer, .dst_x = l->dst_x,
				.dst_y = l->dst_y, .dst_w = l->dst_w, .dst_h = l->dst_h,
				.z = (int32_t)i, .plane = p->planes[alloc[i]].id };
		}
	}
	p->tests++;
	return wla_output_set_overlays(p->output, ovs, m) == 0 && wlr_output_test(p->output);
}

static void peer_step(struct liftoff_peer *p, size_t plane, size_t score, size_t above)
{
	if (plane == p->n_planes) {
		if (score > p->best_score) {
			p->best_score = score;
			memcpy(p->best, p->cur, sizeof(p->best));
		}
		return;
	}
	if (p->best_score >= score + (p->n_planes - plane)) {
		return;
	}
	/* Layers below those on higher planes: indices under `above`. */
	for (size_t i = 0; i < above; i++) {
		if (!p->layers[i].buffer || p->cur[i] >= 0) {
			continue;
		}
		bool covered = false;
		for (size_t j = i + 1; j < p->n && !covered; j++) {
			covered = p->cur[j] < 0 && peer_boxes_overlap(&p->layers[i], &p->layers[j]);
		}
		if (covered) {
			continue;
		}
		p->cur[i] = (int)plane;
		if (peer_test(p, p->cur)) {
			peer_step(p, plane + 1, score + 1, i);
		}
		p->cur[i] = -1;
	}
	peer_step(p, plane + 1, score, above);
}

static void peer_frame(struct liftoff_peer *p)
{
	bool same = p->n_last == p->n;
	for (size_t i = 0; same && i < p->n; i++) {
		same = p->last[i].dst_x == p->layers[i].dst_x && p->last[i].dst_y == p->layers[i].dst_y;
	}
	memcpy(p->last, p->layers, p->n * sizeof(*p->layers));
	p->n_last = p->n;
	if (same && peer_test(p, p->best)) {
		return;
	}
	for (size_t i = 0; i < 16; i++) {
		p->cur[i] = p->best[i] = -1;
	}
	p->best_score = 0;
	peer_step(p, 0, 0, p->n);
}

static bool bench_assign(long calls)
{
	struct vdc_bench b;
	if (!vdc_setup(&b, 8)) {
		fprintf(stderr, "%s: the VDC backend did not start\n", bench_prog);
		return false;
	}
	struct wlr_buffer *bufs[16];
	for (size_t i = 0; i < 16; i++) {
		bufs[i] = mem_buffer(300, 200, DRM_FORMAT_XRGB8888, 0xff000000u + (uint32_t)i * 16);
	}
	/* The peer: one wlr_output_test of a buffer commit of this output. */
	double t0 = bench_thread_cpu_us();
	bool tested = true;
	for (long i = 0; i < calls; i++) {
		wlr_output_attach_buffer(b.output, b.primary[i % 2]);
		tested &= wlr_output_test(b.output);
		wlr_output_rollback(b.output);
	}
	if (!tested) {
		fprintf(stderr, "%s: wlr_output_test refused the peer's state\n", bench_prog);
		vdc_finish(&b);
		return false;
	}
	double test_us = (bench_thread_cpu_us() - t0) / (double)calls;
	printf("\nThe layer-to-plane helper (wla_output_assign_layers), VDC with 8 overlay "
		"planes, %ld calls per row;\nthe peer is one wlr_output_test of the same output: "
		"%.2f us\n\n", calls, test_us);
	printf("refusing: reshuffled, and two of the overlay planes refuse every layer (a limit "
		"only the driver knows);\nliftoff-style: the same frames through a search as "
		"libliftoff 0.3's (bench/planes.c, peer_step), its tests per frame\n\n");
	printf("%-8s %-11s %10s %8s %10s %10s %10s %8s %12s %12s\n", "windows", "scene",
		"us/frame", "x test", "checks/f", "driver/f", "cached/f", "placed", "peer us/f",
		"peer tests/f");
	static const size_t counts[] = { 1, 4, 8 };
	bool ok = true;
	struct wla_output_plane all[16], overlays[16];
	size_t n_all = wla_output_get_planes(b.output, all, 16), n_ov = 0;
	for (size_t k = n_all; k-- > 0;) {
		if (all[k].type == WLA_OUTPUT_PLANE_OVERLAY) {
			overlays[n_ov++] = all[k];
		}
	}
	struct wla_output *wout = wl_container_of(b.output, wout, base);
	struct wla_vdc *vdc = wla_vdc_from_device(wout->dev);
	/* Every row of the helper first, then every row of the peer: the
	 * peer's many offers would leave the heap to the helper's rows in
	 * another state than the helper's own frames do. */
	struct row {
		double us, checks, driver, cached, peer_us, peer_tests;
		int placed;
	} rows[3][4];
	for (int pass = 0; pass < 2; pass++) {
		for (size_t ci = 0; ci < 3; ci++) {
			size_t n = counts[ci];
			for (int m = STEADY; m <= REFUSING; m++) {
				struct row *row = &rows[ci][m];
				vdc->refuse_planes = m == REFUSING ? (1u << (overlays[0].id - 1)) |
					(1u << (overlays[3].id - 1)) : 0;
				struct wla_layer layers[9];
				if (pass == 1) {
					/* The peer on the same frames, fewer: it is slow. */
					long peer_calls = calls / 20 > 10 ? calls / 20 : 10;
					struct liftoff_peer peer = { .output = b.output, .planes = overlays,
						.n_planes = n_ov, .layers = layers + 1, .n = n };
					scene_layers(layers, bufs, n, (enum motion)m, 0);
					peer_frame(&peer);
					peer.tests = 0;
					t0 = bench_thread_cpu_us();
					for (long f = 1; f <= peer_calls; f++) {
						scene_layers(layers, bufs, n, (enum motion)m, f);
						peer_frame(&peer);
					}
					row->peer_us = (bench_thread_cpu_us() - t0) / (double)peer_calls;
					row->peer_tests = (double)peer.tests / (double)peer_calls;
					continue;
				}
				struct wla_assign_stats st;
				uint64_t checks = 0, driver = 0, cached = 0;
				/* The first call places; the rest are the frames. */
				scene_layers(layers, bufs, n, (enum motion)m, 0);
				wla_output_assign_layers(b.output, layers, n + 1, &st);
				t0 = bench_thread_cpu_us();
				for (long f = 1; f <= calls; f++) {
					scene_layers(layers, bufs, n, (enum motion)m, f);
					row->placed = wla_output_assign_layers(b.output, layers, n + 1, &st);
					checks += st.checks;
					driver += st.driver_tests;
					cached += st.cache_hits;
				}
				row->us = (bench_thread_cpu_us() - t0) / (double)calls;
				row->checks = (double)checks / (double)calls;
				row->driver = (double)driver / (double)calls;
				row->cached = (double)cached / (double)calls;
				ok &= row->placed >= 0;
			}
		}
	}
	for (size_t ci = 0; ci < 3; ci++) {
		for (int m = STEADY; m <= REFUSING; m++) {
			const struct row *row = &rows[ci][m];
			printf("%-8zu %-11s %10.2f %8.2f %10.2f %10.2f %10.2f %8d %12.2f %12.2f\n",
				counts[ci], motion_names[m], row->us, row->us / test_us, row->checks,
				row->driver, row->cached, row->placed, row->peer_us, row->peer_tests);
		}
	}
	vdc->refuse_planes = 0;
	wla_output_set_overlays(b.output, NULL, 0);
	vdc_frame(&b);
	vdc_frame(&b);
	for (size_t i = 0; i < 16; i++) {
		wlr_buffer_drop(bufs[i]);
	}
	vdc_finish(&b);
	return ok;
}

static bool bench_capture(long reps)
{
	struct vdc_bench b;
	if (!vdc_setup(&b, 0)) {
		fprintf(stderr, "%s: the VDC backend did not start\n", bench_prog);
		return false;
	}
	/* A 64x64 ARGB cursor image, half transparent, on the cursor plane. */
	struct wlr_buffer *cursor = mem_buffer(64, 64, DRM_FORMAT_ARGB8888, 0x80402010);
	struct wla_output *out = wl_container_of(b.output, out, base);
	struct wla_vdc_output *vout = wla_vdc_output_from_crtc(out->crtc);
	bool ok = b.output->impl->set_cursor(b.output, cursor, 0, 0) &&
		b.output->impl->move_cursor(b.output, 700, 500) && vdc_frame(&b) && vdc_frame(&b);
	size_t bytes = (size_t)1920 * 1080 * 4;
	uint32_t *src = malloc(bytes), *dst = malloc(bytes);
	double copy_us = NAN, capture_us = NAN;
	if (ok && src && dst) {
		memset(src, 0x5a, bytes);
		memset(dst, 0, bytes);
		double copies[64], captures[64];
		reps = reps > 64 ? 64 : reps;
		for (long i = 0; i < reps; i++) {
			/* A plain copy of the same bytes, into memory not touched
			 * before, as the capture's image is new each time. */
			double t0 = bench_thread_cpu_us();
			uint32_t *fresh = malloc(bytes);
			if (!fresh) {
				abort();
			}
			memcpy(fresh, src, bytes);
			/* The copy is used: the compiler may not drop it. */
			__asm__ volatile("" : : "r"(fresh) : "memory");
			ok &= fresh[bytes / 8] == 0x5a5a5a5a;
			free(fresh);
			copies[i] = bench_thread_cpu_us() - t0;
			t0 = bench_thread_cpu_us();
			struct wla_image *image = wla_vdc_compose(vout);
			ok &= image != NULL && image->width == 1920 &&
				(wla_image_pixel(image, 0, 0) & 0xffffff) == 0x203040 &&
				wla_image_pixel(image, 700, 500) != wla_image_pixel(image, 0, 0);
			wla_image_destroy(image);
			captures[i] = bench_thread_cpu_us() - t0;
		}
		copy_us = bench_median(copies, (size_t)reps);
		capture_us = bench_median(captures, (size_t)reps);
	}
	free(src);
	free(dst);
	b.output->impl->set_cursor(b.output, NULL, 0, 0);
	vdc_frame(&b);
	vdc_frame(&b);
	wlr_buffer_drop(cursor);
	vdc_finish(&b);
	if (!ok) {
		fprintf(stderr, "%s: the capture benchmark did not work\n", bench_prog);
		return false;
	}
	printf("\nCapture of a 1920x1080 XRGB8888 primary plane with a 64x64 ARGB cursor (the "
		"VDC's composition,\nwhat wla_output_capture does: image made, composed, freed),"
		"\nmedian of %ld, against a plain copy of the same 8294400 bytes into new memory, "
		"freed after\n\n", reps);
	printf("%-32s %10s %7s\n", "row", "us", "x copy");
	printf("%-32s %10.1f %7.3f\n", "plain copy (malloc+memcpy+free)", copy_us, 1.0);
	printf("%-32s %10.1f %7.3f\n", "capture 1080p + cursor", capture_us, capture_us / copy_us);
	printf("Goals (issue 14):\n  capture within %.1fx of a plain copy    %-6s %.3fx\n",
		GOAL_CAPTURE_RATIO, bench_verdict(capture_us / copy_us <= GOAL_CAPTURE_RATIO),
		capture_us / copy_us);
	return true;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: wla-bench planes [-n RUNS] [-f FRAMES] [-c CALLS] [-q] [-v]\n"
		"  -n RUNS    runs of each compositor row, the median reported (default 3)\n"
		"  -f FRAMES  frames per compositor run (default 600)\n"
		"  -c CALLS   helper calls per row, capture repetitions (default 2000)\n"
		"  -q         quick: only the helper and the capture (no compositor rows)\n"
		"  -v         print every run's stats line\n");
}

int bench_planes_main(int argc, char *argv[])
{
	long runs = 3, frames = 600, calls = 2000;
	bool verbose = false, quick = false;
	const struct bench_option opts[] = {
		{ "runs", 'n', 1, MAX_RUNS, &runs, NULL },
		{ "frames", 'f', 60, 100000, &frames, NULL },
		{ "calls", 'c', 10, 1000000, &calls, NULL },
		{ "quick", 'q', 0, 0, NULL, &quick },
		{ "verbose", 'v', 0, 0, NULL, &verbose },
	};
	int status = bench_parse_options(argc, argv, opts, WLA_ARRAY_SIZE(opts), usage);
	if (status >= 0) {
		return status;
	}
	wlr_log_init(WLR_ERROR, NULL);
	bool ok = quick || bench_scenes(runs, frames, verbose);
	/* Refused trials are no errors: the peer's tests would log each
	 * (libliftoff logs refused TEST_ONLYs at debug level). */
	wlr_log_init(WLR_SILENT, NULL);
	ok &= bench_assign(calls);
	wlr_log_init(WLR_ERROR, NULL);
	ok &= bench_capture(calls < 64 ? calls : 64);
	return ok ? 0 : 1;
}
