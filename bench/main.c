/*
 * wla-bench: the benchmarks of wlatomic as subcommands of one program. Each
 * prints its table and its goals as met or MISSED; the exit status says only
 * whether its runs worked.
 */
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "runner.h"
#include "util.h"

static const struct {
	const char *name;
	const char *summary;
	int (*main)(int argc, char *argv[]);
} commands[] = {
	{ "pacing", "frame pacing of tinywl on the VDC against headless; sway and cage",
		bench_pacing_main },
	{ "idle", "what idle outputs cost: wake-ups and CPU of tinywl with 8 outputs",
		bench_idle_main },
	{ "soak", "does anything grow: tinywl for minutes with clients, DPMS and churn",
		bench_soak_main },
	{ "kms", "tinywl on a KMS device (or in a qemu guest with vkms) against wlroots' DRM",
		bench_kms_main },
	{ "planes", "what planes save; the layer-to-plane helper's cost; capture",
		bench_planes_main },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: wla-bench COMMAND [options]\n"
		"       wla-bench COMMAND --help   the options of COMMAND\n"
		"Commands:\n");
	for (size_t i = 0; i < WLA_ARRAY_SIZE(commands); i++) {
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	}
	fprintf(f, "Each prints a table and its goals as met or MISSED (reported, not asserted:\n"
		"the exit status says only whether the runs worked).\n");
}

int main(int argc, char *argv[])
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
			strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < WLA_ARRAY_SIZE(commands); i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			static char prog[32];
			snprintf(prog, sizeof(prog), "wla-bench %s", commands[i].name);
			bench_prog = prog;
			return commands[i].main(argc - 1, argv + 1);
		}
	}
	fprintf(stderr, "wla-bench: no command '%s' (see --help)\n", argv[1]);
	return 2;
}
