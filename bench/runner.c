/*
 * The runner of wla-bench (see runner.h): processes, runs of a compositor in
 * a private runtime directory, figures from /proc, statistics and printing.
 */
#define _GNU_SOURCE /* pipe2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "runner.h"
#include "util.h"

const char *bench_prog = "wla-bench";

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return wla_timespec_to_ns(&ts);
}

void bench_sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

/* ---- Programs and files ---- */

char *bench_sibling_path(const char *rel)
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

const char *bench_program(const char *arg, const char *rel, char **own)
{
	const char *path = arg != NULL ? arg : (*own = bench_sibling_path(rel));
	if (path == NULL || access(path, X_OK) != 0) {
		fprintf(stderr, "%s: cannot run '%s' (give its path)\n", bench_prog,
			path != NULL ? path : rel);
		return NULL;
	}
	return path;
}

bool bench_find_program(const char *name, const char *dirs, char *out, size_t size)
{
	const char *p = dirs;
	while (*p != '\0') {
		size_t len = strcspn(p, ":");
		int n = snprintf(out, size, "%.*s/%s", (int)len, p, name);
		if (n > 0 && (size_t)n < size && access(out, X_OK) == 0) {
			return true;
		}
		p += len + (p[len] == ':');
	}
	return false;
}

bool bench_quote(char *buf, size_t size, const char *s)
{
	size_t n = 0;
	if (n + 1 >= size) {
		return false;
	}
	buf[n++] = '\'';
	for (const char *c = s; *c; c++) {
		const char *piece = *c == '\'' ? "'\\''" : NULL;
		size_t len = piece ? strlen(piece) : 1;
		if (n + len + 2 >= size) {
			return false;
		}
		if (piece) {
			memcpy(buf + n, piece, len);
		} else {
			buf[n] = *c;
		}
		n += len;
	}
	buf[n++] = '\'';
	buf[n] = '\0';
	return true;
}

void bench_remove_tree(const char *path)
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

void bench_print_file(const char *path, int max_lines)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return;
	}
	if (max_lines <= 0) {
		char line[1024];
		while (fgets(line, sizeof(line), f) != NULL) {
			fprintf(stderr, "  | %s", line);
		}
		fclose(f);
		return;
	}
	/* The last max_lines lines of its last 8 KiB. */
	char buf[8192];
	if (fseek(f, 0, SEEK_END) == 0 && ftell(f) > (long)sizeof(buf) - 1) {
		fseek(f, -(long)(sizeof(buf) - 1), SEEK_END);
	} else {
		rewind(f);
	}
	size_t len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	const char *start = buf + len;
	for (int lines = 0; start > buf && lines <= max_lines; start--) {
		lines += start[-1] == '\n';
	}
	for (const char *line = start; *line != '\0';) {
		size_t n = strcspn(line, "\n");
		fprintf(stderr, "  | %.*s\n", (int)n, line);
		line += n + (line[n] == '\n');
	}
}

/* ---- Processes ---- */

void bench_scrub_env(void)
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

pid_t bench_spawn(const struct bench_spawn *s)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid != 0) {
		if (pid < 0) {
			fprintf(stderr, "%s: fork: %s\n", bench_prog, strerror(errno));
		} else if (s->group) {
			/* Both sides: whichever runs first, the group exists before
			 * a signal to it. */
			setpgid(pid, pid);
		}
		return pid;
	}
	if (s->group) {
		setpgid(0, 0);
	}
	/* Not inherited past exec: soak counts the compositor's fds. */
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 ||
			dup2(s->out_fd >= 0 ? s->out_fd : null_fd, STDOUT_FILENO) < 0 ||
			dup2(s->err_fd >= 0 ? s->err_fd : null_fd, STDERR_FILENO) < 0) {
		_exit(127);
	}
	if (s->envp == NULL) {
		bench_scrub_env();
		if (s->env != NULL) {
			s->env(s->data);
		}
	}
	if (s->child_setup != NULL && !s->child_setup(s->data)) {
		_exit(127);
	}
	if (s->envp != NULL) {
		execve(s->argv[0], (char *const *)s->argv, s->envp);
	} else {
		execv(s->argv[0], (char *const *)s->argv);
	}
	fprintf(stderr, "%s: %s: %s\n", bench_prog, s->argv[0], strerror(errno));
	_exit(127);
}

int bench_wait_exit(pid_t pid, long timeout_ms, int *term_signal)
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

int bench_stop(pid_t pid, bool group, long timeout_ms, int *term_signal)
{
	pid_t target = group ? -pid : pid;
	uint64_t end = bench_now_ns() + (uint64_t)timeout_ms * 1000000u;
	*term_signal = 0;
	kill(target, SIGTERM);
	int status = bench_wait_exit(pid, timeout_ms, term_signal);
	if (status == -1) {
		kill(target, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
		}
	}
	if (group) {
		/* The leader is our child; the rest (cage's client) are not. */
		while (kill(-pid, 0) == 0 && bench_now_ns() < end) {
			bench_sleep_ms(10);
		}
		kill(-pid, SIGKILL);
	}
	return status;
}

