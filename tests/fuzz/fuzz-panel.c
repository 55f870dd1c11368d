/*
 * Fuzz target: a panel description (backend/panel/config.c) run through the
 * power sequencer (backend/panel/panel.c) with the recording GPIO provider
 * (backend/panel/record.c) under a fake clock.
 *
 * Input: panel-* keys as config text, up to the first NUL byte (the target
 * puts "[output]" and a mode before them; the first output with a panel is
 * used). After the NUL, a script of one-byte operations:
 *   n  power on             f  power off            l  first frame latched
 *   a  advance at the next deadline (the clock jumps there)
 *   r  advance at each deadline until there is none (at most 64)
 *   w  advance now, before any deadline (an early or spurious wake-up)
 *   t<b>  the clock moves on b ms        T<b>  it moves on b * 256 ms
 *   d  destroy; the next operation that needs a panel creates it again
 *   x<b>  the (b % 8 + 1)th GPIO set from now fails with -EIO
 *   X<b>  the same, and every set after it fails too
 *   q<b>  the next create fails: chip missing (b even) or a line busy
 *   e<c>  the callback of the next event runs operation c (n, f, l or d)
 * Any other byte is the operation at its value % 13 in "nflarwtTdxXqe".
 * Without a NUL the whole input is the description, with the script "nrlrfrd".
 *
 * After every GPIO call, event and operation:
 *   - a backlight line (one named 'backlight', or one that only the lit step
 *     switches on) is driven on only by the lit step, only after the ON event
 *     of this cycle and an accepted first-frame-latched, and never by the
 *     request, a power-on or power-off step or destroy; it is off again by
 *     BLANKED;
 *   - every line is at its safe off value when the lines are requested, when
 *     the panel is OFF (and at the OFF event), after a failure and after
 *     destroy, unless the best-effort drive to safe off was itself made to
 *     fail, which must then be the last set;
 *   - the panel's logical values match the recorded levels; each set changes
 *     only its lines; events come in their documented order and not after
 *     FAILED or from destroy; requests return what their doc comments say;
 *     after an advance nothing is left due; schedule() was told the deadline;
 *   - destroy releases the lines (nothing is held afterwards, and ASan/LSan
 *     see the memory).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/panel.h"
#include "fuzz.h"
#include "wlatomic/config.h"

#define MS UINT64_C(1000000)
#define TEXT_MAX 8192
#define RUN_MAX 64

struct sim {
	struct fuzz_input script;
	uint64_t now;
	struct wla_gpio_record rec;
	struct wla_config_panel desc;
	const char *name;
	struct wla_panel *panel;
	uint64_t scheduled;

	uint32_t all, active_low;
	uint32_t safe;      /* physical levels of the safe off state */
	uint32_t backlight; /* logical: lines only the lit step may switch on */

	/* What was asked for and seen. */
	bool want_on;  /* a power-on was accepted, no power-off since */
	bool video;    /* ON seen, BLANKED not yet */
	bool latched;  /* first-frame-latched accepted since ON */
	bool lit;      /* the lit step switched the backlight on */
	bool failed;   /* FAILED seen */
	char callback_op;
	int fail_create; /* 0, or the request failure the next create gets */
	int fail_create_line;

	/* The calls checked so far: levels after the last one and the last set. */
	uint32_t levels;
	struct wla_gpio_call last_set;
	bool released;
};

static struct sim sim;

static uint64_t sim_now(void *data)
{
	return ((struct sim *)data)->now;
}

static void sim_schedule(void *data, uint64_t deadline_ns)
{
	((struct sim *)data)->scheduled = deadline_ns;
}

static const struct wla_panel_clock sim_clock = {
	.now = sim_now,
	.schedule = sim_schedule,
	.data = &sim,
};

static uint32_t logical(struct sim *s, uint32_t levels)
{
	return (levels ^ s->active_low) & s->all;
}

