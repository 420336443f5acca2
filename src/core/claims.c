/*
 * claims.c - the claims index (floor 1): reservations as the model stores them, each
 * written on its nodes as claims, and what a node has free at a time once claims are
 * counted. "Backfill never delays a reservation" is answered here (claims_allow); where a
 * reservation should go is reserve.c's decision (floor 2). Also the walk's hints: the gang
 * reservations reservation_drop_lower took in this walk, which reserve.c may give back.
 */
#include "core/claims.h"
#include "core/containers.h"
#include "core/model.h"
#include "core/changes.h"
#include "core/avail.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* n's claims are about to change; counted now in the starving walk, else at the next one if
   they differ then (claims_settle, at its start) */
static void claims_will_change(struct sched *s, struct node *n);

/* Must a job honour this reservation? Sticky ones (preempting, starving) bind everyone;
 * others bind the jobs they outrank. `j` NULL: every claim counts. */
bool claim_binds(const struct sched *s, uint32_t res, const struct job *j)
{
    const struct reservation *r = &s->res[res];
    return !j || r->preempting || r->starving || !job_outranks(s, j, &s->jobs[r->slot]);
}

/* What node `n` will have free at time t: free now, plus what its jobs release by t
 * (their expected ends), minus the claims active then except reservation `own`. */
struct avail node_avail_for(const struct sched *s, const struct node *n, int64_t t, uint32_t own,
                            const struct job *j)
{
    struct avail a = {n->gpus - n->gpus_used, n->cpus - n->cpus_used, n->mem_mb - n->mem_used};
    n = node_releases(s, n);
    int lo = 0, hi = n->nrel; /* first release after t */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (n->rel[mid].at <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0) {
        a.gpus += n->rel[lo - 1].gpus;
        a.cpus += n->rel[lo - 1].cpus;
        a.mem += n->rel[lo - 1].mem;
    }
    for (int i = 0; i < n->nclaims; i++) {
        const struct claim *c = &n->claims[i];
        if (c->res == own || c->start > t || c->end <= t || !claim_binds(s, c->res, j))
            continue;
        a.gpus -= c->gpus;
        a.cpus -= c->cpus;
        a.mem -= c->mem_mb;
    }
    return a;
}

bool avail_covers(struct avail a, int gpus, int cpus, int64_t mem)
{
    return a.gpus >= gpus && a.cpus >= cpus && a.mem >= mem;
}

struct avail node_avail_at(const struct sched *s, const struct node *n, int64_t t, uint32_t own)
{
    return node_avail_for(s, n, t, own, NULL);
}

/* Does the node hold jobs that were due to release their share by now but still hold it:
 * killed jobs that have not exited yet, jobs past their limit and grace? */
static bool has_overdue(const struct sched *s, const struct node *n, int64_t now)
{
    n = node_releases(s, n);
    return n->nrel > 0 && n->rel[0].at <= now;
}

/* Did the claim count on the room of x, a job told to go that has not gone yet? It did
 * when x was already told to stop when the claim was made (its release was known), or when
 * x's own limit ends by the claim's start. */
static bool claim_counted(const struct sched *s, const struct claim *c, const struct job *x)
{
    const struct reservation *r = &s->res[c->res];
    int64_t natural_end = x->limit_ms > 0 ? x->start_ms + x->limit_ms + x->grace_ms : NEVER;
    return x->stop_ms <= r->made_ms || natural_end <= c->start;
}

/* The room an overdue job still holds counts for the claims active at t only when every
 * one of them counted on it. A claim made before the job was told to go (a gang killed by
 * a node failure, a cancel) did not: a job starting now on the strength of that release
 * would leave the claim's owner waiting for a job that was never its to wait for. */
static struct avail overdue_not_counted(const struct sched *s, const struct node *n, int64_t t,
                                        int64_t now, uint32_t own)
{
    struct avail a = {0, 0, 0};
    uint32_t idx = (uint32_t)(n - s->nodes);
    for (uint32_t k = 0; k < n->jobs.n; k++) {
        const struct job *x = &s->jobs[n->jobs.v[k]];
        if (job_expected_end(s, x) > now)
            continue;
        bool counted = true;
        for (int i = 0; i < n->nclaims && counted; i++) {
            const struct claim *c = &n->claims[i];
            if (c->res != own && c->start <= t && c->end > t)
                counted = claim_counted(s, c, x);
        }
        const struct sched_alloc *al = counted ? NULL : job_alloc_on(x, idx);
        if (al) {
            a.gpus += al->gpus;
            a.cpus += al->cpus;
            a.mem += al->mem_mb;
        }
    }
    return a;
}

