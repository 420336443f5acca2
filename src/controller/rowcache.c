/*
 * rowcache.c - the job rows of GET /v1/jobs as the JSON text last sent (rowcache.h).
 *
 * A row of a list costs little to read from the database and much to make: the stored
 * JSON of its spec, allocation, exit and usage parsed, an object built, then written out
 * again (bench/RESULTS.md, "Listing 10,000 jobs through the CLI"). Most rows are the same
 * from one list to the next, so the text is kept. What voids it is not a version someone
 * must remember to bump: each entry holds the exact bytes the row was made from (its
 * key: the row's columns and stored texts, the core's live view, the caller's view of
 * it, the members asked for; jobs.c builds it), and a get answers only when the key
 * given now is byte for byte the same. A change anywhere a row reads from changes the
 * key, so a stale row cannot be served, on SQLite or PostgreSQL, whoever wrote it.
 *
 * Open addressing on the job id (0 is the empty mark: no job has it), linear probing,
 * never more than half full. Entries are never removed one by one: past max_bytes the
 * whole cache is emptied (ended jobs' rows go with it).
 */
#include "controller/rowcache.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

enum { ROWCACHE_MIN_CAP = 1024 };

struct row {
    size_t key_len, text_len;
    char bytes[]; /* the key, then the text and a NUL */
};

struct ctl_rowcache {
    uint64_t *ids;
    struct row **rows;
    size_t cap, n, bytes, max_bytes;
};

static size_t slot_of(const struct ctl_rowcache *rc, uint64_t id)
{
    size_t i = (size_t)(id * 0x9E3779B97F4A7C15ull) & (rc->cap - 1);
    while (rc->ids[i] != 0 && rc->ids[i] != id)
        i = (i + 1) & (rc->cap - 1);
    return i;
}

static void alloc_table(struct ctl_rowcache *rc, size_t cap)
{
    rc->ids = xcalloc(cap, sizeof(*rc->ids));
    rc->rows = xcalloc(cap, sizeof(*rc->rows));
    rc->cap = cap;
}

struct ctl_rowcache *ctl_rowcache_create(size_t max_bytes)
{
    struct ctl_rowcache *rc = xcalloc(1, sizeof(*rc));
    rc->max_bytes = max_bytes;
    alloc_table(rc, ROWCACHE_MIN_CAP);
    return rc;
}

void ctl_rowcache_clear(struct ctl_rowcache *rc)
{
    for (size_t i = 0; i < rc->cap; i++)
        free(rc->rows[i]);
    memset(rc->ids, 0, rc->cap * sizeof(*rc->ids));
    memset(rc->rows, 0, rc->cap * sizeof(*rc->rows));
    rc->n = 0;
    rc->bytes = 0;
}

void ctl_rowcache_free(struct ctl_rowcache *rc)
{
    if (!rc)
        return;
    ctl_rowcache_clear(rc);
    free(rc->ids);
    free(rc->rows);
    free(rc);
}

const char *ctl_rowcache_get(const struct ctl_rowcache *rc, uint64_t id, const void *key,
                             size_t key_len, size_t *text_len)
{
    if (!rc || id == 0)
        return NULL;
    const struct row *r = rc->rows[slot_of(rc, id)];
    if (!r || r->key_len != key_len || memcmp(r->bytes, key, key_len) != 0)
        return NULL;
    *text_len = r->text_len;
    return r->bytes + key_len;
}

static size_t row_bytes(const struct row *r)
{
    return sizeof(*r) + r->key_len + r->text_len + 1;
}

/* Twice the slots, every entry moved over. */
static void grow_table(struct ctl_rowcache *rc)
{
    uint64_t *ids = rc->ids;
    struct row **rows = rc->rows;
    size_t cap = rc->cap;
    alloc_table(rc, cap * 2);
    for (size_t i = 0; i < cap; i++)
        if (ids[i] != 0) {
            size_t s = slot_of(rc, ids[i]);
            rc->ids[s] = ids[i];
            rc->rows[s] = rows[i];
        }
    free(ids);
    free(rows);
}

void ctl_rowcache_put(struct ctl_rowcache *rc, uint64_t id, const void *key, size_t key_len,
                      const char *text, size_t text_len)
{
    if (!rc || id == 0)
        return;
    size_t need = sizeof(struct row) + key_len + text_len + 1;
    if (need > rc->max_bytes)
        return; /* never kept: made each time */
    size_t s = slot_of(rc, id);
    if (rc->rows[s]) { /* its older text goes */
        rc->bytes -= row_bytes(rc->rows[s]);
        free(rc->rows[s]);
        rc->rows[s] = NULL;
    }
    if (rc->bytes + need > rc->max_bytes) {
        ctl_rowcache_clear(rc);
        s = slot_of(rc, id);
    }
    if (rc->ids[s] == 0 && 2 * (rc->n + 1) > rc->cap) {
        grow_table(rc);
        s = slot_of(rc, id);
    }
    struct row *r = xmalloc(need);
    r->key_len = key_len;
    r->text_len = text_len;
    memcpy(r->bytes, key, key_len);
    memcpy(r->bytes + key_len, text, text_len);
    r->bytes[key_len + text_len] = '\0';
    if (rc->ids[s] == 0) {
        rc->ids[s] = id;
        rc->n++;
    }
    rc->rows[s] = r;
    rc->bytes += need;
}

size_t ctl_rowcache_rows(const struct ctl_rowcache *rc)
{
    return rc ? rc->n : 0;
}

size_t ctl_rowcache_bytes(const struct ctl_rowcache *rc)
{
    return rc ? rc->bytes : 0;
}
