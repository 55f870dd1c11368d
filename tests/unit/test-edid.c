/*
 * EDID base blocks, as a monitor sends them: the make named from the PNP ID
 * through hwdata's table, the monitor name and serial descriptors or the
 * codes when a monitor has none, the physical size, and the refusals of a
 * block that is short, has no header or a wrong checksum.
 */
#include <stdio.h>
#include <string.h>
#include "backend/edid.h"
#include "harness.h"

struct edid_spec {
	const char *pnp;     /* three letters */
	uint16_t product;
	uint32_t serial;
	uint8_t width_cm, height_cm;
	const char *name;    /* a monitor name descriptor, or NULL */
	const char *serial_text;
};

static void put_text(uint8_t *d, uint8_t tag, const char *text)
{
	memset(d, 0, 18);
	d[3] = tag;
	size_t n = strlen(text);
	for (size_t i = 0; i < 13; i++) {
		d[5 + i] = i < n ? (uint8_t)text[i] : i == n ? '\n' : ' ';
	}
}

static void make_edid(uint8_t edid[128], const struct edid_spec *s)
{
	static const uint8_t header[8] = { 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00 };
	memset(edid, 0, 128);
	memcpy(edid, header, sizeof(header));
	unsigned id = (unsigned)(s->pnp[0] - '@') << 10 | (unsigned)(s->pnp[1] - '@') << 5 |
		(unsigned)(s->pnp[2] - '@');
	edid[8] = (uint8_t)(id >> 8);
	edid[9] = (uint8_t)id;
	edid[10] = (uint8_t)s->product;
	edid[11] = (uint8_t)(s->product >> 8);
	for (int i = 0; i < 4; i++) {
		edid[12 + i] = (uint8_t)(s->serial >> (8 * i));
	}
	edid[18] = 1;
	edid[19] = 4;
	edid[21] = s->width_cm;
	edid[22] = s->height_cm;
	/* A detailed timing first (pixel clock nonzero), as monitors have. */
	edid[54] = 0x64;
	edid[55] = 0x19;
	if (s->name) {
		put_text(edid + 72, 0xfc, s->name);
	}
	if (s->serial_text) {
		put_text(edid + 90, 0xff, s->serial_text);
	}
	uint8_t sum = 0;
	for (int i = 0; i < 127; i++) {
		sum = (uint8_t)(sum + edid[i]);
	}
	edid[127] = (uint8_t)(0x100 - sum);
}

static void a_monitor_names_its_make_model_and_serial(void)
{
	uint8_t edid[128];
	make_edid(edid, &(struct edid_spec){ "DEL", 0xa0c4, 0x4c4b4c33, 60, 34, "DELL U2720Q",
		"CN0ABC123" });
	struct wla_edid_info info;
	char why[128] = "";
	CHECK(wla_edid_parse(edid, sizeof(edid), &info, why, sizeof(why)));
	CHECK(strcmp(info.pnp_id, "DEL") == 0);
	CHECK(strcmp(info.make, "Dell Inc.") == 0);
	CHECK(strcmp(info.model, "DELL U2720Q") == 0);
	CHECK(strcmp(info.serial, "CN0ABC123") == 0);
	CHECK_INT(info.phys_width_mm, 600);
	CHECK_INT(info.phys_height_mm, 340);
}

static void without_descriptors_the_codes_stand_in(void)
{
	uint8_t edid[128];
	make_edid(edid, &(struct edid_spec){ "RHT", 0x1234, 0x01020304, 0, 0, NULL, NULL });
	struct wla_edid_info info;
	char why[128] = "";
	CHECK(wla_edid_parse(edid, sizeof(edid), &info, why, sizeof(why)));
	CHECK(strcmp(info.make, "Red Hat, Inc.") == 0);
	CHECK(strcmp(info.model, "0x1234") == 0);
	/* Little-endian, all four bytes (wlroots 0.15 loses the upper two). */
	CHECK(strcmp(info.serial, "0x01020304") == 0);
	CHECK_INT(info.phys_width_mm, 0);

	make_edid(edid, &(struct edid_spec){ "RHT", 0x1234, 0, 0, 0, NULL, NULL });
	CHECK(wla_edid_parse(edid, sizeof(edid), &info, why, sizeof(why)));
	/* As wlroots names a monitor without a serial number. */
	CHECK(strcmp(info.serial, "0x00000000") == 0);

	/* One size byte 0: an aspect ratio, not a size. */
	make_edid(edid, &(struct edid_spec){ "RHT", 0x1234, 0, 79, 0, NULL, NULL });
	CHECK(wla_edid_parse(edid, sizeof(edid), &info, why, sizeof(why)));
	CHECK_INT(info.phys_width_mm, 0);
	CHECK_INT(info.phys_height_mm, 0);
}

