/*
 * tinywl-measured: examples/tinywl/tinywl.c, unchanged, with this probe linked
 * in. The example stays an example; what the tests and benchmarks need on
 * top of it lives here:
 *  - the statistics line of every output on exit: present intervals (from
 *    wla_output_get_stats on wlatomic, from present events otherwise), vblank
 *    sequence errors, latency from render start to presentation, jitter,
 *    CPU per frame, and checks of every present event against the probe's
 *    own clock (presented before its commit returned; a queued gap);
 *  - -s CMD with the compositor's exit status following the client's,
 *    --capture after N frames, --exit-after-frames, buffer locks on exit;
 *  - a compositor that stalls (--stall-every/--stall-ms) and outputs that
 *    churn (--churn-ms);
 *  - the same compositor on wlroots' own backends (--backend auto, --mode).
 *
 * How: tinywl.c is compiled with main renamed tinywl_main, and the link wraps
 * (-Wl,--wrap) the few wlroots/wlatomic calls a probe needs to see: backend
 * creation (to listen to every output before tinywl does; --backend auto
 * makes it wlr_backend_autocreate), the socket name,
 * wlr_scene_output_commit and wla_scene_output_commit (render start,
 * stalls, damage while a frame count is pending), wlr_output_preferred_mode (--mode) and wl_display_run (the
 * client before it, the statistics after it).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wayland-server-core.h>
#include <wlr/backend.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_damage.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/util/log.h>

#include <wlatomic/backend.h>
#include <wlatomic/scene.h>
#include <wlatomic/capture.h>
#include <wlatomic/config.h>
#include "util.h"

/* Presented frames whose intervals and latencies the statistics cover. */
#define PROBE_WINDOW 4096
/* Commit times kept for matching present events (by commit_seq): more than
 * any flip queue holds. */
#define PROBE_RING 64
#define PROBE_CHURN_CONNECTOR "SOAK-1"

int tinywl_main(int argc, char *argv[]);
struct wlr_backend *__real_wla_backend_create(struct wl_display *display,
	const struct wla_config *config);
const char *__real_wl_display_add_socket_auto(struct wl_display *display);
bool __real_wlr_scene_output_commit(struct wlr_scene_output *scene_output);
struct wlr_output_mode *__real_wlr_output_preferred_mode(struct wlr_output *output);
void __real_wl_display_run(struct wl_display *display);
struct wlr_backend *__wrap_wla_backend_create(struct wl_display *display,
	const struct wla_config *config);
const char *__wrap_wl_display_add_socket_auto(struct wl_display *display);
bool __wrap_wlr_scene_output_commit(struct wlr_scene_output *scene_output);
bool __real_wla_scene_output_commit(struct wla_scene *wla_scene,
	struct wlr_scene_output *scene_output);
bool __wrap_wla_scene_output_commit(struct wla_scene *wla_scene,
	struct wlr_scene_output *scene_output);
struct wlr_output_mode *__wrap_wlr_output_preferred_mode(struct wlr_output *output);
void __wrap_wl_display_run(struct wl_display *display);

struct probe_output {
	struct wl_list link;
	struct wlr_output *wlr_output;
	uint64_t commits, frames_committed, frames_presented, renders;
	/* Scene commits given whole-output damage so that frames keep coming
	 * (a static client, or a frame asked for without damage). */
	uint64_t forced_renders;
	struct wlr_scene_output *scene_output; /* the last one committed */
	/* Vblank sequence check: seq must advance by the periods that passed. */
	uint64_t seq_errors;
	bool seq_seen, seq_checked;
	uint32_t last_seq;
	struct timespec last_when;
	/* Measured the same way for every backend, so that wlatomic and
	 * wlroots' own backends compare like with like. */
	uint64_t period_ns, last_present_ns;
	uint64_t intervals[PROBE_WINDOW], n_intervals;
	uint64_t latencies[PROBE_WINDOW], n_latencies;
	/* From the time a present event reports to its arrival here. */
	uint64_t event_lags[PROBE_WINDOW], n_event_lags;
	/* By the commit_seq the commit will have: when its render started, and
	 * when the commit returned. */
	struct {
		uint32_t commit_seq;
		bool start_valid, done_valid;
		uint64_t start_ns, done_ns;
	} commits_ring[PROBE_RING];
	uint64_t presents_checked, unmatched_presents, early_presents;
	/* wlr_scene_output_commit calls that failed (the backend refused). */
	uint64_t commit_failures;
	/* The commit that last set a mode or enabled the output: its present
	 * starts a new timing, no interval is measured from it. */
	uint32_t restart_seq;
	bool restart_valid;
	uint64_t gaps_checked, queued_gaps;
	bool gap_prev_seen;
	uint32_t gap_prev_seq;
	uint64_t gap_prev_when_ns;
	/* Process CPU time and frames at the first presented frame: per-frame
	 * figures leave start-up out. */
	bool cpu_started;
	uint64_t cpu_start_us, cpu_start_frames;
	struct wl_listener commit, present, destroy;
};

static struct probe {
	/* Options. */
	const char *startup_cmd, *capture_path;
	bool backend_auto, deadline, mode_set;
	struct wla_config_mode mode;
	long capture_after, exit_after_frames, stall_every, stall_ms, churn_ms;
	long cpu_after; /* frames presented before CPU time is counted */
	bool no_forced_damage; /* the client redraws: frames come without help */

