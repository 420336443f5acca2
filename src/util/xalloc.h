/*
 * xalloc.h - allocation for the daemons: on failure call the out-of-memory hook (tests
 * can replace it) which by default logs and aborts. The core does not use this; it
 * returns -ENOMEM instead.
 */
#ifndef DOCKET_UTIL_XALLOC_H
#define DOCKET_UTIL_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* For allocators that are not ours (libevent's event_new, evbuffer_new ...): returns p,
 * or calls the out-of-memory hook when p is NULL (`what` names the object in the log). */
void *xnonnull(void *p, const char *what);
/* Replace the hook called on failure (NULL restores the default abort). */
void xalloc_set_oom_hook(void (*hook)(size_t n));

#endif
