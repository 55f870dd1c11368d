/*
 * Acquiring the card, on a machine without one: the session (backend/
 * session/) refuses a drm-device that is missing, that is no KMS device, or
 * that this process may not open when no seat session can be had, each
 * time naming the path and why; the KMS driver handed an fd that is no
 * card, or one already closed, refuses it naming the card, the fd and the
 * errno. Nothing here needs /dev/dri (the kernel tier's test-kms drives a
 * real card through the same path).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wayland-server-core.h>
#include <wlr/backend/session.h>
#include "backend/kms.h"
#include "backend/session.h"
#include "harness.h"
#include "wlatomic/config.h"

/* A card as the session hands it over, made by hand around fd. */
static void card_init(struct wla_card *card, const char *path, int fd)
{
	memset(card, 0, sizeof(*card));
	card->fd = fd;
	snprintf(card->path, sizeof(card->path), "%s", path);
	wl_list_init(&card->link);
	wl_signal_init(&card->events.change);
	wl_signal_init(&card->events.session_end);
}

static void driver_refuses_an_fd_that_is_no_card(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	struct wla_card card;
	card_init(&card, "/dev/null", fd);
	char fd_name[32];
	snprintf(fd_name, sizeof(fd_name), "fd %d", fd);
	harness_log_clear();
	CHECK(wla_kms_create(NULL, &card) == NULL);
	CHECK_LOGGED("kms /dev/null", fd_name, "not a KMS device", strerror(ENOTTY));
	/* The fd is the caller's: still open. */
	CHECK(fcntl(fd, F_GETFD) >= 0);
	close(fd);
}

static void driver_refuses_a_closed_fd(void)
{
	struct wla_card card;
	card_init(&card, "/dev/dri/card0", -1);
	harness_log_clear();
	CHECK(wla_kms_device_create(NULL, &card) == NULL);
	CHECK_LOGGED("kms /dev/dri/card0", "fd -1", "not a KMS device", strerror(EBADF));
}

static struct wla_card *open_drm_device(struct wla_session *session, const char *path)
{
	struct wla_config cfg;
	wla_config_init(&cfg);
	cfg.driver = WLA_DRIVER_KMS;
	snprintf(cfg.drm_device, sizeof(cfg.drm_device), "%s", path);
	return wla_session_open_card(session, &cfg);
}

static void session_names_a_missing_card(void)
{
	struct wla_session *session = wla_session_create(NULL, NULL);
	CHECK(session != NULL);
	harness_log_clear();
	CHECK(open_drm_device(session, "/dev/dri/card99") == NULL);
	CHECK_LOGGED("session: drm-device /dev/dri/card99", "cannot open it",
		strerror(ENOENT));
	CHECK(wl_list_empty(&session->cards));
	wla_session_destroy(session);
}

static void session_names_a_path_that_is_no_card(void)
{
	struct wla_session *session = wla_session_create(NULL, NULL);
	CHECK(session != NULL);
	harness_log_clear();
	CHECK(open_drm_device(session, "/dev/null") == NULL);
	CHECK_LOGGED("session: drm-device /dev/null", "not a KMS device",
		"drmModeGetResources");
	CHECK(wl_list_empty(&session->cards));
	wla_session_destroy(session);
}

/*
 * A card this process may not open, in a child that cannot have a seat
 * (libseat pointed at a seatd socket that does not exist): the session
 * says the seat was asked for and could not be had; without a display it
 * says none was asked for. Root drops to nobody first (root opens
 * anything); the path is a file in a directory only root may enter.
 */
