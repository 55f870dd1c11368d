/*
 * Properties of the KMS driver: the ids (and current values) of a DRM
 * object's properties, looked up once by name.
 */
#include <string.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "kms-private.h"

/* Look up the ids (and current values) of an object's properties by name;
 * those it does not expose stay 0. false if the kernel gave none. */
bool wla_kms_get_props(int fd, uint32_t obj, uint32_t type, const struct prop_want *want,
	size_t n_want)
{
	drmModeObjectProperties *props = drmModeObjectGetProperties(fd, obj, type);
	if (!props) {
		return false;
	}
	for (uint32_t i = 0; i < props->count_props; i++) {
		drmModePropertyRes *prop = drmModeGetProperty(fd, props->props[i]);
		if (!prop) {
			continue;
		}
		for (size_t w = 0; w < n_want; w++) {
			if (strcmp(prop->name, want[w].name) == 0) {
				*want[w].id = prop->prop_id;
				if (want[w].value) {
					*want[w].value = props->prop_values[i];
				}
			}
		}
		drmModeFreeProperty(prop);
	}
	drmModeFreeObjectProperties(props);
	return true;
}
