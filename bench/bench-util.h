/*
 * What the benchmark programs share: each is one file that starts tinywl in
 * a scrubbed environment and a private XDG_RUNTIME_DIR and watches it. Only
 * included by the programs in bench/: the helpers are static inline.
 */
#ifndef BENCH_BENCH_UTIL_H
#define BENCH_BENCH_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
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
#include "util.h"

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return wla_timespec_to_ns(&ts);
}

static inline void bench_sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

/* Remove path and, for a directory, all it holds (no symlinks followed). */
static inline void bench_remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0) {
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		DIR *dir = opendir(path);
		struct dirent *entry;
		while (dir != NULL && (entry = readdir(dir)) != NULL) {
			if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) {
				continue;
			}
			char child[PATH_MAX];
			int n = snprintf(child, sizeof(child), "%s/%s", path, entry->d_name);
			if (n > 0 && (size_t)n < sizeof(child)) {
				bench_remove_tree(child);
			}
		}
		if (dir != NULL) {
			closedir(dir);
		}
	}
	remove(path);
}

/* A file on stderr, each line indented (what a failed run printed). */
static inline void bench_print_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return;
	}
	char line[1024];
	while (fgets(line, sizeof(line), f) != NULL) {
		fprintf(stderr, "  | %s", line);
	}
	fclose(f);
}

/* In the child, before the configuration's own variables: nothing of the
 * caller's session or configuration leaks into a run. */
static inline void bench_scrub_env(void)
{
	static const char *const vars[] = {
		"WAYLAND_DISPLAY", "WAYLAND_SOCKET", "DISPLAY", "WLA_CONFIG", "WLA_OUTPUTS",
		"WLA_OVERLAY_PLANES", "WLA_CURSOR_SIZE", "WLA_FLIP_DEPTH", "WLA_FLIP_POLICY",
		"WLA_GPIO_DRY_RUN", "WLA_LATCH_SLACK_US", "WLR_BACKENDS", "WLR_RENDERER",
		"WLR_HEADLESS_OUTPUTS", "WLR_LIBINPUT_NO_DEVICES",
	};
	for (size_t i = 0; i < WLA_ARRAY_SIZE(vars); i++) {
		unsetenv(vars[i]);
	}
}

/* The exit status of pid within timeout_ms, or -1 (still running) or -2 (a
 * signal ended it, in *term_signal, or it cannot be waited for). */
static inline int bench_wait_exit(pid_t pid, long timeout_ms, int *term_signal)
{
	uint64_t end = bench_now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		int status;
		pid_t ret = waitpid(pid, &status, WNOHANG);
		if (ret == pid) {
			if (WIFSIGNALED(status)) {
				*term_signal = WTERMSIG(status);
				return -2;
			}
			return WEXITSTATUS(status);
		}
		if (ret < 0 && errno != EINTR) {
			*term_signal = 0;
			return -2;
		}
		if (bench_now_ns() >= end) {
			return -1;
		}
		bench_sleep_ms(10);
	}
}

/*
 * Run tinywl-measured once: argv (argv[0] its path) in a private
 * XDG_RUNTIME_DIR, the environment scrubbed, WLR_RENDERER=pixman, then
 * env(data) in the child for the configuration's own variables. Its stats
 * line ("tinywl: stats output=...") goes to line (cap bytes). false, with the
 * reason and tinywl's stderr on stderr, if it failed, timed out or printed
 * none. prog and name prefix the messages.
 */
static inline bool bench_run_stats(const char *prog, const char *name,
	const char *const argv[], void (*env)(const void *data), const void *data,
	long timeout_ms, char *line, size_t cap)
{
	char dir[] = "/tmp/wla-bench.XXXXXX";
	if (!mkdtemp(dir)) {
		fprintf(stderr, "%s: mkdtemp: %s\n", prog, strerror(errno));
		return false;
	}
	char runtime[64], out_path[64], err_path[64];
	snprintf(runtime, sizeof(runtime), "%s/runtime", dir);
	snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	mkdir(runtime, 0700);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		bench_scrub_env();
		setenv("XDG_RUNTIME_DIR", runtime, 1);
		setenv("WLR_RENDERER", "pixman", 1);
		env(data);
		int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) {
			_exit(127);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	bool ok = false;
	int sig = 0;
	int status = pid > 0 ? bench_wait_exit(pid, timeout_ms, &sig) : -1;
	if (status == -1 && pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (status != 0) {
		fprintf(stderr, "%s: %s: tinywl %s %d; its stderr:\n", prog, name,
			status == -1 ? "timed out, status" : sig ? "killed by signal" : "exit status",
			sig ? sig : status);
		bench_print_file(err_path);
	} else {
		FILE *f = fopen(out_path, "r");
		while (f && fgets(line, (int)cap, f)) {
			if (strncmp(line, "tinywl: stats output=", 21) == 0) {
				ok = true;
				break;
			}
		}
		if (f) {
			fclose(f);
		}
		if (!ok) {
			fprintf(stderr, "%s: %s: no stats line; tinywl's stderr:\n", prog, name);
			bench_print_file(err_path);
		}
	}
	bench_remove_tree(dir);
	return ok;
}

static inline int bench_compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The program built next to this one: BUILD/bench/x -> BUILD/rel (malloc'd). */
static inline char *bench_sibling_path(const char *rel)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		return NULL;
	}
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash == NULL) {
		return NULL;
	}
	*slash = '\0';
	size_t len = strlen(self) + strlen(rel) + 8;
	char *path = malloc(len);
	if (path != NULL) {
		snprintf(path, len, "%s/../%s", self, rel);
	}
	return path;
}

/* One option of a benchmark: a number in min..max, or (value NULL) a flag. */
struct bench_option {
	const char *name;
	char key;
	long min, max;
	long *value;
	bool *flag;
};

#define BENCH_MAX_OPTIONS 8

/*
 * Parse the options of prog, and -h/--help (which prints usage). Return -1
 * to go on (optind is at the first operand), else the exit status: 0 after
 * --help, 2 after an error, told in one line.
 */
static inline int bench_parse_options(const char *prog, int argc, char *argv[],
	const struct bench_option *opts, size_t n, void (*usage)(FILE *out))
{
	struct option longs[BENCH_MAX_OPTIONS + 2] = { 0 };
	char shorts[2 * BENCH_MAX_OPTIONS + 2] = "";
	size_t len = 0;
	if (n > BENCH_MAX_OPTIONS) {
		fprintf(stderr, "%s: %zu options, at most %d\n", prog, n, BENCH_MAX_OPTIONS);
		return 2;
	}
	for (size_t i = 0; i < n; i++) {
		longs[i] = (struct option){ opts[i].name,
			opts[i].value ? required_argument : no_argument, NULL, opts[i].key };
		shorts[len++] = opts[i].key;
		if (opts[i].value) {
			shorts[len++] = ':';
		}
	}
	longs[n] = (struct option){ "help", no_argument, NULL, 'h' };
	shorts[len++] = 'h';
	shorts[len] = '\0';
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		const struct bench_option *o = NULL;
		for (size_t i = 0; i < n && !o; i++) {
			o = opts[i].key == opt ? &opts[i] : NULL;
		}
		if (!o) {
			fprintf(stderr, "%s: bad option '%s' (see -h)\n", prog, argv[optind - 1]);
			return 2;
		}
		if (!o->value) {
			*o->flag = true;
		} else if (!wla_parse_long(optarg, o->min, o->max, o->value)) {
			fprintf(stderr, "%s: --%s '%s': expected %ld..%ld\n", prog, o->name,
				optarg, o->min, o->max);
			return 2;
		}
	}
	return -1;
}

#endif
