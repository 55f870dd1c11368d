/*
 * wla-bench-pacing: frame pacing of tinywl on wlatomic's virtual display
 * controller (flip queue depth 1, 2 and 3, depth 2 rendering at the frame
 * deadline, and depth 1 and 3 with a compositor that stalls now and then)
 * against wlroots' own headless backend, in one run.
 *
 * Each configuration runs tinywl a few times, in a fresh XDG_RUNTIME_DIR,
 * with a client that redraws on every frame callback, until a fixed number of
 * frames has been presented; the figures come from tinywl's stats line, which
 * tinywl measures from present events against its own clock (early presents
 * and queued gaps included), not from what the backend counts. The run with
 * the median CPU time per frame is reported, with the spread of all runs below
 * the table, and the goals of issue 4 are checked against it. The goals are
 * reported, not asserted: the exit status says only whether every run worked.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench-util.h"
#include "compositors.h"

#define BENCH_REFRESH_HZ 60
#define BENCH_MAX_RUNS 15
/* Seconds one tinywl run may take before it is stopped as hung. */
#define BENCH_RUN_TIMEOUT_S 120
/* Frames the client draws beyond those tinywl waits for, so that it is still
 * drawing when tinywl stops. */
#define BENCH_CLIENT_EXTRA_FRAMES 50

/* The goals of issue 4. */
#define GOAL_MEAN_ERROR 0.0005   /* mean interval within 0.05% of the period */
#define GOAL_JITTER_P99_US 500.0 /* p99 jitter under 0.5 ms */
#define GOAL_CPU_RATIO 1.2       /* CPU per frame at most 1.2x headless */
#define GOAL_LAG_P99_US 1000.0   /* present events within 1 ms of their vblank */
#define GOAL_DEADLINE_LATE 0.01  /* --deadline: at most 1% of frames late */

enum backend_kind {
	BACKEND_WLA,
	BACKEND_HEADLESS,
};

struct config {
	const char *name;
	enum backend_kind backend;
	const char *flip_depth; /* WLA_FLIP_DEPTH, NULL for headless */
	bool deadline;
	/* The goal of no missed vblank is set for depth 2 and 3. */
	bool no_miss_goal;
	/* tinywl's --stall-every and --stall-ms, 0 for none. A stall skips vblanks
	 * by design, so the pacing goals leave these rows out. */
	long stall_every, stall_ms;
};

static const struct config configs[] = {
	{ .name = "wla depth 1", .backend = BACKEND_WLA, .flip_depth = "1" },
	{ .name = "wla depth 2", .backend = BACKEND_WLA, .flip_depth = "2", .no_miss_goal = true },
	{ .name = "wla depth 3", .backend = BACKEND_WLA, .flip_depth = "3", .no_miss_goal = true },
	{ .name = "wla depth 2 deadline", .backend = BACKEND_WLA, .flip_depth = "2",
		.deadline = true },
	{ .name = "wla depth 1 stall", .backend = BACKEND_WLA, .flip_depth = "1",
		.stall_every = 10, .stall_ms = 25 },
	{ .name = "wla depth 3 stall", .backend = BACKEND_WLA, .flip_depth = "3",
		.stall_every = 20, .stall_ms = 40 },
	{ .name = "wlroots headless", .backend = BACKEND_HEADLESS },
	{ .name = "headless stall 25ms/10", .backend = BACKEND_HEADLESS,
		.stall_every = 10, .stall_ms = 25 },
	{ .name = "headless stall 40ms/20", .backend = BACKEND_HEADLESS,
		.stall_every = 20, .stall_ms = 40 },
};
#define N_CONFIGS (sizeof(configs) / sizeof(configs[0]))

/* The figures of one run, NAN where tinywl printed n/a. */
struct result {
	double presented;
	double missed;  /* the VDC's missed_vblanks: vblanks a waiting frame missed */
	double skipped; /* vblanks between two presented frames that showed no new frame */
	double mean_us, p99_us, max_us;
	double jitter_p99_us; /* p99 of |interval - period| */
	double latency_mean_us;
	double cpu_us;
	double early;     /* presented before tinywl's commit returned */
	double gaps;      /* committed in time for a vblank, latched later */
	double unmatched; /* present events tinywl could not check */
	double lag_p99_us; /* reported vblank time to the event's arrival */
};

