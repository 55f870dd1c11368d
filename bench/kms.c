/*
 * wla-bench kms: tinywl and the pattern client on a real kernel's KMS
 * device, on wlatomic's KMS driver at flip depth 1 and 2 and on wlroots' own
 * DRM backend (WLR_BACKENDS=drm, the seat from libseat's built-in backend),
 * in one run and one kernel, side by side: frames presented, missed and
 * skipped vblanks, commits refused, the mean present interval against the
 * mode's period, compositor CPU per frame (and its ratio to wlroots').
 *
 * Run where there is no DRM card, it boots Debian's kernel with vkms in a
 * qemu guest (tests/kernel/run-guest.sh) and runs itself there. Under TCG
 * the figures are correctness evidence (the guest's CPU is emulated); on
 * real hardware run it directly. The configurations take turns in each
 * round; the client redraws at every frame callback (the probe forces no
 * damage). Goals (issues 12 and 30), per configuration: frame rate at or
 * above and CPU per frame no worse than wlroots' DRM backend, judged by
 * the median of the ratios of runs paired by round (their spread is the
 * noise; a worse median is MISSED where a sign test over the rounds puts
 * it beyond the noise, else par); no missed vblank at depth 2 (wlatomic's count), and no more
 * skipped vblanks there than wlroots' in the same round (a client with
 * nothing new: under TCG every backend's guest is short of CPU). They are
 * reported, not asserted:
 * the exit status says whether every run worked.
 */
#include <errno.h>
#include <limits.h>
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
/* Shared with the kernel tests, which find a card the same way. */
#include "../tests/lib/dri-card.h"

#define KMS_MAX_RUNS 9
#define KMS_RUN_TIMEOUT_MS 240000
#define KMS_CLIENT_EXTRA_FRAMES 50

struct kms_config {
	const char *name;
	bool wlroots; /* wlroots' DRM backend, else wlatomic's KMS driver */
	const char *flip_depth;
};

static const struct kms_config kms_configs[] = {
	{ "wla kms depth 1", false, "1" },
	{ "wla kms depth 2", false, "2" },
	{ "wlroots drm", true, NULL },
};
#define N_KMS_CONFIGS WLA_ARRAY_SIZE(kms_configs)

/* The stats line's figures of one run (NAN: n/a). */
struct kms_result {
	double presented, missed, skipped, refused, mean_us, cpu_us, early, period_us;
	bool failed; /* the run did not work (wlroots' DRM backend on bochs) */
};

static const struct {
	const char *key;
	size_t offset;
} kms_fields[] = {
	{ "frames_presented", offsetof(struct kms_result, presented) },
	{ "missed_vblanks", offsetof(struct kms_result, missed) },
	{ "skipped_vblanks", offsetof(struct kms_result, skipped) },
	{ "commit_failures", offsetof(struct kms_result, refused) },
	{ "interval_mean_us", offsetof(struct kms_result, mean_us) },
	{ "cpu_us_per_frame", offsetof(struct kms_result, cpu_us) },
	{ "early_presents", offsetof(struct kms_result, early) },
	{ "period_us", offsetof(struct kms_result, period_us) },
};

static bool parse_line(const char *line, struct kms_result *r)
{
	for (size_t i = 0; i < WLA_ARRAY_SIZE(kms_fields); i++) {
		if (!bench_stats_field(line, kms_fields[i].key,
				(double *)((char *)r + kms_fields[i].offset))) {
			return false;
		}
	}
	return true;
}

/* The environment of config c (in the child). */
static void kms_env(const void *data)
{
	const struct kms_config *c = data;
	if (c->wlroots) {
		setenv("WLR_BACKENDS", "drm", 1);
		setenv("LIBSEAT_BACKEND", "builtin", 1);
	} else {
		setenv("WLA_DRIVER", "kms", 1);
		setenv("WLA_FLIP_DEPTH", c->flip_depth, 1);
		setenv("WLA_CONTROL", "off", 1);
	}
}

