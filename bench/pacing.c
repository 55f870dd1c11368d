/*
 * wla-bench pacing: frame pacing of tinywl on wlatomic's virtual display
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
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "commands.h"
#include "runner.h"
#include "util.h"

#define BENCH_REFRESH_HZ 60
#define BENCH_MAX_RUNS 15
/* How long one tinywl run may take before it is stopped as hung. */
#define BENCH_RUN_TIMEOUT_MS 120000
/* Frames the client draws beyond those tinywl waits for, so that it is still
 * drawing when tinywl stops. */
#define BENCH_CLIENT_EXTRA_FRAMES 50

/* The goals of issue 4. */
#define GOAL_MEAN_ERROR 0.0005   /* mean interval within 0.05% of the period */
#define GOAL_JITTER_P99_US 500.0 /* p99 jitter under 0.5 ms */
#define GOAL_CPU_RATIO 1.2       /* CPU per frame at most 1.2x headless */
#define GOAL_LAG_P99_US 1000.0   /* present events within 1 ms of their vblank */
#define GOAL_DEADLINE_LATE 0.01  /* --deadline: at most 1% of frames late */

struct config {
	const char *name;
	enum bench_backend backend;
	const char *flip_depth; /* WLA_FLIP_DEPTH, NULL for headless */
	bool deadline;
	/* The goal of no missed vblank is set for depth 2 and 3. */
	bool no_miss_goal;
	/* tinywl's --stall-every and --stall-ms, 0 for none. A stall skips vblanks
	 * by design, so the pacing goals leave these rows out. */
	long stall_every, stall_ms;
};

static const struct config configs[] = {
	{ .name = "wla depth 1", .backend = BENCH_WLA, .flip_depth = "1" },
	{ .name = "wla depth 2", .backend = BENCH_WLA, .flip_depth = "2", .no_miss_goal = true },
	{ .name = "wla depth 3", .backend = BENCH_WLA, .flip_depth = "3", .no_miss_goal = true },
	{ .name = "wla depth 2 deadline", .backend = BENCH_WLA, .flip_depth = "2",
		.deadline = true },
	{ .name = "wla depth 1 stall", .backend = BENCH_WLA, .flip_depth = "1",
		.stall_every = 10, .stall_ms = 25 },
	{ .name = "wla depth 3 stall", .backend = BENCH_WLA, .flip_depth = "3",
		.stall_every = 20, .stall_ms = 40 },
	{ .name = "wlroots headless", .backend = BENCH_HEADLESS },
	{ .name = "headless stall 25ms/10", .backend = BENCH_HEADLESS,
		.stall_every = 10, .stall_ms = 25 },
	{ .name = "headless stall 40ms/20", .backend = BENCH_HEADLESS,
		.stall_every = 20, .stall_ms = 40 },
};
#define N_CONFIGS WLA_ARRAY_SIZE(configs)

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
	for (size_t i = 0; i < WLA_ARRAY_SIZE(field_names); i++) {
		if (!bench_stats_field(line, field_names[i], result_field(r, i))) {
			return false;
		}
	}
	return true;
}

/* In the child: the configuration's own environment. */
static void config_env(const void *data)
{
	const struct config *config = data;
	if (config->backend == BENCH_WLA) {
		setenv("WLA_FLIP_DEPTH", config->flip_depth, 1);
		setenv("WLA_FLIP_POLICY", "queue", 1);
	} else {
		bench_env_headless("1");
	}
}

/* Run tinywl once in configuration config; false (with the reason on stderr)
 * if it failed or printed no stats line. */
