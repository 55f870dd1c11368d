/*
 * The preload module: wlatomic inside a wlroots compositor that was not
 * built for it. In LD_PRELOAD, it defines wlr_backend_autocreate before
 * libwlroots does; with "wlatomic" among the names of WLR_BACKENDS the
 * compositor gets a multi backend holding wlatomic's backend beside what
 * wlroots itself makes of the other names. Without that name every call goes
 * straight to wlroots.
 *
 * The module links neither libwlroots nor libwlatomic: it is loaded into
 * every process that inherits LD_PRELOAD (a compositor's clients too), and
 * into a compositor running another libwlroots it must not drag in the one
 * wlatomic was built for. It finds wlroots' own autocreate with
 * dlsym(RTLD_NEXT), checks which library that symbol lives in, and opens
 * libwlatomic (from its own directory) only when a backend is asked for.
 *
 * It also defines wlr_backend_get_session: wlroots' multi backend knows
 * only the session its autocreate made, so a compositor asking for the
 * session of the multi backend (sway and cage, for their Ctrl+Alt+Fn VT
 * keys) gets the seat wlatomic's KMS driver opened its card through. Where
 * wlroots made a session for its own backends (wlatomic,libinput),
 * wlatomic is handed that one rather than opening a second.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef WLA_WLROOTS_SONAME
#error "WLA_WLROOTS_SONAME: the soname of the libwlroots wlatomic is built for"
#endif
#ifndef WLA_LIB_SONAME
#error "WLA_LIB_SONAME: the soname of libwlatomic"
#endif

#define WLA_EXPORT __attribute__((visibility("default")))

struct wl_display;
struct wlr_backend;
struct wlr_session;
struct wla_config;

/* What the module calls, found at run time; wlr_log's verbosities as in
 * <wlr/util/log.h>. */
enum { LOG_ERROR = 1, LOG_INFO = 2 };
typedef struct wlr_backend *(*autocreate_func_t)(struct wl_display *display);
struct preload {
	bool checked;
	bool usable; /* the running libwlroots is the one we were built for */
	autocreate_func_t autocreate;
	void (*log)(int verbosity, const char *fmt, ...);
	struct wlr_backend *(*multi_create)(struct wl_display *display);
	bool (*multi_add)(struct wlr_backend *multi, struct wlr_backend *backend);
	void (*backend_destroy)(struct wlr_backend *backend);
	struct wlr_backend *(*wla_create)(struct wl_display *display,
		const struct wla_config *config);
	struct wlr_backend *(*wla_create_with_session)(struct wl_display *display,
		const struct wla_config *config, struct wlr_session *session);
	/* wlroots' own wlr_backend_get_session and what finds the multi
	 * backend's members. */
	struct wlr_session *(*get_session)(struct wlr_backend *backend);
	bool (*is_multi)(struct wlr_backend *backend);
	void (*multi_for_each)(struct wlr_backend *multi,
		void (*callback)(struct wlr_backend *backend, void *data), void *data);
};

static struct preload preload;