/* Checks the calls recorded since the last check, then forgets them. */
static void check_calls(struct sim *s, bool from_destroy)
{
	FUZZ_CHECK(s->rec.n_calls <= WLA_GPIO_RECORD_MAX_CALLS, "%zu calls between two checks",
		s->rec.n_calls);
	const struct wla_panel_step *lit = &s->desc.lit;
	for (size_t i = 0; i < s->rec.n_calls; i++) {
		const struct wla_gpio_call *c = &s->rec.calls[i];
		FUZZ_CHECK(!s->released, "GPIO call %d after the lines were released", c->kind);
		FUZZ_CHECK(c->time_ns == s->now, "call at %llu ns, the clock says %llu",
			(unsigned long long)c->time_ns, (unsigned long long)s->now);
		uint32_t before = s->levels;
		switch (c->kind) {
		case WLA_GPIO_CALL_REQUEST:
			FUZZ_CHECK(c->mask == s->all && c->values == s->safe,
				"lines requested at 0x%x, their safe off levels are 0x%x", c->values,
				s->safe);
			FUZZ_CHECK(!(logical(s, c->values) & s->backlight),
				"lines requested with a backlight line on");
			before = c->result == 0 ? c->levels : s->levels;
			break;
		case WLA_GPIO_CALL_SET:
			FUZZ_CHECK(c->mask && !(c->mask & ~s->all), "set of lines 0x%x", c->mask);
			FUZZ_CHECK(c->levels == (c->result == 0 ?
				(before & ~c->mask) | (c->values & c->mask) : before),
				"a set changed lines outside its mask");
			s->last_set = *c;
			break;
		case WLA_GPIO_CALL_RELEASE:
			FUZZ_CHECK(from_destroy, "lines released outside destroy");
			s->released = true;
			break;
		}
		uint32_t on_now = logical(s, c->levels) & s->backlight;
		uint32_t switched_on = on_now & ~(logical(s, before) & s->backlight);
		if (c->kind == WLA_GPIO_CALL_SET && switched_on) {
			bool is_lit = s->desc.has_lit && c->mask == lit->mask &&
				c->values == ((lit->values ^ s->active_low) & lit->mask);
			FUZZ_CHECK(is_lit && !from_destroy,
				"a backlight line (0x%x) switched on by a set of 0x%x to 0x%x that is "
				"not the lit step%s", switched_on, c->mask, c->values,
				from_destroy ? ", during destroy" : "");
			FUZZ_CHECK(s->video && s->latched && s->want_on,
				"the backlight came on before power-on completed and a frame latched "
				"(on event %d, latched %d, on wanted %d)", s->video, s->latched,
				s->want_on);
			s->lit = true;
		}
		if (!on_now) {
			s->lit = false;
		}
		FUZZ_CHECK(!on_now || s->lit, "a backlight line is on without the lit step");
		s->levels = c->levels;
	}
	s->rec.n_calls = 0;
}

/* Safe off, or the last set was the drive to safe off and it was made to fail. */
static void check_safe(struct sim *s, const char *when)
{
	FUZZ_CHECK(s->levels == s->safe || (s->last_set.result < 0 &&
		s->last_set.mask == s->all && s->last_set.values == s->safe),
		"%s: lines at 0x%x, their safe off levels are 0x%x", when, s->levels, s->safe);
}

static void check_panel(struct sim *s)
{
	if (!s->panel) {
		FUZZ_CHECK(!s->rec.requested, "lines held without a panel");
		return;
	}
	FUZZ_CHECK(logical(s, s->rec.levels) == wla_panel_get_values(s->panel),
		"the panel thinks its lines are 0x%x, they are 0x%x (physical)",
		wla_panel_get_values(s->panel), s->rec.levels);
	enum wla_panel_state state = wla_panel_get_state(s->panel);
	uint64_t deadline = wla_panel_next_deadline_ns(s->panel);
	FUZZ_CHECK(s->scheduled == deadline, "schedule() last told %llu, the deadline is %llu",
		(unsigned long long)s->scheduled, (unsigned long long)deadline);
	switch (state) {
	case WLA_PANEL_OFF:
		FUZZ_CHECK(s->levels == s->safe, "off with lines at 0x%x, safe is 0x%x", s->levels,
			s->safe);
		FUZZ_CHECK(!s->want_on && deadline == WLA_PANEL_NO_DEADLINE,
			"off with a power-on wanted or a deadline");
		break;
	case WLA_PANEL_FAILED:
		FUZZ_CHECK(s->failed && deadline == WLA_PANEL_NO_DEADLINE,
			"failed without the FAILED event, or with a deadline");
		FUZZ_CHECK(wla_panel_get_error(s->panel) < 0, "failed without an error");
		check_safe(s, "failed");
		break;
	case WLA_PANEL_POWERING_ON:
	case WLA_PANEL_ON:
		FUZZ_CHECK(!(logical(s, s->levels) & s->backlight), "backlight on while %s",
			wla_panel_state_name(state));
		break;
	case WLA_PANEL_LIT:
		FUZZ_CHECK(s->video, "lit without the ON event");
		break;
	case WLA_PANEL_POWERING_OFF:
		break;
	}
	FUZZ_CHECK(!s->failed || state == WLA_PANEL_FAILED, "FAILED event but %s",
		wla_panel_state_name(state));
}

