/*
 * The control socket: what a person does to a real machine, done from
 * outside the compositor by CI (README, "Control socket"). A Unix stream
 * socket served on the compositor's event loop; requests are lines, every
 * reply ends with one line starting "ok" or "error". Nothing here blocks:
 * replies are queued and written when the socket takes them, and requests
 * that wait (capture, wait) are answered from the output's events.
 */
#define _GNU_SOURCE /* SO_PEERCRED, struct ucred, accept4 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <wlr/util/log.h>
#include <wlatomic/capture.h>
#include "backend/hold.h"
#include "backend/input.h"
#include "backend/wlr.h"
#include "render/compose.h"
#include "util.h"

/* A request line, its newline included. */
#define CONTROL_LINE_MAX 1024
/* Replies queued for a client that does not read them. */
#define CONTROL_OUT_MAX (1024 * 1024)
#define CONTROL_MAX_CLIENTS 32
#define CONTROL_DEFAULT_SLOTS 32
/* compare's words: its name, output, reference, three options and up to
 * CONTROL_COMPARE_MAX_IGNORE ignored rectangles (14). */
#define CONTROL_MAX_ARGS 16
#define CONTROL_COMPARE_MAX_IGNORE 8
#define CONTROL_WAIT_MAX 1000000

enum client_busy {
	CLIENT_IDLE,
	CLIENT_WAITING,   /* wait: counting presented frames */
	CLIENT_CAPTURING, /* capture: the next latched frame */
	CLIENT_SCRIPT,    /* script: its events, at their times */
};

struct control_client {
	struct wla_control *control;
	struct wl_list link;
	int fd;
	struct wl_event_source *source;
	char in[CONTROL_LINE_MAX];
	size_t in_len;
	char *out;
	size_t out_len, out_cap;
	bool closing; /* close once out is written */
	bool dead;    /* close at the next chance: a write failed, memory ran out */

	enum client_busy busy;
	struct wla_output *output;
	char output_name[sizeof(((struct wlr_output *)0)->name)];
	struct wl_listener output_present;
	struct wl_listener output_destroy;
	uint64_t wait_left, wait_asked;
	struct wla_capture *capture;
	char capture_path[CONTROL_LINE_MAX];
	/* A compare's reference and options while its capture is pending;
	 * freed with it by client_finish_request. */
	struct control_compare *compare;
	struct wla_input_script *script;
};

/* A compare request: the next frame against a reference. */
struct control_compare {
	struct wla_image *reference;
	struct wla_compare_options opt;
	struct wla_image_rect ignore[CONTROL_COMPARE_MAX_IGNORE];
	char diff_path[CONTROL_LINE_MAX]; /* "": no diff image */
};

struct wla_control {
	struct wla_backend *backend;
	struct wl_event_loop *loop;
	int fd;
	ino_t ino;
	dev_t dev;
	char path[WLA_CONTROL_PATH_MAX];
	struct wl_event_source *source;
	struct wl_list clients; /* control_client.link */
	size_t n_clients;
	/* Clients to close, from callbacks where that is not safe. */
	struct wl_event_source *reap_idle;
	/* Held while requests run (client_process): destroyed meanwhile (an
	 * input line's listener destroyed the backend), it is freed when they
	 * return and nothing of it is touched after (backend/hold.h). */
	struct wla_hold hold;
};

static void client_destroy(struct control_client *client);
static void unwatch_output(struct control_client *client);
static bool client_process(struct control_client *client);
static void client_process_lines(struct control_client *client, const struct wla_hold *hold);

static void handle_reap(void *data)
{
	struct wla_control *control = data;
	control->reap_idle = NULL;
	struct control_client *client, *tmp;
	wl_list_for_each_safe(client, tmp, &control->clients, link) {
		if (client->dead) {
			client_destroy(client);
		} else if (client->busy == CLIENT_IDLE && client->in_len && !client->closing) {
			/* Lines that came behind a request that waited. */
			if (!client_process(client)) {
				return; /* the control is gone */
			}
		}
	}
}

static void schedule_reap(struct wla_control *control)
{
	if (!control->reap_idle) {
		control->reap_idle = wl_event_loop_add_idle(control->loop, handle_reap, control);
	}
}

static void client_kill(struct control_client *client)
{
	client->dead = true;
	schedule_reap(client->control);
}

static void client_update_mask(struct control_client *client)
{
	uint32_t mask = client->out_len ? WL_EVENT_WRITABLE : 0;
	/* Read no more requests while the replies pile up or it closes. */
	if (!client->closing && client->out_len < CONTROL_OUT_MAX / 2) {
		mask |= WL_EVENT_READABLE;
	}
	wl_event_source_fd_update(client->source, mask);
}