static void session_without_a_seat_names_the_card(void)
{
	char dir[] = "/tmp/wla-test-session-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[sizeof(dir) + 8];
	snprintf(path, sizeof(path), "%s/card0", dir);
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	close(fd);
	chmod(dir, 0000);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("LIBSEAT_BACKEND", "seatd", 1);
		setenv("SEATD_SOCK", "/nonexistent/wla-test-seatd.sock", 1);
		if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
			fprintf(stderr, "  cannot drop to nobody: %s\n", strerror(errno));
			_exit(2);
		}
		harness_test_failures = 0;
		struct wla_session *session = wla_session_create(NULL, NULL);
		harness_log_clear();
		CHECK(open_drm_device(session, path) == NULL);
		CHECK_LOGGED("session: drm-device", path, strerror(EACCES),
			"no seat session was asked for");
		wla_session_destroy(session);

		struct wl_display *display = wl_display_create();
		session = wla_session_create(wl_display_get_event_loop(display), display);
		harness_log_clear();
		CHECK(open_drm_device(session, path) == NULL);
		CHECK_LOGGED("session: drm-device", path, strerror(EACCES),
			"no seat session could be had");
		CHECK(session->seat == NULL && session->seat_failed);
		wla_session_destroy(session);
		wl_display_destroy(display);
		_exit(harness_test_failures ? 1 : 0);
	}
	int status = 0;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	chmod(dir, 0700);
	unlink(path);
	rmdir(dir);
}

/* Number of open fds of this process. */
static int open_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++) {
		n += fcntl(fd, F_GETFD) >= 0;
	}
	return n;
}

/* body(display) in a child process, where libseat's no-op backend stands
 * in for a seat (it opens what it is asked, and never says it is active);
 * the child's failures fail the test. */
static void in_child_with_noop_seat(void (*body)(struct wl_display *display))
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("LIBSEAT_BACKEND", "noop", 1);
		harness_test_failures = 0;
		struct wl_display *display = wl_display_create();
		body(display);
		wl_display_destroy(display);
		_exit(harness_test_failures ? 1 : 0);
	}
	int status = 0;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * With a display, a card is opened through the seat first, also where this
 * process could open it directly (root: libseat's built-in backend gives
 * VT switches that way). libseat's no-op backend stands in for a seat
 * here: it opens the path, the check refuses it (/dev/null is no card),
 * and the seat closes it again; nothing is opened directly.
 */
static void session_opens_through_the_seat_first_child(struct wl_display *display)
{
	struct wla_session *session =
		wla_session_create(wl_display_get_event_loop(display), display);
	harness_log_clear();
	CHECK(open_drm_device(session, "/dev/null") == NULL);
	CHECK(session->seat != NULL);
	CHECK_LOGGED("session: a seat session of our own", "seat noop");
	CHECK_LOGGED("session: drm-device /dev/null", "not a KMS device");
	CHECK(!LOGGED("opening it directly"));
	int fds = open_fds();
	/* Twice: the seat's device is closed on each refusal. */
	CHECK(open_drm_device(session, "/dev/null") == NULL);
	CHECK_INT(open_fds(), fds);
	wla_session_destroy(session);
}

static void session_opens_through_the_seat_first(void)
{
	in_child_with_noop_seat(session_opens_through_the_seat_first_child);
}

/* A seat session the compositor made (wlroots' libinput backend's) is
 * used, not a second one, and is not destroyed with ours. */
static void session_uses_the_compositors_seat_child(struct wl_display *display)
{
	struct wlr_session *seat = wlr_session_create(display);
	CHECK(seat != NULL);
	struct wla_session *session =
		wla_session_create(wl_display_get_event_loop(display), display);
	harness_log_clear();
	wla_session_borrow_seat(session, seat);
	CHECK_LOGGED("session: the compositor's seat session");
	CHECK(open_drm_device(session, "/dev/null") == NULL);
	CHECK(session->seat == seat);
	/* No second seat was asked for. */
	CHECK(!LOGGED("session: a seat session of our own"));
	CHECK_LOGGED("session: drm-device /dev/null", "not a KMS device");
	wla_session_destroy(session);
	/* Still the compositor's: it can open a device and end. */
	struct wlr_device *dev = wlr_session_open_file(seat, "/dev/null");
	CHECK(dev != NULL);
	if (dev) {
		wlr_session_close_file(seat, dev);
	}
	wlr_session_destroy(seat);
}

static void session_uses_the_compositors_seat(void)
{
	in_child_with_noop_seat(session_uses_the_compositors_seat_child);
}

/* A listener of seat_end that closes one input device, as input does. */
struct seat_end_closer {
	struct wl_listener listener;
	struct wla_session *session;
	int fd;
	bool called;
	int fds_after;
};