	struct wl_display *display;
	struct wlr_backend *backend;
	const char *socket;
	struct wl_list outputs; /* probe_output.link, in creation order */
	pid_t child;
	int exit_status; /* overrides tinywl's 0 */
	struct wla_capture *capture;
	bool capture_requested, capture_written, run_ended;
	struct wl_event_source *churn_source, *sigchld_source;
	uint64_t churn_steps;
	struct wl_listener new_output, backend_destroy;
} probe = { .capture_after = 30 };

static uint64_t now_ns(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return wla_timespec_to_ns(&now);
}

static uint64_t cpu_time_us(void)
{
	struct rusage usage;
	if (getrusage(RUSAGE_SELF, &usage) != 0) {
		return 0;
	}
	return (uint64_t)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000u +
		(uint64_t)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

static void probe_exit(int status)
{
	probe.exit_status = status;
	wl_display_terminate(probe.display);
}

static struct probe_output *first_output(void)
{
	struct probe_output *output = NULL;
	if (!wl_list_empty(&probe.outputs)) {
		output = wl_container_of(probe.outputs.next, output, link);
	}
	return output;
}

static struct probe_output *find_output(struct wlr_output *wlr_output)
{
	struct probe_output *output;
	wl_list_for_each(output, &probe.outputs, link) {
		if (output->wlr_output == wlr_output) {
			return output;
		}
	}
	return NULL;
}

/* A frame-count action (capture, exit) is waiting for frames to be presented. */
static bool frame_count_pending(void)
{
	return (probe.capture_path != NULL && !probe.capture_requested) ||
		probe.exit_after_frames > 0;
}

/* ---- Per-present checks ---- */

static uint64_t present_period_ns(const struct probe_output *output,
	const struct wlr_output_event_present *event)
{
	if (event->refresh > 0) {
		return (uint64_t)event->refresh;
	}
	if (output->wlr_output->refresh > 0) {
		/* wlroots' headless backend leaves refresh 0: its mode's. */
		return (1000000000000u + (uint64_t)output->wlr_output->refresh / 2) /
			(uint64_t)output->wlr_output->refresh;
	}
	return 0;
}

/*
 * A presented frame's vblank sequence number must have advanced by exactly
 * the number of refresh periods that passed since the previous one; anything
 * else (a repeat, a jump back, a count that disagrees with the clock) is a
 * sequence error.
 */
static void check_present_seq(struct probe_output *output,
	const struct wlr_output_event_present *event)
{
	if (event->seq == 0 || event->when == NULL) {
		/* The backend has no vblank counter (wlroots' headless does this). */
		return;
	}
	if (output->seq_seen) {
		int32_t delta = (int32_t)(event->seq - output->last_seq);
		int64_t refresh_ns = (int64_t)present_period_ns(output, event);
		bool ok = delta > 0;
		if (ok && refresh_ns > 0) {
			int64_t dt = (int64_t)wla_timespec_to_ns(event->when) -
				(int64_t)wla_timespec_to_ns(&output->last_when);
			ok = llround((double)dt / (double)refresh_ns) == delta;
		}
		if (!ok) {
			output->seq_errors++;
			wlr_log(WLR_DEBUG, "probe: output %s: seq %" PRIu32 " after %" PRIu32
				" does not match the clock", output->wlr_output->name, event->seq,
				output->last_seq);
		}
	}
	output->seq_seen = true;
	output->seq_checked = true;
	output->last_seq = event->seq;
	output->last_when = *event->when;
}

/*
 * What the backend reports, checked against what the probe saw itself: a
 * frame must not be presented before its commit returned (early), and a
 * frame committed before the vblank after the previous presented frame must
 * latch at that vblank, not later (a queued gap: it waited while the display
 * showed the old frame again).
 */
static void check_present_honest(struct probe_output *output,
	const struct wlr_output_event_present *event)
{
	const char *name = output->wlr_output->name;
	uint64_t when = event->when != NULL ? wla_timespec_to_ns(event->when) : now_ns();
	uint32_t key = event->commit_seq;
	bool committed_known = false;
	uint64_t committed_ns = 0;
	if ((int32_t)(key - output->wlr_output->commit_seq) > 0) {
		/* Sent from inside the commit (wlroots' headless backend does): the
		 * commit returns after this, so after `when`. */
		output->presents_checked++;
		output->early_presents++;
	} else if (output->commits_ring[key % PROBE_RING].done_valid &&
			output->commits_ring[key % PROBE_RING].commit_seq == key) {
		committed_known = true;
		committed_ns = output->commits_ring[key % PROBE_RING].done_ns;
		output->commits_ring[key % PROBE_RING].done_valid = false;
		output->presents_checked++;
		if (when < committed_ns) {
			output->early_presents++;
			wlr_log(WLR_DEBUG, "probe: output %s: commit %" PRIu32 " presented "
				"%.3f ms before its commit returned", name, key,
				(double)(committed_ns - when) / 1e6);
		}
	} else {
		output->unmatched_presents++;
	}
	if (event->seq == 0) {
		/* No vblank counter: nothing to tell a wait from. */
		return;
	}
	uint64_t period = present_period_ns(output, event);
	if (output->gap_prev_seen && committed_known && period > 0) {
		output->gaps_checked++;
		int32_t delta = (int32_t)(event->seq - output->gap_prev_seq);
		/* The backend's latch minimum (wlatomic's frame deadline says it):
		 * a frame committed within it of a vblank honestly misses it. */
		uint64_t slack = 0;
		struct wla_frame_deadline deadline;
		if (wla_output_is_wla(output->wlr_output) &&
				wla_output_get_frame_deadline(output->wlr_output, &deadline)) {
			slack = wla_timespec_to_ns(&deadline.latch) -
				wla_timespec_to_ns(&deadline.commit_by);
		}
		if (delta > 1 && committed_ns + slack < output->gap_prev_when_ns + period) {
			output->queued_gaps++;
			wlr_log(WLR_DEBUG, "probe: output %s: commit %" PRIu32 " latched %" PRId32
				" vblanks after the previous frame though committed %.3f ms "
				"after it", name, key, delta,
				((double)committed_ns - (double)output->gap_prev_when_ns) / 1e6);
		}
	}
	output->gap_prev_seen = true;
	output->gap_prev_seq = event->seq;
	output->gap_prev_when_ns = when;
}

/* Interval since the previous presented frame and latency since the render
 * of the commit the event names. */
static void record_present(struct probe_output *output,
	const struct wlr_output_event_present *event)
{
	uint64_t period = present_period_ns(output, event);
	if (period > 0) {
		output->period_ns = period;
	}
	uint64_t received = now_ns();
	uint64_t when = event->when != NULL ? wla_timespec_to_ns(event->when) : received;
	output->event_lags[output->n_event_lags++ % PROBE_WINDOW] =
		received > when ? received - when : 0;
	if (output->last_present_ns != 0 && when > output->last_present_ns) {
		output->intervals[output->n_intervals++ % PROBE_WINDOW] =
			when - output->last_present_ns;
	}
	output->last_present_ns = when;
	if (output->restart_valid && event->commit_seq == output->restart_seq) {
		/* The frame that turned the output on or changed its mode: a
		 * display reports the vblank it came on at, not one of the new
		 * timing's grid (vkms: the time vblanks were switched on). The
		 * intervals are measured from the frame after it. */
		output->last_present_ns = 0;
		output->restart_valid = false;
	}
	uint32_t key = event->commit_seq;
	if (output->commits_ring[key % PROBE_RING].start_valid &&
			output->commits_ring[key % PROBE_RING].commit_seq == key) {
		uint64_t start = output->commits_ring[key % PROBE_RING].start_ns;
		output->commits_ring[key % PROBE_RING].start_valid = false;
		if (when >= start) {
			output->latencies[output->n_latencies++ % PROBE_WINDOW] = when - start;
		}
	}
	if (!output->cpu_started && output->frames_presented >= (uint64_t)probe.cpu_after) {
		output->cpu_started = true;
		output->cpu_start_us = cpu_time_us();
		output->cpu_start_frames = output->frames_presented;
	}
}

/* ---- Capture and frame counts (first output) ---- */

static void handle_capture_done(struct wla_capture *capture, const struct wla_image *image,
	uint64_t seq, void *data)
{
	probe.capture = NULL;
	if (image == NULL) {
		fprintf(stderr, "tinywl: capture failed\n");
		probe_exit(EXIT_FAILURE);
		return;
	}
	int ret = wla_image_write_png(image, probe.capture_path);
	if (ret < 0) {
		fprintf(stderr, "tinywl: cannot write %s: %s\n", probe.capture_path,
			strerror(-ret));
		probe_exit(EXIT_FAILURE);
		return;
	}
	probe.capture_written = true;
	printf("tinywl: captured %" PRIu32 "x%" PRIu32 " at seq=%" PRIu64 " to %s\n",
		image->width, image->height, seq, probe.capture_path);
	probe_exit(EXIT_SUCCESS);
}

static void handle_output_present(struct wl_listener *listener, void *data)
{
	struct probe_output *output = wl_container_of(listener, output, present);
	struct wlr_output_event_present *event = data;
	if (!event->presented) {
		return;
	}
	output->frames_presented++;
	check_present_seq(output, event);
	check_present_honest(output, event);
	record_present(output, event);
	if (output != first_output() || probe.run_ended) {
		return;
	}
	if (probe.capture_path != NULL && !probe.capture_requested &&
			output->frames_presented >= (uint64_t)probe.capture_after) {
		probe.capture_requested = true;
		probe.capture = wla_output_capture(output->wlr_output, handle_capture_done, NULL);
		if (probe.capture == NULL) {
			fprintf(stderr, "tinywl: output %s cannot be captured\n",
				output->wlr_output->name);
			probe_exit(EXIT_FAILURE);
			return;
		}
	}
	if (probe.exit_after_frames > 0 &&
			output->frames_presented >= (uint64_t)probe.exit_after_frames) {
		probe_exit(EXIT_SUCCESS);
	}
}

static void handle_output_commit(struct wl_listener *listener, void *data)
{
	struct probe_output *output = wl_container_of(listener, output, commit);
	struct wlr_output_event_commit *event = data;
	output->commits++;
	if ((event->committed & WLR_OUTPUT_STATE_MODE) ||
			((event->committed & WLR_OUTPUT_STATE_ENABLED) &&
				!output->wlr_output->enabled)) {
		/* A new timing, or no vblanks while off (a display controller
		 * without a hardware counter does not count them): the next
		 * present starts the sequence check afresh. */
		output->seq_seen = false;
		output->restart_seq = output->wlr_output->commit_seq;
		output->restart_valid = true;
	}
	if (event->committed & WLR_OUTPUT_STATE_BUFFER) {
		output->frames_committed++;
		/* Not event->when: wlroots takes that before the backend's commit
		 * even starts. commit_seq has already been advanced here. */
		uint32_t key = output->wlr_output->commit_seq;
		if (output->commits_ring[key % PROBE_RING].commit_seq != key) {
			output->commits_ring[key % PROBE_RING].start_valid = false;
		}
		output->commits_ring[key % PROBE_RING].commit_seq = key;
		output->commits_ring[key % PROBE_RING].done_ns = now_ns();
		output->commits_ring[key % PROBE_RING].done_valid = true;
	}
}

static void handle_output_destroy(struct wl_listener *listener, void *data)
{
	struct probe_output *output = wl_container_of(listener, output, destroy);
	if (output == first_output() && probe.capture != NULL) {
		/* Cancelled instead of waiting for the backend's failure report:
		 * whether that comes before or after this signal is not ours. */
		wla_capture_cancel(probe.capture);
		probe.capture = NULL;
		fprintf(stderr, "tinywl: output %s destroyed before the capture\n",
			output->wlr_output->name);
		probe_exit(EXIT_FAILURE);
	}
	wl_list_remove(&output->commit.link);
	wl_list_remove(&output->present.link);
	wl_list_remove(&output->destroy.link);
	wl_list_remove(&output->link);
	free(output);
}

static void handle_new_output(struct wl_listener *listener, void *data)
{
	struct wlr_output *wlr_output = data;
	struct probe_output *output = calloc(1, sizeof(*output));
	if (output == NULL) {
		fprintf(stderr, "tinywl: probe: output %s: out of memory\n", wlr_output->name);
		return;
	}
	output->wlr_output = wlr_output;
	output->commit.notify = handle_output_commit;
	wl_signal_add(&wlr_output->events.commit, &output->commit);
	output->present.notify = handle_output_present;
	wl_signal_add(&wlr_output->events.present, &output->present);
	output->destroy.notify = handle_output_destroy;
	wl_signal_add(&wlr_output->events.destroy, &output->destroy);
	wl_list_insert(probe.outputs.prev, &output->link);
}

/* ---- Churn (soak runs) ---- */

/* The output's next mode in its list, wrapping; NULL if it has none. */
static struct wlr_output_mode *next_mode(struct wlr_output *wlr_output)
{
	if (wl_list_empty(&wlr_output->modes)) {
		return NULL;
	}
	struct wl_list *link = wlr_output->current_mode != NULL ?
		&wlr_output->current_mode->link : &wlr_output->modes;
	link = link->next == &wlr_output->modes ? wlr_output->modes.next : link->next;
	struct wlr_output_mode *mode = wl_container_of(link, mode, link);
	return mode;
}

/*
 * --churn-ms: one change of the outputs per tick, in turn: the first
 * output's next mode (it goes with the next rendered frame, one atomic
 * state), a connector plugged in (wla only), that connector unplugged.
 * Each tick prints a line with the buffer locks the backend holds.
 */
static int handle_churn_timer(void *data)
{
	uint64_t step = probe.churn_steps++;
	bool wla = wla_backend_is_wla(probe.backend);
	const char *what = "mode";
	if (step % 3 == 0 || !wla) {
		struct probe_output *output = first_output();
		struct wlr_output_mode *mode = output ? next_mode(output->wlr_output) : NULL;
		if (mode != NULL && output->wlr_output->enabled) {
			wlr_output_set_mode(output->wlr_output, mode);
			wlr_output_schedule_frame(output->wlr_output);
		}
	} else if (step % 3 == 1) {
		const struct wla_config_mode modes[] = { { 640, 480, 60000 }, { 800, 600, 75000 } };
		what = "plug";
		if (wla_backend_plug_connector(probe.backend, PROBE_CHURN_CONNECTOR, modes,
				2) != 0) {
			wlr_log(WLR_ERROR, "probe: churn: cannot plug %s", PROBE_CHURN_CONNECTOR);
		}
	} else {
		what = "unplug";
		if (wla_backend_unplug_connector(probe.backend, PROBE_CHURN_CONNECTOR) != 0) {
			wlr_log(WLR_ERROR, "probe: churn: cannot unplug %s", PROBE_CHURN_CONNECTOR);
		}
	}
	printf("tinywl: churn step=%" PRIu64 " %s outputs=%d", step, what,
		wl_list_length(&probe.outputs));
	if (wla) {
		printf(" buffer_locks=%zu", wla_backend_buffer_locks(probe.backend));
	}
	printf("\n");
	fflush(stdout);
	wl_event_source_timer_update(probe.churn_source, (int)probe.churn_ms);
	return 0;
}

/* ---- The wrapped calls ---- */

static void handle_backend_destroy(struct wl_listener *listener, void *data)
{
	if (probe.churn_source != NULL) {
		wl_event_source_remove(probe.churn_source);
		probe.churn_source = NULL;
	}
	wl_list_remove(&probe.new_output.link);
	wl_list_remove(&probe.backend_destroy.link);
}

struct wlr_backend *__wrap_wla_backend_create(struct wl_display *display,
	const struct wla_config *config)
{
	probe.display = display;
	wl_list_init(&probe.outputs);
	if (probe.backend_auto) {
		probe.backend = wlr_backend_autocreate(display);
		if (probe.backend == NULL) {
			fprintf(stderr, "tinywl: wlr_backend_autocreate failed\n");
		}
	} else {
		probe.backend = __real_wla_backend_create(display, config);
	}
	if (probe.backend == NULL) {
		return NULL;
	}
	probe.new_output.notify = handle_new_output;
	wl_signal_add(&probe.backend->events.new_output, &probe.new_output);
	probe.backend_destroy.notify = handle_backend_destroy;
	wl_signal_add(&probe.backend->events.destroy, &probe.backend_destroy);
	if (probe.churn_ms > 0) {
		probe.churn_source = wl_event_loop_add_timer(wl_display_get_event_loop(display),
			handle_churn_timer, NULL);
		if (probe.churn_source != NULL) {
			wl_event_source_timer_update(probe.churn_source, (int)probe.churn_ms);
		} else {
			fprintf(stderr, "tinywl: cannot create the churn timer\n");
		}
	}
	return probe.backend;
}

const char *__wrap_wl_display_add_socket_auto(struct wl_display *display)
{
	probe.socket = __real_wl_display_add_socket_auto(display);
	return probe.socket;
}

/* --mode: a listed mode of that size and refresh, else a custom mode set
 * before tinywl enables the output (tinywl then keeps it). */
struct wlr_output_mode *__wrap_wlr_output_preferred_mode(struct wlr_output *wlr_output)
{
	if (!probe.mode_set) {
		return __real_wlr_output_preferred_mode(wlr_output);
	}
	struct wlr_output_mode *mode;
	wl_list_for_each(mode, &wlr_output->modes, link) {
		if (mode->width == probe.mode.width && mode->height == probe.mode.height &&
				mode->refresh == probe.mode.refresh_mhz) {
			return mode;
		}
	}
	wlr_output_set_custom_mode(wlr_output, probe.mode.width, probe.mode.height,
		probe.mode.refresh_mhz);
	return NULL;
}

/*
 * Before a frame's commit, with planes or without: the start of its latency,
 * and a stall if one is due. A static scene that nothing asks a frame for
 * gets whole-output damage while a frame count is pending (a capture or an
 * exit after N frames must not wait forever on a static client); with
 * planes (scene_planes) a frame asked for without damage renders nothing, so
 * it gets some too. A client that redraws damages what it redraws, and only
 * that is rendered, as without the probe.
 */
static void before_commit(struct probe_output *output, struct wlr_scene_output *scene_output,
	bool scene_planes)
{
	output->scene_output = scene_output;
	if (output == first_output() && frame_count_pending() && !probe.no_forced_damage &&
			!(scene_planes && output->wlr_output->needs_frame) &&
			!pixman_region32_not_empty(&scene_output->damage->current)) {
		wlr_output_damage_add_whole(scene_output->damage);
		output->forced_renders++;
	}
	/* Recorded before the commit: wlroots' headless backend sends the
	 * present event from inside it. */
	uint32_t key = output->wlr_output->commit_seq + 1;
	output->commits_ring[key % PROBE_RING].commit_seq = key;
	output->commits_ring[key % PROBE_RING].start_ns = now_ns();
	output->commits_ring[key % PROBE_RING].start_valid = true;
	output->commits_ring[key % PROBE_RING].done_valid = false;
	if (probe.stall_every > 0 && ++output->renders % (uint64_t)probe.stall_every == 0) {
		/* Blocking the event loop is the point: this is the compositor that
		 * stalls, and its render counts the stall as its own time. */
		struct timespec stall = { .tv_sec = probe.stall_ms / 1000,
			.tv_nsec = (probe.stall_ms % 1000) * 1000000 };
		while (nanosleep(&stall, &stall) != 0 && errno == EINTR) {
		}
	}
}

static bool after_commit(struct wlr_scene_output *scene_output, bool ok)
{
	/* The output may be gone if the commit destroyed it: look again. */
	struct probe_output *output = find_output(scene_output->output);
	if (!ok && output != NULL) {
		output->commit_failures++;
	}
	return ok;
}

bool __wrap_wlr_scene_output_commit(struct wlr_scene_output *scene_output)
{
	if (probe.run_ended) {
		return false;
	}
	struct probe_output *output = find_output(scene_output->output);
	if (output == NULL) {
		return __real_wlr_scene_output_commit(scene_output);
	}
	before_commit(output, scene_output, false);
	return after_commit(scene_output, __real_wlr_scene_output_commit(scene_output));
}

/* tinywl with planes: the helper assigns, renders and commits in one call. */
bool __wrap_wla_scene_output_commit(struct wla_scene *wla_scene,
	struct wlr_scene_output *scene_output)
{
	if (probe.run_ended) {
		return false;
	}
	struct probe_output *output = scene_output != NULL ?
		find_output(scene_output->output) : NULL;
	if (output == NULL) {
		return __real_wla_scene_output_commit(wla_scene, scene_output);
	}
	before_commit(output, scene_output, true);
	return after_commit(scene_output,
		__real_wla_scene_output_commit(wla_scene, scene_output));
}

static int handle_sigchld(int signal_number, void *data)
{
	int status;
	pid_t pid;
	/* One SIGCHLD may stand for several children; reap them all. */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid != probe.child) {
			continue;
		}
		probe.child = 0;
		bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
		if (WIFSIGNALED(status)) {
			fprintf(stderr, "tinywl: client killed by signal %d\n", WTERMSIG(status));
		}
		if (!ok) {
			fprintf(stderr, "tinywl: client failed\n");
		}
		/* A pending capture still decides the exit status on its own. */
		if (probe.capture_path == NULL) {
			probe_exit(ok ? EXIT_SUCCESS : EXIT_FAILURE);
		}
	}
	return 0;
}