/* Queue one reply line (a newline is added). */
__attribute__((format(printf, 2, 3)))
static void reply(struct control_client *client, const char *fmt, ...)
{
	if (client->dead) {
		return;
	}
	va_list args;
	va_start(args, fmt);
	int len = vsnprintf(NULL, 0, fmt, args);
	va_end(args);
	if (len < 0) {
		return;
	}
	size_t need = client->out_len + (size_t)len + 2;
	if (need > CONTROL_OUT_MAX) {
		wlr_log(WLR_ERROR, "control: client fd %d reads none of its replies (%zu bytes "
			"waiting); closed", client->fd, client->out_len);
		client_kill(client);
		return;
	}
	if (need > client->out_cap) {
		size_t cap = client->out_cap ? client->out_cap : 4096;
		while (cap < need) {
			cap *= 2;
		}
		char *out = realloc(client->out, cap);
		if (!out) {
			wlr_log(WLR_ERROR, "control: client fd %d: out of memory for a reply; "
				"closed", client->fd);
			client_kill(client);
			return;
		}
		client->out = out;
		client->out_cap = cap;
	}
	va_start(args, fmt);
	vsnprintf(client->out + client->out_len, (size_t)len + 1, fmt, args);
	va_end(args);
	client->out_len += (size_t)len;
	client->out[client->out_len++] = '\n';
	client_update_mask(client);
}

/* The request waiting on an output is over: drop what it listened to. */
static void compare_free(struct control_compare *cmp)
{
	if (cmp) {
		wla_image_destroy(cmp->reference);
		free(cmp);
	}
}

/* The request answered (or its client gone): what it waited on goes. */
static void client_finish_request(struct control_client *client)
{
	if (client->capture) {
		wla_capture_cancel(client->capture);
		client->capture = NULL;
	}
	compare_free(client->compare);
	client->compare = NULL;
	if (client->script) {
		wla_input_script_cancel(client->script);
		client->script = NULL;
	}
	unwatch_output(client);
	client->busy = CLIENT_IDLE;
	/* Lines queued behind it are read once the caller is out of the
	 * output's event. */
	if (client->in_len) {
		schedule_reap(client->control);
	}
}

static void client_destroy(struct control_client *client)
{
	client_finish_request(client);
	wl_list_remove(&client->link);
	client->control->n_clients--;
	wl_event_source_remove(client->source);
	close(client->fd);
	free(client->out);
	free(client);
}

static struct wla_output *find_output(struct wla_control *control, const char *name)
{
	return wla_output_find_named(control->backend, name);
}

/* "WxH@mHz" of a mode into buf. */
static const char *mode_text(char *buf, size_t size, int32_t w, int32_t h, int32_t mhz)
{
	snprintf(buf, size, "%" PRId32 "x%" PRId32 "@%" PRId32 ".%03" PRId32, w, h,
		mhz / 1000, mhz % 1000);
	return buf;
}

static const char *panel_text(struct wla_output *out)
{
	if (!out->panel && !out->panel_failed) {
		return "none";
	}
	if (out->panel_failed || !out->panel) {
		return "failed";
	}
	return wla_panel_state_name(wla_panel_get_state(wla_panel_loop_get_panel(out->panel)));
}

static void list_connector(struct control_client *client, struct wla_connector *conn)
{
	struct wla_output *out = wla_output_find(client->control->backend, conn);
	/* The connector's modes, the preferred one first. */
	size_t cap = conn->n_modes * 32 + 1, len = 0;
	char *modes = malloc(cap);
	if (!modes) {
		reply(client, "error list: out of memory");
		return;
	}
	modes[0] = '\0';
	for (size_t i = 0; i < conn->n_modes; i++) {
		char m[32];
		const struct wla_mode *mode = &conn->modes[i];
		len += (size_t)snprintf(modes + len, cap - len, "%s%s", i ? "," : "",
			mode_text(m, sizeof(m), mode->width, mode->height, mode->refresh_mhz));
	}
	const char *status = conn->status == WLA_CONNECTOR_CONNECTED ? "connected" :
		conn->status == WLA_CONNECTOR_DISCONNECTED ? "disconnected" : "unknown";
	if (!out) {
		reply(client, "output %s status=%s output=no enabled=0 dpms=off mode=none "
			"modes=%s size=%" PRIu32 "x%" PRIu32 "mm panel=none", conn->name, status,
			modes[0] ? modes : "none", conn->phys_width_mm, conn->phys_height_mm);
		free(modes);
		return;
	}
	struct wlr_output *o = &out->base;
	char cur[32] = "none";
	if (o->enabled) {
		mode_text(cur, sizeof(cur), o->width, o->height, o->refresh);
	}
	struct wla_output_stats st;
	wla_output_get_stats(o, &st);
	/* DPMS off is a disabled output in wlroots 0.15 (output-power and
	 * sway's dpms both disable it). */
	reply(client, "output %s status=%s output=yes enabled=%d dpms=%s mode=%s modes=%s "
		"size=%" PRId32 "x%" PRId32 "mm panel=%s commits=%" PRIu64
		" frames_committed=%" PRIu64 " frames_presented=%" PRIu64
		" frames_discarded=%" PRIu64 " frames_client_planes=%" PRIu64 " refused=%" PRIu64
		" refused_queue_full=%" PRIu64
		" vblanks=%" PRIu64 " missed_vblanks=%" PRIu64 " last_seq=%" PRIu64
		" interval_mean_ns=%.0f interval_p50_ns=%" PRIu64 " interval_p99_ns=%" PRIu64,
		conn->name, status, o->enabled ? 1 : 0, o->enabled ? "on" : "off", cur,
		modes[0] ? modes : "none", o->phys_width, o->phys_height, panel_text(out),
		st.commits, st.frames_committed, st.frames_presented, st.frames_discarded,
		st.frames_client_planes, st.refused, st.refused_queue_full, st.vblanks, st.missed_vblanks, st.last_seq,
		st.interval_mean_ns, st.interval_p50_ns, st.interval_p99_ns);
	free(modes);
}