struct bench {
	const char *tinywl;
	const char *client;
	long runs;
	long frames;
	bool verbose;
	struct result results[N_CONFIGS][BENCH_MAX_RUNS];
	size_t median[N_CONFIGS];
};

static const char *field_names[] = {
	"frames_presented", "missed_vblanks", "skipped_vblanks", "interval_mean_us",
	"interval_p99_us", "interval_max_us", "jitter_p99_us", "latency_mean_us",
	"cpu_us_per_frame", "early_presents", "queued_gaps", "unmatched_presents",
	"event_lag_p99_us",
};

static double *result_field(struct result *r, size_t i)
{
	double *fields[] = {
		&r->presented, &r->missed, &r->skipped, &r->mean_us, &r->p99_us, &r->max_us,
		&r->jitter_p99_us, &r->latency_mean_us, &r->cpu_us, &r->early, &r->gaps,
		&r->unmatched, &r->lag_p99_us,
	};
	return fields[i];
}

/* Parse "tinywl: stats output=NAME key=value ..."; false if a field is missing. */
static bool parse_stats(const char *line, struct result *r)
{
	for (size_t i = 0; i < sizeof(field_names) / sizeof(field_names[0]); i++) {
		char key[64];
		snprintf(key, sizeof(key), " %s=", field_names[i]);
		const char *p = strstr(line, key);
		if (p == NULL) {
			fprintf(stderr, "wla-bench-pacing: stats line without %s\n",
				field_names[i]);
			return false;
		}
		p += strlen(key);
		double *value = result_field(r, i);
		if (strncmp(p, "n/a", 3) == 0) {
			*value = NAN;
			continue;
		}
		char *end;
		errno = 0;
		*value = strtod(p, &end);
		if (errno != 0 || end == p || (*end != ' ' && *end != '\n' && *end != '\0')) {
			fprintf(stderr, "wla-bench-pacing: bad %s in the stats line\n",
				field_names[i]);
			return false;
		}
	}
	return true;
}

