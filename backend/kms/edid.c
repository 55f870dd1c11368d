/*
 * EDID base block: header and checksum checked, then the manufacturer (PNP
 * ID, named from hwdata's pnp.ids), the monitor name and serial descriptors
 * (else the product code and serial number) and the physical size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/edid.h"

static int compare_pnp(const void *key, const void *entry)
{
	return strcmp(key, ((const struct wla_pnp_id *)entry)->id);
}

const char *wla_pnp_name(const char *pnp_id)
{
	const struct wla_pnp_id *found = bsearch(pnp_id, wla_pnp_ids, wla_n_pnp_ids,
		sizeof(wla_pnp_ids[0]), compare_pnp);
	return found ? found->name : NULL;
}

/* A descriptor's text (13 bytes, ended by a newline, padded with spaces):
 * printable ASCII kept, anything else as '?', trailing spaces dropped. */
static void descriptor_text(const uint8_t *text, char *out, size_t out_len)
{
	size_t n = 0;
	for (size_t i = 0; i < 13 && text[i] != '\n' && n + 1 < out_len; i++) {
		out[n++] = text[i] >= 0x20 && text[i] < 0x7f ? (char)text[i] : '?';
	}
	while (n > 0 && out[n - 1] == ' ') {
		n--;
	}
	out[n] = '\0';
}

bool wla_edid_parse(const uint8_t *data, size_t len, struct wla_edid_info *info,
	char *why, size_t why_len)
{
	static const uint8_t header[8] = { 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00 };
	memset(info, 0, sizeof(*info));
	if (!data || len < 128) {
		snprintf(why, why_len, "%zu bytes, a base block has 128", data ? len : 0);
		return false;
	}
	if (memcmp(data, header, sizeof(header)) != 0) {
		snprintf(why, why_len, "no EDID header (bytes 0-7)");
		return false;
	}
	uint8_t sum = 0;
	for (size_t i = 0; i < 128; i++) {
		sum = (uint8_t)(sum + data[i]);
	}
	if (sum != 0) {
		snprintf(why, why_len, "checksum of the base block is off by %u", (unsigned)sum);
		return false;
	}
	/* Three 5-bit letters, 1 = 'A', big-endian. */
	unsigned id = (unsigned)data[8] << 8 | data[9];
	char letters[4] = {
		(char)('@' + ((id >> 10) & 0x1f)),
		(char)('@' + ((id >> 5) & 0x1f)),
		(char)('@' + (id & 0x1f)),
		'\0',
	};
	bool letters_ok = true;
	for (int i = 0; i < 3; i++) {
		letters_ok &= letters[i] >= 'A' && letters[i] <= 'Z';
	}
	/* No letters: no maker, the rest still stands (as wlroots). */
	const char *name = letters_ok ? wla_pnp_name(letters) : NULL;
	if (letters_ok) {
		memcpy(info->pnp_id, letters, sizeof(letters));
	}
	snprintf(info->make, sizeof(info->make), "%s", name ? name :
		letters_ok ? letters : "Unknown");

	unsigned product = data[10] | (unsigned)data[11] << 8;
	snprintf(info->model, sizeof(info->model), "0x%04X", product);
	uint32_t serial = data[12] | (uint32_t)data[13] << 8 | (uint32_t)data[14] << 16 |
		(uint32_t)data[15] << 24;
	/* As wlroots prints it, 0 too (with all four bytes: 0.15 loses two). */
	snprintf(info->serial, sizeof(info->serial), "0x%08X", serial);
	/* One of the two 0: an aspect ratio (EDID 1.4), no size. */
	if (data[21] && data[22]) {
		info->phys_width_mm = data[21] * 10u;
		info->phys_height_mm = data[22] * 10u;
	}

	/* The four 18-byte descriptors: a display descriptor starts 00 00 00,
	 * then its tag. */
	for (size_t off = 54; off + 18 <= 126; off += 18) {
		const uint8_t *d = data + off;
		if (d[0] || d[1] || d[2]) {
			continue; /* a detailed timing */
		}
		char text[16];
		if (d[3] == 0xfc) {
			descriptor_text(d + 5, text, sizeof(text));
			if (text[0]) {
				snprintf(info->model, sizeof(info->model), "%s", text);
			}
		} else if (d[3] == 0xff) {
			descriptor_text(d + 5, text, sizeof(text));
			if (text[0]) {
				snprintf(info->serial, sizeof(info->serial), "%s", text);
			}
		}
	}
	return true;
}
