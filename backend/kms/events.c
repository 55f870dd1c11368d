/*
 * Events of the KMS driver: page-flip events read from the card's fd and
 * reported to the core as latches, the vblank grid they give, the work
 * deferred out of the core's processing, and the device's loss.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include "kms-private.h"

/* A vblank grid older than this is rebased on the kernel's counter. */
#define KMS_GRID_RESYNC_NS 1000000000u

static void run_deferred(struct wla_kms *kms);

/* The slot a commit of serial passes the kernel, its events to come on the
 * CRTCs of crtcs: the next one after the last taken that waits for no
 * event; with none free, the next one all the same (an event of its
 * commit still to come then names this one). */
struct wla_kms_flip *wla_kms_flip_take(struct wla_kms *kms, uint64_t serial, uint32_t crtcs)
{
	struct wla_kms_flip *flip = &kms->flips[kms->next_flip % WLA_KMS_FLIPS];
	for (size_t i = 0; i < WLA_KMS_FLIPS; i++) {
		struct wla_kms_flip *f = &kms->flips[(kms->next_flip + i) % WLA_KMS_FLIPS];
		if (!f->pending) {
			flip = f;
			break;
		}
	}
	if (flip->pending) {
		wla_kms_log(kms, WLR_DEBUG, "every page-flip slot waits for events: the one of "
			"commit %" PRIu64 " is taken for commit %" PRIu64, flip->serial,
			serial);
	}
	kms->next_flip = (size_t)(flip - kms->flips) + 1;
	*flip = (struct wla_kms_flip){ .kms = kms, .serial = serial, .pending = crtcs };
	return flip;
}

/* The commit that took flip (NULL: none) failed: no event names it. */
void wla_kms_flip_drop(struct wla_kms_flip *flip)
{
	if (flip) {
		flip->pending = 0;
	}
}

static struct wla_kms_crtc *find_crtc(struct wla_kms *kms, uint32_t id)
{
	for (size_t i = 0; i < kms->n_crtcs; i++) {
		if (kms->crtcs[i].id == id) {
			return &kms->crtcs[i];
		}
	}
	return NULL;
}

/* The driver's own commit on kc completed: what waited for it goes. */
static void own_commit_done(struct wla_kms *kms, struct wla_kms_crtc *kc)
{
	kc->own_serial = 0;
	struct wla_atomic_state *state = kc->deferred;
	if (!state) {
		return;
	}
	kc->deferred = NULL;
	if (wla_kms_program(kms, state, kc->deferred_mask) < 0) {
		/* The core was told it was programmed: take it back the only
		 * way there is, the CRTC off (its frames reported failed). */
		wla_crtc_force_off(&kc->base);
	}
}

/* A page-flip event's 32-bit sequence as the 64-bit one of the CRTC's
 * counters (drmCrtcGetSequence's, kseq when the kernel answered): the
 * nearest with those low bits to the kernel's counter now (or the last one
 * seen), so that it goes on past 2^32 vblanks. */
static uint64_t widen_seq(struct wla_kms_crtc *kc, uint32_t seq32, const uint64_t *kseq)
{
	uint64_t reported = kc->counters.seq;
	uint64_t last = kseq ? *kseq : reported > kc->seq_bias ? reported - kc->seq_bias : 0;
	uint64_t seq = (last & ~(uint64_t)UINT32_MAX) | seq32;
	if (seq + (UINT64_C(1) << 31) < last) {
		seq += UINT64_C(1) << 32;
	} else if (seq > last + (UINT64_C(1) << 31) && seq >= (UINT64_C(1) << 32)) {
		seq -= UINT64_C(1) << 32;
	}
	return seq;
}

/* On a card without vblank interrupts (virtio-gpu, qxl, cirrus, bochs) the
 * kernel completes a flip when the card is done, stamps it with its clock
 * and numbers it 0: the driver counts the CRTC's refresh cycles itself, on
 * the mode's period from the last flip, at least one a flip. Across a mode
 * change or a VT switch (the CRTC stayed on) too, so that the count follows
 * the clock; after the CRTC was off (last_vblank_ns 0: no cycles while
 * off, as the kernel's counter stops) and at the very first flip, it is
 * the one after the count so far. */