/* In the child: the environment of one configuration, then tinywl. */
static void exec_tinywl(const struct bench *bench, const struct config *config,
	const char *runtime, int out_fd, const char *stderr_path)
{
	bench_scrub_env();
	setenv("XDG_RUNTIME_DIR", runtime, 1);
	/* The same renderer for everyone: the CPU figures compare backends. */
	setenv("WLR_RENDERER", "pixman", 1);
	if (config->backend == BACKEND_WLA) {
		setenv("WLA_FLIP_DEPTH", config->flip_depth, 1);
		setenv("WLA_FLIP_POLICY", "queue", 1);
	} else {
		setenv("WLR_BACKENDS", "headless", 1);
		setenv("WLR_HEADLESS_OUTPUTS", "1", 1);
	}
	int err_fd = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (dup2(out_fd, STDOUT_FILENO) < 0 || err_fd < 0 ||
			dup2(err_fd, STDERR_FILENO) < 0) {
		_exit(127);
	}

	char startup[PATH_MAX + 64];
	snprintf(startup, sizeof(startup), "'%s' --frames %ld", bench->client,
		bench->frames + BENCH_CLIENT_EXTRA_FRAMES);
	char frames[32];
	snprintf(frames, sizeof(frames), "%ld", bench->frames);
	char stall_every[32], stall_ms[32];
	snprintf(stall_every, sizeof(stall_every), "%ld", config->stall_every);
	snprintf(stall_ms, sizeof(stall_ms), "%ld", config->stall_ms);
	const char *argv[24];
	size_t argc = 0;
	argv[argc++] = bench->tinywl;
	argv[argc++] = "-s";
	argv[argc++] = startup;
	argv[argc++] = "--exit-after-frames";
	argv[argc++] = frames;
	if (config->backend == BACKEND_HEADLESS) {
		/* The VDC's default mode; headless would otherwise be 1280x720. */
		argv[argc++] = "--backend";
		argv[argc++] = "auto";
		argv[argc++] = "--mode";
		argv[argc++] = "1920x1080@60";
	}
	if (config->deadline) {
		argv[argc++] = "--deadline";
	}
	if (config->stall_every > 0) {
		argv[argc++] = "--stall-every";
		argv[argc++] = stall_every;
		argv[argc++] = "--stall-ms";
		argv[argc++] = stall_ms;
	}
	argv[argc] = NULL;
	execv(bench->tinywl, (char *const *)argv);
	_exit(127);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run tinywl once in configuration config; false (with the reason on stderr)
 * if it failed or printed no stats line. */
static bool run_once(const struct bench *bench, const struct config *config,
	struct result *result)
{
	char dir[] = "/tmp/wla-bench-pacing.XXXXXX";
	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "wla-bench-pacing: mkdtemp: %s\n", strerror(errno));
		return false;
	}
	char runtime[sizeof(dir) + 16], stderr_path[sizeof(dir) + 16];
	snprintf(runtime, sizeof(runtime), "%s/runtime", dir);
	snprintf(stderr_path, sizeof(stderr_path), "%s/stderr", dir);
	bool ok = false;
	int fds[2] = { -1, -1 };
	if (mkdir(runtime, 0700) != 0 || pipe(fds) != 0) {
		fprintf(stderr, "wla-bench-pacing: %s: %s\n", dir, strerror(errno));
		goto out;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "wla-bench-pacing: fork: %s\n", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		close(fds[0]);
		exec_tinywl(bench, config, runtime, fds[1], stderr_path);
	}
	close(fds[1]);
	fds[1] = -1;

	char output[65536];
	size_t len = 0;
	int64_t deadline = now_ms() + BENCH_RUN_TIMEOUT_S * 1000;
	bool timed_out = false;
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			timed_out = true;
			break;
		}
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		int ret = poll(&pfd, 1, (int)left);
		if (ret < 0 && errno == EINTR) {
			continue;
		}
		if (ret <= 0) {
			timed_out = ret == 0;
			break;
		}
		ssize_t n = read(fds[0], output + len, sizeof(output) - 1 - len);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			break;
		}
		len += (size_t)n;
		if (len == sizeof(output) - 1) {
			/* More than a stats line can need: keep what came first. */
			break;
		}
	}
	output[len] = '\0';
	if (timed_out) {
		kill(pid, SIGTERM);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	if (timed_out) {
		fprintf(stderr, "wla-bench-pacing: %s: tinywl did not finish within %d s\n",
			config->name, BENCH_RUN_TIMEOUT_S);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "wla-bench-pacing: %s: tinywl failed (%s %d)\n", config->name,
			WIFEXITED(status) ? "exit status" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	} else {
		const char *line = strstr(output, "tinywl: stats output=");
		if (line == NULL) {
			fprintf(stderr, "wla-bench-pacing: %s: no stats line\n", config->name);
		} else {
			char *eol = strchr(line, '\n');
			if (eol != NULL) {
				*eol = '\0';
			}
			if (bench->verbose) {
				printf("  %s: %s\n", config->name, line);
			}
			ok = parse_stats(line, result);
		}
	}
	if (!ok) {
		fprintf(stderr, "wla-bench-pacing: tinywl's stderr:\n");
		bench_print_file(stderr_path);
	}
out:
	if (fds[0] >= 0) {
		close(fds[0]);
	}
	if (fds[1] >= 0) {
		close(fds[1]);
	}
	bench_remove_tree(dir);
	return ok;
}

/* The run whose CPU time per frame is the median of the configuration's. */
static size_t median_run(const struct bench *bench, size_t c)
{
	double cpu[BENCH_MAX_RUNS];
	for (long i = 0; i < bench->runs; i++) {
		cpu[i] = bench->results[c][i].cpu_us;
	}
	qsort(cpu, (size_t)bench->runs, sizeof(cpu[0]), bench_compare_double);
	double median = cpu[(bench->runs - 1) / 2];
	for (long i = 0; i < bench->runs; i++) {
		if (bench->results[c][i].cpu_us == median) {
			return (size_t)i;
		}
	}
	return 0;
}

