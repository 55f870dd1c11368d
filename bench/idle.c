/*
 * wla-bench idle: what idle outputs cost. tinywl runs with 8 outputs and no
 * client on wlatomic's virtual display controller and, as the peer in the same
 * run, on wlroots' own headless backend, each in a fresh XDG_RUNTIME_DIR.
 * After a warm-up in which every output renders its first frame, the
 * compositor is watched from outside for a few seconds: its voluntary context
 * switches (each one a blocking wake-up) and its CPU time, summed over its
 * threads from /proc, whatever tinywl or the backend would say about
 * themselves. The runs alternate between the two backends; the median of each
 * figure is reported. The goal is reported, not asserted: the exit status
 * says only whether every run worked.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "commands.h"
#include "runner.h"
#include "util.h"

#define BENCH_OUTPUTS 8
#define BENCH_OUTPUTS_STR "8"
#define BENCH_MAX_RUNS 15
/* How long tinywl may take to create its socket, and to exit after SIGTERM. */
#define BENCH_START_TIMEOUT_MS 10000
#define BENCH_STOP_TIMEOUT_MS 5000

struct config {
	const char *name;
	enum bench_backend backend;
};

static const struct config configs[] = {
	{ .name = "wlatomic (VDC)", .backend = BENCH_WLA },
	{ .name = "wlroots headless", .backend = BENCH_HEADLESS },
};
#define N_CONFIGS WLA_ARRAY_SIZE(configs)

/* What one run measured from outside, and what tinywl said on exit (only to
 * check that the run was what it should be). */
struct result {
	double wakeups_per_s;
	double cpu_ms;
	long threads;
	long outputs;          /* stats lines tinywl printed */
	long frames_presented; /* over all outputs, the whole run */
};

struct bench {
	const char *tinywl;
	long runs;
	long warmup_s;
	long duration_s;
	bool verbose;
	struct result results[N_CONFIGS][BENCH_MAX_RUNS];
};

/* In the child: the configuration's own environment. */
static void config_env(const void *data)
{
	const struct config *config = data;
	if (config->backend == BENCH_WLA) {
		setenv("WLA_OUTPUTS", BENCH_OUTPUTS_STR, 1);
	} else {
		bench_env_headless(BENCH_OUTPUTS_STR);
	}
}

/* The stats lines tinywl printed on exit: how many, and the frames presented
 * on all outputs together; false if an output presented none. */
static bool read_stats(const char *stdout_path, struct result *result)
{
	FILE *f = fopen(stdout_path, "r");
	if (f == NULL) {
		return false;
	}
	char line[4096];
	bool every_output_drew = true;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, BENCH_STATS_PREFIX, strlen(BENCH_STATS_PREFIX)) != 0) {
			continue;
		}
		double frames;
		if (!bench_stats_field(line, "frames_presented", &frames) || isnan(frames)) {
			frames = 0;
		}
		result->outputs++;
		result->frames_presented += (long)frames;
		every_output_drew = every_output_drew && frames >= 1;
	}
	fclose(f);
	return every_output_drew;
}

/* One run of configuration config; false (with the reason on stderr) if it
 * did not work. */
