/*
 * wla-bench-idle: what idle outputs cost. tinywl runs with 8 outputs and no
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
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

#define BENCH_OUTPUTS 8
#define BENCH_OUTPUTS_STR "8"
#define BENCH_MAX_RUNS 15
/* How long tinywl may take to create its socket, and to exit after SIGTERM. */
#define BENCH_START_TIMEOUT_MS 10000
#define BENCH_STOP_TIMEOUT_MS 5000

enum backend_kind {
	BACKEND_WLA,
	BACKEND_HEADLESS,
};

struct config {
	const char *name;
	enum backend_kind backend;
};

static const struct config configs[] = {
	{ .name = "wlatomic (VDC)", .backend = BACKEND_WLA },
	{ .name = "wlroots headless", .backend = BACKEND_HEADLESS },
};
#define N_CONFIGS (sizeof(configs) / sizeof(configs[0]))

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

/* The counters of a process, summed over its threads. */
struct sample {
	uint64_t voluntary_switches;
	uint64_t cpu_ns;
	long threads;
	uint64_t at_ns;
};

/* One thread's voluntary_ctxt_switches and run time; false if it is gone. */
static bool read_task(pid_t pid, long tid, uint64_t *switches, uint64_t *cpu_ns)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task/%ld/status", (int)pid, tid);
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return false;
	}
	char line[256];
	bool found = false;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "voluntary_ctxt_switches: %" SCNu64, switches) == 1) {
			found = true;
			break;
		}
	}
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/task/%ld/schedstat", (int)pid, tid);
	f = fopen(path, "r");
	if (f == NULL) {
		return false;
	}
	/* The first field: time spent on the CPU, in ns. */
	found = found && fscanf(f, "%" SCNu64, cpu_ns) == 1;
	fclose(f);
	return found;
}

static bool take_sample(pid_t pid, struct sample *sample)
{
	char dir_path[64];
	snprintf(dir_path, sizeof(dir_path), "/proc/%d/task", (int)pid);
	DIR *dir = opendir(dir_path);
	if (dir == NULL) {
		fprintf(stderr, "wla-bench-idle: %s: %s\n", dir_path, strerror(errno));
		return false;
	}
	*sample = (struct sample){ 0 };
	struct dirent *entry;
	while ((entry = readdir(dir)) != NULL) {
		long tid;
		if (!wla_parse_long(entry->d_name, 1, LONG_MAX, &tid)) {
			continue;
		}
		uint64_t switches, cpu_ns;
		if (read_task(pid, tid, &switches, &cpu_ns)) {
			sample->voluntary_switches += switches;
			sample->cpu_ns += cpu_ns;
			sample->threads++;
		}
	}
	closedir(dir);
	sample->at_ns = bench_now_ns();
	if (sample->threads == 0) {
		fprintf(stderr, "wla-bench-idle: %s: no thread could be read\n", dir_path);
		return false;
	}
	return true;
}

/*
 * Whether the process is blocked in epoll_wait: once it is, tinywl is in its
 * event loop and wlr_backend_start, which creates the outputs, is over. (A
 * running task's wchan is 0.)
 */
static bool in_event_loop(pid_t pid)
{
	char path[64], wchan[64] = "";
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return false;
	}
	bool read_ok = fgets(wchan, sizeof(wchan), f) != NULL;
	fclose(f);
	return read_ok && (strcmp(wchan, "do_epoll_wait") == 0 || strcmp(wchan, "ep_poll") == 0);
}