static void cmd_list(struct control_client *client, int argc, char **argv)
{
	if (argc != 1) {
		reply(client, "error list: takes no argument");
		return;
	}
	struct wla_backend *backend = client->control->backend;
	size_t n = 0;
	for (size_t d = 0; d < backend->n_devices; d++) {
		struct wla_device *dev = backend->devices[d];
		for (size_t i = 0; i < dev->n_connectors; i++) {
			if (dev->connectors[i]) {
				list_connector(client, dev->connectors[i]);
				n++;
			}
		}
	}
	/* The backend's buffer locks: 0 once every output is off, and not
	 * growing while they run (a leak check from outside). */
	reply(client, "ok %zu connectors buffer_locks=%zu", n,
		wla_backend_buffer_locks(&backend->base));
}

/* planes OUTPUT: what each plane of the output shows now (the current,
 * not the latched, state): a line per plane, then ok. */
static void cmd_planes(struct control_client *client, int argc, char **argv)
{
	if (argc != 2) {
		reply(client, "error planes: expected planes OUTPUT");
		return;
	}
	struct wla_output *out = wla_output_find_named(client->control->backend, argv[1]);
	if (!out || !out->planes) {
		reply(client, "error planes: no output %s", argv[1]);
		return;
	}
	static const char *const types[] = {
		[WLA_PLANE_PRIMARY] = "primary",
		[WLA_PLANE_CURSOR] = "cursor",
		[WLA_PLANE_OVERLAY] = "overlay",
	};
	for (size_t i = 0; i < out->planes->n; i++) {
		const struct wla_plane *plane = out->planes->planes[i];
		const struct wla_plane_state *ps = plane->state;
		const struct wla_fb *fb = ps->fb;
		if (!ps->crtc || !fb) {
			reply(client, "plane %" PRIu32 " %s %s zpos=%u off", wla_output_plane_id(plane),
				plane->name, types[plane->type], plane->zpos);
			continue;
		}
		char fourcc[5];
		reply(client, "plane %" PRIu32 " %s %s zpos=%u fb=%" PRIu32 "x%" PRIu32 " format=%s "
			"client=%d dst=%" PRId32 ",%" PRId32 ",%" PRIu32 "x%" PRIu32,
			wla_output_plane_id(plane), plane->name, types[plane->type], plane->zpos,
			fb->width, fb->height, wla_fourcc_str(fb->format, fourcc), fb->client, ps->crtc_x, ps->crtc_y, ps->crtc_w,
			ps->crtc_h);
	}
	reply(client, "ok %zu planes", out->planes->n);
}

static void cmd_plug(struct control_client *client, int argc, char **argv)
{
	if (argc != 3) {
		reply(client, "error plug: expected plug NAME MODE[,MODE...]");
		return;
	}
	struct wla_config_mode modes[WLA_MAX_MODES];
	size_t n = 0;
	char *save = NULL;
	for (char *m = strtok_r(argv[2], ",", &save); m; m = strtok_r(NULL, ",", &save)) {
		if (n == WLA_MAX_MODES) {
			reply(client, "error plug: more than %d modes", WLA_MAX_MODES);
			return;
		}
		if (wla_config_parse_mode("control plug", m, &modes[n]) < 0) {
			reply(client, "error plug: mode '%s': expected WIDTHxHEIGHT[@HZ], sizes "
				"1..%d, %d..%d Hz", m, WLA_MODE_MAX_SIZE,
				WLA_CONFIG_MIN_REFRESH_MHZ / 1000, WLA_MODE_MAX_REFRESH_MHZ / 1000);
			return;
		}
		n++;
	}
	if (n == 0) {
		reply(client, "error plug: no mode");
		return;
	}
	int ret = wla_backend_plug_connector(&client->control->backend->base, argv[1], modes, n);
	if (ret < 0) {
		reply(client, "error plug: connector %s: %s (the compositor's log says more)",
			argv[1], strerror(-ret));
		return;
	}
	reply(client, "ok plugged %s", argv[1]);
}

static void cmd_unplug(struct control_client *client, int argc, char **argv)
{
	if (argc != 2) {
		reply(client, "error unplug: expected unplug NAME");
		return;
	}
	int ret = wla_backend_unplug_connector(&client->control->backend->base, argv[1]);
	if (ret == -ENOENT) {
		reply(client, "error unplug: no connector named %s", argv[1]);
	} else if (ret < 0) {
		reply(client, "error unplug: connector %s: %s", argv[1], strerror(-ret));
	} else {
		reply(client, "ok unplugged %s", argv[1]);
	}
}

static void cmd_link_bad(struct control_client *client, int argc, char **argv)
{
	if (argc != 2) {
		reply(client, "error link-bad: expected link-bad NAME");
		return;
	}
	int ret = wla_backend_break_link(&client->control->backend->base, argv[1]);
	if (ret == -ENOENT) {
		reply(client, "error link-bad: no virtual connector named %s", argv[1]);
	} else if (ret < 0) {
		reply(client, "error link-bad: connector %s: %s", argv[1], strerror(-ret));
	} else {
		reply(client, "ok link-status BAD on %s", argv[1]);
	}
}

