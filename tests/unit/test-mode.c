/*
 * Modes with timings: CVT against the figures of the VESA formulas (as the
 * `cvt` tool prints them), the refresh that follows from a timing, what
 * makes two modes the same, and the checks.
 */
#include <stdio.h>
#include <string.h>
#include <wlr/util/log.h>
#include "backend/mode.h"
#include "harness.h"

struct cvt_ref {
	int32_t w, h, mhz;
	bool reduced;
	uint16_t hss, hse, ht, vss, vse, vt;
	uint32_t flags;
};

/*
 * `cvt 1920 1080 60`: 173.00 MHz 1920 2048 2248 2576 1080 1083 1088 1120
 * -hsync +vsync; `cvt 1024 768 60`: 63.50 MHz 1024 1072 1176 1328 768 771
 * 775 798; `cvt -r 1920 1080 60`: 138.50 MHz 1920 1968 2000 2080 1080 1083
 * 1088 1111 +hsync -vsync; `cvt 1280 720 60`: 74.50 MHz 1280 1344 1472 1664
 * 720 723 728 748. (The pixel clock here is chosen to the kHz for the exact
 * rate, not in CVT's 250 kHz steps, so only the counts are compared.)
 */
static const struct cvt_ref refs[] = {
	{ 1920, 1080, 60000, false, 2048, 2248, 2576, 1083, 1088, 1120,
		WLA_MODE_FLAG_NHSYNC | WLA_MODE_FLAG_PVSYNC },
	{ 1024, 768, 60000, false, 1072, 1176, 1328, 771, 775, 798,
		WLA_MODE_FLAG_NHSYNC | WLA_MODE_FLAG_PVSYNC },
	{ 1280, 720, 60000, false, 1344, 1472, 1664, 723, 728, 748,
		WLA_MODE_FLAG_NHSYNC | WLA_MODE_FLAG_PVSYNC },
	{ 1920, 1080, 60000, true, 1968, 2000, 2080, 1083, 1088, 1111,
		WLA_MODE_FLAG_PHSYNC | WLA_MODE_FLAG_NVSYNC },
};

static void cvt_timings_follow_the_vesa_formulas(void)
{
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
		const struct cvt_ref *r = &refs[i];
		struct wla_mode m;
		CHECK(wla_mode_cvt(&m, r->w, r->h, r->mhz, r->reduced));
		CHECK_INT(m.width, r->w);
		CHECK_INT(m.height, r->h);
		CHECK_INT(m.hsync_start, r->hss);
		CHECK_INT(m.hsync_end, r->hse);
		CHECK_INT(m.htotal, r->ht);
		CHECK_INT(m.vsync_start, r->vss);
		CHECK_INT(m.vsync_end, r->vse);
		CHECK_INT(m.vtotal, r->vt);
		CHECK_INT(m.flags, r->flags);
		/* These totals allow the rate to the mHz. */
		CHECK_INT(m.refresh_mhz, r->mhz);
		const char *why;
		CHECK(wla_mode_valid(&m, &why));
	}
}

static void the_refresh_comes_from_the_timing(void)
{
	struct wla_mode m;
	CHECK(wla_mode_cvt(&m, 1920, 1080, 59940, false));
	CHECK_INT(m.refresh_mhz, 59940);
	/* clock / (htotal * vtotal), rounded to the mHz. */
	uint64_t px = (uint64_t)m.htotal * m.vtotal;
	CHECK_INT((m.clock_khz * UINT64_C(1000000) + px / 2) / px, 59940);
	m.clock_khz += 1000;
	wla_mode_update_refresh(&m);
	CHECK(m.refresh_mhz > 60000);
	uint64_t num, den;
	CHECK(wla_mode_cvt(&m, 1920, 1080, 60000, false));
	wla_mode_period(&m, &num, &den);
	CHECK_INT(num, UINT64_C(2576) * 1120 * 1000000);
	CHECK_INT(den, m.clock_khz);
	CHECK_INT(wla_mode_period_ns(&m), (num + den / 2) / den);
}

/* As drm_mode_vrefresh: an interlaced mode has two fields (vblanks) per
 * frame, a doublescanned one scans each line twice. CEA 1080i60. */
