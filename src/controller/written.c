/*
 * written.c - which jobs were written since the disk last caught up, so that a read of
 * one that was not may leave before the turn's commit and its WAL sync (issue 11: GET
 * /v1/jobs/ID waited for a sync of writes to other jobs; docs/controller.md "Reads that
 * leave at once").
 *
 * The store calls written_mark for every row of `jobs`, `job_specs` and `arrays_writing`
 * any statement of docketd's connection changes (store_set_job_write_hook: SQLite's update
 * hook, so no write path can forget it). The id goes into a set with generation 0: "in
 * the open transaction". The commit that ends that transaction gives every 0 its
 * generation (ctl_written_committed), and a sync that covers a generation removes the
 * entries of that generation and below (ctl_written_synced).
 *
 * Invariant: a job id (or array id) that is not in the set was last written by a commit
 * whose generation is <= synced_gen, i.e. one the WAL sync has put on disk, or before
 * docketd started (the restore commits with synchronous=FULL). So a reply that shows
 * only that job's row, its spec and what the core derives from them shows nothing a
 * crash could roll back. It holds because an id enters the set inside the statement that
 * writes it, before anything can read the row; an entry only ever leaves by
 * ctl_written_synced(g) with 0 < gen <= g; a 0 is only made a generation by the commit
 * of the transaction it was written in or a later one (any transaction committed before
 * that one was covered by that one's sync, the WAL being synced whole); and until
 * tracking is on (ctl_written_start) nothing counts as durable. A savepoint rolled back
 * leaves its ids in the set: they wait for nothing worse than today.
 */
#include <stdlib.h>
#include <string.h>

#include "controller/ctl.h"
#include "util/xalloc.h"

enum { WRITTEN_MIN_CAP = 64 };

/* Open addressing, linear probing; id 0 (no job has it) marks an empty slot. cap is a
 * power of two and at least twice n. */
struct ctl_written {
    uint64_t *ids, *gens;
    size_t cap, n;
};

static size_t slot_of(const struct ctl_written *w, uint64_t id)
{
    size_t i = (size_t)(id * 0x9E3779B97F4A7C15ull) & (w->cap - 1);
    while (w->ids[i] != 0 && w->ids[i] != id)
        i = (i + 1) & (w->cap - 1);
    return i;
}

static void alloc_table(struct ctl_written *w, size_t cap)
{
    w->ids = xcalloc(cap, sizeof(*w->ids));
    w->gens = xcalloc(cap, sizeof(*w->gens));
    w->cap = cap;
    w->n = 0;
}

static void put(struct ctl_written *w, uint64_t id, uint64_t gen)
{
    size_t i = slot_of(w, id);
    if (w->ids[i] == 0) {
        w->ids[i] = id;
        w->n++;
    }
    w->gens[i] = gen;
}

/* A new table of at least 2 * want slots holding the old one's entries that `keep`. */
static void rebuild(struct ctl_written *w, size_t want, uint64_t synced)
{
    uint64_t *ids = w->ids, *gens = w->gens;
    size_t cap = w->cap, ncap = WRITTEN_MIN_CAP;
    while (ncap < 2 * want)
        ncap *= 2;
    alloc_table(w, ncap);
    for (size_t i = 0; i < cap; i++)
        if (ids[i] != 0 && (gens[i] == 0 || gens[i] > synced))
            put(w, ids[i], gens[i]);
    free(ids);
    free(gens);
}

static void written_mark(void *arg, uint64_t id)
{
    struct ctl_written *w = arg;
    if (id == 0)
        return; /* not a job id; nothing reads it as one */
    if (2 * (w->n + 1) > w->cap)
        rebuild(w, w->n + 1, 0);
    put(w, id, 0);
}

void ctl_written_start(struct ctl *c)
{
    struct ctl_written *w = xcalloc(1, sizeof(*w));
    alloc_table(w, WRITTEN_MIN_CAP);
    c->written = w;
    store_set_job_write_hook(c->store, written_mark, w);
}

void ctl_written_stop(struct ctl *c)
{
    struct ctl_written *w = c->written;
    if (!w)
        return;
    store_set_job_write_hook(c->store, NULL, NULL);
    free(w->ids);
    free(w->gens);
    free(w);
    c->written = NULL;
}

void ctl_written_committed(struct ctl *c, uint64_t gen)
{
    struct ctl_written *w = c->written;
    if (!w)
        return;
    for (size_t i = 0; i < w->cap; i++)
        if (w->ids[i] != 0 && w->gens[i] == 0)
            w->gens[i] = gen;
}

void ctl_written_synced(struct ctl *c, uint64_t synced)
{
    struct ctl_written *w = c->written;
    if (!w || w->n == 0)
        return;
    size_t keep = 0;
    for (size_t i = 0; i < w->cap; i++)
        if (w->ids[i] != 0 && (w->gens[i] == 0 || w->gens[i] > synced))
            keep++;
    if (keep == w->n)
        return;
    if (keep == 0 && w->cap == WRITTEN_MIN_CAP) {
        memset(w->ids, 0, w->cap * sizeof(*w->ids));
        w->n = 0;
        return;
    }
    rebuild(w, keep, synced);
}

static bool id_durable(const struct ctl *c, uint64_t id)
{
    const struct ctl_written *w = c->written;
    size_t i = slot_of(w, id);
    if (w->ids[i] == 0)
        return true;
    return w->gens[i] != 0 && w->gens[i] <= c->synced_gen;
}

bool ctl_job_durable(const struct ctl *c, const struct store_job *j)
{
    if (!c->written || c->diverged)
        return false;
    /* the row, and the array's shared spec and marker (written with the array's slices) */
    return id_durable(c, j->id) && (j->array_id == 0 || id_durable(c, j->array_id)) &&
           (j->spec_id == 0 || id_durable(c, j->spec_id));
}
