/*
 * written.c - which jobs were written since the disk last caught up, so that a read of
 * one that was not may leave before the turn's commit and its WAL sync (issue 11: GET
 * /v1/jobs/ID waited for a sync of writes to other jobs; docs/controller.md "Reads that
 * leave at once").
 *
 * The store calls written_mark for every row of `jobs`, `job_specs` and `arrays_writing`
 * any statement of docketd's connection changes (store_set_job_write_hook: SQLite's update
 * hook, so no write path can forget it). The id goes into a set with the generation
 * c->commit_gen + 1: the one the commit of the open transaction will get (commit_cb
 * counts only commits of a transaction). A sync that covers a generation removes the
 * entries of that generation and below (ctl_written_synced). A commit changes nothing
 * here, so the loop's hot path never walks the set.
 *
 * Invariant: a job id (or array id) that is not in the set, or is in it with a
 * generation <= synced_gen, was last written by a commit the WAL sync has put on disk,
 * or before docketd started (the restore commits with synchronous=FULL). So a reply that
 * shows only that job's row, its spec and what the core derives from them shows nothing
 * a crash could roll back. It holds because an id enters the set inside the statement
 * that writes it, before anything can read the row; a write inside a transaction is
 * committed by the commit whose generation it was given; a write outside one (autocommit)
 * was committed before the next commit, whose sync covers it (the WAL is synced whole),
 * so it counts as durable late, never early; an entry only ever leaves by
 * ctl_written_synced(g) with gen <= g; and until tracking is on (ctl_written_start)
 * nothing counts as durable. A savepoint rolled back leaves its ids in the set: they
 * wait for nothing worse than before.
 */
#include <stdlib.h>
#include <string.h>

#include "controller/ctl.h"
#include "controller/written.h"
#include "util/xalloc.h"

enum { WRITTEN_MIN_CAP = 64 };

/* Open addressing, linear probing; id 0 (no job has it) marks an empty slot. cap is a
 * power of two and at least twice n. */
struct ctl_written {
    uint64_t *ids, *gens;
    size_t cap, n;
    const uint64_t *commit_gen; /* the controller's: the last committed generation */
    uint64_t max_gen;           /* no entry has a higher generation */
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

/* A new table of at least 2 * want slots holding the old one's entries newer than
 * `synced` (want >= how many those are). */
static void rebuild(struct ctl_written *w, size_t want, uint64_t synced)
{
    uint64_t *ids = w->ids, *gens = w->gens;
    size_t cap = w->cap, ncap = WRITTEN_MIN_CAP;
    while (ncap < 2 * want)
        ncap *= 2;
    alloc_table(w, ncap);
    for (size_t i = 0; i < cap; i++)
        if (ids[i] != 0 && gens[i] > synced)
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
    w->max_gen = *w->commit_gen + 1;
    put(w, id, w->max_gen);
}

void ctl_written_start(struct ctl *c)
{
    struct ctl_written *w = xcalloc(1, sizeof(*w));
    alloc_table(w, WRITTEN_MIN_CAP);
    w->commit_gen = &c->commit_gen;
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

void ctl_written_synced(struct ctl *c, uint64_t synced)
{
    struct ctl_written *w = c->written;
    if (!w || w->n == 0)
        return;
    if (w->max_gen > synced) { /* the open transaction's writes stay */
        rebuild(w, w->n, synced);
        return;
    }
    if (w->cap == WRITTEN_MIN_CAP) {
        memset(w->ids, 0, w->cap * sizeof(*w->ids));
        w->n = 0;
        return;
    }
    free(w->ids);
    free(w->gens);
    alloc_table(w, WRITTEN_MIN_CAP);
}

static bool id_durable(const struct ctl *c, uint64_t id)
{
    const struct ctl_written *w = c->written;
    size_t i = slot_of(w, id);
    return w->ids[i] == 0 || w->gens[i] <= c->synced_gen;
}

bool ctl_job_durable(const struct ctl *c, const struct store_job *j)
{
    if (!c->written || c->diverged)
        return false;
    /* the row, and the array's shared spec and marker (written with the array's slices) */
    return id_durable(c, j->id) && (j->array_id == 0 || id_durable(c, j->array_id)) &&
           (j->spec_id == 0 || id_durable(c, j->spec_id));
}
