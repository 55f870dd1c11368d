/*
 * The runner of wla-bench: what every subcommand needs around its own
 * measurement. It starts the compositor and its clients (fork/exec in a
 * scrubbed or a whole given environment, a private XDG_RUNTIME_DIR, waiting
 * for the Wayland socket, stopping), reads CPU time from /proc, parses
 * tinywl's stats line, finds the programs built beside wla-bench, and has the
 * statistics (medians) and the printing of figures and goals that the
 * subcommands share.
 */
#ifndef BENCH_RUNNER_H
#define BENCH_RUNNER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* The programs of the build tree the benchmarks run, relative to its root. */
#define BENCH_TINYWL "tests/fixture/tinywl-measured"
#define BENCH_PATTERN_CLIENT "tests/clients/wla-pattern-client"
#define BENCH_POWER_CLIENT "tests/clients/wla-power-client"
#define BENCH_PRELOAD "libwlatomic-preload.so"
#define BENCH_CTL "examples/ctl/wlatomic-ctl"

/* What the stats lines of tinywl-measured start with, one per output. */
#define BENCH_STATS_PREFIX "tinywl: stats output="

/* What messages start with: "wla-bench" and the subcommand ("wla-bench
 * pacing"), set by main before the subcommand runs. */
extern const char *bench_prog;

/* ---- Time ---- */

uint64_t bench_now_ns(void);
void bench_sleep_ms(long ms);

/* ---- Programs and files ---- */

/* The program built at rel in the build tree wla-bench is in (BUILD/bench/
 * wla-bench -> BUILD/rel), malloc'd, the caller frees it; NULL if unknown. */
char *bench_sibling_path(const char *rel);

/*
 * The program to run: arg if given, else the sibling at rel (malloc'd into
 * *own, which the caller frees). NULL, told on stderr, if it is not an
 * executable.
 */
const char *bench_program(const char *arg, const char *rel, char **own);

/* name in one of the directories of dirs (':'-separated), into out. */
bool bench_find_program(const char *name, const char *dirs, char *out, size_t size);

/* s quoted for /bin/sh (a path in tinywl's -s command line) into buf; false
 * if it does not fit. */
bool bench_quote(char *buf, size_t size, const char *s);

/* Remove path and, for a directory, all it holds (no symlinks followed). */
void bench_remove_tree(const char *path);

/* A file on stderr, each line indented; max_lines > 0: only its last ones. */
void bench_print_file(const char *path, int max_lines);

/* ---- Processes ---- */

/* Unset what would change a run: the caller's session, wlatomic's and
 * wlroots' variables (in a child, or for the in-process parts of planes). */
void bench_scrub_env(void);

/* One child. Without envp it gets this process's environment scrubbed of
 * whatever would change a run (the caller's session, wlatomic's and wlroots'
 * variables), then env(data). */
struct bench_spawn {
	const char *const *argv; /* argv[0] is a path */
	char *const *envp;       /* the whole environment, or NULL */
	void (*env)(const void *data);
	/* In the child last before exec (user, namespaces): false ends it. */
	bool (*child_setup)(const void *data);
	const void *data;
	int out_fd, err_fd; /* -1: /dev/null; the caller keeps and closes them */
	bool group;         /* a process group of its own (bench_stop ends it all) */
};

/* Start a child; its pid, or -1 (told on stderr). */
pid_t bench_spawn(const struct bench_spawn *spawn);

/* The exit status of pid within timeout_ms, or -1 (still running) or -2 (a
 * signal ended it, in *term_signal, or it cannot be waited for). */
int bench_wait_exit(pid_t pid, long timeout_ms, int *term_signal);

/*
 * SIGTERM to pid (its whole group if group), SIGKILL after timeout_ms; the
 * status as bench_wait_exit's, -1 if it had to be killed. With group, what
 * is left of the group is killed too.
 */
int bench_stop(pid_t pid, bool group, long timeout_ms, int *term_signal);

/* "exit status 3", "signal 9", "timed out" for a status of bench_wait_exit
 * or bench_stop. */
const char *bench_status_str(char buf[32], int status, int term_signal);

/* Run spawn (its out_fd replaced by a pipe) and read what it prints into
 * buf; false unless it exits 0 within timeout_ms. */
bool bench_capture_output(const struct bench_spawn *spawn, long timeout_ms, char *buf, size_t size);

/* ---- The backends a benchmark compares ---- */

/* wlatomic, and the peer in the same run: wlroots' own backend. */
enum bench_backend {
	BENCH_WLA,
	BENCH_HEADLESS,
};

/* The headless rows' mode: the VDC's default (headless would make 1280x720). */
#define BENCH_HEADLESS_MODE "1920x1080@60"

/* In the child: wlroots' headless backend with outputs outputs. */
void bench_env_headless(const char *outputs);

/* Append tinywl's arguments for the headless backend at argv[argc] (four:
 * --backend auto --mode BENCH_HEADLESS_MODE); the new argc. */
size_t bench_args_headless(const char **argv, size_t argc);

/* ---- A compositor in a private runtime directory ---- */