static void run_op(struct sim *s, int op, bool in_callback);

static void sim_notify(struct wla_panel *panel, enum wla_panel_event event, int error,
	void *data)
{
	struct sim *s = data;
	FUZZ_TRACE("  t=%llu ms event %s (%d)\n", (unsigned long long)(s->now / MS),
		wla_panel_event_name(event), error);
	check_calls(s, false);
	FUZZ_CHECK(panel == s->panel, "event from another panel");
	FUZZ_CHECK(!s->failed, "event %s after FAILED", wla_panel_event_name(event));
	FUZZ_CHECK(event == WLA_PANEL_EVENT_FAILED ? error < 0 : error == 0,
		"event %s with error %d", wla_panel_event_name(event), error);
	uint32_t bl = logical(s, s->levels) & s->backlight;
	switch (event) {
	case WLA_PANEL_EVENT_ON:
		FUZZ_CHECK(s->want_on && !s->video, "ON without a power-on wanted, or twice");
		FUZZ_CHECK(!bl, "ON with the backlight on");
		s->video = true;
		s->latched = false;
		break;
	case WLA_PANEL_EVENT_BLANKED:
		/* A power-on asked for during the power-off does not stop it. */
		FUZZ_CHECK(s->video, "BLANKED without ON");
		FUZZ_CHECK(!bl, "BLANKED with the backlight still on");
		s->video = false;
		s->latched = false;
		break;
	case WLA_PANEL_EVENT_OFF:
		FUZZ_CHECK(!s->want_on && !s->video, "OFF with power-on wanted or before BLANKED");
		FUZZ_CHECK(s->levels == s->safe, "OFF with lines at 0x%x, safe is 0x%x", s->levels,
			s->safe);
		break;
	case WLA_PANEL_EVENT_FAILED:
		FUZZ_CHECK(wla_panel_get_state(panel) == WLA_PANEL_FAILED &&
			wla_panel_get_error(panel) == error, "FAILED event but state %s",
			wla_panel_state_name(wla_panel_get_state(panel)));
		s->failed = true;
		s->want_on = s->video = s->latched = false;
		check_safe(s, "FAILED event");
		break;
	}
	char op = s->callback_op;
	s->callback_op = 0;
	if (op) {
		run_op(s, op, true);
	}
}

static void destroy(struct sim *s)
{
	check_calls(s, false);
	FUZZ_TRACE("  t=%llu ms destroy while %s\n", (unsigned long long)(s->now / MS),
		wla_panel_state_name(wla_panel_get_state(s->panel)));
	struct wla_panel *panel = s->panel;
	s->panel = NULL;
	wla_panel_destroy(panel);
	check_calls(s, true);
	FUZZ_CHECK(s->released && !s->rec.requested, "destroy did not release the lines");
	check_safe(s, "destroyed");
	s->want_on = s->video = s->latched = s->failed = false;
}

static bool create(struct sim *s)
{
	s->rec.fail_request = s->fail_create;
	s->rec.fail_request_line = s->fail_create_line;
	s->released = false;
	s->scheduled = WLA_PANEL_NO_DEADLINE;
	s->last_set = (struct wla_gpio_call){ 0 };
	fuzz_log_clear();
	int err = 1;
	s->panel = wla_panel_create(&s->desc, s->name, &s->rec.provider, &sim_clock, sim_notify,
		s, &err);
	check_calls(s, false);
	if (s->fail_create) {
		FUZZ_CHECK(!s->panel && err == s->fail_create && !s->rec.requested,
			"create with a failing request gave %p, error %d", (void *)s->panel, err);
		FUZZ_CHECK(fuzz_log_errors == 1, "failed create logged %d error lines",
			fuzz_log_errors);
		s->fail_create = 0;
		s->rec.fail_request = 0;
		return false;
	}
	FUZZ_CHECK(s->panel && err == 0, "create of an accepted description failed (%d)", err);
	FUZZ_CHECK(wla_panel_get_state(s->panel) == WLA_PANEL_OFF && s->levels == s->safe,
		"created in state %s at 0x%x", wla_panel_state_name(wla_panel_get_state(s->panel)),
		s->levels);
	return true;
}

