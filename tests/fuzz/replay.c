/*
 * The main of a fuzz target built without libFuzzer: runs files through
 * LLVMFuzzerTestOneInput, so that every build replays the seed corpora.
 *
 *     fuzz-TARGET [--only PREFIX | --exclude PREFIX] PATH...
 *
 * A PATH that is a directory stands for its files (not recursively, names
 * starting with '.' skipped, in name order); --only and --exclude filter
 * those by the start of their name. A broken invariant aborts, so the first
 * failing input ends the run; its name is the last "replay:" line printed.
 * Exit status: 0 all inputs ran; 1 an input or path could not be read, or
 * nothing matched; 77 (skipped) nothing matched --only, for a corpus without
 * reproducers.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fuzz.h"

static const char *only_prefix, *exclude_prefix;
static size_t n_run;

static bool read_file(const char *path, uint8_t **data, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return false;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	while (buf) {
		len += fread(buf + len, 1, cap - len, f);
		if (len < cap) {
			break;
		}
		cap *= 2;
		uint8_t *grown = realloc(buf, cap);
		if (!grown) {
			free(buf);
		}
		buf = grown;
	}
	bool ok = buf && !ferror(f);
	fclose(f);
	if (!ok) {
		fprintf(stderr, "replay: %s: cannot read\n", path);
		free(buf);
		return false;
	}
	*data = buf;
	*size = len;
	return true;
}

static bool run_file(const char *path)
{
	uint8_t *data;
	size_t size;
	if (!read_file(path, &data, &size)) {
		return false;
	}
	printf("replay: %s (%zu bytes)\n", path, size);
	fflush(stdout);
	/* A copy of exactly the input's size, so that ASan sees any read past it. */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy) {
		free(data);
		return false;
	}
	memcpy(copy, data, size);
	free(data);
	LLVMFuzzerTestOneInput(copy, size);
	free(copy);
	n_run++;
	return true;
}

static bool selected(const char *name)
{
	if (name[0] == '.') {
		return false;
	}
	if (only_prefix && strncmp(name, only_prefix, strlen(only_prefix)) != 0) {
		return false;
	}
	if (exclude_prefix && strncmp(name, exclude_prefix, strlen(exclude_prefix)) == 0) {
		return false;
	}
	return true;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return false;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	bool ok = true;
	struct dirent *e;
	while (ok && (e = readdir(d))) {
		if (!selected(e->d_name)) {
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **grown = realloc(names, cap * sizeof(*names));
			ok = grown != NULL;
			names = ok ? grown : names;
		}
		if (ok) {
			names[n] = strdup(e->d_name);
			ok = names[n] != NULL;
			n += ok;
		}
	}
	closedir(d);
	if (names) {
		qsort(names, n, sizeof(*names), compare_names);
	}
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		struct stat st;
		if (ok && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			ok = run_file(path);
		}
		free(names[i]);
	}
	free(names);
	if (!ok) {
		fprintf(stderr, "replay: %s: cannot list\n", dir);
	}
	return ok;
}

int main(int argc, char **argv)
{
	int i = 1;
	for (; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--only") == 0) {
			only_prefix = argv[i + 1];
		} else if (strcmp(argv[i], "--exclude") == 0) {
			exclude_prefix = argv[i + 1];
		} else {
			break;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "usage: %s [--only PREFIX | --exclude PREFIX] PATH...\n", argv[0]);
		return 1;
	}
	for (; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (!(S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]))) {
			return 1;
		}
	}
	if (n_run == 0) {
		printf("%s: no input matched\n", only_prefix ? "SKIP" : "replay");
		return only_prefix ? 77 : 1;
	}
	printf("replay: %zu inputs, no invariant broken\n", n_run);
	return 0;
}
