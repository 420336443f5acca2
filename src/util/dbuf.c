/*
 * dbuf.c - growable byte buffer with a hard size cap and a sticky error flag (see
 * dbuf.h for the invariants; the design follows docs/architecture.md "util").
 * Growth doubles, never beyond max + 1 bytes (the +1 is the NUL).
 */
#include "util/dbuf.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What `data` points at before the first append: never written (alloc == 0). */
static char dbuf_empty[1];

void dbuf_init(struct dbuf *b, size_t max)
{
    b->data = dbuf_empty;
    b->len = 0;
    b->alloc = 0;
    b->max = max ? max : SIZE_MAX / 2;
    b->failed = false;
}

void dbuf_release(struct dbuf *b)
{
    if (b->alloc)
        free(b->data);
    b->data = dbuf_empty;
    b->len = 0;
    b->alloc = 0;
    b->failed = false;
}

void dbuf_reset(struct dbuf *b)
{
    b->len = 0;
    if (b->alloc)
        b->data[0] = '\0';
    b->failed = false;
}

/* Make room for `need` bytes plus the NUL. */
static int dbuf_grow(struct dbuf *b, size_t need)
{
    size_t want, cap = b->max + 1;
    char *p;

    if (need + 1 <= b->alloc)
        return 0;
    want = b->alloc ? b->alloc : 64;
    while (want < need + 1)
        want = want > cap / 2 ? cap : want * 2;
    if (want > cap)
        want = cap;
    p = realloc(b->alloc ? b->data : NULL, want);
    if (!p)
        return -ENOMEM;
    if (!b->alloc)
        p[0] = '\0';
    b->data = p;
    b->alloc = want;
    return 0;
}

static int dbuf_fail(struct dbuf *b, int err)
{
    b->failed = true;
    return err;
}

int dbuf_append(struct dbuf *b, const void *p, size_t n)
{
    int rc;

    if (b->failed)
        return -ENOSPC;
    if (n > b->max - b->len)
        return dbuf_fail(b, -ENOSPC);
    if (n == 0)
        return 0;
    rc = dbuf_grow(b, b->len + n);
    if (rc < 0)
        return dbuf_fail(b, rc);
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int dbuf_puts(struct dbuf *b, const char *s)
{
    return dbuf_append(b, s, strlen(s));
}

int dbuf_vprintf(struct dbuf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n, rc;

    if (b->failed)
        return -ENOSPC;
    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return dbuf_fail(b, -EINVAL);
    if ((size_t)n > b->max - b->len)
        return dbuf_fail(b, -ENOSPC);
    if (n == 0)
        return 0;
    rc = dbuf_grow(b, b->len + (size_t)n);
    if (rc < 0)
        return dbuf_fail(b, rc);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int dbuf_printf(struct dbuf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = dbuf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

char *dbuf_detach(struct dbuf *b, size_t *len)
{
    size_t max = b->max;
    char *p;

    if (b->alloc) {
        p = b->data;
    } else {
        p = malloc(1);
        if (!p)
            return NULL;
        p[0] = '\0';
    }
    if (len)
        *len = b->len;
    b->alloc = 0;
    dbuf_init(b, max);
    return p;
}