static void advance(struct sim *s)
{
	struct wla_panel *panel = s->panel;
	wla_panel_advance(panel, s->now);
	check_calls(s, false);
	if (s->panel == panel) {
		uint64_t d = wla_panel_next_deadline_ns(panel);
		FUZZ_CHECK(d == WLA_PANEL_NO_DEADLINE || d > s->now,
			"after an advance at %llu the deadline %llu is still due",
			(unsigned long long)s->now, (unsigned long long)d);
	}
}

static void power_on(struct sim *s)
{
	enum wla_panel_state before = wla_panel_get_state(s->panel);
	int ret = wla_panel_power_on(s->panel);
	if (before == WLA_PANEL_FAILED) {
		FUZZ_CHECK(ret == -EIO, "power-on of a failed panel returned %d", ret);
		return;
	}
	bool on = before == WLA_PANEL_ON || before == WLA_PANEL_LIT;
	FUZZ_CHECK(ret == (on ? 1 : 0), "power-on while %s returned %d",
		wla_panel_state_name(before), ret);
	s->want_on = true;
}

static void power_off(struct sim *s)
{
	enum wla_panel_state before = wla_panel_get_state(s->panel);
	int ret = wla_panel_power_off(s->panel);
	FUZZ_CHECK(ret == 0 || ret == 1, "power-off returned %d", ret);
	if (before == WLA_PANEL_FAILED || before == WLA_PANEL_OFF) {
		FUZZ_CHECK(ret == 1, "power-off while %s returned %d", wla_panel_state_name(before),
			ret);
	}
	if (ret == 1) {
		enum wla_panel_state after = wla_panel_get_state(s->panel);
		FUZZ_CHECK(after == before || after == WLA_PANEL_OFF, "power-off returned 1 but "
			"went from %s to %s", wla_panel_state_name(before), wla_panel_state_name(after));
		check_safe(s, "power-off that was already done");
	}
	if (before != WLA_PANEL_FAILED) {
		s->want_on = false;
		s->latched = false;
	}
}

static void latch(struct sim *s)
{
	enum wla_panel_state state = wla_panel_get_state(s->panel);
	fuzz_log_clear();
	int ret = wla_panel_first_frame_latched(s->panel);
	bool ok = s->want_on && (state == WLA_PANEL_ON || state == WLA_PANEL_LIT);
	FUZZ_CHECK(ret == (ok ? 0 : -EINVAL), "first frame latched while %s returned %d",
		wla_panel_state_name(state), ret);
	FUZZ_CHECK(fuzz_log_errors == (ok ? 0 : 1), "first frame latched logged %d errors",
		fuzz_log_errors);
	if (ok && state == WLA_PANEL_ON) {
		s->latched = true;
	}
}

static const char ops[] = "nflarwtTdxXqe";

