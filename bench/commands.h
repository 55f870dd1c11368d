/*
 * The subcommands of wla-bench, each in its own file with only its own
 * measurement (the rest is the runner's, runner.h). Each takes its
 * arguments from the subcommand's name on (argv[0]) and returns the exit
 * status: 0 if every run worked (the goals are reported, not asserted), 1 if
 * one did not, 2 for bad options.
 */
#ifndef BENCH_COMMANDS_H
#define BENCH_COMMANDS_H

#include <stdbool.h>

int bench_pacing_main(int argc, char *argv[]);
int bench_idle_main(int argc, char *argv[]);
int bench_soak_main(int argc, char *argv[]);
int bench_kms_main(int argc, char *argv[]);
int bench_planes_main(int argc, char *argv[]);

/*
 * The compositor rows of pacing (compositors.c): sway and cage with
 * weston-presentation-shm, runs times on each backend, for frames frame
 * callbacks after a warm-up; print their table, the errors they logged and
 * the goals. A compositor or client that is not installed gets "not
 * installed" rows. As root the compositors run as the user wlatomic-bench
 * (created if missing), else as the caller. False if a run of an installed
 * compositor failed; the reason and the tail of its stderr are on stderr.
 */
bool bench_compositors_run(long runs, long frames, bool verbose);

#endif