static void an_unknown_manufacturer_keeps_its_letters(void)
{
	CHECK(wla_pnp_name("QQX") == NULL);
	uint8_t edid[128];
	make_edid(edid, &(struct edid_spec){ "QQX", 1, 0, 0, 0, "Panel", NULL });
	struct wla_edid_info info;
	char why[128] = "";
	CHECK(wla_edid_parse(edid, sizeof(edid), &info, why, sizeof(why)));
	CHECK(strcmp(info.make, "QQX") == 0);
	CHECK(strcmp(info.model, "Panel") == 0);
}

static void descriptor_text_is_printable_and_trimmed(void)
{
	uint8_t edid[128];
	make_edid(edid, &(struct edid_spec){ "DEL", 1, 0, 0, 0, "AB  ", "x" });
	/* A control character and a byte above ASCII inside the name. */
	edid[72 + 6] = 0x07;
	edid[72 + 7] = 0xe9;
	uint8_t sum = 0;
	for (int i = 0; i < 127; i++) {
		sum = (uint8_t)(sum + edid[i]);
	}
	edid[127] = (uint8_t)(0x100 - sum);
	struct wla_edid_info info;
	char why[128] = "";
	CHECK(wla_edid_parse(edid, sizeof(edid), &info, why, sizeof(why)));
	CHECK(strcmp(info.model, "A??") == 0);
	CHECK(strcmp(info.serial, "x") == 0);

	/* Thirteen characters fill the field without a newline. */
	make_edid(edid, &(struct edid_spec){ "DEL", 1, 0, 0, 0, "ABCDEFGHIJKLM", NULL });
	CHECK(wla_edid_parse(edid, sizeof(edid), &info, why, sizeof(why)));
	CHECK(strcmp(info.model, "ABCDEFGHIJKLM") == 0);
}

static void a_broken_block_is_refused_with_the_reason(void)
{
	uint8_t edid[128];
	make_edid(edid, &(struct edid_spec){ "DEL", 1, 0, 0, 0, "Name", NULL });
	struct wla_edid_info info;
	char why[128] = "";

	CHECK(!wla_edid_parse(edid, 127, &info, why, sizeof(why)));
	CHECK(strstr(why, "127 bytes") != NULL);
	CHECK(!wla_edid_parse(NULL, 0, &info, why, sizeof(why)));
	CHECK(strstr(why, "0 bytes") != NULL);

	edid[100] ^= 0x10;
	CHECK(!wla_edid_parse(edid, sizeof(edid), &info, why, sizeof(why)));
	CHECK(strstr(why, "checksum") != NULL);
	CHECK(strcmp(info.make, "") == 0);

	make_edid(edid, &(struct edid_spec){ "DEL", 1, 0, 0, 0, "Name", NULL });
	edid[0] = 0x01;
	edid[127] = (uint8_t)(edid[127] - 1);
	CHECK(!wla_edid_parse(edid, sizeof(edid), &info, why, sizeof(why)));
	CHECK(strstr(why, "header") != NULL);

	/* A manufacturer field that is no letters (0 is not one): no maker,
	 * the rest of the EDID stands. */
	make_edid(edid, &(struct edid_spec){ "DEL", 1, 0, 0, 0, "Name", NULL });
	edid[127] = (uint8_t)(edid[127] + edid[8] + edid[9]);
	edid[8] = edid[9] = 0;
	CHECK(wla_edid_parse(edid, sizeof(edid), &info, why, sizeof(why)));
	CHECK(strcmp(info.make, "Unknown") == 0);
	CHECK(strcmp(info.pnp_id, "") == 0);
	CHECK(strcmp(info.model, "Name") == 0);
}

static void the_pnp_table_is_sorted_and_whole(void)
{
	/* bsearch relies on the order; hwdata lists over 2000 ids. */
	CHECK(wla_n_pnp_ids > 2000);
	for (size_t i = 1; i < wla_n_pnp_ids; i++) {
		if (strcmp(wla_pnp_ids[i - 1].id, wla_pnp_ids[i].id) >= 0) {
			fprintf(stderr, "  pnp ids out of order at %zu: %s, %s\n", i,
				wla_pnp_ids[i - 1].id, wla_pnp_ids[i].id);
			CHECK(false);
			break;
		}
	}
	CHECK(wla_pnp_name("AAA") != NULL);
	CHECK(wla_pnp_name("DEL") != NULL);
}

int main(void)
{
	harness_init();
	RUN_TEST(a_monitor_names_its_make_model_and_serial);
	RUN_TEST(without_descriptors_the_codes_stand_in);
	RUN_TEST(an_unknown_manufacturer_keeps_its_letters);
	RUN_TEST(descriptor_text_is_printable_and_trimmed);
	RUN_TEST(a_broken_block_is_refused_with_the_reason);
	RUN_TEST(the_pnp_table_is_sorted_and_whole);
	HARNESS_EXIT();
}