/* The names wlroots 0.15's autocreate knows (backend/backend.c). */
static const char *const wlroots_names[] = {
	"wayland", "x11", "headless", "noop", "drm", "libinput",
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

#define plog(verbosity, fmt, ...) \
	preload.log(verbosity, "[wlatomic-preload] " fmt, ##__VA_ARGS__)

/*
 * Find wlroots' autocreate and say whether it is the one wlatomic was built
 * for. Silent in a process without libwlroots (a client inheriting
 * LD_PRELOAD); one line on stderr when it runs another libwlroots.
 */
static void preload_check(void)
{
	if (preload.checked) {
		return;
	}
	preload.checked = true;
	preload.autocreate = (autocreate_func_t)dlsym(RTLD_NEXT, "wlr_backend_autocreate");
	if (!preload.autocreate) {
		return;
	}
	Dl_info info;
	if (!dladdr((void *)preload.autocreate, &info) || !info.dli_fname) {
		fprintf(stderr, "wlatomic-preload: cannot tell which library defines "
			"wlr_backend_autocreate; wlatomic is built for %s: autocreate "
			"left alone\n", WLA_WLROOTS_SONAME);
		return;
	}
	if (strcmp(base_name(info.dli_fname), WLA_WLROOTS_SONAME) != 0) {
		fprintf(stderr, "wlatomic-preload: this process runs %s, wlatomic is "
			"built for %s: wlr_backend_autocreate left alone\n",
			info.dli_fname, WLA_WLROOTS_SONAME);
		return;
	}
	preload.log = (void (*)(int, const char *, ...))dlsym(RTLD_DEFAULT, "_wlr_log");
	preload.multi_create = (struct wlr_backend *(*)(struct wl_display *))
		dlsym(RTLD_DEFAULT, "wlr_multi_backend_create");
	preload.multi_add = (bool (*)(struct wlr_backend *, struct wlr_backend *))
		dlsym(RTLD_DEFAULT, "wlr_multi_backend_add");
	preload.backend_destroy = (void (*)(struct wlr_backend *))
		dlsym(RTLD_DEFAULT, "wlr_backend_destroy");
	preload.get_session = (struct wlr_session *(*)(struct wlr_backend *))
		dlsym(RTLD_NEXT, "wlr_backend_get_session");
	preload.is_multi = (bool (*)(struct wlr_backend *))
		dlsym(RTLD_DEFAULT, "wlr_backend_is_multi");
	preload.multi_for_each = (void (*)(struct wlr_backend *,
		void (*)(struct wlr_backend *, void *), void *))
		dlsym(RTLD_DEFAULT, "wlr_multi_for_each_backend");
	if (!preload.log || !preload.multi_create || !preload.multi_add ||
			!preload.backend_destroy || !preload.get_session || !preload.is_multi ||
			!preload.multi_for_each) {
		fprintf(stderr, "wlatomic-preload: %s lacks the multi backend or log "
			"functions of wlroots 0.15: autocreate left alone\n", info.dli_fname);
		return;
	}
	preload.usable = true;
}

__attribute__((constructor)) static void preload_init(void)
{
	preload_check();
}

/* Open libwlatomic from the directory this module was loaded from. */
static bool open_wlatomic(void)
{
	if (preload.wla_create) {
		return true;
	}
	Dl_info self;
	char path[4096];
	const char *dir_end = NULL;
	if (dladdr((void *)open_wlatomic, &self) && self.dli_fname) {
		dir_end = strrchr(self.dli_fname, '/');
	}
	int len = dir_end ? snprintf(path, sizeof(path), "%.*s/%s",
			(int)(dir_end - self.dli_fname), self.dli_fname, WLA_LIB_SONAME) :
		snprintf(path, sizeof(path), "%s", WLA_LIB_SONAME);
	if (len < 0 || (size_t)len >= sizeof(path)) {
		plog(LOG_ERROR, "the path of %s beside this module is too long", WLA_LIB_SONAME);
		return false;
	}
	/* Global: the compositor and its tests may call wla_* functions. */
	void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		plog(LOG_ERROR, "cannot load %s: %s", path, dlerror());
		return false;
	}
	preload.wla_create = (struct wlr_backend *(*)(struct wl_display *,
		const struct wla_config *))dlsym(lib, "wla_backend_create");
	preload.wla_create_with_session = (struct wlr_backend *(*)(struct wl_display *,
		const struct wla_config *, struct wlr_session *))
		dlsym(lib, "wla_backend_create_with_session");
	if (!preload.wla_create || !preload.wla_create_with_session) {
		plog(LOG_ERROR, "%s has no wla_backend_create%s", path,
			preload.wla_create ? "_with_session" : "");
		preload.wla_create = NULL;
		dlclose(lib);
		return false;
	}
	return true;
}

static bool known_to_wlroots(const char *name)
{
	for (size_t i = 0; i < sizeof(wlroots_names) / sizeof(wlroots_names[0]); i++) {
		if (strcmp(name, wlroots_names[i]) == 0) {
			return true;
		}
	}
	return false;
}

/*
 * Split names (WLR_BACKENDS) into whether wlatomic is named and the other
 * names wlroots knows, comma-separated in others. Unknown names and a second
 * "wlatomic" are left out with one error line each: the compositor runs on
 * what works. Returns how often wlatomic is named, -ENOMEM.
 */
static int split_names(const char *names, char **others)
{
	size_t len = strlen(names);
	char *copy = strdup(names);
	char *out = calloc(len + 1, 1);
	if (!copy || !out) {
		free(copy);
		free(out);
		return -ENOMEM;
	}
	int wlatomic = 0;
	char *save = NULL;
	for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		if (strcmp(name, "wlatomic") == 0) {
			if (++wlatomic == 2) {
				plog(LOG_ERROR, "WLR_BACKENDS='%s' names wlatomic more than "
					"once; it is created once", names);
			}
		} else if (!known_to_wlroots(name)) {
			plog(LOG_ERROR, "WLR_BACKENDS='%s': wlroots knows no backend "
				"'%s'; it is left out", names, name);
		} else {
			if (out[0]) {
				strcat(out, ",");
			}
			strcat(out, name);
		}
	}
	free(copy);
	*others = out;
	return wlatomic;
}

