/*
 * rowcache.h - what rowcache.c owns: the job rows of GET /v1/jobs kept as the JSON text
 * last sent, one per job, each with the exact inputs it was made from (docs/controller.md
 * "The list's row cache").
 */
#ifndef DOCKET_CONTROLLER_ROWCACHE_H
#define DOCKET_CONTROLLER_ROWCACHE_H

#include <stddef.h>
#include <stdint.h>

/* The cache holds at most this many bytes of inputs and texts together; a row that would
 * take it past them empties it first (the next lists make the rows again). */
#define CTL_ROWCACHE_BYTES ((size_t)64 << 20)

struct ctl_rowcache;

struct ctl_rowcache *ctl_rowcache_create(size_t max_bytes);
void ctl_rowcache_free(struct ctl_rowcache *rc);
/* Job id's text when it was made from exactly `key` (key_len bytes: everything the row
 * shows is read from them), else NULL. The text lives until the next put or clear. */
const char *ctl_rowcache_get(const struct ctl_rowcache *rc, uint64_t id, const void *key,
                             size_t key_len, size_t *text_len);
/* Keep `text` as job id's row made from `key`, in place of what it had. */
void ctl_rowcache_put(struct ctl_rowcache *rc, uint64_t id, const void *key, size_t key_len,
                      const char *text, size_t text_len);
void ctl_rowcache_clear(struct ctl_rowcache *rc);
/* Rows and bytes held (tests, /metrics). */
size_t ctl_rowcache_rows(const struct ctl_rowcache *rc);
size_t ctl_rowcache_bytes(const struct ctl_rowcache *rc);

#endif