static void interlaced_and_doublescanned_modes_have_the_kernels_refresh(void)
{
	struct wla_mode m = {
		.width = 1920, .height = 1080, .clock_khz = 74250,
		.hsync_start = 2008, .hsync_end = 2052, .htotal = 2200,
		.vsync_start = 1084, .vsync_end = 1094, .vtotal = 1125,
		.flags = WLA_MODE_FLAG_PHSYNC | WLA_MODE_FLAG_PVSYNC | WLA_MODE_FLAG_INTERLACE,
	};
	wla_mode_update_refresh(&m);
	CHECK_INT(m.refresh_mhz, 60000);
	const char *why = NULL;
	CHECK(wla_mode_valid(&m, &why));
	uint64_t num, den;
	wla_mode_period(&m, &num, &den);
	CHECK_INT(wla_mode_period_ns(&m), 16666667);
	m.flags = WLA_MODE_FLAG_DBLSCAN;
	wla_mode_update_refresh(&m);
	CHECK_INT(m.refresh_mhz, 15000);
	CHECK_INT(wla_mode_period_ns(&m), 66666667);
}

static void the_same_size_and_rate_with_other_timings_is_another_mode(void)
{
	struct wla_mode a, b;
	CHECK(wla_mode_cvt(&a, 1920, 1080, 60000, false));
	CHECK(wla_mode_cvt(&b, 1920, 1080, 60000, true));
	CHECK_INT(a.refresh_mhz, b.refresh_mhz);
	CHECK(!wla_mode_equal(&a, &b));
	b = a;
	b.preferred = !a.preferred;
	CHECK(wla_mode_equal(&a, &b)); /* preferred is no timing */
	b.vsync_end++;
	CHECK(!wla_mode_equal(&a, &b));
}

static void a_broken_timing_is_named(void)
{
	struct wla_mode good;
	CHECK(wla_mode_cvt(&good, 800, 600, 60000, false));
	static const struct {
		int field;
		const char *want;
	} cases[] = {
		{ 0, "horizontal" }, { 1, "vertical" }, { 2, "pixel clock" },
		{ 3, "not the timing's" }, { 4, "below 1 Hz" }, { 5, "size" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct wla_mode m = good;
		switch (cases[i].field) {
		case 0:
			m.hsync_start = (uint16_t)(m.width - 1);
			break;
		case 1:
			m.vtotal = (uint16_t)(m.vsync_end - 1);
			break;
		case 2:
			m.clock_khz = 0;
			m.refresh_mhz = 0;
			break;
		case 3:
			m.refresh_mhz += 5;
			break;
		case 4:
			m.clock_khz = 1;
			wla_mode_update_refresh(&m);
			break;
		case 5:
			m.width = 0;
			break;
		}
		const char *why = NULL;
		CHECK(!wla_mode_valid(&m, &why));
		CHECK(why && strstr(why, cases[i].want));
	}
}

static void edges_of_the_size_and_rate_range(void)
{
	struct wla_mode m;
	CHECK(wla_mode_cvt(&m, 1, 1, 60000, false));
	CHECK(wla_mode_valid(&m, NULL));
	CHECK(wla_mode_cvt(&m, 16384, 16384, 60000, false));
	CHECK(wla_mode_valid(&m, NULL));
	CHECK(wla_mode_cvt(&m, 640, 480, 2000, false));
	CHECK(wla_mode_valid(&m, NULL));
	CHECK(wla_mode_cvt(&m, 640, 480, 1000000, true));
	CHECK(wla_mode_valid(&m, NULL));
	CHECK(!wla_mode_cvt(&m, 0, 480, 60000, false));
	CHECK(!wla_mode_cvt(&m, 640, -1, 60000, false));
	CHECK(!wla_mode_cvt(&m, 640, 480, 0, false));
	/* A field shorter than CVT's minimum vertical blanking. */
	CHECK(!wla_mode_cvt(&m, 640, 480, 2000000, false));
	char buf[128];
	CHECK(wla_mode_cvt(&m, 1920, 1080, 60000, false));
	wla_mode_describe(&m, buf, sizeof(buf));
	CHECK(strstr(buf, "1920x1080@60.000") && strstr(buf, "2048 2248 2576 1083 1088 1120") &&
		strstr(buf, "-hsync +vsync"));
}

int main(void)
{
	harness_init();
	RUN_TEST(cvt_timings_follow_the_vesa_formulas);
	RUN_TEST(the_refresh_comes_from_the_timing);
	RUN_TEST(interlaced_and_doublescanned_modes_have_the_kernels_refresh);
	RUN_TEST(the_same_size_and_rate_with_other_timings_is_another_mode);
	RUN_TEST(a_broken_timing_is_named);
	RUN_TEST(edges_of_the_size_and_rate_range);
	HARNESS_EXIT();
}
