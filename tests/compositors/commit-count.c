/*
 * What an unmodified compositor's outputs do, on any backend: preloaded
 * (before wlatomic's module, if that is preloaded too), it wraps wroots'
 * wlr_output_commit and keeps, per output, the commits that carried a
 * buffer and were taken, and those wlroots or the backend refused. After
 * every commit it rewrites the file $WLA_COMMIT_COUNT, one line per output:
 *   <name> buffers=<n> refused=<n> enabled=<0|1> <w>x<h>
 * so that a test can wait for frames on headless, where there is no
 * control socket to ask, exactly as on wlatomic.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wlr/types/wlr_output.h>

#define MAX_OUTPUTS 16

static struct {
	char name[24];
	unsigned long buffers, refused;
	bool enabled;
	int width, height;
} outputs[MAX_OUTPUTS];
static size_t n_outputs;

static void write_counts(void)
{
	const char *path = getenv("WLA_COMMIT_COUNT");
	if (!path) {
		return;
	}
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		return;
	}
	for (size_t i = 0; i < n_outputs; i++) {
		fprintf(f, "%s buffers=%lu refused=%lu enabled=%d %dx%d\n", outputs[i].name,
			outputs[i].buffers, outputs[i].refused, outputs[i].enabled,
			outputs[i].width, outputs[i].height);
	}
	/* Whole lines or none: a reader never sees a half-written file. */
	if (fclose(f) == 0) {
		rename(tmp, path);
	}
}

bool wlr_output_commit(struct wlr_output *output)
{
	static bool (*real)(struct wlr_output *);
	if (!real) {
		real = (bool (*)(struct wlr_output *))dlsym(RTLD_NEXT, "wlr_output_commit");
		if (!real) {
			fprintf(stderr, "commit-count: no wlr_output_commit after this module\n");
			return false;
		}
	}
	bool buffer = output->pending.committed & WLR_OUTPUT_STATE_BUFFER;
	bool ok = real(output);
	size_t i = 0;
	while (i < n_outputs && strcmp(outputs[i].name, output->name) != 0) {
		i++;
	}
	if (i == n_outputs) {
		if (n_outputs == MAX_OUTPUTS) {
			return ok;
		}
		snprintf(outputs[i].name, sizeof(outputs[i].name), "%s", output->name);
		n_outputs++;
	}
	outputs[i].buffers += ok && buffer;
	outputs[i].refused += !ok;
	outputs[i].enabled = output->enabled;
	outputs[i].width = output->width;
	outputs[i].height = output->height;
	write_counts();
	return ok;
}