/* value with decimals decimals (a sign too if signed), or n/a for NAN. */
static const char *fmt(char buf[32], int decimals, bool sign, double value)
{
	if (isnan(value)) {
		return "n/a";
	}
	snprintf(buf, 32, sign ? "%+.*f" : "%.*f", decimals, value);
	return buf;
}

static double ideal_period_us(void)
{
	return 1e6 / BENCH_REFRESH_HZ;
}

static const struct result *reported(const struct bench *bench, size_t c)
{
	return &bench->results[c][bench->median[c]];
}

/* The headless row that stalls like configuration c (the plain one for none). */
static const struct result *headless_result(const struct bench *bench, size_t c)
{
	for (size_t h = 0; h < N_CONFIGS; h++) {
		if (configs[h].backend == BACKEND_HEADLESS &&
				configs[h].stall_every == configs[c].stall_every &&
				configs[h].stall_ms == configs[c].stall_ms) {
			return reported(bench, h);
		}
	}
	return NULL;
}

/* The rows the pacing goals of issue 4 are about. */
/* The rows issue 4's pacing goals are for: depth 1, 2 and 3 rendering as
 * fast as frame events allow. A stall skips vblanks by design; --deadline
 * renders as late as it dares, so a slow render honestly misses its vblank,
 * and has its own goal. */
static bool paced_wla(size_t c)
{
	return configs[c].backend == BACKEND_WLA && configs[c].stall_every == 0 &&
		!configs[c].deadline;
}

static void print_table(const struct bench *bench)
{
	const double period = ideal_period_us();
	printf("\nFrame pacing, %ld frames at %d Hz (ideal period %.3f us), median of %ld "
		"runs by CPU per frame\n", bench->frames, BENCH_REFRESH_HZ, period, bench->runs);
	printf("jitter = p99 of |interval - period|; missed = vblanks a frame was waiting for "
		"and missed, as the VDC counts them (VDC only);\nskipped = vblanks between "
		"presented frames that showed no new frame; latency = render start to "
		"presentation;\n"
		"early = frames presented before their commit returned (headless presents from "
		"inside the commit);\nq gaps = frames committed before the vblank after the "
		"previous frame that latched later (n/a: no vblank counter);\n"
		"stall rows: tinywl sleeps 25 ms before every 10th commit (depth 1) or 40 ms "
		"before every 20th (depth 3);\ncpu x = CPU per frame / that of the headless row "
		"with the same stall;\nlag p99 = from the vblank time a present event reports to "
		"its arrival in tinywl, by tinywl's clock\n(the jitter comes from reported "
		"times; the lag, early and q gaps columns check them)\n\n");
	printf("%-22s %12s %9s %10s %11s %6s %7s %9s %11s %8s %6s %6s %6s %8s\n", "config",
		"mean int us", "err %", "jitter us", "max int us", "missed", "skipped",
		"presented", "latency us", "cpu us/f", "cpu x", "early", "q gaps", "lag p99");
	for (size_t c = 0; c < N_CONFIGS; c++) {
		const struct result *r = reported(bench, c);
		const struct result *headless = headless_result(bench, c);
		char b[13][32];
		double ratio = headless != NULL ? r->cpu_us / headless->cpu_us : NAN;
		printf("%-22s %12s %9s %10s %11s %6s %7s %9s %11s %8s %6s %6s %6s %8s\n",
			configs[c].name, fmt(b[0], 3, false, r->mean_us),
			fmt(b[1], 4, true, (r->mean_us - period) / period * 100.0),
			fmt(b[2], 3, false, r->jitter_p99_us), fmt(b[3], 3, false, r->max_us),
			fmt(b[4], 0, false, r->missed), fmt(b[5], 0, false, r->skipped),
			fmt(b[6], 0, false, r->presented), fmt(b[7], 1, false, r->latency_mean_us),
			fmt(b[8], 1, false, r->cpu_us), fmt(b[9], 3, false, ratio),
			fmt(b[10], 0, false, r->early), fmt(b[11], 0, false, r->gaps),
			fmt(b[12], 1, false, r->lag_p99_us));
	}
	if (bench->runs > 1) {
		printf("\nspread over the %ld runs (min..max):\n", bench->runs);
		for (size_t c = 0; c < N_CONFIGS; c++) {
			double lo[4] = { INFINITY, INFINITY, INFINITY, INFINITY };
			double hi[4] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY };
			for (long i = 0; i < bench->runs; i++) {
				const struct result *r = &bench->results[c][i];
				double v[4] = { r->cpu_us, r->jitter_p99_us,
					(isnan(r->missed) ? 0 : r->missed) + r->skipped,
					(isnan(r->early) ? 0 : r->early) +
					(isnan(r->gaps) ? 0 : r->gaps) };
				for (int k = 0; k < 4; k++) {
					lo[k] = v[k] < lo[k] ? v[k] : lo[k];
					hi[k] = v[k] > hi[k] ? v[k] : hi[k];
				}
			}
			printf("%-22s cpu us/f %.1f..%.1f  jitter us %.3f..%.3f  missed+skipped "
				"%.0f..%.0f  early+gaps %.0f..%.0f\n", configs[c].name, lo[0],
				hi[0], lo[1], hi[1], lo[2], hi[2], lo[3], hi[3]);
		}
	}
}