const char *bench_status_str(char buf[32], int status, int term_signal)
{
	if (status == -1) {
		return "timed out";
	}
	snprintf(buf, 32, "%s %d", status == -2 ? "signal" : "exit status",
		status == -2 ? term_signal : status);
	return buf;
}

bool bench_capture_output(const struct bench_spawn *spawn, long timeout_ms, char *buf, size_t size)
{
	int fds[2];
	buf[0] = '\0';
	if (pipe2(fds, O_CLOEXEC) != 0) {
		return false;
	}
	struct bench_spawn s = *spawn;
	s.out_fd = fds[1];
	pid_t pid = bench_spawn(&s);
	close(fds[1]);
	size_t len = 0;
	uint64_t end = bench_now_ns() + (uint64_t)timeout_ms * 1000000u;
	while (pid > 0 && len + 1 < size) {
		uint64_t now = bench_now_ns();
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		if (now >= end || poll(&pfd, 1, (int)((end - now) / 1000000) + 1) == 0) {
			break;
		}
		ssize_t n = read(fds[0], buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			break;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fds[0]);
	if (pid < 0) {
		return false;
	}
	int term_signal;
	int status = bench_wait_exit(pid, timeout_ms, &term_signal);
	if (status == -1) {
		bench_stop(pid, s.group, timeout_ms, &term_signal);
	}
	return status == 0;
}

/* ---- The backends a benchmark compares ---- */

void bench_env_headless(const char *outputs)
{
	setenv("WLR_BACKENDS", "headless", 1);
	setenv("WLR_HEADLESS_OUTPUTS", outputs, 1);
}

size_t bench_args_headless(const char **argv, size_t argc)
{
	argv[argc++] = "--backend";
	argv[argc++] = "auto";
	argv[argc++] = "--mode";
	argv[argc++] = BENCH_HEADLESS_MODE;
	return argc;
}

/* ---- A compositor in a private runtime directory ---- */

bool bench_run_prepare(struct bench_run *run, const char *name)
{
	*run = (struct bench_run){ .name = name };
	snprintf(run->dir, sizeof(run->dir), "/tmp/wla-bench.XXXXXX");
	if (mkdtemp(run->dir) == NULL) {
		fprintf(stderr, "%s: mkdtemp: %s\n", bench_prog, strerror(errno));
		run->dir[0] = '\0';
		return false;
	}
	snprintf(run->runtime, sizeof(run->runtime), "%s/runtime", run->dir);
	snprintf(run->out_path, sizeof(run->out_path), "%s/stdout", run->dir);
	snprintf(run->err_path, sizeof(run->err_path), "%s/stderr", run->dir);
	if (mkdir(run->runtime, 0700) != 0) {
		fprintf(stderr, "%s: %s: %s\n", bench_prog, run->runtime, strerror(errno));
		return false;
	}
	return true;
}

/* What bench_run_start's child gets before the configuration's own. */
struct run_env {
	const struct bench_run *run;
	void (*env)(const void *data);
	const void *data;
};

static void run_env(const void *data)
{
	const struct run_env *e = data;
	setenv("XDG_RUNTIME_DIR", e->run->runtime, 1);
	setenv("WLR_RENDERER", "pixman", 1);
	if (e->env != NULL) {
		e->env(e->data);
	}
}

bool bench_run_start(struct bench_run *run, const char *const argv[],
	void (*env)(const void *data), const void *data)
{
	int out = open(run->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int err = open(run->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	struct run_env e = { .run = run, .env = env, .data = data };
	struct bench_spawn s = { .argv = argv, .env = run_env, .data = &e, .out_fd = out,
		.err_fd = err };
	run->pid = out >= 0 && err >= 0 ? bench_spawn(&s) : -1;
	if (out < 0 || err < 0) {
		fprintf(stderr, "%s: %s: %s\n", bench_prog, run->dir, strerror(errno));
	}
	if (out >= 0) {
		close(out);
	}
	if (err >= 0) {
		close(err);
	}
	return run->pid > 0;
}

/* The Wayland socket in runtime, once there (its name in name). */
static bool find_wayland_socket(const char *runtime, char *name, size_t size)
{
	DIR *dir = opendir(runtime);
	struct dirent *entry;
	bool found = false;
	while (dir != NULL && !found && (entry = readdir(dir)) != NULL) {
		size_t len = strlen(entry->d_name);
		found = strncmp(entry->d_name, "wayland-", 8) == 0 &&
			(len < 5 || strcmp(entry->d_name + len - 5, ".lock") != 0);
		if (found) {
			snprintf(name, size, "%.*s", (int)size - 1, entry->d_name);
		}
	}
	if (dir != NULL) {
		closedir(dir);
	}
	return found;
}

bool bench_run_wait_up(struct bench_run *run, long timeout_ms,
	bool (*ready)(pid_t pid, const void *data), const void *data, const char *what)
{
	uint64_t end = bench_now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		if (find_wayland_socket(run->runtime, run->display, sizeof(run->display)) &&
				(ready == NULL || ready(run->pid, data))) {
			return true;
		}
		int term_signal, status = bench_wait_exit(run->pid, 0, &term_signal);
		if (status != -1) {
			char b[32];
			run->status = status;
			run->term_signal = term_signal;
			run->pid = 0;
			fprintf(stderr, "%s: %s: ended before it was up (%s)\n", bench_prog, run->name,
				bench_status_str(b, status, term_signal));
			return false;
		}
		if (bench_now_ns() >= end) {
			fprintf(stderr, "%s: %s: not up after %ld ms (no Wayland socket in %s%s%s)\n",
				bench_prog, run->name, timeout_ms, run->runtime, what ? ", or " : "",
				what ? what : "");
			return false;
		}
		bench_sleep_ms(5);
	}
}

bool bench_in_event_loop(pid_t pid, const void *data)
{
	char path[64], wchan[64] = "";
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return false;
	}
	bool read_ok = fgets(wchan, sizeof(wchan), f) != NULL;
	fclose(f);
	/* A running task's wchan is 0. */
	return read_ok && (strcmp(wchan, "do_epoll_wait") == 0 || strcmp(wchan, "ep_poll") == 0);
}

bool bench_run_stop(struct bench_run *run, bool term, long timeout_ms)
{
	if (run->pid <= 0) {
		return false;
	}
	int status;
	run->term_signal = 0;
	if (term) {
		status = bench_stop(run->pid, false, timeout_ms, &run->term_signal);
	} else {
		status = bench_wait_exit(run->pid, timeout_ms, &run->term_signal);
		if (status == -1) {
			kill(run->pid, SIGKILL);
			while (waitpid(run->pid, NULL, 0) < 0 && errno == EINTR) {
			}
		}
	}
	run->pid = 0;
	run->status = status;
	if (status == 0) {
		return true;
	}
	char b[32];
	if (status == -1) {
		fprintf(stderr, "%s: %s: %s within %ld ms, killed; its stderr:\n", bench_prog,
			run->name, term ? "did not stop on SIGTERM" : "did not finish", timeout_ms);
	} else {
		fprintf(stderr, "%s: %s: %s; its stderr:\n", bench_prog, run->name,
			bench_status_str(b, status, run->term_signal));
	}
	bench_print_file(run->err_path, 0);
	return false;
}

void bench_run_finish(struct bench_run *run)
{
	if (run->pid > 0) {
		int term_signal;
		bench_stop(run->pid, false, 5000, &term_signal);
		run->pid = 0;
	}
	if (run->dir[0] != '\0') {
		bench_remove_tree(run->dir);
		run->dir[0] = '\0';
	}
}

bool bench_run_stats_line(struct bench_run *run, char *line, size_t size)
{
	FILE *f = fopen(run->out_path, "r");
	bool found = false;
	while (f != NULL && !found && fgets(line, (int)size, f) != NULL) {
		found = strncmp(line, BENCH_STATS_PREFIX, strlen(BENCH_STATS_PREFIX)) == 0;
	}
	if (f != NULL) {
		fclose(f);
	}
	if (!found) {
		fprintf(stderr, "%s: %s: no stats line; its stderr:\n", bench_prog, run->name);
		bench_print_file(run->err_path, 0);
	}
	return found;
}

bool bench_run_stats(const char *name, const char *const argv[],
	void (*env)(const void *data), const void *data, long timeout_ms, char *line,
	size_t size)
{
	struct bench_run run;
	bool ok = bench_run_prepare(&run, name) && bench_run_start(&run, argv, env, data) &&
		bench_run_stop(&run, false, timeout_ms) &&
		bench_run_stats_line(&run, line, size);
	bench_run_finish(&run);
	return ok;
}

/* ---- Figures from /proc and tinywl ---- */

bool bench_proc_cpu_ticks(pid_t pid, unsigned long long *ticks)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0) {
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	/* After the command name, which may hold anything: field 3 on. */
	const char *p = strrchr(buf, ')');
	unsigned long long utime, stime;
	if (p == NULL || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			&utime, &stime) != 2) {
		return false;
	}
	*ticks = utime + stime;
	return true;
}

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
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		found = sscanf(line, "voluntary_ctxt_switches: %" SCNu64, switches) == 1;
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

