/*
 * The compositor rows of wla-bench pacing: Debian's sway and cage, unmodified,
 * on wlatomic through the preload module and on wlroots' headless backend,
 * each with weston-presentation-shm, a client that draws a new buffer on
 * every frame callback.
 *
 * The figures come from outside the compositor, the same way on both
 * backends: the client runs with WAYLAND_DEBUG=client, so every frame
 * callback it gets is a line with its timestamp (the compositor's clock when
 * it sent it, in ms: the client's own scheduling does not move it); after a
 * warm-up, the window is the next N of them. CPU per frame is the compositor process's
 * utime+stime (/proc/PID/stat) over the window divided by N. On wlatomic the
 * control socket adds what only a backend with vblanks can tell: frames
 * presented, missed vblanks and the vblanks they spanned. The client's own
 * presentation feedback is counted too: it shows where the compositor or
 * the backend never reports a frame presented.
 */
#define _GNU_SOURCE /* initgroups, pipe2, unshare, CLONE_NEWNS */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "commands.h"
#include "runner.h"
#include "util.h"

#define COMP_REFRESH_HZ 60
#define COMP_MODE "1920x1080@60"
/* Not wlatomic-test: the compositors suite ends every process of that user. */
#define COMP_USER "wlatomic-bench"
#define COMP_WARMUP_FRAMES 60
/* Until the compositor's sockets exist, and its first frame callback. */
#define COMP_START_TIMEOUT_MS 10000
/* A frame callback later than this after the previous one: hung. */
#define COMP_FRAME_TIMEOUT_MS 5000
#define COMP_STOP_TIMEOUT_MS 5000
#define COMP_CTL_TIMEOUT_MS 10000
/* The goal of the wlatomic rows: mean frame interval within 1% of the period. */
#define COMP_GOAL_MEAN_ERROR 0.01
#define COMP_MAX_ERRORS 5
/* At most pacing's BENCH_MAX_RUNS. */
#define COMP_MAX_RUNS 15
#define COMP_TAIL_LINES 20
/* The PATH of the compositors and clients (the scrubbed environment). */
#define COMP_PATH "/usr/local/bin:/usr/bin:/bin"
#define COMP_X11_DIR "/tmp/.X11-unix"

enum comp_backend {
	COMP_WLA,
	COMP_HEADLESS,
	COMP_N_BACKENDS,
};

static const char *const backend_names[COMP_N_BACKENDS] = { "wla", "headless" };

struct compositor {
	const char *name;
	const char *version_arg;
	/* cage runs the client as its application; sway gets it from us. */
	bool runs_client;
	/* The mode of both rows: sway's configuration sets it on HEADLESS-1;
	 * cage 0.1.4 has no way to set one, so headless keeps what wlroots 0.15
	 * makes of WLR_HEADLESS_OUTPUTS and wlatomic is given the same, since
	 * cage's fullscreen client and its composition scale with it. */
	const char *headless_mode;
};

static const struct compositor compositors[] = {
	{ .name = "sway", .version_arg = "--version", .headless_mode = COMP_MODE },
	{ .name = "cage", .version_arg = "-v", .runs_client = true,
		.headless_mode = "1280x720@60" },
};
#define COMP_N (WLA_ARRAY_SIZE(compositors))

/* An error line the compositor logged, with how often. */
struct comp_error {
	char text[160];
	long count;
};

/* One run, NAN where the backend cannot tell. */
struct comp_result {
	long frames;       /* frame callbacks in the window */
	long fb_presented; /* presentation feedback "presented" in the window */
	long skipped;      /* periods between frame callbacks without one */
	double frame_int_us, max_int_us;
	/* From the control socket (wlatomic): idle = vblanks without a new frame. */
	double presented, missed, idle, pres_int_us;
	double cpu_us;                         /* per frame */
	char mode[32]; /* wla: as the control socket lists it; headless: as set up */
	struct comp_error errors[COMP_MAX_ERRORS];
	size_t n_errors;
	long other_errors;
};

struct comp_row {
	const char *missing; /* the program that is not installed, or NULL */
	bool failed;
	size_t median;
	struct comp_result *runs;
};

struct comp_bench {
	long runs, frames;
	bool verbose;
	/* As root: the compositors run as this user. */
	bool drop;
	uid_t uid;
	gid_t gid;
	char user[64];
	char *preload, *ctl;
	char client[PATH_MAX], stdbuf[PATH_MAX], sh[PATH_MAX];
	char programs[COMP_N][PATH_MAX];
	char versions[COMP_N][32];
	struct comp_row rows[COMP_N][COMP_N_BACKENDS];
};

static double period_us(void)
{
	return 1e6 / COMP_REFRESH_HZ;
}