uint64_t wla_kms_counted_seq(const struct wla_kms_crtc *kc, uint64_t when_ns)
{
	if (!kc->last_vblank_ns) {
		return kc->counters.seq + 1;
	}
	uint64_t n = 1;
	if (kc->period_ns && when_ns > kc->last_vblank_ns) {
		n = (when_ns - kc->last_vblank_ns + kc->period_ns / 2) / kc->period_ns;
	}
	return kc->last_vblank_seq + (n ? n : 1);
}

static void handle_page_flip(int fd, unsigned seq32, unsigned tv_sec, unsigned tv_usec,
	unsigned crtc_id, void *user_data)
{
	/* The slot of the commit (wla_kms_flip_take): the driver and the
	 * commit's serial. */
	struct wla_kms_flip *flip = user_data;
	struct wla_kms *kms = flip ? flip->kms : NULL;
	struct wla_kms_crtc *kc = kms ? find_crtc(kms, crtc_id) : NULL;
	uint64_t serial = flip ? flip->serial : 0;
	if (kc) {
		flip->pending &= ~(1u << kc->base.index);
	}
	struct kms_wb_job *job = kms ? kms->wb_job : NULL;
	if (job && job->serial == serial && job->kc == kc) {
		wla_kms_obj_log(kms, kc, WLR_DEBUG, "the writeback commit %" PRIu64 " latched at %u",
			serial, seq32);
		job->seq = kc && !kc->no_vblank ? widen_seq(kc, seq32, NULL) + kc->seq_bias : seq32;
		job->flipped = true;
		wla_kms_schedule_idle(kms);
	}
	if (kc && kc->own_serial && kc->own_serial == serial) {
		own_commit_done(kms, kc);
		return;
	}
	if (!kc || kc->armed_serial == 0 || kc->armed_serial != serial) {
		wlr_log(WLR_DEBUG, "kms %s: page-flip event of crtc %u (commit %" PRIu64
			") for nothing armed: dropped", kms ? kms->path : "?", crtc_id, serial);
		return;
	}
	kc->armed_serial = 0;
	uint64_t when_ns = (uint64_t)tv_sec * 1000000000u + (uint64_t)tv_usec * 1000u;
	struct wla_vblank_counters *c = &kc->counters;
	uint64_t kseq = 0, kns = 0;
	bool kernel_counts = false;
	/* The kernel's 64-bit counter once an enable, for the first event's
	 * high bits (or to learn the card has none); later events widen from
	 * the last one, an ioctl less a frame. */
	if (!kc->no_vblank && !kc->have_vblank) {
		if (drmCrtcGetSequence(kms->fd, kc->id, &kseq, &kns) == 0) {
			kernel_counts = kns > 0;
		} else if (errno == EOPNOTSUPP || errno == EINVAL) {
			/* EOPNOTSUPP since Linux 5.13, EINVAL before: no vblank
			 * interrupts (the CRTC is on: it just flipped). */
			int err = errno;
			kc->no_vblank = true;
			wla_kms_obj_log(kms, kc, WLR_INFO, "no vblank events "
				"(drmCrtcGetSequence: %s): the driver counts its refresh "
				"cycles, its presents carry no vsync", strerror(err));
		}
	}
	uint64_t seq = kc->no_vblank ? wla_kms_counted_seq(kc, when_ns) :
		widen_seq(kc, seq32, kernel_counts ? &kseq : NULL) + kc->seq_bias;
	if (!kc->have_vblank && !kc->no_vblank && c->seq > 0) {
		/* The first event after an enable never goes below what was
		 * reported; after a restore or a writeback modeset (the CRTC
		 * stayed on in our books: last_vblank_ns kept) it follows the
		 * clock: another session may have kept the CRTC off, and the
		 * kernel's counter stood still meanwhile. */
		uint64_t on = kc->last_vblank_ns ? wla_kms_counted_seq(kc, when_ns) : 0;
		on = on > c->seq ? on : c->seq + 1;
		if (seq < on) {
			wla_kms_obj_log(kms, kc, WLR_INFO, "the kernel's vblank counter (%" PRIu64
				") is behind the sequence reported (%" PRIu64 ") or the clock's count "
				"since: it goes on from %" PRIu64, seq - kc->seq_bias, c->seq, on);
			kc->seq_bias += on - seq;
			seq = on;
		}
	}
	if (!kc->have_vblank) {
		/* The vblank that latched the enable is the first since; the
		 * count goes on from the earlier enables'. */
		kc->first_seq = seq - 1 >= c->vblanks ? seq - 1 - c->vblanks : 0;
		kc->have_vblank = true;
		wla_kms_obj_log(kms, kc, WLR_DEBUG, "first page-flip event after enable, seq %" PRIu64, seq);
	}
	kc->last_vblank_ns = when_ns;
	kc->last_vblank_seq = seq;
	if (seq > c->seq) {
		c->seq = seq;
		c->vblanks = seq - kc->first_seq;
	}
	if (seq > c->settled_seq) {
		c->settled_seq = seq;
	}
	struct timespec when = {
		.tv_sec = tv_sec,
		.tv_nsec = (long)tv_usec * 1000,
	};
	/* The card scanned the committed buffers out themselves, unless it
	 * scans out only copies in its own memory. */
	uint32_t flags = kms->copy_scanout ? 0 : WLA_PRESENT_ZERO_COPY;
	if (!kc->no_vblank) {
		/* The kernel's vblank: its counter and its time stamp. */
		flags |= WLA_PRESENT_VSYNC | WLA_PRESENT_HW_COMPLETION |
			(kms->monotonic ? WLA_PRESENT_HW_CLOCK : 0);
	}
	if (kc->blank_fb && kc->base.primary && !kms->dev.inactive) {
		/* The driver's black framebuffer, replaced by what latched
		 * now: off the screen, it goes (removed while shown, the
		 * kernel would turn the plane off). Not while the session is
		 * away: the pause forgot the plane's foreign framebuffer
		 * without touching the screen. */
		struct wla_kms_plane *kp = kc->base.primary->driver_data;
		if (kp->foreign_crtc != kc->id) {
			wla_kms_obj_log(kms, kc, WLR_DEBUG, "black framebuffer %" PRIu32
				" replaced on screen: removed", kc->blank_fb);
			wla_kms_blank_free(kms, kc);
		}
	}
	if (job && job->serial == serial && job->kc == kc) {
		/* The capture's vblank as the present event numbers it. */
		job->seq = seq;
	}
	wla_crtc_handle_latch(&kc->base, seq, &when, kc->period_ns, flags);
}