static bool spawn_client(void)
{
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "tinywl: cannot start '%s': %s\n", probe.startup_cmd,
			strerror(errno));
		return false;
	}
	if (pid == 0) {
		/* wl_event_loop_add_signal blocked our signals; a blocked mask
		 * survives exec and would leave the client deaf to SIGTERM. */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setpgid(0, 0); /* its own group, so that the whole command can be ended */
		setenv("WAYLAND_DISPLAY", probe.socket, 1);
		execl("/bin/sh", "/bin/sh", "-c", probe.startup_cmd, (char *)NULL);
		_exit(127);
	}
	probe.child = pid;
	return true;
}

/* ---- The statistics line ---- */

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Order statistics of up to PROBE_WINDOW samples, with the same ranks as
 * wla_output_get_stats. */
struct distribution {
	size_t n;
	uint64_t min, p50, p99, max;
	double mean;
};

static void distribution(const uint64_t *samples, uint64_t count, uint64_t *scratch,
	struct distribution *dist)
{
	size_t n = count < PROBE_WINDOW ? (size_t)count : PROBE_WINDOW;
	*dist = (struct distribution){ .n = n };
	if (n == 0) {
		return;
	}
	memcpy(scratch, samples, n * sizeof(*scratch));
	qsort(scratch, n, sizeof(*scratch), compare_u64);
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += (double)scratch[i];
	}
	dist->min = scratch[0];
	dist->p50 = scratch[(n - 1) / 2];
	dist->p99 = scratch[(n - 1) * 99 / 100];
	dist->max = scratch[n - 1];
	dist->mean = sum / (double)n;
}

