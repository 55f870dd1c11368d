/*
 * One way to survive "a callback destroyed me", for every part of the
 * backend. An object that calls out (a listener, a driver's hook, a
 * client's request, a capture callback) holds itself around the call. A
 * destroy asked for meanwhile takes the object apart at once (it leaves
 * every list, stops every timer, tells nobody any more) but frees its
 * memory only at the last release: the caller that released learns the
 * object is doomed and touches nothing more of it.
 *
 *	wla_hold(&obj->hold);
 *	callback(...);
 *	if (!wla_release(&obj->hold, obj_free, obj)) {
 *		return; // destroyed by the callback: gone or going
 *	}
 *
 *	void obj_destroy(struct obj *obj)
 *	{
 *		...take it apart...
 *		if (wla_hold_doom(&obj->hold)) {
 *			obj_free(obj);
 *		}
 *	}
 *
 * The core's events follow the same rule from the other side: they are
 * queued and delivered once its bookkeeping is consistent, from the
 * driver's wake-up, never from inside a call of the glue.
 */
#ifndef BACKEND_HOLD_H
#define BACKEND_HOLD_H

#include <assert.h>
#include <stdbool.h>

struct wla_hold {
	unsigned count; /* call-outs of the object running */
	bool doomed;    /* destroyed meanwhile: freed at the last release */
};

static inline void wla_hold(struct wla_hold *hold)
{
	assert(!hold->doomed || hold->count > 0);
	hold->count++;
}

/* Whether a call-out of the object is running. */
static inline bool wla_held(const struct wla_hold *hold)
{
	return hold->count > 0;
}

static inline bool wla_doomed(const struct wla_hold *hold)
{
	return hold->doomed;
}

/* Whether the release to come is the last one (what must go before the
 * object may be freed goes then). */
static inline bool wla_hold_last(const struct wla_hold *hold)
{
	return hold->count == 1;
}

/* The object is destroyed: whether its memory may be freed now (nothing
 * holds it); if not, the last release frees it. */
static inline bool wla_hold_doom(struct wla_hold *hold)
{
	hold->doomed = true;
	return hold->count == 0;
}

/* The end of a call-out. The last release of a doomed object frees it
 * (free_fn(obj)). Whether the object lives on: false if it was destroyed
 * meanwhile (freed now, or by an outer release): touch nothing of it. */
static inline bool wla_release(struct wla_hold *hold, void (*free_fn)(void *obj), void *obj)
{
	assert(hold->count > 0);
	if (--hold->count == 0 && hold->doomed) {
		free_fn(obj);
		return false;
	}
	return !hold->doomed;
}

#endif