/* One run of tinywl in config c; false (reason on stderr) if it failed. */
static bool run_once(const char *tinywl, const char *client, long frames,
	const struct kms_config *c, struct kms_result *r, bool verbose)
{
	char quoted[PATH_MAX * 4], startup[PATH_MAX * 4 + 64], n[32];
	if (!bench_quote(quoted, sizeof(quoted), client)) {
		fprintf(stderr, "%s: the client's path is too long\n", bench_prog);
		return false;
	}
	snprintf(startup, sizeof(startup), "%s --frames %ld", quoted,
		frames + KMS_CLIENT_EXTRA_FRAMES);
	snprintf(n, sizeof(n), "%ld", frames);
	/* The client redraws at every frame callback: the probe need not
	 * damage a static scene to keep frames coming, and a frame is one of
	 * the client's, in every configuration. */
	const char *argv[10] = { tinywl, "-s", startup, "--exit-after-frames", n,
		"--no-forced-damage" };
	if (c->wlroots) {
		argv[6] = "--backend";
		argv[7] = "auto";
	}
	char line[8192];
	if (!bench_run_stats(c->name, argv, kms_env, c, KMS_RUN_TIMEOUT_MS, line,
			sizeof(line))) {
		return false;
	}
	if (verbose) {
		printf("  %s: %s", c->name, line);
	}
	return parse_line(line, r);
}

/* No card here: run this subcommand in a guest with vkms instead (argv[0]
 * is its name). */
static int run_in_guest(int argc, char *argv[])
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0 || getenv("WLA_IN_GUEST")) {
		fprintf(stderr, "%s: no DRM card (/dev/dri/card*)\n", bench_prog);
		return 2;
	}
	self[len] = '\0';
	char runner[4200];
	snprintf(runner, sizeof(runner), "%s/tests/kernel/run-guest.sh", WLA_SOURCE_ROOT);
	setenv("WLA_BUILD_ROOT", WLA_BUILD_ROOT, 0);
	setenv("WLA_SOURCE_ROOT", WLA_SOURCE_ROOT, 0);
	printf("%s: no DRM card here; running in a guest with %s (%s)\n", bench_prog,
		optind < argc ? argv[optind] : "vkms", runner);
	fflush(stdout);
	const char *args[44] = { "bash", runner, "--timeout", "3000", "--env", "WLA_IN_GUEST=1" };
	size_t n = 6;
	/* The card operand, if any: qemu's device for it. */
	if (optind < argc) {
		args[n++] = "--card";
		args[n++] = argv[optind];
	}
	args[n++] = "--";
	args[n++] = self;
	for (int i = 0; i < argc && n < 43; i++) {
		args[n++] = argv[i];
	}
	args[n] = NULL;
	execvp("bash", (char *const *)args);
	fprintf(stderr, "%s: cannot run %s: %s\n", bench_prog, runner, strerror(errno));
	return 2;
}

/* The ratio a / b of each round where both ran, into out: how many. */
static size_t paired_ratios(const struct kms_result *a, const struct kms_result *b, long runs,
	bool rate, double *out)
{
	size_t n = 0;
	for (long i = 0; i < runs; i++) {
		if (a[i].failed || b[i].failed || !(a[i].cpu_us > 0) || !(b[i].cpu_us > 0) ||
				!(a[i].mean_us > 0) || !(b[i].mean_us > 0)) {
			continue;
		}
		/* The rate is the mean interval's inverse. */
		out[n++] = rate ? b[i].mean_us / a[i].mean_us : a[i].cpu_us / b[i].cpu_us;
	}
	return n;
}

/* Median, min and max of n values (n > 0; sorts them). */
static void spread(double *v, size_t n, double *median, double *min, double *max)
{
	for (size_t i = 1; i < n; i++) {
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	}
	*median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	*min = v[0];
	*max = v[n - 1];
}

/*
 * A paired goal's verdict: "met" where the median is at or better than the
 * peer; where it is worse, "MISSED" only if the rounds say so beyond TCG's
 * noise (a sign test: that as many rounds or more come out worse by chance,
 * each a coin toss, has a probability under 10%), else "par" (worse in too
 * few rounds to tell from noise). worse: the rounds that came out worse.
 */
static const char *paired_verdict(bool median_ok, size_t worse, size_t n)
{
	if (median_ok) {
		return "met";
	}
	if (ldexp(1.0, -(int)n) >= 0.10) {
		return "too few rounds";
	}
	/* P(X >= worse) for X ~ Binomial(n, 1/2). */
	double tail = 0, c = 1;
	for (size_t k = 0; k <= n; k++) {
		if (k >= worse) {
			tail += c;
		}
		c = c * (double)(n - k) / (double)(k + 1);
	}
	tail = ldexp(tail, -(int)n);
	return tail < 0.10 ? "MISSED" : "par";
}