/* Nanoseconds as microseconds with three decimals, or n/a. */
static const char *fmt_us(char buf[32], bool known, uint64_t ns)
{
	if (!known) {
		return "n/a";
	}
	snprintf(buf, 32, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
	return buf;
}

static const char *fmt_u64(char buf[32], bool known, uint64_t value)
{
	if (!known) {
		return "n/a";
	}
	snprintf(buf, 32, "%" PRIu64, value);
	return buf;
}

static const char *fmt_mean_us(char buf[32], bool known, double ns)
{
	if (!known) {
		return "n/a";
	}
	snprintf(buf, 32, "%.3f", ns / 1000.0);
	return buf;
}

/*
 * One line per output: wlatomic's own counters where the backend is wla
 * (n/a where another backend cannot know them), then what the probe
 * measured the same way on every backend: p99 of |interval - period|
 * (jitter), vblanks between presented frames that showed nothing new
 * (skipped), latency from render start to presentation, CPU per frame, the
 * lag of present events and the honesty checks.
 */
static void print_stats(struct probe_output *output, uint64_t *scratch)
{
	char b[12][32];
	struct wla_output_stats s;
	bool wla = wla_output_is_wla(output->wlr_output) &&
		wla_output_get_stats(output->wlr_output, &s);
	struct distribution iv;
	distribution(output->intervals, output->n_intervals, scratch, &iv);
	if (wla) {
		iv = (struct distribution){ .n = s.intervals, .min = s.interval_min_ns,
			.p50 = s.interval_p50_ns, .p99 = s.interval_p99_ns,
			.max = s.interval_max_ns, .mean = s.interval_mean_ns };
	}
	printf("tinywl: stats output=%s frames_presented=%" PRIu64 " vblanks=%s"
		" missed_vblanks=%s commits=%" PRIu64 " refused=%s seq_errors=%s"
		" frames_committed=%" PRIu64 " frames_discarded=%s frames_client_planes=%s"
		" refused_queue_full=%s"
		" interval_min_us=%s interval_p50_us=%s interval_p99_us=%s interval_max_us=%s"
		" interval_mean_us=%s", output->wlr_output->name,
		wla ? s.frames_presented : output->frames_presented,
		fmt_u64(b[0], wla, wla ? s.vblanks : 0),
		fmt_u64(b[1], wla, wla ? s.missed_vblanks : 0),
		wla ? s.commits : output->commits, fmt_u64(b[2], wla, wla ? s.refused : 0),
		fmt_u64(b[3], output->seq_checked, output->seq_errors),
		wla ? s.frames_committed : output->frames_committed,
		fmt_u64(b[4], wla, wla ? s.frames_discarded : 0),
		fmt_u64(b[11], wla, wla ? s.frames_client_planes : 0),
		fmt_u64(b[5], wla, wla ? s.refused_queue_full : 0),
		fmt_us(b[6], iv.n > 0, iv.min), fmt_us(b[7], iv.n > 0, iv.p50),
		fmt_us(b[8], iv.n > 0, iv.p99), fmt_us(b[9], iv.n > 0, iv.max),
		fmt_mean_us(b[10], iv.n > 0, iv.mean));

	size_t n = output->n_intervals < PROBE_WINDOW ? (size_t)output->n_intervals : PROBE_WINDOW;
	uint64_t period = output->period_ns, skipped = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t interval = output->intervals[i];
		scratch[i] = interval > period ? interval - period : period - interval;
		if (period > 0) {
			uint64_t periods = (interval + period / 2) / period;
			skipped += periods > 1 ? periods - 1 : 0;
		}
	}
	struct distribution jitter, latency, lag;
	distribution(scratch, n, scratch + PROBE_WINDOW, &jitter);
	distribution(output->latencies, output->n_latencies, scratch, &latency);
	distribution(output->event_lags, output->n_event_lags, scratch, &lag);
	uint64_t frames = output->frames_presented - output->cpu_start_frames;
	char cpu[32] = "n/a";
	if (output->cpu_started && frames > 0) {
		snprintf(cpu, sizeof(cpu), "%.3f",
			(double)(cpu_time_us() - output->cpu_start_us) / (double)frames);
	}
	printf(" jitter_p99_us=%s skipped_vblanks=%s latency_mean_us=%s latency_p99_us=%s"
		" cpu_us_per_frame=%s event_lag_p99_us=%s event_lag_max_us=%s"
		" early_presents=%s queued_gaps=%s unmatched_presents=%" PRIu64
		" commit_failures=%" PRIu64 " forced_renders=%" PRIu64 "\n",
		fmt_us(b[0], jitter.n > 0 && period > 0, jitter.p99),
		fmt_u64(b[1], period > 0, skipped), fmt_mean_us(b[2], latency.n > 0, latency.mean),
		fmt_us(b[3], latency.n > 0, latency.p99), cpu, fmt_us(b[4], lag.n > 0, lag.p99),
		fmt_us(b[5], lag.n > 0, lag.max),
		fmt_u64(b[6], output->presents_checked > 0, output->early_presents),
		fmt_u64(b[7], output->gaps_checked > 0, output->queued_gaps),
		output->unmatched_presents, output->commit_failures, output->forced_renders);
}