static bool run_once(const struct bench *bench, const struct config *config,
	struct result *result)
{
	const char *argv[8] = { bench->tinywl };
	if (config->backend == BENCH_HEADLESS) {
		bench_args_headless(argv, 1);
	}
	*result = (struct result){ 0 };
	struct bench_run run;
	/*
	 * Up once the socket exists and tinywl waits in its event loop (on a busy
	 * machine creating 8 outputs can take most of a second); then the
	 * warm-up, in which every output renders its first frame.
	 */
	bool ok = bench_run_prepare(&run, config->name) &&
		bench_run_start(&run, argv, config_env, config);
	if (ok && !bench_run_wait_up(&run, BENCH_START_TIMEOUT_MS, bench_in_event_loop, NULL,
			"never seen waiting in epoll_wait in /proc/PID/wchan")) {
		fprintf(stderr, "%s: tinywl's stderr:\n", bench_prog);
		bench_print_file(run.err_path, 0);
		ok = false;
	}
	struct bench_proc_sample before, after;
	if (ok) {
		bench_sleep_ms(bench->warmup_s * 1000);
		ok = bench_proc_sample(run.pid, &before);
	}
	if (ok) {
		bench_sleep_ms(bench->duration_s * 1000);
		ok = bench_proc_sample(run.pid, &after);
	}
	if (ok && after.threads != before.threads) {
		/* A thread that ended in between took its counts along. */
		fprintf(stderr, "%s: %s: %ld threads, then %ld\n", bench_prog, config->name,
			before.threads, after.threads);
		ok = false;
	}
	if (ok) {
		double seconds = (double)(after.at_ns - before.at_ns) / 1e9;
		result->wakeups_per_s =
			(double)(after.voluntary_switches - before.voluntary_switches) / seconds;
		result->cpu_ms = (double)(after.cpu_ns - before.cpu_ns) / 1e6;
		result->threads = after.threads;
		ok = bench_run_stop(&run, true, BENCH_STOP_TIMEOUT_MS);
	}
	if (ok && (!read_stats(run.out_path, result) || result->outputs != BENCH_OUTPUTS)) {
		fprintf(stderr, "%s: %s: %ld outputs in tinywl's stats, %ld frames presented: "
			"expected %d outputs that each presented a frame; its stderr:\n", bench_prog,
			config->name, result->outputs, result->frames_presented, BENCH_OUTPUTS);
		bench_print_file(run.err_path, 0);
		ok = false;
	}
	bench_run_finish(&run);
	return ok;
}

/* The median over the runs of the figure at offset in struct result. */
static double median(const struct bench *bench, size_t c, size_t offset)
{
	double values[BENCH_MAX_RUNS];
	for (long i = 0; i < bench->runs; i++) {
		values[i] = *(const double *)((const char *)&bench->results[c][i] + offset);
	}
	return bench_median(values, (size_t)bench->runs);
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : NAN;
}

