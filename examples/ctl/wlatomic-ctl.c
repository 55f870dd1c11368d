/*
 * wlatomic-ctl: the command-line client of a compositor's control socket
 * (README, "Control socket"). Sends one request, prints the reply, exits 0
 * on "ok", 1 on "error", 2 when the socket cannot be reached or the reply
 * does not come within the timeout. compare: 1 when the frame differs, 3
 * when the comparison could not be made (a refused request).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_BYTES 1024

static void usage(FILE *f)
{
	fprintf(f,
		"usage: wlatomic-ctl [-s SOCKET] [-t SECONDS] COMMAND [ARG...]\n"
		"  list                       connectors, modes, state and statistics\n"
		"  planes OUTPUT              what each plane of OUTPUT shows\n"
		"  plug NAME MODE[,MODE...]   hot-plug a virtual connector (MODE: WxH[@HZ])\n"
		"  unplug NAME                unplug it\n"
		"  link-bad NAME              break its link (link-status BAD): black until\n"
		"                             the backend's modeset trains it again\n"
		"  capture OUTPUT FILE.png    the next latched frame, cursor included; prints\n"
		"                             its size, vblank sequence and CRC-32\n"
		"  compare OUTPUT REFERENCE.png [--tolerance N] [--max-pixels N]\n"
		"          [--ignore X,Y,WxH]... [--diff DIFF.png]\n"
		"                             the next latched frame against a reference:\n"
		"                             exit 0 if it matches, 1 if not (with the counts);\n"
		"                             a channel may differ by N (default 0), N pixels\n"
		"                             beyond that (default 0); rectangles left out;\n"
		"                             differing pixels red in DIFF.png; exit 3 if\n"
		"                             it could not compare\n"
		"  wait OUTPUT N              until OUTPUT presented N more frames\n"
		"SOCKET: -s, else $WLA_CONTROL, else $XDG_RUNTIME_DIR/wlatomic-0.\n"
		"-t: give up after SECONDS (default 30; 0: wait for ever).\n");
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char *argv[])
{
	const char *sock = NULL;
	double timeout = 30;
	int opt;
	while ((opt = getopt(argc, argv, "+s:t:h")) != -1) {
		switch (opt) {
		case 's':
			sock = optarg;
			break;
		case 't': {
			char *end;
			errno = 0;
			timeout = strtod(optarg, &end);
			if (errno || *end || end == optarg || timeout < 0) {
				fprintf(stderr, "wlatomic-ctl: -t '%s': expected seconds >= 0\n", optarg);
				return 2;
			}
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	char fallback[PATH_MAX];
	if (!sock) {
		sock = getenv("WLA_CONTROL");
	}
	if (!sock || !sock[0]) {
		const char *dir = getenv("XDG_RUNTIME_DIR");
		if (!dir) {
			fprintf(stderr, "wlatomic-ctl: no -s, WLA_CONTROL or XDG_RUNTIME_DIR\n");
			return 2;
		}
		snprintf(fallback, sizeof(fallback), "%s/wlatomic-0", dir);
		sock = fallback;
	}

	/* The request: the words joined; a capture's file and a compare's
	 * reference and diff made absolute, since the compositor reads and
	 * writes them from its own directory; compare's --NAME VALUE options
	 * as the socket's NAME=VALUE words. */
	char req[LINE_MAX_BYTES + 1];
	size_t len = 0;
	bool is_capture = strcmp(argv[optind], "capture") == 0;
	bool is_compare = strcmp(argv[optind], "compare") == 0;
	for (int i = optind; i < argc; i++) {
		char abs[PATH_MAX], option[PATH_MAX + 16];
		const char *word = argv[i];
		const char *key = NULL;
		if (is_compare && i >= optind + 3) {
			static const char *const keys[] = { "tolerance", "max-pixels", "ignore",
				"diff" };
			for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
				if (strncmp(word, "--", 2) == 0 && strcmp(word + 2, keys[k]) == 0) {
					key = keys[k];
				}
			}
			if (!key || i + 1 >= argc) {
				fprintf(stderr, "wlatomic-ctl: compare: %s '%s' (--tolerance N, "
					"--max-pixels N, --ignore X,Y,WxH, --diff PATH)\n",
					key ? "no value after" : "unknown option", word);
				return 2;
			}
			word = argv[++i];
		}
		bool path = ((is_capture || is_compare) && i == optind + 2) ||
			(key && strcmp(key, "diff") == 0);
		if (is_compare && i == optind + 2 && strncmp(word, "--", 2) == 0) {
			fprintf(stderr, "wlatomic-ctl: compare: the reference comes before the "
				"options: '%s'\n", word);
			return 2;
		}
		if (path && word[0] != '/') {
			char cwd[PATH_MAX];
			if (!getcwd(cwd, sizeof(cwd)) ||
					snprintf(abs, sizeof(abs), "%s/%s", cwd, word) >= (int)sizeof(abs)) {
				fprintf(stderr, "wlatomic-ctl: cannot make '%s' absolute\n", word);
				return 2;
			}
			word = abs;
		}
		if (key) {
			snprintf(option, sizeof(option), "%s=%s", key, word);
			word = option;
		}
		if (strchr(word, '\n')) {
			fprintf(stderr, "wlatomic-ctl: an argument holds a newline\n");
			return 2;
		}
		if (is_compare && strpbrk(word, " \t\r")) {
			/* The socket splits words at blanks. */
			fprintf(stderr, "wlatomic-ctl: compare: '%s' holds a blank\n", word);
			return 2;
		}
		int n = snprintf(req + len, sizeof(req) - len, "%s%s", i > optind ? " " : "", word);
		if (n < 0 || (size_t)n >= sizeof(req) - len - 1) {
			fprintf(stderr, "wlatomic-ctl: request longer than %d bytes\n",
				LINE_MAX_BYTES - 1);
			return 2;
		}
		len += (size_t)n;
	}
	req[len++] = '\n';

	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	if (strlen(sock) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "wlatomic-ctl: socket path %s is too long\n", sock);
		return 2;
	}
	strcpy(addr.sun_path, sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		fprintf(stderr, "wlatomic-ctl: cannot connect to %s: %s\n", sock, strerror(errno));
		return 2;
	}
	/* A refusal (another user, too many clients) may close the
	 * connection before the request is taken: its reply is still read. */
	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len && errno != EPIPE &&
			errno != ECONNRESET) {
		fprintf(stderr, "wlatomic-ctl: cannot send to %s: %s\n", sock, strerror(errno));
		return 2;
	}

	/* Print every line; the last one says ok or error. */
	char buf[65536];
	size_t have = 0;
	double deadline = now_s() + timeout;
	for (;;) {
		char *nl;
		while ((nl = memchr(buf, '\n', have))) {
			*nl = '\0';
			bool ok = strncmp(buf, "ok", 2) == 0 && (buf[2] == ' ' || !buf[2]);
			bool err = strncmp(buf, "error", 5) == 0 && (buf[5] == ' ' || !buf[5]);
			fprintf(err ? stderr : stdout, "%s\n", buf);
			if (ok || err) {
				close(fd);
				if (err && is_compare) {
					return strncmp(buf, "error compare: differ:", 22) == 0 ? 1 : 3;
				}
				return ok ? 0 : 1;
			}
			size_t used = (size_t)(nl - buf) + 1;
			memmove(buf, buf + used, have - used);
			have -= used;
		}
		if (have == sizeof(buf)) {
			fprintf(stderr, "wlatomic-ctl: a reply line longer than %zu bytes\n", sizeof(buf));
			return 2;
		}
		int wait_ms = -1;
		if (timeout > 0) {
			double left = deadline - now_s();
			if (left <= 0) {
				fprintf(stderr, "wlatomic-ctl: no reply from %s within %g s\n", sock, timeout);
				return 2;
			}
			wait_ms = (int)(left * 1000) + 1;
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, wait_ms);
		if (r < 0 && errno != EINTR) {
			fprintf(stderr, "wlatomic-ctl: poll: %s\n", strerror(errno));
			return 2;
		}
		if (r <= 0) {
			continue;
		}
		ssize_t n = recv(fd, buf + have, sizeof(buf) - have, 0);
		if (n <= 0) {
			fprintf(stderr, "wlatomic-ctl: %s closed the connection without a reply\n", sock);
			return 2;
		}
		have += (size_t)n;
	}
}