/*
 * Around tinywl's event loop: the client starts once the socket exists; when
 * the loop ends, the statistics, then every output switched off (an output
 * with a panel does so in steps on timers: they get a second) and the
 * buffer locks the backend still holds, 0 unless something leaked.
 */
void __wrap_wl_display_run(struct wl_display *display)
{
	struct wl_event_loop *loop = wl_display_get_event_loop(display);
	if (probe.startup_cmd != NULL) {
		probe.sigchld_source = wl_event_loop_add_signal(loop, SIGCHLD, handle_sigchld,
			NULL);
		if (probe.sigchld_source == NULL || !spawn_client()) {
			fprintf(stderr, "tinywl: cannot start the client\n");
			probe.exit_status = EXIT_FAILURE;
			return;
		}
	}
	__real_wl_display_run(display);
	/* What follows must not change outputs or render into them: no more
	 * churn, and scene commits are ignored (__wrap_wlr_scene_output_commit). */
	probe.run_ended = true;
	if (probe.churn_source != NULL) {
		wl_event_source_remove(probe.churn_source);
		probe.churn_source = NULL;
	}
	if (probe.capture_path != NULL && !probe.capture_written &&
			probe.exit_status == EXIT_SUCCESS) {
		/* Told to stop (a signal) before the capture: it did not happen. */
		fprintf(stderr, "tinywl: exiting before the capture was taken\n");
		probe.exit_status = EXIT_FAILURE;
	}
	if (probe.capture != NULL) {
		/* Switching the outputs off must not report it as a failure. */
		wla_capture_cancel(probe.capture);
		probe.capture = NULL;
	}
	if (probe.child > 0) {
		kill(-probe.child, SIGTERM);
	}
	if (probe.sigchld_source != NULL) {
		wl_event_source_remove(probe.sigchld_source);
		probe.sigchld_source = NULL;
	}
	/* Twice the window: print_stats sorts one copy while holding another. */
	uint64_t *scratch = calloc(2 * PROBE_WINDOW, sizeof(*scratch));
	struct probe_output *output;
	wl_list_for_each(output, &probe.outputs, link) {
		if (scratch != NULL) {
			print_stats(output, scratch);
		}
		if (output->wlr_output->enabled) {
			wlr_output_enable(output->wlr_output, false);
			/* wlroots 0.15 headless cannot disable: not an error of ours. */
			wlr_output_commit(output->wlr_output);
		}
	}
	free(scratch);
	if (wla_backend_is_wla(probe.backend)) {
		uint64_t end = now_ns() + 1000000000u;
		while (wla_backend_buffer_locks(probe.backend) > 0 && now_ns() < end) {
			wl_event_loop_dispatch(loop, 10);
		}
		printf("tinywl: buffer_locks=%zu\n", wla_backend_buffer_locks(probe.backend));
	}
	fflush(stdout);
}