static void print_verdict(const char *goal, bool met, const char *detail)
{
	printf("  %-52s %-6s %s\n", goal, met ? "met" : "MISSED", detail);
}

/*
 * --deadline renders as late as the deadline allows: it must gain at least
 * a quarter period of latency over depth 1 (issue 4), and a render that
 * comes too late misses its vblank honestly, at most 1% of the frames.
 */
static void print_deadline_goal(const struct bench *bench)
{
	const struct result *deadline = NULL, *depth1 = NULL;
	for (size_t c = 0; c < N_CONFIGS; c++) {
		if (configs[c].backend == BACKEND_WLA && configs[c].stall_every == 0) {
			if (configs[c].deadline) {
				deadline = reported(bench, c);
			} else if (strcmp(configs[c].flip_depth, "1") == 0) {
				depth1 = reported(bench, c);
			}
		}
	}
	if (deadline == NULL || depth1 == NULL) {
		return;
	}
	double gain = depth1->latency_mean_us - deadline->latency_mean_us;
	double late = (isnan(deadline->missed) ? 0 : deadline->missed) + deadline->skipped;
	char detail[256];
	snprintf(detail, sizeof(detail), "latency %.1f us vs %.1f us at depth 1 (gain %.1f us); "
		"missed+skipped %.0f of %.0f", deadline->latency_mean_us, depth1->latency_mean_us,
		gain, late, deadline->presented);
	print_verdict("--deadline gains 1/4 period, misses at most 1%",
		gain >= ideal_period_us() / 4 && late <= deadline->presented * GOAL_DEADLINE_LATE,
		detail);
}

/*
 * Every run of every wla row, not only the reported one: one early present is
 * a backend that lies. A figure tinywl could not measure (n/a, or a present
 * it could not match to a commit) fails the goal too, since it shows nothing.
 */
