/*
 * What the files of backend/session/ share (the glue's interface is
 * include/backend/session.h).
 */
#ifndef BACKEND_SESSION_PRIVATE_H
#define BACKEND_SESSION_PRIVATE_H

#include "backend/session.h"

/* session.c */
/* The seat's session, made on first need; NULL without a display or when
 * it could not be had (asked once). */
struct wlr_session *wla_session_get_seat(struct wla_session *session);
/* Start reading the drm uevents on the session's loop (once; card names
 * the card in the error if it cannot be). */
void wla_session_watch_uevents(struct wla_session *session, const struct wla_card *card);

#endif