/* ---- Options ---- */

static void usage(void)
{
	printf("tinywl-measured: tinywl with the measuring probe (bench/tinywl-probe.c).\n"
		"Probe options, before or among tinywl's:\n"
		"  -s, --startup CMD           run CMD with /bin/sh -c once the socket exists;\n"
		"                              exit with its status (0 or 1) when it ends\n"
		"      --backend wla|auto      wla (default), or wlr_backend_autocreate\n"
		"      --mode WxH[@HZ]         this mode on every output (a listed one if it\n"
		"                              matches, else a custom mode)\n"
		"      --capture PATH          write the first output's scanout to PATH (PNG)\n"
		"                              after --capture-after frames, then exit (wla only)\n"
		"      --capture-after N       frames presented before the capture (default 30)\n"
		"      --exit-after-frames N   exit after N frames presented on the first output\n"
		"      --no-forced-damage      never damage the scene to keep frames coming (for\n"
		"                              a client that redraws all the time)\n"
		"      --cpu-after N           count CPU time from the frame after the Nth\n"
		"                              presented one (default 0: the first): a warm-up\n"
		"      --stall-every N         with --stall-ms: every Nth render of an output\n"
		"      --stall-ms M            sleeps M ms (1..10000) right before its commit\n"
		"      --churn-ms N            every N ms (10..600000) in turn: the first\n"
		"                              output's next mode, a connector SOAK-1\n"
		"                              plugged (wla), it unplugged; prints\n"
		"                              'tinywl: churn step=...' each time\n"
		"On exit one 'tinywl: stats output=...' line per output, and on wla\n"
		"'tinywl: buffer_locks=N'. Times in microseconds; latency is from the start\n"
		"of a frame's render to its presentation; cpu_us_per_frame is the process's\n"
		"user+system time from the first presented frame on, per frame; event_lag\n"
		"is from the time a present event reports to its arrival. Checked against\n"
		"the probe's own clock: early_presents (presented before the commit\n"
		"returned), queued_gaps (committed before the vblank after the previous\n"
		"presented frame, by more than wlatomic's latch minimum, yet latched later;\n"
		"n/a without vblank counters), unmatched_presents (naming no commit seen);\n"
		"commit_failures counts the scene commits the backend refused. Intervals\n"
		"are measured from the frame after one that set a mode or enabled the output.\n\n");
}