static void print_honesty_goal(const struct bench *bench)
{
	double early = 0, gaps = 0, unmatched = 0;
	long bad_runs = 0, runs = 0, unmeasured_runs = 0;
	const char *worst_name = NULL;
	double worst = 0;
	for (size_t c = 0; c < N_CONFIGS; c++) {
		if (configs[c].backend != BACKEND_WLA) {
			continue;
		}
		for (long i = 0; i < bench->runs; i++) {
			const struct result *r = &bench->results[c][i];
			runs++;
			if (isnan(r->early) || isnan(r->gaps) || r->unmatched != 0) {
				unmeasured_runs++;
			}
			double run_early = isnan(r->early) ? 0 : r->early;
			double run_gaps = isnan(r->gaps) ? 0 : r->gaps;
			double bad = run_early + run_gaps;
			early += run_early;
			gaps += run_gaps;
			unmatched += r->unmatched;
			bad_runs += bad > 0;
			if (bad > worst) {
				worst = bad;
				worst_name = configs[c].name;
			}
		}
	}
	char detail[256];
	snprintf(detail, sizeof(detail), "all runs: early %.0f, queued gaps %.0f in %ld/%ld "
		"runs (worst: %s); unmeasured runs %ld, unmatched presents %.0f", early, gaps,
		bad_runs, runs, worst_name != NULL ? worst_name : "none", unmeasured_runs,
		unmatched);
	print_verdict("no early present and no queued gap on any wla row",
		bad_runs == 0 && unmeasured_runs == 0, detail);
}

static void print_goals(const struct bench *bench)
{
	const double period = ideal_period_us();
	char detail[256];
	printf("\nGoals (issues 4 and 9): pacing for wla depth 1-3, --deadline its own, the "
		"last one for every wla row:\n");

	double worst = -1;
	const char *worst_name = "";
	for (size_t c = 0; c < N_CONFIGS; c++) {
		double err = fabs(reported(bench, c)->mean_us - period) / period;
		if (paced_wla(c) && !(err <= worst)) {
			worst = err;
			worst_name = configs[c].name;
		}
	}
	snprintf(detail, sizeof(detail), "worst %.4f%% (%s)", worst * 100.0, worst_name);
	print_verdict("mean interval within 0.05% of the period", worst <= GOAL_MEAN_ERROR,
		detail);

	worst = -1;
	worst_name = "";
	for (size_t c = 0; c < N_CONFIGS; c++) {
		double jitter = reported(bench, c)->jitter_p99_us;
		if (paced_wla(c) && !(jitter <= worst)) {
			worst = jitter;
			worst_name = configs[c].name;
		}
	}
	snprintf(detail, sizeof(detail), "worst %.3f us (%s)", worst, worst_name);
	print_verdict("p99 jitter under 0.5 ms", worst < GOAL_JITTER_P99_US, detail);

	bool met = true;
	size_t pos = 0;
	detail[0] = '\0';
	for (size_t c = 0; c < N_CONFIGS; c++) {
		if (!configs[c].no_miss_goal) {
			continue;
		}
		const struct result *r = reported(bench, c);
		met = met && r->missed == 0 && r->skipped == 0;
		long runs_with_misses = 0;
		for (long i = 0; i < bench->runs; i++) {
			const struct result *ri = &bench->results[c][i];
			runs_with_misses += ri->missed != 0 || ri->skipped != 0;
		}
		pos += (size_t)snprintf(detail + pos, sizeof(detail) - pos,
			"%s%s: missed %.0f skipped %.0f (runs with any: %ld/%ld)",
			pos > 0 ? "; " : "", configs[c].name, r->missed, r->skipped,
			runs_with_misses, bench->runs);
		if (pos >= sizeof(detail)) {
			break;
		}
	}
	print_verdict("no missed vblank at depth 2 or 3", met, detail);

	worst = -1;
	worst_name = "";
	for (size_t c = 0; c < N_CONFIGS; c++) {
		const struct result *headless = headless_result(bench, c);
		double ratio = headless != NULL ? reported(bench, c)->cpu_us / headless->cpu_us :
			NAN;
		if (paced_wla(c) && !(ratio <= worst)) {
			worst = ratio;
			worst_name = configs[c].name;
		}
	}
	snprintf(detail, sizeof(detail), "worst %.3fx (%s)", worst, worst_name);
	print_verdict("CPU per frame at most 1.2x the headless backend's",
		worst <= GOAL_CPU_RATIO, detail);

	worst = -1;
	worst_name = "";
	for (size_t c = 0; c < N_CONFIGS; c++) {
		double lag = reported(bench, c)->lag_p99_us;
		if (paced_wla(c) && !(lag <= worst)) {
			worst = lag;
			worst_name = configs[c].name;
		}
	}
	snprintf(detail, sizeof(detail), "worst %.1f us (%s)", worst, worst_name);
	print_verdict("present events within 1 ms of their vblank (p99)",
		worst <= GOAL_LAG_P99_US, detail);

	print_deadline_goal(bench);

	print_honesty_goal(bench);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: wla-bench-pacing [options] [TINYWL [CLIENT]]\n"
		"  -n, --runs N     runs per configuration, the median is reported (default 3)\n"
		"  -f, --frames N   presented frames per run (default 600)\n"
		"  -v, --verbose    print every run's stats line\n"
		"  -C, --no-compositors    leave out the sway and cage rows\n"
		"  -O, --compositors-only  only the sway and cage rows\n"
		"  -h, --help       this text\n"
		"TINYWL and CLIENT default to the tinywl and wla-pattern-client of the build\n"
		"tree this program is in.\n");
}