/* Whether "wlatomic" is one of the comma-separated names. */
static bool names_wlatomic(const char *names)
{
	size_t n = strlen("wlatomic");
	for (const char *p = names; (p = strstr(p, "wlatomic")); p += n) {
		bool starts = p == names || p[-1] == ',';
		bool ends = p[n] == '\0' || p[n] == ',';
		if (starts && ends) {
			return true;
		}
	}
	return false;
}

/* wlroots' autocreate for the names in others (not empty), with
 * WLR_BACKENDS set to them for the call and restored after. */
static struct wlr_backend *autocreate_others(struct wl_display *display,
	const char *names, const char *others)
{
	char *saved = strdup(names);
	if (!saved || setenv("WLR_BACKENDS", others, 1) < 0) {
		free(saved);
		plog(LOG_ERROR, "cannot set WLR_BACKENDS='%s' for wlroots: %s", others,
			strerror(errno));
		return NULL;
	}
	struct wlr_backend *backend = preload.autocreate(display);
	setenv("WLR_BACKENDS", saved, 1);
	free(saved);
	if (!backend) {
		plog(LOG_ERROR, "wlroots could not create the backends '%s'; running "
			"on wlatomic alone", others);
	}
	return backend;
}

WLA_EXPORT struct wlr_backend *wlr_backend_autocreate(struct wl_display *display);
struct wlr_backend *wlr_backend_autocreate(struct wl_display *display)
{
	preload_check();
	if (!preload.autocreate) {
		fprintf(stderr, "wlatomic-preload: no wlr_backend_autocreate to forward "
			"to in this process\n");
		return NULL;
	}
	const char *names = getenv("WLR_BACKENDS");
	if (!preload.usable || !names || !names_wlatomic(names)) {
		return preload.autocreate(display);
	}
	if (!open_wlatomic()) {
		return NULL;
	}
	char *others = NULL;
	if (split_names(names, &others) < 0) {
		plog(LOG_ERROR, "out of memory reading WLR_BACKENDS='%s'", names);
		return NULL;
	}
	struct wlr_backend *multi = NULL;
	if (others[0]) {
		multi = autocreate_others(display, names, others);
	}
	if (!multi) {
		multi = preload.multi_create(display);
	}
	if (!multi) {
		plog(LOG_ERROR, "cannot create a multi backend");
		free(others);
		return NULL;
	}
	/* The configuration is the WLA_* environment and config file, as for
	 * a compositor linking libwlatomic; the seat session is the one
	 * wlroots made for the others, if it made one. */
	struct wlr_session *seat = preload.get_session(multi);
	struct wlr_backend *wla = seat ? preload.wla_create_with_session(display, NULL, seat) :
		preload.wla_create(display, NULL);
	if (!wla) {
		plog(LOG_ERROR, "wlatomic's backend could not be created%s",
			others[0] ? "; running on the others" : "");
	} else if (!preload.multi_add(multi, wla)) {
		plog(LOG_ERROR, "wlatomic's backend could not join the multi backend");
		preload.backend_destroy(wla);
		wla = NULL;
	} else {
		plog(LOG_INFO, "WLR_BACKENDS='%s': wlatomic%s%s", names,
			others[0] ? " with wlroots' " : "", others);
	}
	if (!wla && !others[0]) {
		preload.backend_destroy(multi);
		multi = NULL;
	}
	free(others);
	return multi;
}

static void find_session(struct wlr_backend *backend, void *data)
{
	struct wlr_session **session = data;
	if (!*session) {
		*session = preload.get_session(backend);
	}
}

/* wlroots' answer, else (a multi backend that made no session itself) the
 * session of the first of its members that has one: wlatomic's seat. */
WLA_EXPORT struct wlr_session *wlr_backend_get_session(struct wlr_backend *backend);
struct wlr_session *wlr_backend_get_session(struct wlr_backend *backend)
{
	preload_check();
	if (!preload.usable) {
		struct wlr_session *(*real)(struct wlr_backend *) =
			(struct wlr_session *(*)(struct wlr_backend *))
			dlsym(RTLD_NEXT, "wlr_backend_get_session");
		return real ? real(backend) : NULL;
	}
	struct wlr_session *session = preload.get_session(backend);
	if (!session && backend && preload.is_multi(backend)) {
		preload.multi_for_each(backend, find_session, &session);
	}
	return session;
}