static void print_report(const struct bench *bench)
{
	double wakeups[N_CONFIGS], cpu[N_CONFIGS];
	for (size_t c = 0; c < N_CONFIGS; c++) {
		wakeups[c] = median(bench, c, offsetof(struct result, wakeups_per_s));
		cpu[c] = median(bench, c, offsetof(struct result, cpu_ms));
	}
	printf("\nIdle cost, %d outputs at 1920x1080@60, no client: %ld s measured after a "
		"%ld s warm-up,\nmedian of %ld runs; wake-ups = voluntary context switches of "
		"all of tinywl's threads\n(/proc/PID/task/*/status), cpu = their run time "
		"(/proc/PID/task/*/schedstat) in the %ld s;\nframes = frames tinywl presented "
		"on all outputs over the whole run (from its stats line);\nthreads, frames: "
		"the most of any run\n\n", BENCH_OUTPUTS,
		bench->duration_s, bench->warmup_s, bench->runs, bench->duration_s);
	printf("%-18s %12s %10s %8s %8s\n", "config", "wake-ups/s", "cpu ms", "threads",
		"frames");
	char b[4][32];
	for (size_t c = 0; c < N_CONFIGS; c++) {
		long threads = 0, frames = 0;
		for (long i = 0; i < bench->runs; i++) {
			const struct result *r = &bench->results[c][i];
			threads = r->threads > threads ? r->threads : threads;
			frames = r->frames_presented > frames ? r->frames_presented : frames;
		}
		printf("%-18s %12s %10s %8ld %8ld\n", configs[c].name,
			bench_fmt(b[0], wakeups[c], 1, false), bench_fmt(b[1], cpu[c], 3, false),
			threads, frames);
	}
	printf("%-18s %12s %10s\n", "wla/headless",
		bench_fmt(b[0], ratio(wakeups[0], wakeups[1]), 3, false),
		bench_fmt(b[1], ratio(cpu[0], cpu[1]), 3, false));

	if (bench->runs > 1) {
		printf("\nevery run (wake-ups/s, cpu ms, frames):\n");
		for (size_t c = 0; c < N_CONFIGS; c++) {
			printf("%-18s", configs[c].name);
			for (long i = 0; i < bench->runs; i++) {
				const struct result *r = &bench->results[c][i];
				printf(" %s/%s/%ld", bench_fmt(b[0], r->wakeups_per_s, 1, false),
					bench_fmt(b[1], r->cpu_ms, 3, false), r->frames_presented);
			}
			printf("\n");
		}
	}

	printf("\nGoal:\n");
	bench_print_goal(52, "wlatomic wake-ups/s and CPU no more than headless",
		bench_verdict(wakeups[0] <= wakeups[1] && cpu[0] <= cpu[1]),
		"wake-ups/s %s vs %s, cpu ms %s vs %s", bench_fmt(b[0], wakeups[0], 1, false),
		bench_fmt(b[1], wakeups[1], 1, false), bench_fmt(b[2], cpu[0], 3, false),
		bench_fmt(b[3], cpu[1], 3, false));
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: wla-bench idle [options] [TINYWL]\n"
		"  -n, --runs N       runs per backend, the median is reported (default 3)\n"
		"  -d, --duration S   seconds measured per run (default 5)\n"
		"  -w, --warmup S     seconds between start-up and measuring (default 1)\n"
		"  -v, --verbose      print every run's figures as it ends\n"
		"  -h, --help         this text\n"
		"TINYWL defaults to the tinywl of the build tree this program is in.\n");
}

int bench_idle_main(int argc, char *argv[])
{
	static struct bench bench = { .runs = 3, .warmup_s = 1, .duration_s = 5 };
	const struct bench_option options[] = {
		{ "runs", 'n', 1, BENCH_MAX_RUNS, &bench.runs, NULL },
		{ "duration", 'd', 1, 600, &bench.duration_s, NULL },
		{ "warmup", 'w', 1, 60, &bench.warmup_s, NULL },
		{ "verbose", 'v', 0, 0, NULL, &bench.verbose },
	};
	int parsed = bench_parse_options(argc, argv, options, WLA_ARRAY_SIZE(options), usage);
	if (parsed >= 0) {
		return parsed;
	}
	if (argc - optind > 1) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", bench_prog, argv[optind + 1]);
		return 2;
	}
	char *own_tinywl = NULL;
	bench.tinywl = bench_program(optind < argc ? argv[optind] : NULL, BENCH_TINYWL,
		&own_tinywl);
	if (bench.tinywl == NULL) {
		free(own_tinywl);
		return 2;
	}

	printf("tinywl: %s\n", bench.tinywl);
	int status = EXIT_SUCCESS;
	/* Alternating, so that a machine getting busier skews both alike. */
	for (long i = 0; i < bench.runs && status == EXIT_SUCCESS; i++) {
		for (size_t c = 0; c < N_CONFIGS; c++) {
			printf("running %s (run %ld of %ld)\n", configs[c].name, i + 1, bench.runs);
			struct result *r = &bench.results[c][i];
			if (!run_once(&bench, &configs[c], r)) {
				status = EXIT_FAILURE;
				break;
			}
			if (bench.verbose) {
				printf("  %s: %.1f wake-ups/s, %.3f ms CPU, %ld threads, %ld "
					"frames\n", configs[c].name, r->wakeups_per_s, r->cpu_ms,
					r->threads, r->frames_presented);
			}
		}
	}
	if (status == EXIT_SUCCESS) {
		print_report(&bench);
	}
	free(own_tinywl);
	return status;
}
