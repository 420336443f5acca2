/*
 * dbuf.h - a growable byte buffer with a hard size cap and a sticky error flag.
 *
 * Invariants: `data` is never NULL after dbuf_init (it points at a static empty string
 * until the first append) and is always NUL-terminated; `len` excludes the NUL. Once an
 * append fails (cap reached or out of memory) `failed` stays true and later appends do
 * nothing, so a builder can append many times and check once (as SQLite's sqlite3_str).
 */
#ifndef DOCKET_UTIL_DBUF_H
#define DOCKET_UTIL_DBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct dbuf {
    char *data;
    size_t len;
    size_t alloc;
    size_t max; /* appends that would make len exceed max fail */
    bool failed;
};

/* max 0 means no cap (only for buffers never fed from outside). */
void dbuf_init(struct dbuf *b, size_t max);
void dbuf_release(struct dbuf *b); /* frees; b is re-usable after dbuf_init */
void dbuf_reset(struct dbuf *b);   /* len = 0, keeps memory, clears failed */
/* 0 or -ENOSPC / -ENOMEM; after a failure every append returns -ENOSPC until reset. */
int dbuf_append(struct dbuf *b, const void *p, size_t n);
int dbuf_puts(struct dbuf *b, const char *s);
int dbuf_printf(struct dbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int dbuf_vprintf(struct dbuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Hand the bytes to the caller (free() them); b is left empty and re-initialised with
 * the same cap. Returns what was appended even when `failed` is set (check it first);
 * NULL only when out of memory on a buffer never appended to. len may be NULL. */
char *dbuf_detach(struct dbuf *b, size_t *len);

#endif