static size_t count_worse(const double *v, size_t n, bool higher_is_better)
{
	size_t worse = 0;
	for (size_t i = 0; i < n; i++) {
		worse += higher_is_better ? v[i] < 1.0 : v[i] > 1.0;
	}
	return worse;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: wla-bench kms [options] [CARD]\n"
		"  -n, --runs N     runs per configuration, the median by CPU is reported (7;\n"
		"                   under 4 no goal can be MISSED: too few rounds to tell)\n"
		"  -f, --frames N   presented frames per run (default 600)\n"
		"  -v, --verbose    print every run's stats line\n"
		"  -h, --help       this text\n"
		"Without a DRM card it runs itself in a qemu guest with vkms, or with CARD\n"
		"(run-guest.sh --card: vkms, virtio-gpu, virtio-gpu-2, qxl, cirrus, bochs).\n");
}

int bench_kms_main(int argc, char *argv[])
{
	long runs = 7, frames = 600;
	bool verbose = false;
	const struct bench_option options[] = {
		{ "runs", 'n', 1, KMS_MAX_RUNS, &runs, NULL },
		{ "frames", 'f', 10, 100000, &frames, NULL },
		{ "verbose", 'v', 0, 0, NULL, &verbose },
	};
	int parsed = bench_parse_options(argc, argv, options, WLA_ARRAY_SIZE(options), usage);
	if (parsed >= 0) {
		return parsed;
	}
	if (!test_have_dri_card()) {
		return run_in_guest(argc, argv);
	}
	char *tinywl = NULL, *client = NULL;
	if (bench_program(NULL, BENCH_TINYWL, &tinywl) == NULL ||
			bench_program(NULL, BENCH_PATTERN_CLIENT, &client) == NULL) {
		free(tinywl);
		free(client);
		return 2;
	}
	static struct kms_result results[N_KMS_CONFIGS][KMS_MAX_RUNS];
	size_t median[N_KMS_CONFIGS];
	int status = 0;
	/* The configurations in turn, run by run, so that a drift of the
	 * machine (a guest warming up, another job) falls on each alike; the
	 * order rotates from round to round. */
	printf("running %ld rounds of %ld frames: ", runs, frames);
	for (size_t c = 0; c < N_KMS_CONFIGS; c++) {
		printf("%s%s", c ? ", " : "", kms_configs[c].name);
	}
	printf("\n");
	fflush(stdout);
	double cpu[N_KMS_CONFIGS][KMS_MAX_RUNS];
	for (long i = 0; i < runs && status == 0; i++) {
		/* Each round starts with another configuration, so that none
		 * always runs first or right after another one. */
		for (size_t k = 0; k < N_KMS_CONFIGS && status == 0; k++) {
			size_t c = (k + (size_t)i) % N_KMS_CONFIGS;
			if (!run_once(tinywl, client, frames, &kms_configs[c], &results[c][i],
					verbose)) {
				/* wlroots' backend may not work on a card (bochs):
				 * a row of its own, not the end of the benchmark. */
				results[c][i] = (struct kms_result){ .failed = true, .cpu_us = NAN };
				if (!kms_configs[c].wlroots) {
					status = 1;
				}
			}
			cpu[c][i] = results[c][i].cpu_us;
		}
	}
	for (size_t c = 0; c < N_KMS_CONFIGS; c++) {
		median[c] = bench_median_index(cpu[c], (size_t)runs);
	}
	free(tinywl);
	free(client);
	if (status != 0) {
		return status;
	}
	const struct kms_result *peer = &results[N_KMS_CONFIGS - 1][median[N_KMS_CONFIGS - 1]];
	/* The mode's period as the fixture reports it (vkms' 1024x768 at
	 * 65 MHz, 1344x806: 16665.6 us). */
	const double period_us = results[0][median[0]].period_us;
	printf("\ncard: %s\n", optind < argc ? argv[optind] : "the first /dev/dri/card*");
	if (peer->failed) {
		printf("wlroots drm: did not run on this card (its runs failed; see above)\n");
	}
	printf("\n%ld frames per run, median of %ld runs by CPU per frame; mode period %.1f us\n"
		"missed = vblanks a waiting frame missed (wlatomic's count); skipped = vblanks "
		"between presented frames with no new frame (the probe's, every backend);\n"
		"refused = scene commits the backend refused; cpu x = CPU per frame / wlroots "
		"drm's\n\n", frames, runs, period_us);
	printf("%-18s %9s %6s %7s %7s %12s %8s %9s %6s %6s\n", "config", "presented", "missed",
		"skipped", "refused", "mean int us", "err %", "cpu us/f", "cpu x", "early");
	for (size_t c = 0; c < N_KMS_CONFIGS; c++) {
		const struct kms_result *r = &results[c][median[c]];
		char b[8][32];
		if (r->failed) {
			printf("%-18s %9s\n", kms_configs[c].name, "failed");
			continue;
		}
		printf("%-18s %9s %6s %7s %7s %12s %+8.3f %9s %6.3f %6s\n", kms_configs[c].name,
			bench_fmt(b[0], r->presented, 0, false), bench_fmt(b[1], r->missed, 0, false),
			bench_fmt(b[2], r->skipped, 0, false), bench_fmt(b[3], r->refused, 0, false),
			bench_fmt(b[4], r->mean_us, 1, false),
			(r->mean_us - period_us) / period_us * 100.0,
			bench_fmt(b[5], r->cpu_us, 1, false), r->cpu_us / peer->cpu_us,
			bench_fmt(b[6], r->early, 0, false));
	}
	/* Depth 2: wlatomic's missed vblanks in every run; the skipped ones
	 * (the client had nothing new: under TCG every backend's guest is
	 * short of CPU) against wlroots' in the same round. */
	long d2_runs_missed = 0;
	double d2_missed = 0, skip_diff[KMS_MAX_RUNS];
	size_t n_skip = 0;
	const struct kms_result *peers = results[N_KMS_CONFIGS - 1];
	for (long i = 0; i < runs; i++) {
		d2_runs_missed += results[1][i].missed != 0;
		d2_missed += results[1][i].missed;
		if (!peers[i].failed && !isnan(results[1][i].skipped) && !isnan(peers[i].skipped)) {
			skip_diff[n_skip++] = results[1][i].skipped - peers[i].skipped;
		}
	}
	printf("\nGoals (issues 12 and 30), per configuration against wlroots drm, by the "
		"ratios of the runs paired by round (median, min..max: TCG's noise is the "
		"spread; met: the median at or better; MISSED: worse in so many rounds that "
		"chance has under 10%%; par: worse, within the noise):\n");
	for (size_t c = 0; c + 1 < N_KMS_CONFIGS; c++) {
		char what[96];
		double v[KMS_MAX_RUNS], med, lo, hi;
		snprintf(what, sizeof(what), "%s: frame rate at or above wlroots'",
			kms_configs[c].name);
		size_t n = paired_ratios(results[c], peers, runs, true, v);
		if (n == 0) {
			bench_print_goal(48, what, "n/a", "wlroots' backend did not run");
		} else {
			size_t worse = count_worse(v, n, true);
			spread(v, n, &med, &lo, &hi);
			bench_print_goal(48, what, paired_verdict(med >= 1.0, worse, n),
				"%.3fx wlroots' rate (%.3f..%.3f, lower in %zu of %zu)", med, lo, hi,
				worse, n);
		}
		snprintf(what, sizeof(what), "%s: CPU per frame no worse", kms_configs[c].name);
		n = paired_ratios(results[c], peers, runs, false, v);
		if (n == 0) {
			bench_print_goal(48, what, "n/a", "wlroots' backend did not run");
		} else {
			size_t worse = count_worse(v, n, false);
			spread(v, n, &med, &lo, &hi);
			bench_print_goal(48, what, paired_verdict(med <= 1.0, worse, n),
				"%.3fx wlroots' (%.3f..%.3f, higher in %zu of %zu)", med, lo, hi,
				worse, n);
		}
	}
	bench_print_goal(48, "no missed vblank at depth 2", bench_verdict(d2_runs_missed == 0),
		"missed %.0f in all (runs with any: %ld/%ld)", d2_missed, d2_runs_missed, runs);
	if (n_skip == 0) {
		bench_print_goal(48, "depth 2 skips no more than wlroots", "n/a",
			"wlroots' backend did not run");
	} else {
		double med, lo, hi;
		size_t worse = 0;
		for (size_t i = 0; i < n_skip; i++) {
			worse += skip_diff[i] > 0;
		}
		spread(skip_diff, n_skip, &med, &lo, &hi);
		bench_print_goal(48, "depth 2 skips no more than wlroots",
			paired_verdict(med <= 0, worse, n_skip), "%+.1f skipped vblanks a run against "
			"wlroots' (%+.0f..%+.0f, more in %zu of %zu)", med, lo, hi, worse, n_skip);
	}
	return 0;
}