static void unwatch_output(struct control_client *client)
{
	if (client->output) {
		wl_list_remove(&client->output_present.link);
		wl_list_remove(&client->output_destroy.link);
		client->output = NULL;
	}
}

static void handle_output_destroy(struct wl_listener *listener, void *data)
{
	struct control_client *client = wl_container_of(listener, client, output_destroy);
	if (client->busy == CLIENT_WAITING) {
		reply(client, "error wait: output %s went away after %" PRIu64 " of %" PRIu64
			" frames", client->output_name, client->wait_asked - client->wait_left,
			client->wait_asked);
		client_finish_request(client);
	} else {
		/* A capture is answered by its callback (image NULL). */
		unwatch_output(client);
	}
}

static void handle_output_present(struct wl_listener *listener, void *data)
{
	struct control_client *client = wl_container_of(listener, client, output_present);
	struct wlr_output_event_present *event = data;
	if (client->busy != CLIENT_WAITING || !event->presented) {
		return;
	}
	if (--client->wait_left == 0) {
		reply(client, "ok presented %" PRIu64 " seq=%u", client->wait_asked, event->seq);
		client_finish_request(client);
	}
}

static void watch_output(struct control_client *client, struct wla_output *out)
{
	client->output = out;
	snprintf(client->output_name, sizeof(client->output_name), "%s", out->base.name);
	client->output_present.notify = handle_output_present;
	wl_signal_add(&out->base.events.present, &client->output_present);
	client->output_destroy.notify = handle_output_destroy;
	wl_signal_add(&out->base.events.destroy, &client->output_destroy);
}

static bool parse_count(const char *s, uint64_t max, uint64_t *out)
{
	if (!*s) {
		return false;
	}
	uint64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > max) {
			return false;
		}
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return v >= 1 && v <= max;
}

static void cmd_wait(struct control_client *client, int argc, char **argv)
{
	if (argc != 3) {
		reply(client, "error wait: expected wait NAME FRAMES");
		return;
	}
	struct wla_output *out = find_output(client->control, argv[1]);
	if (!out) {
		reply(client, "error wait: no output named %s", argv[1]);
		return;
	}
	uint64_t n;
	if (!parse_count(argv[2], CONTROL_WAIT_MAX, &n)) {
		reply(client, "error wait: frames '%s': expected 1..%d", argv[2], CONTROL_WAIT_MAX);
		return;
	}
	client->busy = CLIENT_WAITING;
	client->wait_left = client->wait_asked = n;
	watch_output(client, out);
}

static void handle_capture(struct wla_capture *capture, const struct wla_image *image,
	uint64_t seq, void *data)
{
	struct control_client *client = data;
	client->capture = NULL;
	if (!image) {
		reply(client, "error capture: output %s is off or went away before a frame "
			"latched", client->output_name);
	} else {
		int ret = wla_image_write_png(image, client->capture_path);
		if (ret < 0) {
			reply(client, "error capture: cannot write %s: %s", client->capture_path,
				strerror(-ret));
		} else {
			reply(client, "ok captured %" PRIu32 "x%" PRIu32 " seq=%" PRIu64
				" crc32=%08" PRIx32 " %s", image->width, image->height, seq,
				wla_image_crc32(image), client->capture_path);
		}
	}
	client_finish_request(client);
}

/* The request waits for out's next latched frame, answered by func. */
static void start_capture(struct control_client *client, struct wla_output *out,
	wla_capture_func_t func, const char *verb)
{
	client->busy = CLIENT_CAPTURING;
	watch_output(client, out);
	struct wla_capture *capture = wla_output_capture(&out->base, func, client);
	if (client->busy == CLIENT_CAPTURING) {
		/* Not answered from inside the call. */
		client->capture = capture;
		if (!capture) {
			reply(client, "error %s: output %s cannot capture", verb, out->base.name);
			client_finish_request(client);
		}
	}
}

static void cmd_capture(struct control_client *client, int argc, char **argv)
{
	if (argc != 3) {
		reply(client, "error capture: expected capture NAME PATH");
		return;
	}
	struct wla_output *out = find_output(client->control, argv[1]);
	if (!out) {
		reply(client, "error capture: no output named %s", argv[1]);
		return;
	}
	if (argv[2][0] != '/') {
		reply(client, "error capture: path '%s' is not absolute", argv[2]);
		return;
	}
	if (!out->base.enabled) {
		reply(client, "error capture: output %s is off", argv[1]);
		return;
	}
	snprintf(client->capture_path, sizeof(client->capture_path), "%s", argv[2]);
	start_capture(client, out, handle_capture, "capture");
}