int main(int argc, char *argv[])
{
	static struct bench bench = { .runs = 3, .frames = 600 };
	bool no_compositors = false, compositors_only = false;
	const struct bench_option options[] = {
		{ "runs", 'n', 1, BENCH_MAX_RUNS, &bench.runs, NULL },
		{ "frames", 'f', 10, 1000000, &bench.frames, NULL },
		{ "verbose", 'v', 0, 0, NULL, &bench.verbose },
		{ "no-compositors", 'C', 0, 0, NULL, &no_compositors },
		{ "compositors-only", 'O', 0, 0, NULL, &compositors_only },
	};
	int parsed = bench_parse_options("wla-bench-pacing", argc, argv, options,
		sizeof(options) / sizeof(options[0]), usage);
	if (parsed >= 0) {
		return parsed;
	}
	if (compositors_only) {
		return bench_compositors_run(bench.runs, bench.frames, bench.verbose) ?
			EXIT_SUCCESS : EXIT_FAILURE;
	}
	char *own_tinywl = NULL, *own_client = NULL;
	if (optind < argc) {
		bench.tinywl = argv[optind++];
	} else {
		bench.tinywl = own_tinywl = bench_sibling_path("bench/tinywl-measured");
	}
	if (optind < argc) {
		bench.client = argv[optind++];
	} else {
		bench.client = own_client = bench_sibling_path("tests/clients/wla-pattern-client");
	}
	if (optind < argc) {
		fprintf(stderr, "wla-bench-pacing: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	int status = EXIT_SUCCESS;
	if (bench.tinywl == NULL || access(bench.tinywl, X_OK) != 0 ||
			bench.client == NULL || access(bench.client, X_OK) != 0 ||
			strchr(bench.client, '\'') != NULL) {
		fprintf(stderr, "wla-bench-pacing: cannot run tinywl '%s' or client '%s' "
			"(give their paths)\n", bench.tinywl ? bench.tinywl : "?",
			bench.client ? bench.client : "?");
		status = 2;
		goto out;
	}

	printf("tinywl: %s\nclient: %s --frames %ld\n", bench.tinywl, bench.client,
		bench.frames + BENCH_CLIENT_EXTRA_FRAMES);
	for (size_t c = 0; c < N_CONFIGS && status == EXIT_SUCCESS; c++) {
		printf("running %s (%ld runs)\n", configs[c].name, bench.runs);
		for (long i = 0; i < bench.runs; i++) {
			if (!run_once(&bench, &configs[c], &bench.results[c][i])) {
				status = EXIT_FAILURE;
				break;
			}
		}
		if (status == EXIT_SUCCESS) {
			bench.median[c] = median_run(&bench, c);
		}
	}
	if (status == EXIT_SUCCESS) {
		print_table(&bench);
		print_goals(&bench);
	}
	if (!no_compositors && !bench_compositors_run(bench.runs, bench.frames, bench.verbose)) {
		status = EXIT_FAILURE;
	}
out:
	free(own_tinywl);
	free(own_client);
	return status;
}