/* Read the waiting events; false if the device failed. */
static int read_events(struct wla_kms *kms)
{
	drmEventContext ctx = {
		.version = 3,
		.page_flip_handler2 = handle_page_flip,
	};
	kms->fd_read = true;
	int ret = drmHandleEvent(kms->fd, &ctx);
	if (ret != 0 && (errno == EAGAIN || errno == EINTR)) {
		/* A non-blocking fd (a seat's) with nothing to read. */
		return 0;
	}
	return ret == 0 ? 0 : -(errno ? errno : EIO);
}

static int wait_readable(struct wla_kms *kms, int timeout_ms)
{
	struct pollfd pfd = { .fd = kms->fd, .events = POLLIN };
	int n = poll(&pfd, 1, timeout_ms);
	if (n < 0) {
		return -errno;
	}
	if (n > 0 && (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))) {
		return -ENODEV;
	}
	return n > 0 && (pfd.revents & POLLIN);
}

/* Read and deliver the events; readable: the event loop says the fd is
 * (one read: the loop calls again while more wait). Its word is taken
 * unless the fd was read since the last dispatch (a commit's sync in the
 * same turn of the loop may have read the events, and a read of none
 * would block): then poll is asked first. */
static int dispatch(struct wla_kms *kms, int timeout_ms, bool readable)
{
	int n = 0, ret = 0;
	bool trust = readable && !kms->fd_read;
	/* The present listeners may destroy the backend, and this driver
	 * with it: that waits for the release. */
	wla_device_hold(&kms->dev);
	while (!kms->lost && !(readable && n > 0)) {
		int ready = trust ? 1 : wait_readable(kms, n == 0 ? timeout_ms : 0);
		if (ready < 0) {
			wla_kms_mark_lost(kms, ready);
			ret = ready;
			break;
		}
		if (!ready) {
			break;
		}
		int err = read_events(kms);
		if (err < 0) {
			wla_kms_mark_lost(kms, err);
			ret = err;
			break;
		}
		n++;
	}
	kms->dispatching = true;
	wla_device_deliver_events(&kms->dev);
	if (!wla_doomed(&kms->dev.hold)) {
		kms->dispatching = false;
		kms->fd_read = false;
		run_deferred(kms);
	}
	wla_device_release(&kms->dev);
	return ret < 0 ? ret : n;
}

