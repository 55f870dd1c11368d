/*
 * Whether this machine has a DRM card node: the kernel tests and the kms
 * benchmark run on one, or in a guest with vkms where there is none.
 */
#ifndef TESTS_LIB_DRI_CARD_H
#define TESTS_LIB_DRI_CARD_H

#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

/* True if one of /dev/dri/card0 to card15 exists. */
static inline bool test_have_dri_card(void)
{
	for (int i = 0; i < 16; i++) {
		char path[32];
		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		if (access(path, F_OK) == 0) {
			return true;
		}
	}
	return false;
}

#endif