static void close_at_seat_end(struct wl_listener *listener, void *data)
{
	struct seat_end_closer *c = wl_container_of(listener, c, listener);
	c->called = true;
	wl_list_remove(&c->listener.link);
	wla_session_close_input(c->session, c->fd);
	c->fds_after = open_fds();
}

/* Input devices go through the seat the card came through (libseat's
 * no-op backend stands in for seatd), and directly without one; an fd the
 * seat closed when its session ended is not closed again (its number may be
 * another file's by then). */
static void session_opens_input_through_the_seat_child(struct wl_display *display)
{
	struct wlr_session *seat = wlr_session_create(display);
	CHECK(seat != NULL);
	struct wla_session *session =
		wla_session_create(wl_display_get_event_loop(display), display);
	wla_session_borrow_seat(session, seat);
	/* A seat that gave no card gives no input devices either. */
	CHECK(!wla_session_seats_input(session));
	struct wla_card card;
	card_init(&card, "/dev/dri/card9", -1);
	card.through_seat = true;
	card.session = session;
	wl_list_insert(&session->cards, &card.link);
	CHECK(wla_session_seats_input(session));
	harness_log_clear();
	int before = open_fds();
	int in = wla_session_open_input(session, "/dev/null", O_RDWR | O_NONBLOCK);
	CHECK(in >= 0);
	CHECK_LOGGED("session: input device /dev/null opened through seat");
	CHECK_INT(open_fds(), before + 1);
	wla_session_close_input(session, in);
	CHECK_INT(open_fds(), before);
	CHECK(wla_session_open_input(session, "/nonexistent/event0", O_RDWR) < 0);
	CHECK_LOGGED("session: input device /nonexistent/event0", "does not open it");
	CHECK_INT(open_fds(), before);
	/* The seat's session ends with two devices open: the one
	 * seat_end's listener closes goes through the seat; the other
	 * the seat closes, and its number, taken again, is not closed
	 * by us later. */
	in = wla_session_open_input(session, "/dev/null", O_RDWR);
	struct seat_end_closer closer = { .session = session,
		.fd = wla_session_open_input(session, "/dev/zero", O_RDWR) };
	CHECK(in >= 0 && closer.fd >= 0);
	closer.listener.notify = close_at_seat_end;
	wl_signal_add(&session->events.seat_end, &closer.listener);
	harness_log_clear();
	wlr_session_destroy(seat);
	CHECK(closer.called && closer.fds_after == before + 1);
	CHECK_LOGGED("session: input device /dev/null (fd", "still open when the seat's "
		"session ended: closed by the seat");
	CHECK(!LOGGED("session: input device /dev/zero (fd"));
	CHECK(!wla_session_seats_input(session));
	int other = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	CHECK(other >= 0 && dup2(other, in) == in);
	close(other);
	wla_session_close_input(session, in);
	CHECK(fcntl(in, F_GETFD) >= 0);
	close(in);
	wl_list_remove(&card.link);
	wla_session_destroy(session);
}

static void session_opens_input_through_the_seat(void)
{
	struct wla_session *direct = wla_session_create(NULL, NULL);
	CHECK(!wla_session_seats_input(direct));
	int fds = open_fds();
	int fd = wla_session_open_input(direct, "/dev/null", O_RDWR);
	CHECK(fd >= 0);
	CHECK_INT(open_fds(), fds + 1);
	wla_session_close_input(direct, fd);
	CHECK_INT(open_fds(), fds);
	CHECK_INT(wla_session_open_input(direct, "/nonexistent/event0", O_RDWR), -ENOENT);
	wla_session_destroy(direct);

	in_child_with_noop_seat(session_opens_input_through_the_seat_child);
}

int main(void)
{
	harness_init();
	RUN_TEST(driver_refuses_an_fd_that_is_no_card);
	RUN_TEST(driver_refuses_a_closed_fd);
	RUN_TEST(session_names_a_missing_card);
	RUN_TEST(session_names_a_path_that_is_no_card);
	RUN_TEST(session_without_a_seat_names_the_card);
	RUN_TEST(session_opens_through_the_seat_first);
	RUN_TEST(session_uses_the_compositors_seat);
	RUN_TEST(session_opens_input_through_the_seat);
	HARNESS_EXIT();
}