struct bench_run {
	const char *name; /* the configuration, for messages */
	char dir[64];     /* /tmp/wla-bench.XXXXXX, removed by bench_run_finish */
	char runtime[96]; /* dir/runtime: its XDG_RUNTIME_DIR */
	char out_path[96], err_path[96];
	char display[64]; /* the Wayland socket's name, once up */
	pid_t pid;
	int status, term_signal; /* after bench_run_stop */
};

/* The directories of one run (runtime mode 0700). */
bool bench_run_prepare(struct bench_run *run, const char *name);

/*
 * Start argv (argv[0] a path) in the run's runtime directory, stdout and
 * stderr into its files, the environment scrubbed and then XDG_RUNTIME_DIR
 * and WLR_RENDERER=pixman (every backend renders alike: CPU figures compare
 * backends), then env(data).
 */
bool bench_run_start(struct bench_run *run, const char *const argv[],
	void (*env)(const void *data), const void *data);

/*
 * Wait until the run's Wayland socket exists and ready(pid, data) holds
 * (NULL: the socket is enough), within timeout_ms; what describes the wait
 * in the message if it is not met. false, told on stderr (without the
 * compositor's stderr), if the compositor ended or the time ran out.
 */
bool bench_run_wait_up(struct bench_run *run, long timeout_ms,
	bool (*ready)(pid_t pid, const void *data), const void *data, const char *what);

/* Whether pid waits in epoll_wait (/proc/PID/wchan): a Wayland compositor in
 * its event loop, its start-up over. A ready function of bench_run_wait_up. */
bool bench_in_event_loop(pid_t pid, const void *data);

/*
 * With term, SIGTERM; then wait for the exit within timeout_ms, SIGKILL
 * after. true if it exited 0; else false, with the reason and the run's
 * stderr on stderr.
 */
bool bench_run_stop(struct bench_run *run, bool term, long timeout_ms);

/* Remove the run's directory. */
void bench_run_finish(struct bench_run *run);

/* The first stats line of the run's stdout ("tinywl: stats output=...") into
 * line; false, told with the run's stderr, if there is none. */
bool bench_run_stats_line(struct bench_run *run, char *line, size_t size);

/*
 * Run tinywl once to its end (--exit-after-frames): argv, env(data) as
 * bench_run_start, then its stats line into line. false, with the reason
 * and tinywl's stderr on stderr, if it failed, timed out or printed none.
 */
bool bench_run_stats(const char *name, const char *const argv[],
	void (*env)(const void *data), const void *data, long timeout_ms, char *line,
	size_t size);

/* ---- Figures from /proc and tinywl ---- */

/* utime + stime of a process, all its threads, in clock ticks. */
bool bench_proc_cpu_ticks(pid_t pid, unsigned long long *ticks);

/* The counters of a process summed over its threads (/proc/PID/task/). */
struct bench_proc_sample {
	uint64_t voluntary_switches; /* each a blocking wake-up */
	uint64_t cpu_ns;             /* run time, from schedstat */
	long threads;
	uint64_t at_ns;
};

bool bench_proc_sample(pid_t pid, struct bench_proc_sample *sample);

/* This thread's CPU time, in us. */
double bench_thread_cpu_us(void);

/* key's value in a stats line (" key=value"): NAN for n/a; false, told on
 * stderr, if key is missing or its value not a number. */
bool bench_stats_field(const char *line, const char *key, double *value);

/* ---- Statistics ---- */

/* The median of n values (the mean of the middle two for even n); sorts
 * values. */
double bench_median(double *values, size_t n);

/* The index of the value whose rank is the median's ((n - 1) / 2, the lower
 * one for even n): the run reported for a configuration. */
size_t bench_median_index(const double *values, size_t n);

/* The lowest and highest of figures added one by one. */
struct bench_range {
	double lo, hi;
};

void bench_range_init(struct bench_range *range);
void bench_range_add(struct bench_range *range, double value);

/* ---- Printing ---- */

/* value with decimals decimals (a sign too if sign), "n/a" for NAN. */
const char *bench_fmt(char buf[32], double value, int decimals, bool sign);

/* "met" or "MISSED". */
const char *bench_verdict(bool met);

/* A goal line: "  GOAL VERDICT DETAIL", the goal padded to width. */
void bench_print_goal(int width, const char *goal, const char *verdict, const char *detail_fmt,
	...) __attribute__((format(printf, 4, 5)));

/* ---- Options ---- */

/* One option of a subcommand: a number in min..max, or (value NULL) a flag. */
struct bench_option {
	const char *name;
	char key;
	long min, max;
	long *value;
	bool *flag;
};

#define BENCH_MAX_OPTIONS 8

/*
 * Parse a subcommand's options (argv[0] is its name), and -h/--help (which
 * prints usage). Return -1 to go on (optind is at the first operand), else
 * the exit status: 0 after --help, 2 after an error, told in one line.
 */
int bench_parse_options(int argc, char *argv[], const struct bench_option *opts, size_t n,
	void (*usage)(FILE *out));

#endif