/* In the child: the environment of one configuration, then tinywl. */
static void exec_tinywl(const struct bench *bench, const struct config *config,
	const char *runtime, const char *stdout_path, const char *stderr_path)
{
	bench_scrub_env();
	setenv("XDG_RUNTIME_DIR", runtime, 1);
	/* The same renderer for both: the CPU figures compare backends. */
	setenv("WLR_RENDERER", "pixman", 1);
	if (config->backend == BACKEND_WLA) {
		setenv("WLA_OUTPUTS", BENCH_OUTPUTS_STR, 1);
	} else {
		setenv("WLR_BACKENDS", "headless", 1);
		setenv("WLR_HEADLESS_OUTPUTS", BENCH_OUTPUTS_STR, 1);
	}
	int out_fd = open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int err_fd = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out_fd < 0 || err_fd < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
			dup2(err_fd, STDERR_FILENO) < 0) {
		_exit(127);
	}
	const char *argv[8];
	size_t argc = 0;
	argv[argc++] = bench->tinywl;
	if (config->backend == BACKEND_HEADLESS) {
		/* The VDC's default mode; headless would otherwise be 1280x720. */
		argv[argc++] = "--backend";
		argv[argc++] = "auto";
		argv[argc++] = "--mode";
		argv[argc++] = "1920x1080@60";
	}
	argv[argc] = NULL;
	execv(bench->tinywl, (char *const *)argv);
	_exit(127);
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
		if (strncmp(line, "tinywl: stats output=", 21) != 0) {
			continue;
		}
		const char *p = strstr(line, " frames_presented=");
		long frames = p != NULL ? strtol(p + 18, NULL, 10) : 0;
		result->outputs++;
		result->frames_presented += frames;
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
	char dir[] = "/tmp/wla-bench-idle.XXXXXX";
	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "wla-bench-idle: mkdtemp: %s\n", strerror(errno));
		return false;
	}
	char runtime[sizeof(dir) + 16], socket_path[sizeof(dir) + 32];
	char stdout_path[sizeof(dir) + 16], stderr_path[sizeof(dir) + 16];
	snprintf(runtime, sizeof(runtime), "%s/runtime", dir);
	snprintf(socket_path, sizeof(socket_path), "%s/wayland-0", runtime);
	snprintf(stdout_path, sizeof(stdout_path), "%s/stdout", dir);
	snprintf(stderr_path, sizeof(stderr_path), "%s/stderr", dir);
	*result = (struct result){ 0 };
	bool ok = false;
	if (mkdir(runtime, 0700) != 0) {
		fprintf(stderr, "wla-bench-idle: %s: %s\n", runtime, strerror(errno));
		bench_remove_tree(dir);
		return false;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "wla-bench-idle: fork: %s\n", strerror(errno));
		bench_remove_tree(dir);
		return false;
	}
	if (pid == 0) {
		exec_tinywl(bench, config, runtime, stdout_path, stderr_path);
	}

	int term_signal = 0;
	int status = -1;
	/*
	 * Up once the socket exists and tinywl waits in its event loop (on a busy
	 * machine creating 8 outputs can take most of a second); then the
	 * warm-up, in which every output renders its first frame.
	 */
	uint64_t start_by = bench_now_ns() + BENCH_START_TIMEOUT_MS * UINT64_C(1000000);
	while (access(socket_path, F_OK) != 0 || !in_event_loop(pid)) {
		status = bench_wait_exit(pid, 0, &term_signal);
		if (status != -1) {
			fprintf(stderr, "wla-bench-idle: %s: tinywl ended before it was up\n",
				config->name);
			goto stop;
		}
		if (bench_now_ns() >= start_by) {
			fprintf(stderr, "wla-bench-idle: %s: not up after %d ms (no Wayland "
				"socket, or never seen waiting in epoll_wait in /proc/%d/wchan)\n",
				config->name, BENCH_START_TIMEOUT_MS, (int)pid);
			goto stop;
		}
		bench_sleep_ms(5);
	}
	bench_sleep_ms(bench->warmup_s * 1000);

	struct sample before, after;
	if (!take_sample(pid, &before)) {
		goto stop;
	}
	bench_sleep_ms(bench->duration_s * 1000);
	if (!take_sample(pid, &after)) {
		goto stop;
	}
	if (after.threads != before.threads) {
		/* A thread that ended in between took its counts along. */
		fprintf(stderr, "wla-bench-idle: %s: %ld threads, then %ld\n", config->name,
			before.threads, after.threads);
		goto stop;
	}
	double seconds = (double)(after.at_ns - before.at_ns) / 1e9;
	result->wakeups_per_s =
		(double)(after.voluntary_switches - before.voluntary_switches) / seconds;
	result->cpu_ms = (double)(after.cpu_ns - before.cpu_ns) / 1e6;
	result->threads = after.threads;
	ok = true;

stop:
	if (status == -1) {
		kill(pid, SIGTERM);
		status = bench_wait_exit(pid, BENCH_STOP_TIMEOUT_MS, &term_signal);
		if (status == -1) {
			fprintf(stderr, "wla-bench-idle: %s: tinywl still running %d ms after "
				"SIGTERM, killed\n", config->name, BENCH_STOP_TIMEOUT_MS);
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
			}
			ok = false;
		}
	}
	if (status == -2) {
		fprintf(stderr, "wla-bench-idle: %s: tinywl ended by signal %d\n", config->name,
			term_signal);
		ok = false;
	} else if (status > 0) {
		fprintf(stderr, "wla-bench-idle: %s: tinywl exit status %d\n", config->name,
			status);
		ok = false;
	}
	if (ok && (!read_stats(stdout_path, result) || result->outputs != BENCH_OUTPUTS)) {
		fprintf(stderr, "wla-bench-idle: %s: %ld outputs in tinywl's stats, %ld frames "
			"presented: expected %d outputs that each presented a frame\n",
			config->name, result->outputs, result->frames_presented, BENCH_OUTPUTS);
		ok = false;
	}
	if (!ok) {
		fprintf(stderr, "wla-bench-idle: tinywl's stderr:\n");
		bench_print_file(stderr_path);
	}
	bench_remove_tree(dir);
	return ok;
}