int wla_kms_dispatch(struct wla_kms *kms, int timeout_ms)
{
	return dispatch(kms, timeout_ms, false);
}

int wla_kms_handle_fd(int fd, uint32_t mask, void *data)
{
	struct wla_kms *kms = data;
	if (mask & (WL_EVENT_HANGUP | WL_EVENT_ERROR)) {
		/* The outputs go: their destroy listeners may end the backend. */
		wla_device_hold(&kms->dev);
		wla_kms_device_lost(kms, -ENODEV);
		wla_device_release(&kms->dev);
		return 0;
	}
	dispatch(kms, 0, (mask & WL_EVENT_READABLE) != 0);
	return 0;
}

void wla_kms_sync(struct wla_device *dev)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	if (kms->lost) {
		return;
	}
	/* Latches already on the fd are reported; events are delivered by
	 * the core afterwards, or, where the commit that synced is refused,
	 * from the loop (handle_idle). */
	bool read = false;
	while (wait_readable(kms, 0) > 0 && read_events(kms) == 0) {
		read = true;
	}
	if (read) {
		wla_kms_schedule_idle(kms);
	}
}

void wla_kms_deliver(struct wla_device *dev)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	wla_kms_deliver_failed(kms);
	/* Latches read by sync(), a lost device: finished from the loop
	 * (dispatch runs that itself once its delivery is done). */
	if (!kms->dispatching) {
		wla_kms_schedule_idle(kms);
	}
}

/* Work that must not run inside the core's processing (commit_tail, sync,
 * check) runs at the end of a dispatch, or from an idle source. */
static void handle_idle(void *data)
{
	struct wla_kms *kms = data;
	kms->idle = NULL;
	/* It delivers events and fails captures: their listeners may destroy
	 * the backend, and this driver with it. The present events of latches
	 * a refused commit's sync read are told here (the core's delivery
	 * asks for no other idle: the deferred work runs right after). */
	wla_device_hold(&kms->dev);
	kms->dispatching = true;
	wla_device_deliver_events(&kms->dev);
	if (!wla_doomed(&kms->dev.hold)) {
		kms->dispatching = false;
		run_deferred(kms);
	}
	wla_device_release(&kms->dev);
}

void wla_kms_schedule_idle(struct wla_kms *kms)
{
	if (kms->loop && !kms->idle) {
		kms->idle = wl_event_loop_add_idle(kms->loop, handle_idle, kms);
	}
}

/* The device answered ENODEV: no more ioctls, one error line; the CRTCs go
 * off at the next deferred run. */
void wla_kms_mark_lost(struct wla_kms *kms, int err)
{
	if (kms->lost) {
		return;
	}
	kms->lost = true;
	kms->lost_pending = true;
	wla_kms_log(kms, WLR_ERROR, "the device is gone (%s): its outputs are off",
		strerror(err < 0 ? -err : err));
	if (kms->fd_source) {
		wl_event_source_remove(kms->fd_source);
		kms->fd_source = NULL;
	}
	wla_kms_schedule_idle(kms);
}

static void finish_lost(struct wla_kms *kms)
{
	kms->lost_pending = false;
	wla_kms_fail_captures(kms, NULL);
	if (kms->wb_job) {
		wl_list_insert_list(&kms->failed_captures, &kms->wb_job->captures);
		wl_list_init(&kms->wb_job->captures);
		wla_kms_job_free(kms->wb_job);
	}
	for (size_t i = 0; i < kms->n_crtcs; i++) {
		struct wla_kms_crtc *kc = &kms->crtcs[i];
		kc->armed_serial = 0;
		kc->own_serial = 0;
		kc->deferred = NULL;
		/* Enabled but off by DPMS too: its connector and planes go. */
		if (kc->base.state->enable || kc->base.state->active ||
				!wl_list_empty(&kc->base.queue)) {
			wla_crtc_force_off(&kc->base);
		}
	}
}

