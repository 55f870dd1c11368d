/*
 * The libgpiod provider against a real GPIO chip: WLA_TEST_GPIO_CHIP (name,
 * label or path), else the chip labelled panel-gpio (gpio-sim in the
 * real-kernel tier). Without one the test exits 77 (skipped), never 0.
 *
 * Lines 0, 1, 2 of the chip are the panel's enable, reset (active-low) and
 * backlight. On gpio-sim the physical levels are read back from sysfs
 * (sim_gpioN/value) after every step; on other chips only the request
 * (consumer, direction) and the busy path are checked.
 */
#include <dirent.h>
#include <errno.h>
#include <gpiod.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/panel.h"
#include "harness.h"
#include "wlatomic/config.h"

#define N_LINES 3
#define CONSUMER "wlatomic:test-gpio"

static char chip_arg[320];
static char chip_name[64]; /* kernel name, e.g. gpiochip0 */
static bool has_sim_values;
static struct wla_config_panel desc;
static uint64_t fake_now;

static uint64_t now_ns(void *data)
{
	return fake_now;
}

static const struct wla_panel_clock test_clock = { .now = now_ns };

static bool find_chip(void)
{
	const char *env = getenv("WLA_TEST_GPIO_CHIP");
	if (env && env[0]) {
		snprintf(chip_arg, sizeof(chip_arg), "%s", env);
		return true;
	}
	DIR *dir = opendir("/dev");
	if (!dir) {
		return false;
	}
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(dir))) {
		if (strncmp(de->d_name, "gpiochip", 8) != 0) {
			continue;
		}
		char path[300];
		snprintf(path, sizeof(path), "/dev/%s", de->d_name);
		struct gpiod_chip *chip = gpiod_chip_open(path);
		if (chip && strcmp(gpiod_chip_label(chip), "panel-gpio") == 0) {
			snprintf(chip_arg, sizeof(chip_arg), "%s", path);
			found = true;
		}
		if (chip) {
			gpiod_chip_close(chip);
		}
	}
	closedir(dir);
	return found;
}

static struct gpiod_chip *open_test_chip(void)
{
	if (strchr(chip_arg, '/')) {
		return gpiod_chip_open(chip_arg);
	}
	return gpiod_chip_open_lookup(chip_arg);
}

/* The level gpio-sim shows for line offset, -1 if unknown. */
static int sim_level(unsigned int offset)
{
	char path[256];
	snprintf(path, sizeof(path), "/sys/bus/gpio/devices/%s/sim_gpio%u/value", chip_name,
		offset);
	FILE *f = fopen(path, "r");
	if (!f) {
		return -1;
	}
	int v = -1;
	if (fscanf(f, "%d", &v) != 1) {
		v = -1;
	}
	fclose(f);
	return v;
}

/* Physical levels of lines 0..2 as bits, read back from outside the request. */
static int sim_levels(void)
{
	int levels = 0;
	for (unsigned int i = 0; i < N_LINES; i++) {
		int v = sim_level(i);
		if (v < 0) {
			return -1;
		}
		levels |= v << i;
	}
	return levels;
}

#define CHECK_LEVELS(want) \
	do { \
		if (has_sim_values) { \
			CHECK_INT(sim_levels(), want); \
		} \
	} while (0)

static void request_holds_all_lines_as_outputs_with_the_consumer_name(void)
{
	int err = 0;
	struct wla_panel *panel = wla_panel_create(&desc, "test-gpio", wla_gpiod_provider(),
		&test_clock, NULL, NULL, &err);
	CHECK(panel != NULL);
	CHECK_INT(err, 0);
	if (!panel) {
		return;
	}
	struct gpiod_chip *chip = open_test_chip();
	CHECK(chip != NULL);
	for (unsigned int i = 0; chip && i < N_LINES; i++) {
		struct gpiod_line *line = gpiod_chip_get_line(chip, i);
		CHECK(line != NULL);
		if (!line) {
			continue;
		}
		CHECK_INT(gpiod_line_update(line), 0);
		CHECK(gpiod_line_is_used(line));
		CHECK_INT(gpiod_line_direction(line), GPIOD_LINE_DIRECTION_OUTPUT);
		const char *consumer = gpiod_line_consumer(line);
		CHECK(consumer && strcmp(consumer, CONSUMER) == 0);
	}
	/* Safe off: enable 0, reset asserted (active-low: low), backlight 0. */
	CHECK_LEVELS(0);
	wla_panel_destroy(panel);
	for (unsigned int i = 0; chip && i < N_LINES; i++) {
		struct gpiod_line *line = gpiod_chip_get_line(chip, i);
		if (line && gpiod_line_update(line) == 0) {
			CHECK(!gpiod_line_is_used(line));
		}
	}
	if (chip) {
		gpiod_chip_close(chip);
	}
}