/* The median over the runs of the figure at offset in struct result. */
static double median(const struct bench *bench, size_t c, size_t offset)
{
	double values[BENCH_MAX_RUNS];
	for (long i = 0; i < bench->runs; i++) {
		values[i] = *(const double *)((const char *)&bench->results[c][i] + offset);
	}
	qsort(values, (size_t)bench->runs, sizeof(values[0]), bench_compare_double);
	size_t n = (size_t)bench->runs;
	return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : NAN;
}

static const char *fmt(char buf[32], int decimals, double value)
{
	if (isnan(value)) {
		return "n/a";
	}
	snprintf(buf, 32, "%.*f", decimals, value);
	return buf;
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
		printf("%-18s %12s %10s %8ld %8ld\n", configs[c].name, fmt(b[0], 1, wakeups[c]),
			fmt(b[1], 3, cpu[c]), threads, frames);
	}
	printf("%-18s %12s %10s\n", "wla/headless", fmt(b[0], 3, ratio(wakeups[0], wakeups[1])),
		fmt(b[1], 3, ratio(cpu[0], cpu[1])));

	if (bench->runs > 1) {
		printf("\nevery run (wake-ups/s, cpu ms, frames):\n");
		for (size_t c = 0; c < N_CONFIGS; c++) {
			printf("%-18s", configs[c].name);
			for (long i = 0; i < bench->runs; i++) {
				const struct result *r = &bench->results[c][i];
				printf(" %s/%s/%ld", fmt(b[0], 1, r->wakeups_per_s),
					fmt(b[1], 3, r->cpu_ms), r->frames_presented);
			}
			printf("\n");
		}
	}

	bool met = wakeups[0] <= wakeups[1] && cpu[0] <= cpu[1];
	char detail[256];
	snprintf(detail, sizeof(detail), "wake-ups/s %s vs %s, cpu ms %s vs %s",
		fmt(b[0], 1, wakeups[0]), fmt(b[1], 1, wakeups[1]), fmt(b[2], 3, cpu[0]),
		fmt(b[3], 3, cpu[1]));
	printf("\nGoal:\n  %-52s %-6s %s\n", "wlatomic wake-ups/s and CPU no more than headless",
		met ? "met" : "MISSED", detail);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: wla-bench-idle [options] [TINYWL]\n"
		"  -n, --runs N       runs per backend, the median is reported (default 3)\n"
		"  -d, --duration S   seconds measured per run (default 5)\n"
		"  -w, --warmup S     seconds between start-up and measuring (default 1)\n"
		"  -v, --verbose      print every run's figures as it ends\n"
		"  -h, --help         this text\n"
		"TINYWL defaults to the tinywl of the build tree this program is in.\n");
}

int main(int argc, char *argv[])
{
	static struct bench bench = { .runs = 3, .warmup_s = 1, .duration_s = 5 };
	const struct bench_option options[] = {
		{ "runs", 'n', 1, BENCH_MAX_RUNS, &bench.runs, NULL },
		{ "duration", 'd', 1, 600, &bench.duration_s, NULL },
		{ "warmup", 'w', 1, 60, &bench.warmup_s, NULL },
		{ "verbose", 'v', 0, 0, NULL, &bench.verbose },
	};
	int parsed = bench_parse_options("wla-bench-idle", argc, argv, options,
		sizeof(options) / sizeof(options[0]), usage);
	if (parsed >= 0) {
		return parsed;
	}
	char *own_tinywl = NULL;
	if (optind < argc) {
		bench.tinywl = argv[optind++];
	} else {
		bench.tinywl = own_tinywl = bench_sibling_path("bench/tinywl-measured");
	}
	if (optind < argc) {
		fprintf(stderr, "wla-bench-idle: unexpected argument '%s'\n", argv[optind]);
		free(own_tinywl);
		return 2;
	}
	if (bench.tinywl == NULL || access(bench.tinywl, X_OK) != 0) {
		fprintf(stderr, "wla-bench-idle: cannot run tinywl '%s' (give its path)\n",
			bench.tinywl ? bench.tinywl : "?");
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