static void handle_compare(struct wla_capture *capture, const struct wla_image *image,
	uint64_t seq, void *data)
{
	struct control_client *client = data;
	struct control_compare *cmp = client->compare;
	client->capture = NULL;
	struct wla_compare_result r;
	struct wla_image *diff = NULL;
	bool same_size = image && image->width == cmp->reference->width &&
		image->height == cmp->reference->height;
	int ret = same_size ? wla_image_compare(image, cmp->reference, &cmp->opt, &r,
		cmp->diff_path[0] ? &diff : NULL) : 0;
	if (!image) {
		reply(client, "error compare: output %s is off or went away before a frame "
			"latched", client->output_name);
	} else if (!same_size) {
		/* The mode changed since the request. */
		reply(client, "error compare: the frame is %" PRIu32 "x%" PRIu32 ", the "
			"reference %" PRIu32 "x%" PRIu32, image->width, image->height,
			cmp->reference->width, cmp->reference->height);
	} else if (ret < 0) {
		reply(client, "error compare: %s", strerror(-ret));
	} else if (diff && (ret = wla_image_write_png(diff, cmp->diff_path)) < 0) {
		reply(client, "error compare: cannot write the diff image %s: %s",
			cmp->diff_path, strerror(-ret));
	} else if (r.match) {
		reply(client, "ok match differing=%" PRIu64 " compared=%" PRIu64 " ignored=%"
			PRIu64 " max_delta=%" PRIu32 " seq=%" PRIu64, r.differing, r.compared,
			r.ignored, r.max_delta, seq);
	} else {
		/* "differ": wlatomic-ctl's exit status 1, not a refusal's 3. */
		reply(client, "error compare: differ: %" PRIu64 " of %" PRIu64 " pixels by more "
			"than %" PRIu32 " (at most %" PRIu64 " may), the first at %" PRIu32 ",%"
			PRIu32 "; ignored=%" PRIu64 " max_delta=%" PRIu32 " seq=%" PRIu64 "%s%s",
			r.differing, r.compared, cmp->opt.tolerance, cmp->opt.max_pixels,
			r.first_x, r.first_y, r.ignored, r.max_delta, seq, diff ? " diff=" : "",
			diff ? cmp->diff_path : "");
	}
	wla_image_destroy(diff);
	client_finish_request(client);
}

/* A decimal number of digits only (no sign, no blanks), at most max. */
static bool parse_u64(const char *s, uint64_t max, uint64_t *v)
{
	if (!*s || strspn(s, "0123456789") != strlen(s)) {
		return false;
	}
	errno = 0;
	unsigned long long n = strtoull(s, NULL, 10);
	if (errno || n > max) {
		return false;
	}
	*v = n;
	return true;
}

/* An int32 in decimal, with an optional '-', ending at stop; *s past it. */
static bool parse_i32(const char **s, char stop, int32_t *v)
{
	const char *p = *s;
	bool neg = *p == '-';
	p += neg;
	size_t n = strspn(p, "0123456789");
	if (n == 0 || n > 10 || p[n] != stop) {
		return false;
	}
	long long x = strtoll(p, NULL, 10);
	x = neg ? -x : x;
	if (x < INT32_MIN || x > INT32_MAX) {
		return false;
	}
	*v = (int32_t)x;
	*s = p + n + (stop ? 1 : 0);
	return true;
}

/* An option of compare (KEY=VALUE) into cmp; false (replied) if bad. */
static bool compare_option(struct control_client *client, struct control_compare *cmp,
	const char *word)
{
	uint64_t v;
	if (strncmp(word, "tolerance=", 10) == 0) {
		if (!parse_u64(word + 10, 255, &v)) {
			reply(client, "error compare: tolerance '%s': expected 0..255", word + 10);
			return false;
		}
		cmp->opt.tolerance = (uint32_t)v;
	} else if (strncmp(word, "max-pixels=", 11) == 0) {
		if (!parse_u64(word + 11, UINT64_MAX, &v)) {
			reply(client, "error compare: max-pixels '%s': expected a count of pixels",
				word + 11);
			return false;
		}
		cmp->opt.max_pixels = v;
	} else if (strncmp(word, "ignore=", 7) == 0) {
		struct wla_image_rect r;
		const char *p = word + 7;
		if (!parse_i32(&p, ',', &r.x) || !parse_i32(&p, ',', &r.y) ||
				!parse_i32(&p, 'x', &r.width) || !parse_i32(&p, '\0', &r.height) ||
				r.width <= 0 || r.height <= 0) {
			reply(client, "error compare: ignore '%s': expected X,Y,WxH with W and H "
				"above 0", word + 7);
			return false;
		}
		if (cmp->opt.n_ignore == CONTROL_COMPARE_MAX_IGNORE) {
			reply(client, "error compare: more than %d ignored rectangles",
				CONTROL_COMPARE_MAX_IGNORE);
			return false;
		}
		cmp->ignore[cmp->opt.n_ignore++] = r;
	} else if (strncmp(word, "diff=", 5) == 0) {
		if (word[5] != '/') {
			reply(client, "error compare: diff path '%s' is not absolute", word + 5);
			return false;
		}
		snprintf(cmp->diff_path, sizeof(cmp->diff_path), "%s", word + 5);
	} else {
		reply(client, "error compare: unknown option '%s' (tolerance=N, max-pixels=N, "
			"ignore=X,Y,WxH, diff=PATH)", word);
		return false;
	}
	return true;
}