/* A compositor or client in the PATH the compositors get. */
static bool find_in_path(const char *name, char out[PATH_MAX])
{
	return bench_find_program(name, COMP_PATH, out, PATH_MAX);
}

/* A whole environment, built for one child. */
struct comp_env {
	char *vars[24];
	size_t n;
	char store[8192];
	size_t used;
};

static void env_add(struct comp_env *env, const char *key, const char *value)
{
	size_t need = strlen(key) + strlen(value) + 2;
	/* Sized for what this file sets. */
	assert(env->n + 1 < WLA_ARRAY_SIZE(env->vars) && env->used + need <= sizeof(env->store));
	char *var = env->store + env->used;
	snprintf(var, need, "%s=%s", key, value);
	env->used += need;
	env->vars[env->n++] = var;
	env->vars[env->n] = NULL;
}

/* What every child gets: nothing of the caller's session. */
static void env_base(struct comp_env *env, const char *runtime)
{
	env->n = 0;
	env->used = 0;
	env_add(env, "PATH", COMP_PATH);
	env_add(env, "HOME", runtime);
	env_add(env, "XDG_RUNTIME_DIR", runtime);
	env_add(env, "LANG", "C.UTF-8");
}

/* How a child of a run starts (see child_setup). */
struct comp_child {
	const struct comp_bench *bench;
	bool as_user;
	/* cage: an empty /tmp/.X11-unix of its own (see private_x11_dir). */
	bool private_x11;
};

/*
 * cage 0.1.4 always creates wlroots' lazy Xwayland server, whose sockets need
 * /tmp/.X11-unix owned by root or by the compositor's user: one made by
 * another user's compositor makes cage exit. As root, cage gets an empty one
 * in a mount namespace of its own; the host's stays as it was.
 */
static bool private_x11_dir(void)
{
	return unshare(CLONE_NEWNS) == 0 &&
		mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
		mount("tmpfs", COMP_X11_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			"mode=1777") == 0;
}

/* In the child, before exec: its /tmp/.X11-unix, then the bench user. */
static bool child_setup(const void *data)
{
	const struct comp_child *child = data;
	const struct comp_bench *bench = child->bench;
	if (child->private_x11 && bench->drop && !private_x11_dir()) {
		fprintf(stderr, "%s: no private %s (%s): cage uses the host's\n", bench_prog,
			COMP_X11_DIR, strerror(errno));
	}
	if (child->as_user && bench->drop && (initgroups(bench->user, bench->gid) != 0 ||
			setgid(bench->gid) != 0 || setuid(bench->uid) != 0)) {
		fprintf(stderr, "%s: cannot become %s: %s\n", bench_prog, bench->user,
			strerror(errno));
		return false;
	}
	return true;
}

/* Start a child in a process group of its own, the environment envp; its
 * pid, or -1. */
static pid_t spawn(const struct comp_child *child, const char *const *argv, char *const *envp,
	int out_fd, int err_fd)
{
	struct bench_spawn s = { .argv = argv, .envp = envp, .child_setup = child_setup,
		.data = child, .out_fd = out_fd, .err_fd = err_fd, .group = true };
	return bench_spawn(&s);
}

static void stop_group(pid_t pid)
{
	int term_signal;
	bench_stop(pid, true, COMP_STOP_TIMEOUT_MS, &term_signal);
}

/* Run argv (as the bench user if as_user) and read what it prints into buf;
 * false unless it exits 0 within COMP_CTL_TIMEOUT_MS. */
static bool run_capture(const struct comp_bench *bench, const char *const *argv, bool as_user,
	char *buf, size_t size)
{
	char *const envp[] = { "PATH=" COMP_PATH, "LANG=C.UTF-8", NULL };
	struct comp_child child = { .bench = bench, .as_user = as_user };
	struct bench_spawn s = { .argv = argv, .envp = envp, .child_setup = child_setup,
		.data = &child, .out_fd = -1, .err_fd = -1, .group = true };
	return bench_capture_output(&s, COMP_CTL_TIMEOUT_MS, buf, size);
}

/* The last word of what "program version_arg" prints first ("1.7"). */
static void read_version(struct comp_bench *bench, size_t c)
{
	const char *argv[] = { bench->programs[c], compositors[c].version_arg, NULL };
	char out[256];
	snprintf(bench->versions[c], sizeof(bench->versions[c]), "?");
	if (!run_capture(bench, argv, false, out, sizeof(out))) {
		return;
	}
	out[strcspn(out, "\n")] = '\0';
	const char *word = strrchr(out, ' ');
	snprintf(bench->versions[c], sizeof(bench->versions[c]), "%.*s",
		(int)sizeof(bench->versions[c]) - 1, word != NULL ? word + 1 : out);
}

/* The statistics of the first output in the control socket's list. */
struct ctl_sample {
	double presented, missed, vblanks;
	char mode[32];
};

