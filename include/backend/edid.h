/*
 * EDID: what a monitor says of itself (VESA E-EDID 1.3/1.4, base block),
 * read for the output's make, model, serial and physical size as wlroots'
 * DRM backend reads them. Needs nothing of wlroots or libdrm.
 */
#ifndef BACKEND_EDID_H
#define BACKEND_EDID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wla_edid_info {
	/* The manufacturer's name from its PNP ID (hwdata's pnp.ids), or the
	 * three letters where the table does not know them; "Unknown" for an
	 * id that is no letters (pnp_id then empty). */
	char pnp_id[4];
	char make[64];
	/* The monitor name descriptor, else the product code as 0xPPPP. */
	char model[32];
	/* The serial number descriptor, else the serial number as 0xSSSSSSSS
	 * (0x00000000 too, as wlroots). */
	char serial[32];
	/* From the basic display parameters (cm, as mm); 0: not given. */
	uint32_t phys_width_mm, phys_height_mm;
};

/* Parse the base block of an EDID (len bytes, at least 128): true, or false
 * with why (a header, length or checksum that is wrong) in why[why_len]. */
bool wla_edid_parse(const uint8_t *data, size_t len, struct wla_edid_info *info,
	char *why, size_t why_len);

/* The manufacturer named by a three-letter PNP ID; NULL if unknown. */
const char *wla_pnp_name(const char *pnp_id);

/* The table generated from pnp.ids, sorted by id (backend/kms/pnp-ids.py). */
struct wla_pnp_id {
	char id[4];
	const char *name;
};
extern const struct wla_pnp_id wla_pnp_ids[];
extern const size_t wla_n_pnp_ids;

#endif
