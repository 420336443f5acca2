/*
 * xalloc.c - allocation that does not return NULL, for the daemons (see xalloc.h).
 * On failure the out-of-memory hook runs; the default writes one line to stderr and
 * aborts. A replacement hook must not return (tests longjmp out of it); if it does,
 * we abort anyway, so callers never see NULL.
 */
#define _POSIX_C_SOURCE 200809L
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void default_oom(size_t n)
{
    fprintf(stderr, "level=error event=out_of_memory bytes=%zu\n", n);
}

static void (*oom_hook)(size_t n) = default_oom;

void xalloc_set_oom_hook(void (*hook)(size_t n))
{
    oom_hook = hook ? hook : default_oom;
}

static void oom(size_t n)
{
    oom_hook(n);
    abort();
}

void *xnonnull(void *p, const char *what)
{
    if (!p) {
        fprintf(stderr, "level=error event=out_of_memory what=%s\n", what);
        oom(0);
    }
    return p;
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p)
        oom(n);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p;

    if (n == 0 || size == 0)
        n = size = 1;
    p = calloc(n, size);
    if (!p)
        oom(size != 0 && n > SIZE_MAX / size ? SIZE_MAX : n * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);

    if (!q)
        oom(n);
    return q;
}

char *xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p;

    if (len == SIZE_MAX)
        oom(len);
    p = xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, SIZE_MAX - 1);
}