static bool ctl_field(const char *line, const char *key, double *value)
{
	char pattern[64];
	snprintf(pattern, sizeof(pattern), " %s=", key);
	const char *p = strstr(line, pattern);
	if (p == NULL) {
		return false;
	}
	char *end;
	*value = strtod(p + strlen(pattern), &end);
	return end != p + strlen(pattern);
}

static bool ctl_list(const struct comp_bench *bench, const char *socket, struct ctl_sample *s)
{
	const char *argv[] = { bench->ctl, "-s", socket, "-t", "5", "list", NULL };
	char out[4096];
	if (!run_capture(bench, argv, true, out, sizeof(out))) {
		fprintf(stderr, "%s: wlatomic-ctl list failed: %s\n", bench_prog, out);
		return false;
	}
	const char *line = strstr(out, "output=yes");
	if (line == NULL || !ctl_field(line, "frames_presented", &s->presented) ||
			!ctl_field(line, "missed_vblanks", &s->missed) ||
			!ctl_field(line, "vblanks", &s->vblanks)) {
		fprintf(stderr, "%s: no output statistics in the list: %s\n", bench_prog, out);
		return false;
	}
	/* "mode=1920x1080@60.000" as "1920x1080@60". */
	const char *mode = strstr(line, " mode=");
	double hz = 0;
	int n = 0;
	if (mode != NULL && sscanf(mode, " mode=%*dx%*d@%n%lf", &n, &hz) == 1) {
		snprintf(s->mode, sizeof(s->mode), "%.*s%g", n - 6, mode + 6, hz);
	} else {
		snprintf(s->mode, sizeof(s->mode), "?");
	}
	return true;
}

/* Every [ERROR] line of the compositor's stderr, counted by text. */
static void collect_errors(const char *path, struct comp_result *r)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return;
	}
	char line[1024];
	while (fgets(line, sizeof(line), f) != NULL) {
		const char *text = strstr(line, "[ERROR] ");
		if (text == NULL) {
			continue;
		}
		text += strlen("[ERROR] ");
		size_t len = strcspn(text, "\n");
		size_t i = 0;
		while (i < r->n_errors && (strlen(r->errors[i].text) != len ||
				strncmp(r->errors[i].text, text, len) != 0)) {
			i++;
		}
		if (i == r->n_errors && r->n_errors < COMP_MAX_ERRORS &&
				len < sizeof(r->errors[0].text)) {
			snprintf(r->errors[i].text, sizeof(r->errors[i].text), "%.*s", (int)len, text);
			r->n_errors++;
		}
		if (i < r->n_errors) {
			r->errors[i].count++;
		} else {
			r->other_errors++;
		}
	}
	fclose(f);
}

/* A ready function of bench_run_wait_up: the control socket (data) is
 * there. */