bool bench_proc_sample(pid_t pid, struct bench_proc_sample *sample)
{
	char dir_path[64];
	snprintf(dir_path, sizeof(dir_path), "/proc/%d/task", (int)pid);
	DIR *dir = opendir(dir_path);
	if (dir == NULL) {
		fprintf(stderr, "%s: %s: %s\n", bench_prog, dir_path, strerror(errno));
		return false;
	}
	*sample = (struct bench_proc_sample){ 0 };
	struct dirent *entry;
	while ((entry = readdir(dir)) != NULL) {
		long tid;
		uint64_t switches, cpu_ns;
		if (wla_parse_long(entry->d_name, 1, LONG_MAX, &tid) &&
				read_task(pid, tid, &switches, &cpu_ns)) {
			sample->voluntary_switches += switches;
			sample->cpu_ns += cpu_ns;
			sample->threads++;
		}
	}
	closedir(dir);
	sample->at_ns = bench_now_ns();
	if (sample->threads == 0) {
		fprintf(stderr, "%s: %s: no thread could be read\n", bench_prog, dir_path);
		return false;
	}
	return true;
}

double bench_thread_cpu_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

bool bench_stats_field(const char *line, const char *key, double *value)
{
	char pattern[64];
	snprintf(pattern, sizeof(pattern), " %s=", key);
	const char *p = strstr(line, pattern);
	if (p == NULL) {
		fprintf(stderr, "%s: stats line without %s\n", bench_prog, key);
		return false;
	}
	p += strlen(pattern);
	if (strncmp(p, "n/a", 3) == 0) {
		*value = NAN;
		return true;
	}
	char *end;
	errno = 0;
	*value = strtod(p, &end);
	if (errno != 0 || end == p || (*end != ' ' && *end != '\n' && *end != '\0')) {
		fprintf(stderr, "%s: bad %s in the stats line\n", bench_prog, key);
		return false;
	}
	return true;
}