static void run_op(struct sim *s, int op, bool in_callback)
{
	uint8_t arg = 0;
	if (!in_callback && strchr("tTxXqe", op)) {
		arg = fuzz_u8(&s->script);
	}
	if (!s->panel && strchr("nflarwd", op) && (in_callback || !create(s))) {
		return;
	}
	FUZZ_TRACE("t=%llu ms %s%c %s\n", (unsigned long long)(s->now / MS),
		in_callback ? "  callback " : "", op,
		s->panel ? wla_panel_state_name(wla_panel_get_state(s->panel)) : "-");
	switch (op) {
	case 'n':
		power_on(s);
		break;
	case 'f':
		power_off(s);
		break;
	case 'l':
		latch(s);
		break;
	case 'a': {
		uint64_t d = wla_panel_next_deadline_ns(s->panel);
		if (d != WLA_PANEL_NO_DEADLINE) {
			s->now = d > s->now ? d : s->now;
			advance(s);
		}
		break;
	}
	case 'r':
		for (int i = 0; i < RUN_MAX && s->panel; i++) {
			uint64_t d = wla_panel_next_deadline_ns(s->panel);
			if (d == WLA_PANEL_NO_DEADLINE) {
				break;
			}
			s->now = d > s->now ? d : s->now;
			advance(s);
		}
		break;
	case 'w':
		advance(s);
		break;
	case 't':
		s->now += arg * MS;
		break;
	case 'T':
		s->now += arg * 256 * MS;
		break;
	case 'd':
		destroy(s);
		break;
	case 'x':
	case 'X':
		s->rec.fail_set = -EIO;
		s->rec.fail_set_index = s->rec.n_sets + 1 + arg % 8;
		s->rec.fail_set_after = op == 'X';
		break;
	case 'q':
		s->fail_create = arg % 2 ? -EBUSY : -ENOENT;
		s->fail_create_line = arg % 2 ? (int)(arg / 2 % s->desc.n_lines) : -1;
		break;
	case 'e':
		s->callback_op = strchr("nfld", arg) && arg ? (char)arg : "nfld"[arg % 4];
		break;
	}
	if (!in_callback) {
		check_calls(s, false);
		check_panel(s);
	}
}

/* Lines named backlight, and lines that only the lit step switches on. */
static uint32_t backlight_lines(const struct wla_config_panel *p)
{
	uint32_t named = 0, set_on = 0;
	for (size_t i = 0; i < p->n_lines; i++) {
		named |= strcmp(p->lines[i].name, "backlight") == 0 ? UINT32_C(1) << i : 0;
	}
	for (size_t i = 0; i < p->n_on; i++) {
		set_on |= p->on[i].mask & p->on[i].values;
	}
	for (size_t i = 0; i < p->n_off; i++) {
		set_on |= p->off[i].mask & p->off[i].values;
	}
	uint32_t lit_on = p->has_lit ? p->lit.mask & p->lit.values : 0;
	return named | (lit_on & ~set_on);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_init();
	static const char prefix[] = "[output]\nmode = 640x480\n";
	const uint8_t *nul = memchr(data, '\0', size);
	size_t text_len = nul ? (size_t)(nul - data) : size;
	if (text_len + sizeof(prefix) > TEXT_MAX) {
		return 0;
	}
	char text[TEXT_MAX];
	memcpy(text, prefix, sizeof(prefix) - 1);
	memcpy(text + sizeof(prefix) - 1, data, text_len);
	text[sizeof(prefix) - 1 + text_len] = '\0';

	static struct wla_config cfg;
	wla_config_init(&cfg);
	if (wla_config_parse_text(&cfg, "fuzz.conf", text) != 0) {
		return 0;
	}
	const struct wla_config_output *output = NULL;
	for (size_t i = 0; i < cfg.n_outputs && !output; i++) {
		output = cfg.outputs[i].panel.chip[0] ? &cfg.outputs[i] : NULL;
	}
	if (!output) {
		return 0;
	}

	struct sim *s = &sim;
	memset(s, 0, sizeof(*s));
	static const uint8_t default_script[] = "nrlrfrd";
	s->script = nul ? (struct fuzz_input){ .data = nul + 1, .size = size - text_len - 1 } :
		(struct fuzz_input){ .data = default_script, .size = sizeof(default_script) - 1 };
	s->desc = output->panel;
	s->name = output->name;
	wla_gpio_record_init(&s->rec, sim_now, s);
	s->all = (UINT32_C(1) << s->desc.n_lines) - 1;
	for (size_t i = 0; i < s->desc.n_lines; i++) {
		s->active_low |= s->desc.lines[i].active_low ? UINT32_C(1) << i : 0;
	}
	s->safe = wla_panel_off_values(&s->desc) ^ s->active_low;
	s->backlight = backlight_lines(&s->desc);
	FUZZ_TRACE("panel %s: %zu lines, safe 0x%x, backlight 0x%x\n", s->name,
		s->desc.n_lines, s->safe, s->backlight);

	if (create(s)) {
		while (!fuzz_done(&s->script)) {
			uint8_t b = fuzz_u8(&s->script);
			const char *op = b ? strchr(ops, b) : NULL;
			run_op(s, op ? *op : ops[b % (sizeof(ops) - 1)], false);
		}
	}
	if (s->panel) {
		destroy(s);
	}
	check_panel(s);
	return 0;
}