static void cmd_compare(struct control_client *client, int argc, char **argv)
{
	if (argc < 3) {
		reply(client, "error compare: expected compare NAME REFERENCE [tolerance=N] "
			"[max-pixels=N] [ignore=X,Y,WxH]... [diff=PATH]");
		return;
	}
	struct wla_output *out = find_output(client->control, argv[1]);
	if (!out) {
		reply(client, "error compare: no output named %s", argv[1]);
		return;
	}
	if (argv[2][0] != '/') {
		reply(client, "error compare: reference path '%s' is not absolute", argv[2]);
		return;
	}
	struct control_compare *cmp = calloc(1, sizeof(*cmp));
	if (!cmp) {
		reply(client, "error compare: out of memory");
		return;
	}
	cmp->opt.ignore = cmp->ignore;
	for (int i = 3; i < argc; i++) {
		if (!compare_option(client, cmp, argv[i])) {
			compare_free(cmp);
			return;
		}
	}
	if (!out->base.enabled) {
		reply(client, "error compare: output %s is off", argv[1]);
		compare_free(cmp);
		return;
	}
	/* Read by the compositor: its user must be able to. Its size first, so
	 * that a file of another size is not decoded on the event loop. */
	uint32_t w, h;
	if (wla_png_size(argv[2], &w, &h) < 0) {
		reply(client, "error compare: cannot read the reference %s as a PNG", argv[2]);
		compare_free(cmp);
		return;
	}
	if ((int32_t)w != out->base.width || (int32_t)h != out->base.height) {
		reply(client, "error compare: the frame is %dx%d, the reference %" PRIu32 "x%"
			PRIu32, out->base.width, out->base.height, w, h);
		compare_free(cmp);
		return;
	}
	if (!(cmp->reference = wla_image_read_png(argv[2]))) {
		reply(client, "error compare: cannot read the reference %s as a PNG", argv[2]);
		compare_free(cmp);
		return;
	}
	client->compare = cmp;
	start_capture(client, out, handle_compare, "compare");
}

/* A script file bigger than this is refused (SCRIPT_MAX_LINES lines of
 * input are far less). */
#define CONTROL_SCRIPT_MAX (4 * 1024 * 1024)

static void handle_script_done(void *data, int status, const char *message)
{
	struct control_client *client = data;
	client->script = NULL;
	if (status == 0) {
		reply(client, "ok %s", message);
	} else {
		reply(client, "error %s", message);
	}
	client_finish_request(client);
}

