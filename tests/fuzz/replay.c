/*
 * Without libFuzzer: run every file of the corpus directories given on the
 * command line through the target once (the GCC build and CI replay the
 * corpora this way). A finding aborts, so the test fails.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		perror(path);
		return -1;
	}
	uint8_t *buf = NULL;
	size_t size = 0, cap = 0, n;
	uint8_t chunk[4096];
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0) {
		if (size + n > cap) {
			cap = (size + n) * 2;
			uint8_t *grown = realloc(buf, cap);
			if (!grown) {
				free(buf);
				fclose(fp);
				return -1;
			}
			buf = grown;
		}
		memcpy(buf + size, chunk, n);
		size += n;
	}
	fclose(fp);
	LLVMFuzzerTestOneInput(buf ? buf : (const uint8_t *)"", size);
	free(buf);
	return 0;
}

int main(int argc, char *argv[])
{
	size_t inputs = 0;
	for (int i = 1; i < argc; i++) {
		DIR *dir = opendir(argv[i]);
		if (!dir) {
			perror(argv[i]);
			return 1;
		}
		struct dirent *de;
		while ((de = readdir(dir)) != NULL) {
			if (de->d_name[0] == '.') {
				continue;
			}
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (replay_file(path) < 0) {
				closedir(dir);
				return 1;
			}
			inputs++;
		}
		closedir(dir);
	}
	printf("%zu inputs replayed\n", inputs);
	return inputs > 0 ? 0 : 1;
}
