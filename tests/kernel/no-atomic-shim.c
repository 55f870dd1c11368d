/*
 * LD_PRELOAD shim for the real-kernel tier: the card refuses
 * DRM_CLIENT_CAP_ATOMIC with EOPNOTSUPP, as a driver without atomic
 * modesetting does (every driver Debian's kernel offers in the guest is
 * atomic). Everything else goes to libdrm and the kernel unchanged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <xf86drm.h>

int drmSetClientCap(int fd, uint64_t capability, uint64_t value)
{
	if (capability == DRM_CLIENT_CAP_ATOMIC) {
		errno = EOPNOTSUPP;
		return -EOPNOTSUPP;
	}
	int (*real)(int, uint64_t, uint64_t) =
		(int (*)(int, uint64_t, uint64_t))dlsym(RTLD_NEXT, "drmSetClientCap");
	return real ? real(fd, capability, value) : -ENOSYS;
}