static char *read_script(struct control_client *client, const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		reply(client, "error script: cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	char *text = malloc(CONTROL_SCRIPT_MAX + 1);
	size_t len = text ? fread(text, 1, CONTROL_SCRIPT_MAX + 1, f) : 0;
	bool failed = text && ferror(f);
	fclose(f);
	if (!text || failed || len > CONTROL_SCRIPT_MAX) {
		reply(client, "error script: %s: %s", path, !text ? "out of memory" :
			failed ? "read error" : "larger than 4 MiB");
		free(text);
		return NULL;
	}
	if (memchr(text, '\0', len)) {
		reply(client, "error script: %s holds a NUL byte", path);
		free(text);
		return NULL;
	}
	text[len] = '\0';
	return text;
}

static void cmd_script(struct control_client *client, int argc, char **argv)
{
	if (argc != 2) {
		reply(client, "error script: expected script PATH");
		return;
	}
	if (argv[1][0] != '/') {
		reply(client, "error script: path '%s' is not absolute", argv[1]);
		return;
	}
	char *text = read_script(client, argv[1]);
	if (!text) {
		return;
	}
	const char *base = strrchr(argv[1], '/') + 1;
	char err[WLA_INPUT_ERROR_MAX + 128];
	client->busy = CLIENT_SCRIPT;
	client->script = wla_input_script_start(client->control->backend->input, base, text,
		handle_script_done, client, err, sizeof(err));
	free(text);
	if (!client->script) {
		client->busy = CLIENT_IDLE;
		reply(client, "error %s", err);
	}
}

/* An input line ("type hello"): at once. A listener of the events may
 * destroy the backend, the control and client with it (the control's hold
 * doomed). */
static void run_input(struct control_client *client, const char *verb, const char *line,
	const struct wla_hold *hold)
{
	struct wla_input *input = client->control->backend->input;
	struct wla_input_action act;
	char err[WLA_INPUT_ERROR_MAX];
	if (wla_input_parse(input, line, &act, err, sizeof(err)) < 0) {
		reply(client, "error %s", err);
		return;
	}
	if (act.has_at) {
		reply(client, "error at: times are for scripts; a line here goes at once");
		return;
	}
	int ret = wla_input_perform(input, &act, err, sizeof(err));
	if (wla_doomed(hold)) {
		return;
	}
	if (ret < 0) {
		reply(client, "error %s", err);
		return;
	}
	reply(client, "ok %s", verb);
}

static const char *const input_verbs[] = {
	"key", "type", "move", "move-by", "button", "click", "axis", "touch", "at",
};

static const struct {
	const char *name;
	void (*run)(struct control_client *client, int argc, char **argv);
} commands[] = {
	{ "list", cmd_list },
	{ "planes", cmd_planes },
	{ "plug", cmd_plug },
	{ "unplug", cmd_unplug },
	{ "link-bad", cmd_link_bad },
	{ "capture", cmd_capture },
	{ "compare", cmd_compare },
	{ "wait", cmd_wait },
	{ "script", cmd_script },
};

static void client_run_line(struct control_client *client, char *line,
	const struct wla_hold *hold)
{
	/* Input lines keep their text as it is (type's blanks). */
	char verb[16];
	size_t skip = strspn(line, " \t\r");
	size_t vlen = strcspn(line + skip, " \t\r");
	if (vlen < sizeof(verb)) {
		memcpy(verb, line + skip, vlen);
		verb[vlen] = '\0';
		for (size_t i = 0; i < WLA_ARRAY_SIZE(input_verbs); i++) {
			if (strcmp(verb, input_verbs[i]) == 0) {
				size_t len = strlen(line);
				if (len && line[len - 1] == '\r') {
					line[len - 1] = '\0';
				}
				run_input(client, verb, line + skip, hold);
				return;
			}
		}
	}
	char *argv[CONTROL_MAX_ARGS + 1];
	int argc = 0;
	char *save = NULL;
	for (char *tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
		if (argc == CONTROL_MAX_ARGS) {
			reply(client, "error %s: too many arguments", argv[0]);
			return;
		}
		argv[argc++] = tok;
	}
	if (argc == 0) {
		return;
	}
	for (size_t i = 0; i < WLA_ARRAY_SIZE(commands); i++) {
		if (strcmp(argv[0], commands[i].name) == 0) {
			commands[i].run(client, argc, argv);
			return;
		}
	}
	reply(client, "error unknown command '%s' (list, planes, plug, unplug, link-bad, "
		"capture, compare, wait, script, key, type, move, move-by, button, click, axis, "
		"touch)", argv[0]);
}

/* Run the complete lines received, one request at a time. False if the
 * control was destroyed meanwhile: touch nothing of it. */
static bool client_process(struct control_client *client)
{
	struct wla_control *control = client->control;
	wla_hold(&control->hold);
	client_process_lines(client, &control->hold);
	return wla_release(&control->hold, free, control);
}

static void client_process_lines(struct control_client *client, const struct wla_hold *hold)
{
	while (client->busy == CLIENT_IDLE && !client->dead && !client->closing) {
		char *nl = memchr(client->in, '\n', client->in_len);
		if (!nl) {
			if (client->in_len == sizeof(client->in)) {
				reply(client, "error request longer than %d bytes; closing",
					CONTROL_LINE_MAX - 1);
				client->closing = true;
				client->in_len = 0;
				client_update_mask(client);
			}
			return;
		}
		*nl = '\0';
		char line[CONTROL_LINE_MAX];
		size_t len = (size_t)(nl - client->in) + 1;
		memcpy(line, client->in, len);
		memmove(client->in, client->in + len, client->in_len - len);
		client->in_len -= len;
		if (memchr(line, '\0', len - 1)) {
			reply(client, "error request holds a NUL byte");
			continue;
		}
		client_run_line(client, line, hold);
		if (wla_doomed(hold)) {
			return;
		}
	}
}

static int handle_client(int fd, uint32_t mask, void *data)
{
	struct control_client *client = data;
	if (client->dead) {
		return 0;
	}
	if (mask & WL_EVENT_WRITABLE && client->out_len) {
		ssize_t n = send(fd, client->out, client->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			client_destroy(client);
			return 0;
		}
		if (n > 0) {
			memmove(client->out, client->out + n, client->out_len - (size_t)n);
			client->out_len -= (size_t)n;
		}
		if (client->out_len == 0 && client->closing) {
			client_destroy(client);
			return 0;
		}
		client_update_mask(client);
	}
	if (mask & WL_EVENT_READABLE) {
		ssize_t n = recv(fd, client->in + client->in_len,
			sizeof(client->in) - client->in_len, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			/* Gone, perhaps mid-request: what it waited for goes too. */
			client_destroy(client);
			return 0;
		}
		if (n > 0) {
			client->in_len += (size_t)n;
			client_process(client);
		}
	} else if (mask & (WL_EVENT_HANGUP | WL_EVENT_ERROR)) {
		client_destroy(client);
		return 0;
	}
	return 0;
}

static int handle_listen(int fd, uint32_t mask, void *data)
{
	struct wla_control *control = data;
	int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0) {
		if (errno != EAGAIN && errno != EINTR) {
			wlr_log(WLR_ERROR, "control: %s: accept: %s", control->path, strerror(errno));
		}
		return 0;
	}
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
			cred.uid != geteuid()) {
		static const char msg[] = "error permission denied: not the compositor's user\n";
		wlr_log(WLR_INFO, "control: %s: refused a client of uid %ld (the compositor "
			"runs as %ld)", control->path, len ? (long)cred.uid : -1L, (long)geteuid());
		send(cfd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(cfd);
		return 0;
	}
	if (control->n_clients == CONTROL_MAX_CLIENTS) {
		static const char msg[] = "error too many clients\n";
		wlr_log(WLR_INFO, "control: %s: %d clients already; one more refused",
			control->path, CONTROL_MAX_CLIENTS);
		send(cfd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(cfd);
		return 0;
	}
	struct control_client *client = calloc(1, sizeof(*client));
	if (client) {
		client->source = wl_event_loop_add_fd(control->loop, cfd, WL_EVENT_READABLE,
			handle_client, client);
	}
	if (!client || !client->source) {
		wlr_log(WLR_ERROR, "control: %s: out of memory for a client", control->path);
		free(client);
		close(cfd);
		return 0;
	}
	client->control = control;
	client->fd = cfd;
	wl_list_insert(control->clients.prev, &client->link);
	control->n_clients++;
	return 0;
}

/*
 * Listen on path: 0 and the fd, -EADDRINUSE if a live process answers
 * there, another negative errno (logged) otherwise. A socket nobody
 * answers on is a dead compositor's: it is replaced.
 */
static int listen_on(struct wla_control *control, const char *path, bool quiet_busy)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(addr.sun_path)) {
		wlr_log(WLR_ERROR, "control: %s: longer than %zu bytes", path,
			sizeof(addr.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(addr.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		wlr_log(WLR_ERROR, "control: socket: %s", strerror(errno));
		return -errno;
	}
	for (int attempt = 0;; attempt++) {
		if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
			break;
		}
		int err = errno;
		struct stat st;
		if (err != EADDRINUSE || attempt > 0 || lstat(path, &st) < 0) {
			wlr_log(WLR_ERROR, "control: cannot bind %s: %s", path, strerror(err));
			close(fd);
			return -err;
		}
		if (!S_ISSOCK(st.st_mode)) {
			wlr_log(WLR_ERROR, "control: %s exists and is not a socket; no control "
				"socket", path);
			close(fd);
			return -EEXIST;
		}
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		bool live = probe >= 0 &&
			connect(probe, (struct sockaddr *)&addr, sizeof(addr)) == 0;
		int probe_err = errno;
		if (probe >= 0) {
			close(probe);
		}
		if (live || probe_err != ECONNREFUSED) {
			if (!quiet_busy) {
				wlr_log(WLR_ERROR, "control: %s is in use by a live compositor; no "
					"control socket (set WLA_CONTROL to another path)", path);
			}
			close(fd);
			return -EADDRINUSE;
		}
		wlr_log(WLR_INFO, "control: %s was left by a compositor that is gone; "
			"replacing it", path);
		unlink(path);
	}
	struct stat st;
	if (chmod(path, 0600) < 0 || stat(path, &st) < 0 || listen(fd, 16) < 0) {
		wlr_log(WLR_ERROR, "control: %s: %s", path, strerror(errno));
		unlink(path);
		close(fd);
		return -errno;
	}
	control->fd = fd;
	control->ino = st.st_ino;
	control->dev = st.st_dev;
	snprintf(control->path, sizeof(control->path), "%s", path);
	return 0;
}

struct wla_control *wla_control_create(struct wla_backend *backend)
{
	const char *want = backend->config.control;
	if (strcmp(want, "off") == 0) {
		return NULL;
	}
	struct wla_control *control = calloc(1, sizeof(*control));
	if (!control) {
		wlr_log(WLR_ERROR, "control: out of memory");
		return NULL;
	}
	control->backend = backend;
	control->loop = wl_display_get_event_loop(backend->display);
	control->fd = -1;
	wl_list_init(&control->clients);

	int ret = -ENOENT;
	if (want[0]) {
		ret = listen_on(control, want, false);
	} else {
		const char *dir = getenv("XDG_RUNTIME_DIR");
		if (!dir || !dir[0]) {
			wlr_log(WLR_INFO, "control: XDG_RUNTIME_DIR is not set and WLA_CONTROL "
				"names no path: no control socket");
		}
		for (int n = 0; dir && dir[0] && n < CONTROL_DEFAULT_SLOTS; n++) {
			char path[WLA_CONTROL_PATH_MAX + 16];
			snprintf(path, sizeof(path), "%s/wlatomic-%d", dir, n);
			ret = listen_on(control, path, true);
			if (ret != -EADDRINUSE) {
				break;
			}
		}
		if (ret == -EADDRINUSE) {
			wlr_log(WLR_ERROR, "control: %s/wlatomic-0..%d are all in use; no "
				"control socket", dir, CONTROL_DEFAULT_SLOTS - 1);
		}
	}
	if (ret == 0) {
		control->source = wl_event_loop_add_fd(control->loop, control->fd,
			WL_EVENT_READABLE, handle_listen, control);
		if (!control->source) {
			wlr_log(WLR_ERROR, "control: %s: cannot watch the socket", control->path);
			unlink(control->path);
			close(control->fd);
			ret = -ENOMEM;
		}
	}
	if (ret < 0) {
		free(control);
		return NULL;
	}
	wlr_log(WLR_INFO, "control: listening on %s", control->path);
	return control;
}

void wla_control_destroy(struct wla_control *control)
{
	if (!control) {
		return;
	}
	struct control_client *client, *tmp;
	wl_list_for_each_safe(client, tmp, &control->clients, link) {
		client_destroy(client);
	}
	if (control->reap_idle) {
		wl_event_source_remove(control->reap_idle);
	}
	wl_event_source_remove(control->source);
	close(control->fd);
	/* Only our own socket: another compositor may have replaced it. */
	struct stat st;
	if (stat(control->path, &st) == 0 && st.st_ino == control->ino &&
			st.st_dev == control->dev) {
		unlink(control->path);
	}
	if (wla_hold_doom(&control->hold)) {
		free(control);
	}
}

const char *wla_control_path(const struct wla_control *control)
{
	return control ? control->path : NULL;
}