/* May a job start on n now and hold it until `end` without delaying any claim (its own
 * reservation's aside)? When not, *lower_only is cleared unless some claim in the window
 * belongs to a lower job's ordinary reservation: those are stale (from an earlier cycle)
 * and the caller may drop them and ask again. That hint is generous on purpose: it costs
 * at most one drop per walk, where an exact answer cost a pass over the claims per claim. */
bool claims_allow(const struct sched *s, const struct node *n, uint32_t own_res, int64_t now,
                  int64_t end, int gpus, int cpus, int64_t mem, const struct job *for_job,
                  bool *lower_only, int64_t *hold)
{
    bool ok;
    bool overdue = has_overdue(s, n, now);
    if (hold)
        *hold = -1;
    if (!overdue && !avail_own_claim(n, own_res)) {
        int64_t h = avail_hold(s, n, now, gpus, cpus, mem);
        ok = h >= end; /* out of memory (-1): refuse, which is safe */
        if (hold)
            *hold = h;
    } else {
        ok = true; /* the exact walk, leaving the job's own claim out */
        for (int i = 0; i < n->nclaims && ok; i++) {
            const struct claim *c = &n->claims[i];
            if (c->res == own_res || c->start >= end || c->end <= now)
                continue;
            int64_t t = c->start > now ? c->start : now;
            struct avail a = node_avail_at(s, n, t, own_res);
            if (overdue) {
                struct avail od = overdue_not_counted(s, n, t, now, own_res);
                a.gpus -= od.gpus;
                a.cpus -= od.cpus;
                a.mem -= od.mem;
            }
            ok = avail_covers(a, gpus, cpus, mem);
        }
    }
    if (ok || !lower_only)
        return ok;
    bool lower = false;
    for (int i = 0; i < n->nclaims && !lower; i++) {
        const struct claim *c = &n->claims[i];
        if (c->res != own_res && c->start < end && c->end > now)
            lower = !claim_binds(s, c->res, for_job);
    }
    *lower_only &= lower;
    return false;
}

/* Until when a refusal by claims_allow(), with the `hold` it gave, stands for the same
 * request at later times while the node does not change: only the profile's answer is
 * known to (avail_refused_until), and only until the node's first release, past which a
 * job still running there would be overdue and the exact walk would answer instead. `now`
 * when the exact walk answered (an own claim, an overdue job, no profile). */
int64_t claims_refused_until(const struct sched *s, const struct node *n, int64_t now, int64_t hold)
{
    if (hold < 0)
        return now;
    int64_t until = avail_refused_until(s, n, now, hold);
    n = node_releases(s, n);
    if (n->nrel > 0 && n->rel[0].at < until)
        until = n->rel[0].at;
    return until > now ? until : now;
}

static int add_claim(struct sched *s, struct node *n, const struct claim *c)
{
    size_t cap = (size_t)n->claims_cap;
    if (grow((void **)&n->claims, &cap, (size_t)n->nclaims + 1, sizeof(*n->claims)) < 0)
        return -ENOMEM;
    n->claims_cap = (int)cap;
    claims_will_change(s, n);
    n->claims[n->nclaims++] = *c;
    node_claims_touch(s, n);
    return 0;
}

/* ---- the bits of res[] (struct sched res_live_bits) */

static int res_bits_fit(struct sched *s, size_t n)
{
    size_t words = (n + 63) / 64;
    if (words <= s->res_words)
        return 0;
    size_t cap = words * 2;
    uint64_t **bits[] = {&s->res_live_bits, &s->res_ordinary_bits};
    for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
        uint64_t *b = realloc(*bits[i], cap * sizeof(*b));
        if (!b)
            return -1; /* res_words unchanged: a grown part is cleared again next time */
        memset(b + s->res_words, 0, (cap - s->res_words) * sizeof(*b));
        *bits[i] = b;
    }
    s->res_words = cap;
    return 0;
}

static void res_bits_set(struct sched *s, uint32_t r)
{
    const struct reservation *res = &s->res[r];
    slot_bit_set(s->res_live_bits, r, res->live);
    slot_bit_set(s->res_ordinary_bits, r, res->live && !res->preempting && !res->starving);
}

size_t res_next(const struct sched *s, size_t r, bool ordinary)
{
    const uint64_t *bits = ordinary ? s->res_ordinary_bits : s->res_live_bits;
    for (size_t w = r / 64; r < s->nres; w++, r = w * 64) {
        uint64_t m = bits[w] & (~0ULL << (r % 64));
        if (m) {
            size_t at = w * 64 + (size_t)__builtin_ctzll(m);
            return at < s->nres ? at : s->nres;
        }
    }
    return s->nres;
}