/* Takes the probe's options out of argv; returns -1 to go on, otherwise the
 * exit status. */
static int parse_probe_options(int *argc, char *argv[])
{
	int out = 1;
	for (int i = 1; i < *argc; i++) {
		/* "--opt VALUE" or "--opt=VALUE" */
		char opt[64];
		const char *eq = strncmp(argv[i], "--", 2) == 0 ? strchr(argv[i], '=') : NULL;
		snprintf(opt, sizeof(opt), "%.*s", eq ? (int)(eq - argv[i]) : 63, argv[i]);
		const char *val = eq ? eq + 1 : i + 1 < *argc ? argv[i + 1] : NULL;
		bool takes_value = true, ok = true;
		if (strcmp(opt, "-s") == 0 || strcmp(opt, "--startup") == 0) {
			probe.startup_cmd = val;
		} else if (strcmp(opt, "--backend") == 0) {
			probe.backend_auto = val != NULL && strcmp(val, "auto") == 0;
			ok = val != NULL && (probe.backend_auto || strcmp(val, "wla") == 0);
		} else if (strcmp(opt, "--mode") == 0) {
			/* The library's parser says what is wrong, in one line. */
			int bad = val != NULL ?
				wla_config_parse_mode("tinywl --mode", val, &probe.mode) : 0;
			if (bad != 0) {
				return 2;
			}
			probe.mode_set = true;
		} else if (strcmp(opt, "--capture") == 0) {
			probe.capture_path = val;
		} else if (strcmp(opt, "--capture-after") == 0) {
			ok = val != NULL && wla_parse_long(val, 0, LONG_MAX, &probe.capture_after);
		} else if (strcmp(opt, "--exit-after-frames") == 0) {
			ok = val != NULL &&
				wla_parse_long(val, 1, LONG_MAX, &probe.exit_after_frames);
		} else if (strcmp(opt, "--cpu-after") == 0) {
			ok = val != NULL && wla_parse_long(val, 0, LONG_MAX, &probe.cpu_after);
		} else if (strcmp(opt, "--stall-every") == 0) {
			ok = val != NULL && wla_parse_long(val, 1, LONG_MAX, &probe.stall_every);
		} else if (strcmp(opt, "--stall-ms") == 0) {
			ok = val != NULL && wla_parse_long(val, 1, 10000, &probe.stall_ms);
		} else if (strcmp(opt, "--churn-ms") == 0) {
			ok = val != NULL && wla_parse_long(val, 10, 600000, &probe.churn_ms);
		} else if (strcmp(opt, "--no-forced-damage") == 0) {
			takes_value = false;
			probe.no_forced_damage = true;
		} else {
			takes_value = false;
			probe.deadline |= strcmp(opt, "--deadline") == 0;
			if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0) {
				usage();
			}
			argv[out++] = argv[i];
		}
		if (takes_value && val == NULL) {
			fprintf(stderr, "tinywl: option '%s' needs a value (see -h)\n", opt);
			return 2;
		}
		if (!ok) {
			fprintf(stderr, "tinywl: %s '%s': bad value (see -h)\n", opt, val);
			return 2;
		}
		i += takes_value && !eq;
	}
	*argc = out;
	argv[out] = NULL;
	if ((probe.stall_every > 0) != (probe.stall_ms > 0)) {
		fprintf(stderr, "tinywl: %s needs %s (see -h)\n",
			probe.stall_every > 0 ? "--stall-every" : "--stall-ms",
			probe.stall_every > 0 ? "--stall-ms" : "--stall-every");
		return 2;
	}
	if (probe.backend_auto && (probe.capture_path != NULL || probe.deadline)) {
		fprintf(stderr, "tinywl: %s needs --backend wla (it is the wlatomic display "
			"controller's)\n", probe.deadline ? "--deadline" : "--capture");
		return 2;
	}
	return -1;
}

int main(int argc, char *argv[])
{
	int status = parse_probe_options(&argc, argv);
	if (status >= 0) {
		return status;
	}
	status = tinywl_main(argc, argv);
	return status != EXIT_SUCCESS ? status : probe.exit_status;
}