/* ---- Statistics ---- */

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double bench_median(double *values, size_t n)
{
	if (n == 0) {
		return NAN;
	}
	qsort(values, n, sizeof(values[0]), compare_double);
	return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

size_t bench_median_index(const double *values, size_t n)
{
	/* The value with at most rank values below it and more than rank below
	 * or equal: sorting, without losing which run it was. */
	size_t rank = n > 0 ? (n - 1) / 2 : 0;
	for (size_t i = 0; i < n; i++) {
		size_t below = 0, same = 0;
		for (size_t j = 0; j < n; j++) {
			below += values[j] < values[i];
			same += values[j] == values[i];
		}
		if (below <= rank && rank < below + same) {
			return i;
		}
	}
	return 0;
}

void bench_range_init(struct bench_range *range)
{
	range->lo = INFINITY;
	range->hi = -INFINITY;
}

void bench_range_add(struct bench_range *range, double value)
{
	range->lo = fmin(range->lo, value);
	range->hi = fmax(range->hi, value);
}

/* ---- Printing ---- */

const char *bench_fmt(char buf[32], double value, int decimals, bool sign)
{
	if (isnan(value)) {
		return "n/a";
	}
	snprintf(buf, 32, sign ? "%+.*f" : "%.*f", decimals, value);
	return buf;
}

const char *bench_verdict(bool met)
{
	return met ? "met" : "MISSED";
}

void bench_print_goal(int width, const char *goal, const char *verdict, const char *detail_fmt,
	...)
{
	char detail[512];
	va_list args;
	va_start(args, detail_fmt);
	vsnprintf(detail, sizeof(detail), detail_fmt, args);
	va_end(args);
	printf("  %-*s %-6s %s\n", width, goal, verdict, detail);
}

/* ---- Options ---- */

int bench_parse_options(int argc, char *argv[], const struct bench_option *opts, size_t n,
	void (*usage)(FILE *out))
{
	struct option longs[BENCH_MAX_OPTIONS + 2] = { 0 };
	char shorts[2 * BENCH_MAX_OPTIONS + 2] = "";
	size_t len = 0;
	if (n > BENCH_MAX_OPTIONS) {
		fprintf(stderr, "%s: %zu options, at most %d\n", bench_prog, n, BENCH_MAX_OPTIONS);
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
	optind = 1;
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
			fprintf(stderr, "%s: bad option '%s' (see -h)\n", bench_prog, argv[optind - 1]);
			return 2;
		}
		if (!o->value) {
			*o->flag = true;
		} else if (!wla_parse_long(optarg, o->min, o->max, o->value)) {
			fprintf(stderr, "%s: --%s '%s': expected %ld..%ld\n", bench_prog, o->name,
				optarg, o->min, o->max);
			return 2;
		}
	}
	return -1;
}