static bool control_up(pid_t pid, const void *data)
{
	struct stat st;
	return stat(data, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* What the client's lines told so far. */
struct comp_watch {
	long frames;
	uint32_t frame_callback; /* id of the frame callback asked for last */
	uint32_t last_ms;        /* timestamp of the last frame callback */
	long fb_presented;
};

/* One line of the client (libwayland's debug log or weston-presentation-shm's
 * feedback); true if it is the frame callback asked for last, its timestamp
 * in *ms. */
static bool watch_line(struct comp_watch *w, const char *line, uint32_t *ms)
{
	const char *p;
	unsigned id;
	int pos = 0;
	if (strstr(line, ", p2p ") != NULL && strstr(line, "seq ") != NULL) {
		w->fb_presented++;
	} else if ((p = strstr(line, " -> wl_surface@")) != NULL &&
			(p = strstr(p, ".frame(new id wl_callback@")) != NULL &&
			sscanf(p, ".frame(new id wl_callback@%u)", &id) == 1) {
		w->frame_callback = id;
	} else if ((p = strstr(line, "] wl_callback@")) != NULL &&
			sscanf(p, "] wl_callback@%u%n", &id, &pos) == 1 &&
			sscanf(p + pos, ".done(%" SCNu32 ")", ms) == 1 && id == w->frame_callback) {
		w->frame_callback = 0;
		w->frames++;
		return true;
	}
	return false;
}

/* The files and processes of one run. */
struct comp_run {
	const struct compositor *comp;
	enum comp_backend backend;
	char name[32]; /* "sway wla" */
	struct bench_run run;
	char conf[128], control[128];
	char client_cmd[3 * PATH_MAX];
	pid_t compositor, client; /* each leads a process group */
	int err_fd, out_fd[2];
	struct comp_env env;
};

static bool prepare_run(const struct comp_bench *bench, struct comp_run *r)
{
	snprintf(r->name, sizeof(r->name), "%s %s", r->comp->name, backend_names[r->backend]);
	if (!bench_run_prepare(&r->run, r->name)) {
		return false;
	}
	snprintf(r->conf, sizeof(r->conf), "%s/sway.conf", r->run.dir);
	snprintf(r->control, sizeof(r->control), "%s/control", r->run.runtime);
	snprintf(r->client_cmd, sizeof(r->client_cmd), "exec %s -oL %s 2>&1", bench->stdbuf,
		bench->client);
	/* The bench user passes through the directory to its own runtime dir and
	 * reads sway's configuration. */
	FILE *conf = NULL;
	if (chmod(r->run.dir, 0711) != 0 ||
			(bench->drop && chown(r->run.runtime, bench->uid, bench->gid) != 0) ||
			(conf = fopen(r->conf, "w")) == NULL) {
		fprintf(stderr, "%s: %s: %s\n", bench_prog, r->run.dir, strerror(errno));
		return false;
	}
	/* The mode is wlatomic's default too (WLA_OUTPUTS below). */
	fprintf(conf, "xwayland disable\ndefault_border none\n"
		"output HEADLESS-1 mode 1920x1080@60Hz\n");
	if (fclose(conf) != 0 || chmod(r->conf, 0644) != 0 || pipe2(r->out_fd, O_CLOEXEC) != 0) {
		fprintf(stderr, "%s: %s: %s\n", bench_prog, r->conf, strerror(errno));
		return false;
	}
	r->err_fd = open(r->run.err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (r->err_fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", bench_prog, r->run.err_path, strerror(errno));
		return false;
	}
	return true;
}

static bool start_compositor(const struct comp_bench *bench, size_t c, struct comp_run *r)
{
	env_base(&r->env, r->run.runtime);
	env_add(&r->env, "WLR_RENDERER", "pixman");
	if (r->backend == COMP_WLA) {
		env_add(&r->env, "LD_PRELOAD", bench->preload);
		env_add(&r->env, "WLR_BACKENDS", "wlatomic");
		env_add(&r->env, "WLA_OUTPUTS", r->comp->headless_mode);
		env_add(&r->env, "WLA_CONTROL", r->control);
	} else {
		env_add(&r->env, "WLR_BACKENDS", "headless");
		env_add(&r->env, "WLR_HEADLESS_OUTPUTS", "1");
	}
	if (r->comp->runs_client) {
		/* Its lazy Xwayland server is never started: no X client comes. */
		env_add(&r->env, "WLR_XWAYLAND", "/bin/false");
		env_add(&r->env, "WAYLAND_DEBUG", "client");
	}
	const char *sway_argv[] = { bench->programs[c], "-c", r->conf, NULL };
	const char *cage_argv[] = { bench->programs[c], "--", bench->sh, "-c", r->client_cmd,
		NULL };
	struct comp_child child = { .bench = bench, .as_user = true,
		.private_x11 = r->comp->runs_client };
	r->compositor = spawn(&child, r->comp->runs_client ? cage_argv : sway_argv, r->env.vars,
		r->comp->runs_client ? r->out_fd[1] : r->err_fd, r->err_fd);
	r->run.pid = r->compositor;
	if (r->compositor < 0 || !bench_run_wait_up(&r->run, COMP_START_TIMEOUT_MS,
			r->backend == COMP_WLA ? control_up : NULL, r->control, "control socket")) {
		return false;
	}
	if (r->comp->runs_client) {
		return true;
	}
	env_base(&r->env, r->run.runtime);
	env_add(&r->env, "WAYLAND_DISPLAY", r->run.display);
	env_add(&r->env, "WAYLAND_DEBUG", "client");
	const char *client_argv[] = { bench->sh, "-c", r->client_cmd, NULL };
	child.private_x11 = false;
	r->client = spawn(&child, client_argv, r->env.vars, r->out_fd[1], r->out_fd[1]);
	return r->client > 0;
}

/* The counters at one end of the window. */
struct comp_sample {
	unsigned long long cpu_ticks;
	uint32_t at_ms;
	long fb_presented;
	struct ctl_sample ctl;
};

static bool take_sample(const struct comp_bench *bench, const struct comp_run *r,
	const struct comp_watch *w, uint32_t at_ms, struct comp_sample *s)
{
	s->at_ms = at_ms;
	s->fb_presented = w->fb_presented;
	if (!bench_proc_cpu_ticks(r->compositor, &s->cpu_ticks)) {
		fprintf(stderr, "%s: cannot read /proc/%d/stat\n", bench_prog, (int)r->compositor);
		return false;
	}
	return r->backend != COMP_WLA || ctl_list(bench, r->control, &s->ctl);
}

/*
 * Read the client's lines until the warm-up and the window have passed,
 * sampling at both ends of the window; false (told on stderr) if the client's
 * output ended, the compositor exited, or a frame callback came too late.
 */
static bool watch_window(const struct comp_bench *bench, const struct comp_run *r,
	struct comp_result *result)
{
	const char *name = r->comp->name, *backend = backend_names[r->backend];
	const long start = COMP_WARMUP_FRAMES, end = COMP_WARMUP_FRAMES + bench->frames;
	struct comp_watch w = { 0 };
	struct comp_sample first = { 0 }, last = { 0 };
	char buf[16384];
	size_t len = 0;
	uint64_t last_frame_ns = bench_now_ns();
	uint64_t frame_timeout_ns = COMP_START_TIMEOUT_MS * UINT64_C(1000000);
	/* Four times what the frames take at the refresh rate, and the start. */
	uint64_t deadline_ns = last_frame_ns + frame_timeout_ns +
		(uint64_t)(4e9 * (double)end / COMP_REFRESH_HZ);
	while (w.frames < end) {
		struct pollfd pfd = { .fd = r->out_fd[0], .events = POLLIN };
		int ret = poll(&pfd, 1, 100);
		ssize_t n = 0;
		if (ret > 0) {
			n = read(r->out_fd[0], buf + len, sizeof(buf) - 1 - len);
			if (n == 0) {
				fprintf(stderr, "%s: %s %s: the client's output ended "
					"after %ld frame callbacks\n", bench_prog, name, backend, w.frames);
				return false;
			}
		}
		len += n > 0 ? (size_t)n : 0;
		buf[len] = '\0';
		char *line = buf, *eol;
		while (w.frames < end && (eol = strchr(line, '\n')) != NULL) {
			*eol = '\0';
			uint32_t ms;
			if (watch_line(&w, line, &ms)) {
				last_frame_ns = bench_now_ns();
				frame_timeout_ns = COMP_FRAME_TIMEOUT_MS * UINT64_C(1000000);
				if (w.frames > start) {
					double interval = (double)(uint32_t)(ms - w.last_ms) * 1000.0;
					long periods = lround(interval / period_us());
					result->skipped += periods > 1 ? periods - 1 : 0;
					result->max_int_us = fmax(result->max_int_us, interval);
				}
				w.last_ms = ms;
				if ((w.frames == start && !take_sample(bench, r, &w, ms, &first)) ||
						(w.frames == end && !take_sample(bench, r, &w, ms, &last))) {
					return false;
				}
			}
			line = eol + 1;
		}
		/* A line longer than the buffer is none we look for. */
		len = line == buf && len == sizeof(buf) - 1 ? 0 : len - (size_t)(line - buf);
		memmove(buf, line, len);
		int term_signal, status = bench_wait_exit(r->compositor, 0, &term_signal);
		if (status != -1) {
			fprintf(stderr, "%s: %s %s: %s ended (%s %d) after %ld frame "
				"callbacks\n", bench_prog, name, backend, name,
				status == -2 ? "signal" : "exit status", status == -2 ? term_signal : status,
				w.frames);
			return false;
		}
		uint64_t now = bench_now_ns();
		if (now - last_frame_ns > frame_timeout_ns || now > deadline_ns) {
			fprintf(stderr, "%s: %s %s: %ld frame callbacks, none for %.0f ms%s\n", bench_prog,
				name, backend, w.frames, (now - last_frame_ns) / 1e6,
				now > deadline_ns ? ", out of time for the run" : "");
			return false;
		}
	}
	result->frames = end - start;
	result->frame_int_us = (double)(uint32_t)(last.at_ms - first.at_ms) * 1000.0 /
		result->frames;
	result->fb_presented = last.fb_presented - first.fb_presented;
	result->cpu_us = (double)(last.cpu_ticks - first.cpu_ticks) * 1e6 /
		(double)sysconf(_SC_CLK_TCK) / result->frames;
	snprintf(result->mode, sizeof(result->mode), "%s", r->comp->headless_mode);
	result->presented = result->missed = result->idle = result->pres_int_us = NAN;
	if (r->backend == COMP_WLA) {
		snprintf(result->mode, sizeof(result->mode), "%s", last.ctl.mode);
		result->presented = last.ctl.presented - first.ctl.presented;
		result->missed = last.ctl.missed - first.ctl.missed;
		result->idle = last.ctl.vblanks - first.ctl.vblanks - result->presented;
		result->pres_int_us = result->presented > 0 ?
			(last.ctl.vblanks - first.ctl.vblanks) * period_us() / result->presented : NAN;
	}
	return true;
}

static bool run_once(const struct comp_bench *bench, size_t c, enum comp_backend backend,
	struct comp_result *result)
{
	struct comp_run r = { .comp = &compositors[c], .backend = backend, .compositor = -1,
		.client = -1, .err_fd = -1, .out_fd = { -1, -1 } };
	*result = (struct comp_result){ 0 };
	bool ok = prepare_run(bench, &r) && start_compositor(bench, c, &r);
	if (r.out_fd[1] >= 0) {
		close(r.out_fd[1]);
	}
	ok = ok && watch_window(bench, &r, result);
	if (r.compositor > 0) {
		stop_group(r.compositor);
	}
	if (r.out_fd[0] >= 0) {
		close(r.out_fd[0]);
	}
	if (r.client > 0) {
		stop_group(r.client);
	}
	if (r.err_fd >= 0) {
		close(r.err_fd);
	}
	collect_errors(r.run.err_path, result);
	if (!ok) {
		fprintf(stderr, "%s: the last lines of its stderr:\n", bench_prog);
		bench_print_file(r.run.err_path, COMP_TAIL_LINES);
	}
	/* Stopped above, with its group. */
	r.run.pid = 0;
	bench_run_finish(&r.run);
	return ok;
}

/* As root, the user the compositors run as (sway refuses root), created if
 * missing; else the caller. */
static bool setup_user(struct comp_bench *bench)
{
	bench->drop = geteuid() == 0;
	struct passwd *pw = bench->drop ? getpwnam(COMP_USER) : getpwuid(geteuid());
	if (pw == NULL && bench->drop) {
		char useradd[PATH_MAX], out[512];
		const char *argv[] = { useradd, "--system", "--no-create-home", "--shell",
			"/usr/sbin/nologin", COMP_USER, NULL };
		if (!bench_find_program("useradd", "/usr/sbin:/sbin:/usr/bin", useradd, PATH_MAX) ||
				!run_capture(bench, argv, false, out, sizeof(out))) {
			fprintf(stderr, "%s: cannot create the user %s\n", bench_prog, COMP_USER);
			return false;
		}
		pw = getpwnam(COMP_USER);
	}
	if (pw == NULL) {
		fprintf(stderr, "%s: no user to run the compositors as\n", bench_prog);
		return false;
	}
	bench->uid = pw->pw_uid;
	bench->gid = pw->pw_gid;
	snprintf(bench->user, sizeof(bench->user), "%s", pw->pw_name);
	/* The mount point of cage's private X11 socket directory; created as
	 * systemd-tmpfiles would. */
	if (bench->drop && mkdir(COMP_X11_DIR, 01777) == 0) {
		chmod(COMP_X11_DIR, 01777);
	}
	return true;
}

/* The run of row with the median CPU time per frame. */
static size_t median_by_cpu(const struct comp_bench *bench, const struct comp_row *row)
{
	double cpu[COMP_MAX_RUNS];
	size_t n = (size_t)bench->runs < COMP_MAX_RUNS ? (size_t)bench->runs : COMP_MAX_RUNS;
	for (size_t i = 0; i < n; i++) {
		cpu[i] = row->runs[i].cpu_us;
	}
	return bench_median_index(cpu, n);
}

static void print_row(const struct comp_bench *bench, size_t c, enum comp_backend b)
{
	const struct comp_row *row = &bench->rows[c][b];
	char name[32];
	snprintf(name, sizeof(name), "%s %s", compositors[c].name, backend_names[b]);
	if (row->missing != NULL || row->failed) {
		printf("%-14s %s%s\n", name, row->missing ? "not installed: " : "failed (see above)",
			row->missing ? row->missing : "");
		return;
	}
	const struct comp_result *r = &row->runs[row->median];
	const struct comp_row *headless = &bench->rows[c][COMP_HEADLESS];
	double ratio = NAN;
	if (headless->missing == NULL && !headless->failed) {
		ratio = r->cpu_us / headless->runs[headless->median].cpu_us;
	}
	const double period = period_us();
	char v[10][32];
	printf("%-14s %-13s %6ld %5ld %9s %6s %7s %12s %8s %10s %11s %8s %8s %6s\n", name,
		r->mode, r->frames, r->fb_presented, bench_fmt(v[0], r->presented, 0, false),
		bench_fmt(v[1], r->missed, 0, false), bench_fmt(v[2], (double)r->skipped, 0, false),
		bench_fmt(v[3], r->frame_int_us, 1, false),
		bench_fmt(v[4], (r->frame_int_us - period) / period * 100.0, 3, true),
		bench_fmt(v[5], r->max_int_us, 0, false), bench_fmt(v[6], r->pres_int_us, 1, false),
		bench_fmt(v[7], (r->pres_int_us - period) / period * 100.0, 3, true),
		bench_fmt(v[8], r->cpu_us, 1, false), bench_fmt(v[9], ratio, 3, false));
}

static void print_table(const struct comp_bench *bench)
{
	double tick_us = 1e6 / (double)sysconf(_SC_CLK_TCK);
	printf("\nCompositors (");
	for (size_t c = 0; c < COMP_N; c++) {
		printf("%s%s %s", c > 0 ? ", " : "", compositors[c].name, bench->versions[c]);
	}
	printf(") on wlatomic and wlroots' headless backend, %ld frames at %d Hz after %d "
		"of warm-up,\nmedian of %ld runs by CPU per frame; client weston-presentation-shm "
		"(a new buffer at every frame callback)\n", bench->frames, COMP_REFRESH_HZ,
		COMP_WARMUP_FRAMES, bench->runs);
	printf("mode = wla: as the control socket lists it; headless: as set up (sway: its "
		"config; cage 0.1.4 cannot set one)\n"
		"frames = frame callbacks the client got in the window; fb = presentation "
		"feedback \"presented\" events it got\n"
		"  in the window (0: the compositor offers no wp_presentation, or never "
		"reports a frame presented)\n"
		"presented, missed = the control socket's frames_presented and missed_vblanks "
		"over the window (n/a: headless\n"
		"  has no vblank counter); pres int = vblanks / frames presented x period\n"
		"skipped = periods between two frame callbacks without one; frame int = mean "
		"interval between the timestamps\n"
		"  of the frame callbacks (the compositor's clock when its frame handler sent "
		"them, in ms: max in whole ms)\n"
		"cpu us/f = utime+stime of the compositor process (/proc/PID/stat, ticks of "
		"%.0f us: +-%.1f us/f) / frames;\n"
		"  cpu x = that / the headless row's of the same compositor\n\n",
		tick_us, tick_us / (double)bench->frames);
	printf("%-14s %-13s %6s %5s %9s %6s %7s %12s %8s %10s %11s %8s %8s %6s\n", "config",
		"mode", "frames", "fb", "presented", "missed", "skipped", "frame int us", "err %",
		"max int us", "pres int us", "err %", "cpu us/f", "cpu x");
	for (size_t c = 0; c < COMP_N; c++) {
		for (int b = 0; b < COMP_N_BACKENDS; b++) {
			print_row(bench, c, (enum comp_backend)b);
		}
	}
}

/* The spread of the runs, and the errors the compositors logged. */
static void print_details(const struct comp_bench *bench)
{
	bool any = false;
	for (size_t c = 0; c < COMP_N; c++) {
		for (int b = 0; b < COMP_N_BACKENDS; b++) {
			const struct comp_row *row = &bench->rows[c][b];
			if (row->missing != NULL || row->failed || bench->runs < 2) {
				continue;
			}
			struct bench_range range[3];
			for (int k = 0; k < 3; k++) {
				bench_range_init(&range[k]);
			}
			for (long i = 0; i < bench->runs; i++) {
				const struct comp_result *r = &row->runs[i];
				bench_range_add(&range[0], r->cpu_us);
				bench_range_add(&range[1], r->frame_int_us);
				bench_range_add(&range[2], (double)r->skipped);
			}
			if (!any) {
				printf("\nspread over the %ld runs (min..max):\n", bench->runs);
				any = true;
			}
			printf("%s %-9s cpu us/f %.1f..%.1f  frame int us %.1f..%.1f  skipped "
				"%.0f..%.0f\n", compositors[c].name, backend_names[b], range[0].lo,
				range[0].hi, range[1].lo, range[1].hi, range[2].lo, range[2].hi);
		}
	}
	printf("\n[ERROR] lines in the compositors' stderr (reported run):\n");
	for (size_t c = 0; c < COMP_N; c++) {
		for (int b = 0; b < COMP_N_BACKENDS; b++) {
			const struct comp_row *row = &bench->rows[c][b];
			if (row->missing != NULL || row->failed) {
				continue;
			}
			const struct comp_result *r = &row->runs[row->median];
			printf("  %s %s:%s\n", compositors[c].name, backend_names[b],
				r->n_errors == 0 ? " none" : "");
			for (size_t i = 0; i < r->n_errors; i++) {
				printf("    %5ldx %s\n", r->errors[i].count, r->errors[i].text);
			}
			if (r->other_errors > 0) {
				printf("    %5ldx other lines\n", r->other_errors);
			}
		}
	}
}

static void print_goals(const struct comp_bench *bench)
{
	printf("\nGoals (issue 11), every run of the wla rows; the headless rows are the "
		"reference:\n");
	for (size_t c = 0; c < COMP_N; c++) {
		const struct comp_row *row = &bench->rows[c][COMP_WLA];
		const char *name = compositors[c].name;
		char goal[96];
		if (row->missing != NULL || row->failed) {
			snprintf(goal, sizeof(goal), "%s on wla", name);
			bench_print_goal(58, goal, row->missing ? "n/a" : "MISSED", "%s",
				row->missing ? "not installed" : "a run failed");
			continue;
		}
		double missed = 0, idle = 0, skipped = 0, worst = 0, worst_signed = 0;
		for (long i = 0; i < bench->runs; i++) {
			const struct comp_result *r = &row->runs[i];
			double err = (r->frame_int_us - period_us()) / period_us();
			missed += r->missed;
			idle += r->idle;
			skipped += (double)r->skipped;
			if (!(fabs(err) <= worst)) {
				worst = fabs(err);
				worst_signed = err;
			}
		}
		/* The control socket's counts: the callbacks' timestamps are taken by
		 * the compositor's frame handler, which a busy machine can delay. */
		snprintf(goal, sizeof(goal), "%s on wla: no missed vblank, a new frame at each", name);
		bench_print_goal(58, goal, bench_verdict(missed == 0 && idle == 0),
			"%ld runs: missed %.0f, vblanks without a new frame %.0f (callback gaps: "
			"skipped %.0f)", bench->runs, missed, idle, skipped);
		snprintf(goal, sizeof(goal), "%s on wla: mean frame interval within 1%% of the period",
			name);
		bench_print_goal(58, goal, bench_verdict(worst <= COMP_GOAL_MEAN_ERROR),
			"worst %+.3f%%", worst_signed * 100.0);
	}
}

bool bench_compositors_run(long runs, long frames, bool verbose)
{
	static struct comp_bench bench;
	bench = (struct comp_bench){ .runs = runs, .frames = frames, .verbose = verbose };
	bool ok = true;
	bench.preload = bench_sibling_path(BENCH_PRELOAD);
	bench.ctl = bench_sibling_path(BENCH_CTL);
	if (bench.preload == NULL || access(bench.preload, R_OK) != 0 || bench.ctl == NULL ||
			access(bench.ctl, X_OK) != 0) {
		fprintf(stderr, "%s: no preload module or wlatomic-ctl in the build "
			"tree (%s, %s)\n", bench_prog, bench.preload ? bench.preload : "?",
			bench.ctl ? bench.ctl : "?");
		ok = false;
		goto out;
	}
	if (!setup_user(&bench)) {
		ok = false;
		goto out;
	}
	const char *client_missing = NULL;
	if (!find_in_path("weston-presentation-shm", bench.client)) {
		client_missing = "weston-presentation-shm";
	} else if (!find_in_path("stdbuf", bench.stdbuf)) {
		client_missing = "stdbuf";
	} else if (!find_in_path("sh", bench.sh)) {
		client_missing = "sh";
	}
	printf("\ncompositors as user %s; client: WAYLAND_DEBUG=client %s\n", bench.user,
		client_missing ? client_missing : bench.client);
	for (size_t c = 0; c < COMP_N; c++) {
		const char *missing = client_missing;
		snprintf(bench.versions[c], sizeof(bench.versions[c]), "not installed");
		if (find_in_path(compositors[c].name, bench.programs[c])) {
			read_version(&bench, c);
		} else {
			missing = compositors[c].name;
		}
		for (int b = 0; b < COMP_N_BACKENDS; b++) {
			struct comp_row *row = &bench.rows[c][b];
			row->missing = missing;
			row->runs = calloc((size_t)runs, sizeof(*row->runs));
			if (row->runs == NULL) {
				ok = false;
				goto out;
			}
		}
		if (missing != NULL) {
			printf("%s: not installed (%s)\n", compositors[c].name, missing);
			continue;
		}
		printf("running %s on wla and headless (%ld runs each)\n", compositors[c].name,
			runs);
		/* Alternating, so that a drift of the machine falls on both. */
		for (long i = 0; i < runs; i++) {
			for (int b = 0; b < COMP_N_BACKENDS; b++) {
				struct comp_row *row = &bench.rows[c][b];
				if (row->failed) {
					continue;
				}
				struct comp_result *r = &row->runs[i];
				if (!run_once(&bench, c, (enum comp_backend)b, r)) {
					row->failed = true;
					ok = false;
				} else if (verbose) {
					printf("  %s %s run %ld: mode %s frames %ld fb %ld presented %.0f "
						"missed %.0f skipped %ld frame int %.1f us max %.0f us "
						"cpu %.1f us/f\n", compositors[c].name, backend_names[b],
						i + 1, r->mode, r->frames, r->fb_presented, r->presented,
						r->missed, r->skipped, r->frame_int_us, r->max_int_us,
						r->cpu_us);
				}
			}
		}
		for (int b = 0; b < COMP_N_BACKENDS; b++) {
			struct comp_row *row = &bench.rows[c][b];
			row->median = row->failed ? 0 : median_by_cpu(&bench, row);
		}
	}
	print_table(&bench);
	print_details(&bench);
	print_goals(&bench);
out:
	for (size_t c = 0; c < COMP_N; c++) {
		for (int b = 0; b < COMP_N_BACKENDS; b++) {
			free(bench.rows[c][b].runs);
		}
	}
	free(bench.preload);
	free(bench.ctl);
	return ok;
}