void wla_kms_device_lost(struct wla_kms *kms, int err)
{
	if (kms->lost && !kms->lost_pending) {
		return;
	}
	wla_kms_mark_lost(kms, err);
	finish_lost(kms);
	wla_kms_deliver_failed(kms);
}

static void run_deferred(struct wla_kms *kms)
{
	if (kms->lost_pending) {
		finish_lost(kms);
	}
	wla_kms_deliver_failed(kms);
	wla_kms_check_job(kms);
	wla_kms_check_stall(kms);
	wla_kms_kick_captures(kms);
}

/* The last vblank of an active CRTC: on the grid of its last page-flip
 * event, the periods since counted (a partial one is not yet a cycle); the
 * kernel's counter before the first event after an enable, and once the
 * last event is older than KMS_GRID_RESYNC_NS (the kernel turns vblank
 * interrupts off when idle and starts them again on another phase; a
 * display's clock drifts from the CPU's): the grid is rebased on it. */
static bool last_vblank(struct wla_kms *kms, struct wla_kms_crtc *kc, uint64_t *seq,
	uint64_t *ns)
{
	if (!kc->active) {
		return false;
	}
	uint64_t now = now_ns();
	if (!kc->no_vblank && (!kc->have_vblank || now > kc->last_vblank_ns + KMS_GRID_RESYNC_NS)) {
		uint64_t kns = 0, kseq = 0;
		if (drmCrtcGetSequence(kms->fd, kc->id, &kseq, &kns) == 0 && kns > 0) {
			kseq += kc->seq_bias;
			if (!kc->have_vblank && kc->last_vblank_ns && kc->counters.seq > 0) {
				/* After a restore, as the first event will count (it
				 * raises the bias then): not behind the clock since
				 * the last event, for the kernel's counter stood
				 * still if another session kept the CRTC off. */
				uint64_t on = wla_kms_counted_seq(kc, kns);
				kseq = kseq > on ? kseq : on;
			}
			if (kc->have_vblank && kseq >= kc->last_vblank_seq && !kc->armed_serial) {
				kc->last_vblank_seq = kseq;
				kc->last_vblank_ns = kns;
			}
			*seq = kseq;
			*ns = kns;
			return true;
		}
	}
	if (!kc->have_vblank) {
		return false;
	}
	*seq = kc->last_vblank_seq;
	*ns = kc->last_vblank_ns;
	if (kc->period_ns && now > *ns) {
		uint64_t k = (now - *ns) / kc->period_ns;
		*seq += k;
		*ns += k * kc->period_ns;
	}
	return true;
}

/* The first vblank at or after t after the last one seen (its page-flip
 * event or the kernel's counter), a period apart on the current timing. */
bool wla_kms_vblank_at(struct wla_device *dev, struct wla_crtc *crtc, uint64_t t,
	uint64_t *seq, uint64_t *vblank_ns)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	struct wla_kms_crtc *kc = wla_kms_crtc_from_crtc(crtc);
	uint64_t last_seq, last;
	if (!kc->period_ns || !last_vblank(kms, kc, &last_seq, &last)) {
		return false;
	}
	uint64_t j = 1;
	if (t > last + kc->period_ns) {
		j = (t - last + kc->period_ns - 1) / kc->period_ns;
	}
	*seq = last_seq + j;
	*vblank_ns = last + j * kc->period_ns;
	return true;
}

bool wla_kms_vblank_counters(struct wla_device *dev, struct wla_crtc *crtc,
	struct wla_vblank_counters *counters)
{
	struct wla_kms *kms = wla_kms_from_device(dev);
	struct wla_kms_crtc *kc = wla_kms_crtc_from_crtc(crtc);
	uint64_t seq, ns;
	/* Never backwards: a count on the clock may run one ahead of an
	 * event read late. */
	if (kc->have_vblank && last_vblank(kms, kc, &seq, &ns) && seq > kc->counters.seq) {
		kc->counters.seq = seq;
		kc->counters.vblanks = seq - kc->first_seq;
		/* With a flip in flight its event may be unread: only the
		 * vblanks up to the last event are settled. */
		kc->counters.settled_seq = kc->armed_serial ? kc->last_vblank_seq : seq;
	}
	*counters = kc->counters;
	return true;
}