/* The first entry of res[] that is not live (the lowest, as it always was), or NONE32. */
static uint32_t res_free_entry(const struct sched *s)
{
    for (size_t w = 0; w * 64 < s->nres; w++)
        if (~s->res_live_bits[w]) {
            size_t at = w * 64 + (size_t)__builtin_ctzll(~s->res_live_bits[w]);
            return at < s->nres ? (uint32_t)at : NONE32;
        }
    return NONE32;
}

uint32_t reservation_add(struct sched *s, struct job *j, int64_t start, int64_t end,
                         const uint32_t *nodes, int nnodes, bool preempting, bool starving)
{
    if (res_bits_fit(s, s->nres + 1) < 0)
        return NONE32;
    uint32_t r = res_free_entry(s);
    if (r == NONE32) {
        if (grow((void **)&s->res, &s->res_cap, s->nres + 1, sizeof(*s->res)) < 0)
            return NONE32;
        r = (uint32_t)s->nres++;
    }
    struct reservation *res = &s->res[r];
    memset(res, 0, sizeof(*res));
    res->nodes = malloc(nnodes * sizeof(*nodes));
    if (!res->nodes)
        return NONE32;
    memcpy(res->nodes, nodes, nnodes * sizeof(*nodes));
    res->nnodes = nnodes;
    res->slot = job_slot(s, j);
    res->job_id = j->id;
    res->start = start;
    res->end = end;
    res->made_ms = s->now;
    res->preempting = preempting;
    res->starving = starving;
    res->live = true;
    res_bits_set(s, r);
    const struct shape *sh = &s->shapes[j->shape];
    struct claim c = {r, start, end, sh->gpus, sh->cpus, sh->mem_mb};
    for (int i = 0; i < nnodes; i++)
        (void)add_claim(s, &s->nodes[nodes[i]], &c);
    j->reservation = r;
    walk_look_sync(s, j);
    if (!preempting && !starving)
        s->res_active++;
    return r;
}

void reservation_make_sticky(struct sched *s, uint32_t r)
{
    struct reservation *res = &s->res[r];
    for (int i = 0; i < res->nnodes; i++)
        claims_will_change(s, &s->nodes[res->nodes[i]]);
    res->starving = true;
    res_bits_set(s, r);
    s->res_active--;
    for (int i = 0; i < res->nnodes; i++)
        node_claims_touch(s, &s->nodes[res->nodes[i]]); /* its claims bind everyone now */
}

/* ---- claims changed and changed back (struct starving_entry, struct claim_snap) */

static struct claim_snap claim_snap_of(const struct sched *s, const struct claim *c)
{
    const struct reservation *r = &s->res[c->res];
    return (struct claim_snap){r->job_id, c->start,  c->end, r->made_ms,    c->gpus,
                               c->cpus,   c->mem_mb, c->res, r->preempting, r->starving};
}

/* Keep n's claims as they are (false: out of memory). */
static bool claims_snapshot(struct sched *s, struct node *n)
{
    size_t cap = (size_t)n->snap_cap;
    if (grow((void **)&n->snap, &cap, (size_t)n->nclaims + 1, sizeof(*n->snap)) < 0)
        return false;
    n->snap_cap = (int)cap;
    for (int i = 0; i < n->nclaims; i++)
        n->snap[i] = claim_snap_of(s, &n->claims[i]);
    n->nsnap = n->nclaims;
    return true;
}

static void claims_will_change(struct sched *s, struct node *n)
{
    if (n->claims_pending)
        return; /* kept at its first change since the last walk */
    if (s->quiet_walk) {
        changes_count(s, n);
        return;
    }
    uint32_t idx = (uint32_t)(n - s->nodes);
    if (!claims_snapshot(s, n) || grow((void **)&s->claims_moved, &s->claims_moved_cap,
                                       s->nclaims_moved + 1, sizeof(*s->claims_moved)) < 0) {
        changes_count(s, n); /* no copy to compare with: a change */
        return;
    }
    s->claims_moved[s->nclaims_moved++] = idx;
    n->claims_pending = true;
}

/* Would every question about the claims be answered the same: a made_ms matters only
 * through a job there told to stop in between (claim_counted). */
static bool made_same(const struct sched *s, const struct node *n, int64_t a, int64_t b)
{
    for (uint32_t k = 0; a != b && k < n->jobs.n; k++) {
        int64_t stop = s->jobs[n->jobs.v[k]].stop_ms;
        if ((stop <= a) != (stop <= b))
            return false;
    }
    return true;
}

