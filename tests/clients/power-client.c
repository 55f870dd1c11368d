/*
 * wla-power-client: set the power mode of the compositor's first output
 * through wlr-output-power-management (DPMS) and wait until it is in effect.
 *
 *   wla-power-client off|on
 *
 * Prints "power: <output name or #> mode <off|on>" and exits 0 once the
 * compositor reports the mode; 1 if it reports failure or lacks the protocol.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wayland-client.h>
#include "wlr-output-power-management-unstable-v1-client-protocol.h"

struct client {
	struct wl_display *display;
	struct wl_output *output;
	struct zwlr_output_power_manager_v1 *manager;
	bool failed;
	bool have_mode;
	uint32_t mode;
};

static void handle_global(void *data, struct wl_registry *registry, uint32_t name,
	const char *interface, uint32_t version)
{
	struct client *c = data;
	if (strcmp(interface, wl_output_interface.name) == 0 && !c->output) {
		c->output = wl_registry_bind(registry, name, &wl_output_interface, 1);
	} else if (strcmp(interface, zwlr_output_power_manager_v1_interface.name) == 0) {
		c->manager = wl_registry_bind(registry, name,
			&zwlr_output_power_manager_v1_interface, 1);
	}
}

static void handle_global_remove(void *data, struct wl_registry *registry, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {
	.global = handle_global,
	.global_remove = handle_global_remove,
};

static void handle_mode(void *data, struct zwlr_output_power_v1 *power, uint32_t mode)
{
	struct client *c = data;
	c->have_mode = true;
	c->mode = mode;
}

static void handle_failed(void *data, struct zwlr_output_power_v1 *power)
{
	struct client *c = data;
	c->failed = true;
}

static const struct zwlr_output_power_v1_listener power_listener = {
	.mode = handle_mode,
	.failed = handle_failed,
};

int main(int argc, char *argv[])
{
	if (argc != 2 || (strcmp(argv[1], "on") != 0 && strcmp(argv[1], "off") != 0)) {
		fprintf(stderr, "usage: %s off|on\n", argv[0]);
		return 2;
	}
	uint32_t want = strcmp(argv[1], "on") == 0 ? ZWLR_OUTPUT_POWER_V1_MODE_ON :
		ZWLR_OUTPUT_POWER_V1_MODE_OFF;
	struct client c = { 0 };
	c.display = wl_display_connect(NULL);
	if (!c.display) {
		fprintf(stderr, "power: cannot connect to the compositor\n");
		return 1;
	}
	struct wl_registry *registry = wl_display_get_registry(c.display);
	wl_registry_add_listener(registry, &registry_listener, &c);
	wl_display_roundtrip(c.display);
	if (!c.output || !c.manager) {
		fprintf(stderr, "power: the compositor has no %s\n", !c.output ? "wl_output" :
			zwlr_output_power_manager_v1_interface.name);
		return 1;
	}
	struct zwlr_output_power_v1 *power =
		zwlr_output_power_manager_v1_get_output_power(c.manager, c.output);
	zwlr_output_power_v1_add_listener(power, &power_listener, &c);
	zwlr_output_power_v1_set_mode(power, want);
	int ret = 0;
	while (!c.failed && !(c.have_mode && c.mode == want) && ret != -1) {
		ret = wl_display_dispatch(c.display);
	}
	bool ok = !c.failed && c.have_mode && c.mode == want;
	printf("power: mode %s%s\n", c.have_mode && c.mode == ZWLR_OUTPUT_POWER_V1_MODE_ON ?
		"on" : "off", ok ? "" : " (failed)");
	zwlr_output_power_v1_destroy(power);
	zwlr_output_power_manager_v1_destroy(c.manager);
	wl_output_destroy(c.output);
	wl_registry_destroy(registry);
	wl_display_disconnect(c.display);
	return ok ? 0 : 1;
}
