/*
 * The compositor rows of wla-bench-pacing (issue 11): unmodified sway and
 * cage on wlatomic, through the preload module of this build tree, and on
 * wlroots' own headless backend, in the same run.
 */
#ifndef BENCH_COMPOSITORS_H
#define BENCH_COMPOSITORS_H

#include <stdbool.h>

/*
 * Run sway and cage with weston-presentation-shm, runs times on each backend,
 * for frames frame callbacks after a warm-up, and print their table, the
 * errors they logged and the goals (met or MISSED, never asserted). A
 * compositor or client that is not installed gets "not installed" rows.
 * As root the compositors run as the user wlatomic-bench (created if
 * missing), else as the caller. False if a run of an installed compositor
 * failed; the reason and the tail of its stderr are on stderr.
 */
bool bench_compositors_run(long runs, long frames, bool verbose);

#endif