/* The libgpiod provider, counted: requests and sets that reach it. */
struct counted_lines {
	struct wla_gpio_lines base;
	struct wla_gpio_lines *inner;
};

static int n_requests, n_sets;

static int counted_set(struct wla_gpio_lines *base, uint32_t mask, uint32_t values)
{
	struct counted_lines *l = wl_container_of(base, l, base);
	n_sets++;
	return l->inner->funcs->set(l->inner, mask, values);
}

static void counted_release(struct wla_gpio_lines *base)
{
	struct counted_lines *l = wl_container_of(base, l, base);
	l->inner->funcs->release(l->inner);
	free(l);
}

static const struct wla_gpio_lines_funcs counted_lines_funcs = {
	.set = counted_set,
	.release = counted_release,
};

static struct wla_gpio_lines *counted_request(struct wla_gpio_provider *provider,
	const struct wla_gpio_request *req, struct wla_gpio_error *err)
{
	n_requests++;
	struct wla_gpio_provider *gpiod = wla_gpiod_provider();
	struct wla_gpio_lines *inner = gpiod->funcs->request(gpiod, req, err);
	struct counted_lines *l = inner ? calloc(1, sizeof(*l)) : NULL;
	if (!l) {
		if (inner) {
			inner->funcs->release(inner);
		}
		return NULL;
	}
	l->base.funcs = &counted_lines_funcs;
	l->inner = inner;
	return &l->base;
}

static const struct wla_gpio_provider_funcs counted_provider_funcs = {
	.request = counted_request,
};

static struct wla_gpio_provider counted_provider = { .funcs = &counted_provider_funcs };

/* A step: one set call, the lines read back from the chip after it. */
#define STEP(want_levels) \
	do { \
		CHECK_INT(n_sets, sets + 1); \
		sets = n_sets; \
		CHECK_LEVELS(want_levels); \
	} while (0)

static void sequence_drives_the_real_lines_step_by_step(void)
{
	int err = 0;
	n_requests = n_sets = 0;
	struct wla_panel *panel = wla_panel_create(&desc, "test-gpio", &counted_provider,
		&test_clock, NULL, NULL, &err);
	/* One bulk request for all the panel's lines. */
	CHECK_INT(n_requests, 1);
	int sets = n_sets;
	CHECK(panel != NULL);
	if (!panel) {
		return;
	}
	fake_now = 0;
	CHECK_INT(wla_panel_power_on(panel), 0);
	/* One step per advance: every delay is 1 ms. */
	fake_now = 0;
	wla_panel_advance(panel, fake_now); /* enable=1 */
	STEP(0x1);
	fake_now = 1000000;
	wla_panel_advance(panel, fake_now); /* reset=0: high; enable must stay high */
	STEP(0x3);
	fake_now = 2000000;
	wla_panel_advance(panel, fake_now);
	CHECK_INT(wla_panel_get_state(panel), WLA_PANEL_ON);
	CHECK_INT(wla_panel_first_frame_latched(panel), 0);
	wla_panel_advance(panel, fake_now); /* backlight=1 */
	CHECK_INT(wla_panel_get_state(panel), WLA_PANEL_LIT);
	STEP(0x7);
	CHECK_INT(wla_panel_power_off(panel), 0);
	wla_panel_advance(panel, fake_now); /* backlight=0 */
	STEP(0x3);
	fake_now = 3000000;
	/* Two steps due at once, reset asserted then the supply off: a set
	 * each, in that order (the chip shows the last). */
	wla_panel_advance(panel, fake_now);
	CHECK_INT(n_sets, sets + 2);
	sets = n_sets;
	CHECK_LEVELS(0x0);
	fake_now = 4000000;
	wla_panel_advance(panel, fake_now);
	CHECK_INT(wla_panel_get_state(panel), WLA_PANEL_OFF);
	CHECK_INT(n_sets, sets);
	CHECK_INT(n_requests, 1);
	wla_panel_destroy(panel);
}