static bool run_once(const struct bench *bench, const struct config *config,
	struct result *result)
{
	char client[PATH_MAX * 4], startup[PATH_MAX * 4 + 64];
	if (!bench_quote(client, sizeof(client), bench->client)) {
		fprintf(stderr, "%s: the client's path is too long\n", bench_prog);
		return false;
	}
	snprintf(startup, sizeof(startup), "%s --frames %ld", client,
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
	if (config->backend == BENCH_HEADLESS) {
		argc = bench_args_headless(argv, argc);
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
	char line[8192];
	if (!bench_run_stats(config->name, argv, config_env, config, BENCH_RUN_TIMEOUT_MS, line,
			sizeof(line))) {
		return false;
	}
	if (bench->verbose) {
		printf("  %s: %s", config->name, line);
	}
	return parse_stats(line, result);
}

/* The run whose CPU time per frame is the median of the configuration's. */
static size_t median_run(const struct bench *bench, size_t c)
{
	double cpu[BENCH_MAX_RUNS];
	for (long i = 0; i < bench->runs; i++) {
		cpu[i] = bench->results[c][i].cpu_us;
	}
	return bench_median_index(cpu, (size_t)bench->runs);
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
		if (configs[h].backend == BENCH_HEADLESS &&
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
	return configs[c].backend == BENCH_WLA && configs[c].stall_every == 0 &&
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
			configs[c].name, bench_fmt(b[0], r->mean_us, 3, false),
			bench_fmt(b[1], (r->mean_us - period) / period * 100.0, 4, true),
			bench_fmt(b[2], r->jitter_p99_us, 3, false), bench_fmt(b[3], r->max_us, 3, false),
			bench_fmt(b[4], r->missed, 0, false), bench_fmt(b[5], r->skipped, 0, false),
			bench_fmt(b[6], r->presented, 0, false), bench_fmt(b[7], r->latency_mean_us, 1, false),
			bench_fmt(b[8], r->cpu_us, 1, false), bench_fmt(b[9], ratio, 3, false),
			bench_fmt(b[10], r->early, 0, false), bench_fmt(b[11], r->gaps, 0, false),
			bench_fmt(b[12], r->lag_p99_us, 1, false));
	}
	if (bench->runs > 1) {
		printf("\nspread over the %ld runs (min..max):\n", bench->runs);
		for (size_t c = 0; c < N_CONFIGS; c++) {
			struct bench_range range[4];
			for (int k = 0; k < 4; k++) {
				bench_range_init(&range[k]);
			}
			for (long i = 0; i < bench->runs; i++) {
				const struct result *r = &bench->results[c][i];
				bench_range_add(&range[0], r->cpu_us);
				bench_range_add(&range[1], r->jitter_p99_us);
				bench_range_add(&range[2], (isnan(r->missed) ? 0 : r->missed) +
					r->skipped);
				bench_range_add(&range[3], (isnan(r->early) ? 0 : r->early) +
					(isnan(r->gaps) ? 0 : r->gaps));
			}
			printf("%-22s cpu us/f %.1f..%.1f  jitter us %.3f..%.3f  missed+skipped "
				"%.0f..%.0f  early+gaps %.0f..%.0f\n", configs[c].name, range[0].lo,
				range[0].hi, range[1].lo, range[1].hi, range[2].lo, range[2].hi,
				range[3].lo, range[3].hi);
		}
	}
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
		if (configs[c].backend == BENCH_WLA && configs[c].stall_every == 0) {
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
	bench_print_goal(52, "--deadline gains 1/4 period, misses at most 1%",
		bench_verdict(gain >= ideal_period_us() / 4 &&
			late <= deadline->presented * GOAL_DEADLINE_LATE),
		"latency %.1f us vs %.1f us at depth 1 (gain %.1f us); missed+skipped %.0f of %.0f",
		deadline->latency_mean_us, depth1->latency_mean_us, gain, late, deadline->presented);
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
		if (configs[c].backend != BENCH_WLA) {
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
	bench_print_goal(52, "no early present and no queued gap on any wla row",
		bench_verdict(bad_runs == 0 && unmeasured_runs == 0), "all runs: early %.0f, queued "
		"gaps %.0f in %ld/%ld runs (worst: %s); unmeasured runs %ld, unmatched presents %.0f",
		early, gaps, bad_runs, runs, worst_name != NULL ? worst_name : "none",
		unmeasured_runs, unmatched);
}

/* The worst (highest; NAN, nothing measured, worse than any) of a figure
 * over the rows the pacing goals are for; its row's name in *name. */
static double worst_paced(const double figure[N_CONFIGS], const char **name)
{
	double worst = -1;
	*name = "";
	for (size_t c = 0; c < N_CONFIGS; c++) {
		if (paced_wla(c) && !(figure[c] <= worst)) {
			worst = figure[c];
			*name = configs[c].name;
		}
	}
	return worst;
}

static void print_goals(const struct bench *bench)
{
	const double period = ideal_period_us();
	char detail[256];
	printf("\nGoals (issues 4 and 9): pacing for wla depth 1-3, --deadline its own, the "
		"last one for every wla row:\n");

	double error[N_CONFIGS], jitter[N_CONFIGS], cpu_ratio[N_CONFIGS], lag[N_CONFIGS];
	for (size_t c = 0; c < N_CONFIGS; c++) {
		const struct result *r = reported(bench, c);
		const struct result *headless = headless_result(bench, c);
		error[c] = fabs(r->mean_us - period) / period;
		jitter[c] = r->jitter_p99_us;
		cpu_ratio[c] = headless != NULL ? r->cpu_us / headless->cpu_us : NAN;
		lag[c] = r->lag_p99_us;
	}
	const char *name;
	double worst = worst_paced(error, &name);
	bench_print_goal(52, "mean interval within 0.05% of the period",
		bench_verdict(worst <= GOAL_MEAN_ERROR), "worst %.4f%% (%s)", worst * 100.0, name);
	worst = worst_paced(jitter, &name);
	bench_print_goal(52, "p99 jitter under 0.5 ms", bench_verdict(worst < GOAL_JITTER_P99_US),
		"worst %.3f us (%s)", worst, name);

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
	bench_print_goal(52, "no missed vblank at depth 2 or 3", bench_verdict(met), "%s", detail);
	worst = worst_paced(cpu_ratio, &name);
	bench_print_goal(52, "CPU per frame at most 1.2x the headless backend's",
		bench_verdict(worst <= GOAL_CPU_RATIO), "worst %.3fx (%s)", worst, name);
	worst = worst_paced(lag, &name);
	bench_print_goal(52, "present events within 1 ms of their vblank (p99)",
		bench_verdict(worst <= GOAL_LAG_P99_US), "worst %.1f us (%s)", worst, name);

	print_deadline_goal(bench);

	print_honesty_goal(bench);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: wla-bench pacing [options] [TINYWL [CLIENT]]\n"
		"  -n, --runs N     runs per configuration, the median is reported (default 3)\n"
		"  -f, --frames N   presented frames per run (default 600)\n"
		"  -v, --verbose    print every run's stats line\n"
		"  -C, --no-compositors    leave out the sway and cage rows\n"
		"  -O, --compositors-only  only the sway and cage rows\n"
		"  -h, --help       this text\n"
		"TINYWL and CLIENT default to the tinywl and wla-pattern-client of the build\n"
		"tree this program is in.\n");
}

int bench_pacing_main(int argc, char *argv[])
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
	int parsed = bench_parse_options(argc, argv, options, WLA_ARRAY_SIZE(options), usage);
	if (parsed >= 0) {
		return parsed;
	}
	if (compositors_only) {
		return bench_compositors_run(bench.runs, bench.frames, bench.verbose) ?
			EXIT_SUCCESS : EXIT_FAILURE;
	}
	if (argc - optind > 2) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", bench_prog, argv[optind + 2]);
		return 2;
	}
	char *own_tinywl = NULL, *own_client = NULL;
	int status = EXIT_SUCCESS;
	bench.tinywl = bench_program(optind < argc ? argv[optind] : NULL, BENCH_TINYWL,
		&own_tinywl);
	bench.client = bench_program(optind + 1 < argc ? argv[optind + 1] : NULL,
		BENCH_PATTERN_CLIENT, &own_client);
	if (bench.tinywl == NULL || bench.client == NULL) {
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
