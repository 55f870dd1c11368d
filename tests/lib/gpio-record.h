/*
 * Checks on what a recording GPIO provider (struct wla_gpio_record) saw,
 * shared by the panel tests. Macros, so that a failure names the test's line.
 */
#ifndef TESTS_LIB_GPIO_RECORD_H
#define TESTS_LIB_GPIO_RECORD_H

#include <string.h>
#include "backend/panel.h"
#include "harness.h"

/* The last request rec recorded was for chip_name as consumer_name, of the
 * three lines enable, reset and backlight at offsets en, rst and bl. */
#define CHECK_GPIO_REQUEST(rec, chip_name, consumer_name, en, rst, bl) \
	do { \
		CHECK(strcmp((rec).chip, (chip_name)) == 0); \
		CHECK(strcmp((rec).consumer, (consumer_name)) == 0); \
		CHECK_INT((rec).n_lines, 3); \
		CHECK_INT((rec).offsets[0], (en)); \
		CHECK_INT((rec).offsets[1], (rst)); \
		CHECK_INT((rec).offsets[2], (bl)); \
	} while (0)

#endif