static void busy_line_is_named_with_its_holder(void)
{
	struct gpiod_chip *chip = open_test_chip();
	CHECK(chip != NULL);
	if (!chip) {
		return;
	}
	struct gpiod_line *line = gpiod_chip_get_line(chip, 1);
	CHECK(line && gpiod_line_request_output(line, "wla-test-holder", 0) == 0);
	harness_log_clear();
	int err = 0;
	struct wla_panel *panel = wla_panel_create(&desc, "test-gpio", wla_gpiod_provider(),
		&test_clock, NULL, NULL, &err);
	CHECK(panel == NULL);
	CHECK_INT(err, -EBUSY);
	CHECK_INT(harness_log_n, 1);
	CHECK_LOGGED("panel test-gpio: chip '", "line 'reset' (offset 1)", "Device or resource busy",
		"held by 'wla-test-holder'");
	if (panel) {
		wla_panel_destroy(panel);
	}
	gpiod_chip_close(chip);
}

static void offset_beyond_the_chip_is_named(void)
{
	struct wla_config_panel bad = desc;
	bad.lines[2].offset = WLA_PANEL_MAX_OFFSET;
	harness_log_clear();
	int err = 0;
	struct wla_panel *panel = wla_panel_create(&bad, "test-gpio", wla_gpiod_provider(),
		&test_clock, NULL, NULL, &err);
	CHECK(panel == NULL);
	CHECK_INT(err, -EINVAL);
	CHECK_LOGGED("line 'backlight' (offset 65535)", "the chip has");
}

int main(void)
{
	harness_init();
	if (!find_chip()) {
		harness_skip("no GPIO chip: set WLA_TEST_GPIO_CHIP, or provide one labelled "
			"panel-gpio (gpio-sim); none in /dev");
	}
	struct gpiod_chip *chip = open_test_chip();
	if (!chip) {
		fprintf(stderr, "FAIL: cannot open GPIO chip '%s': %s\n", chip_arg, strerror(errno));
		return 1;
	}
	snprintf(chip_name, sizeof(chip_name), "%s", gpiod_chip_name(chip));
	unsigned int n = gpiod_chip_num_lines(chip);
	gpiod_chip_close(chip);
	if (n < N_LINES) {
		fprintf(stderr, "FAIL: GPIO chip '%s' has %u lines, the test needs %d\n", chip_arg,
			n, N_LINES);
		return 1;
	}
	has_sim_values = sim_levels() >= 0;
	printf("# chip '%s' (%s), %u lines, levels read back: %s\n", chip_arg, chip_name, n,
		has_sim_values ? "yes (gpio-sim)" : "no");

	static const char *const text_fmt =
		"[output]\nmode = 640x480\npanel-chip = %s\n"
		"panel-line = enable 0\npanel-line = reset 1 active-low\npanel-line = backlight 2\n"
		"panel-preset = simple\npanel-delay-prepare = 1\npanel-delay-enable = 1\n"
		"panel-delay-disable = 1\npanel-delay-unprepare = 1\n";
	char text[1024];
	snprintf(text, sizeof(text), text_fmt, chip_arg);
	struct wla_config cfg;
	wla_config_init(&cfg);
	if (wla_config_parse_text(&cfg, "test-gpiod", text) != 0) {
		fprintf(stderr, "FAIL: test config refused\n");
		return 1;
	}
	desc = cfg.outputs[0].panel;

	RUN_TEST(request_holds_all_lines_as_outputs_with_the_consumer_name);
	RUN_TEST(sequence_drives_the_real_lines_step_by_step);
	RUN_TEST(busy_line_is_named_with_its_holder);
	RUN_TEST(offset_beyond_the_chip_is_named);
	HARNESS_EXIT();
}