static bool snap_same(const struct sched *s, const struct node *n, const struct claim_snap *x,
                      const struct claim_snap *y)
{
    if ((x->preempting || y->preempting) &&
        (x->res != y->res || x->made_ms != y->made_ms || x->preempting != y->preempting))
        return false; /* its victims are the reservation's own */
    return x->job_id == y->job_id && x->start == y->start && x->end == y->end &&
           x->gpus == y->gpus && x->cpus == y->cpus && x->mem_mb == y->mem_mb &&
           x->starving == y->starving && made_same(s, n, x->made_ms, y->made_ms);
}

/* Are n's claims what its snapshot holds, as a multiset? */
static bool claims_unmoved(const struct sched *s, const struct node *n)
{
    if (n->nclaims != n->nsnap || n->nclaims > 64)
        return n->nclaims == 0 && n->nsnap == 0;
    uint64_t used = 0;
    for (int i = 0; i < n->nclaims; i++) {
        struct claim_snap c = claim_snap_of(s, &n->claims[i]);
        int k = 0;
        while (k < n->nsnap && ((used >> k & 1) || !snap_same(s, n, &c, &n->snap[k])))
            k++;
        if (k == n->nsnap)
            return false;
        used |= 1ULL << k;
    }
    return true;
}

void claims_settle(struct sched *s)
{
    for (size_t i = 0; i < s->nclaims_moved; i++) {
        struct node *n = &s->nodes[s->claims_moved[i]];
        if (!claims_unmoved(s, n))
            changes_count(s, n);
        n->claims_pending = false;
    }
    s->nclaims_moved = 0;
}

/* Drop reservation r; its node list is returned, the caller's to free (or NULL when r was
 * not live). */
static uint32_t *reservation_unlink(struct sched *s, uint32_t r)
{
    struct reservation *res = &s->res[r];
    if (!res->live)
        return NULL;
    uint32_t *nodes = res->nodes;
    s->room_grew++;
    for (int i = 0; i < res->nnodes; i++) {
        struct node *n = &s->nodes[res->nodes[i]];
        claims_will_change(s, n);
        for (int k = 0; k < n->nclaims;) {
            if (n->claims[k].res == r)
                n->claims[k] = n->claims[--n->nclaims];
            else
                k++;
        }
        node_claims_touch(s, n);
    }
    struct job *j = &s->jobs[res->slot];
    if (j->id == res->job_id && j->reservation == r) {
        j->reservation = NONE32;
        walk_look_sync(s, j);
    }
    if (!res->preempting && !res->starving)
        s->res_active--;
    free(res->victims);
    memset(res, 0, sizeof(*res));
    res_bits_set(s, r);
    return nodes;
}

void reservation_drop(struct sched *s, uint32_t r)
{
    free(reservation_unlink(s, r));
}

/* Drop reservation r, keeping its room as a hint for its job (the node list moves to it). */
static void drop_keeping_hint(struct sched *s, uint32_t r)
{
    struct res_hint h = {s->res[r].job_id, s->res[r].slot, s->res[r].start, NULL, s->res[r].nnodes};
    h.nodes = reservation_unlink(s, r);
    if (grow((void **)&s->hints, &s->hints_cap, s->nhints + 1, sizeof(*s->hints)) < 0) {
        free(h.nodes); /* no hint: the walk searches for that job again, as without */
        return;
    }
    s->hints[s->nhints++] = h;
}

void reservation_drop_lower(struct sched *s, const struct job *j)
{
    for (size_t r = res_next(s, 0, true); r < s->nres; r = res_next(s, r + 1, true)) {
        struct reservation *res = &s->res[r];
        if (!job_outranks(s, j, &s->jobs[res->slot]))
            continue;
        if (res->nnodes > 1) /* a gang's search is the dear one (reserve.c) */
            drop_keeping_hint(s, (uint32_t)r);
        else
            reservation_drop(s, (uint32_t)r);
    }
}

bool reservation_hint_take(struct sched *s, const struct job *j, struct res_hint *out)
{
    for (size_t i = 0; i < s->nhints; i++)
        if (s->hints[i].job_id == j->id && s->hints[i].slot == job_slot(s, j)) {
            *out = s->hints[i];
            s->hints[i] = s->hints[--s->nhints];
            return true;
        }
    return false;
}

void reservation_hints_clear(struct sched *s)
{
    for (size_t i = 0; i < s->nhints; i++)
        free(s->hints[i].nodes);
    s->nhints = 0;
}

void reservations_drop_all(struct sched *s, bool keep_sticky)
{
    for (size_t r = res_next(s, 0, keep_sticky); r < s->nres; r = res_next(s, r + 1, keep_sticky))
        reservation_drop(s, (uint32_t)r);
}
