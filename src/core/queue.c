/*
 * queue.c - the queue index (floor 1): the pending queue sorted by priority key
 * (docs/scheduling.md §1) and the starvation list. The key and the comparison live here,
 * since the index needs them to insert: tiered (Docket): effective tier, then fair-share (a
 * group's decayed usage over its guarantee, then its project's over the project's: lower
 * first), then submit time, then id; FIFO and multifactor are the baselines docket-sim
 * compares against. Shares are frozen between refreshes (order.c), so the order is a sorted
 * array that events only add to: new entries are merged in at the next cycle, leaving
 * entries become tombstones.
 */
#define _GNU_SOURCE /* qsort_r */
#include "core/queue.h"
#include "core/containers.h"
#include "core/model.h"
#include "core/deadlines.h"
#include "core/victims.h"
#include "core/shapes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t share_quantum(double share)
{
    const uint64_t maxq = (1ULL << 28) - 1;
    double q = share * 1e4;
    return q >= (double)maxq ? maxq : q > 0 ? (uint64_t)q : 0;
}

uint64_t job_key1(const struct sched *s, const struct job *j, int64_t now)
{
    const struct sched_policy *pol = &s->policy;
    int rank = job_eff_rank(s, j);
    const struct project *p = &s->projects[j->project];
    switch (pol->ordering) {
    case SCHED_ORDER_FIFO:
        return 0;
    case SCHED_ORDER_MULTIFACTOR: {
        double age = (double)(now - j->submit_ms) / (double)pol->mf_age_max_ms;
        age = age < 0 ? 0 : age > 1 ? 1 : age;
        double tier = pol->ntiers > 1 ? 1.0 - (double)rank / (pol->ntiers - 1) : 1.0;
        double score = pol->mf_age_weight * age + pol->mf_fairshare_weight * exp2(-p->share) +
                       pol->mf_tier_weight * tier;
        return (uint64_t)(score * 1000.0);
    }
    default: {
        /* the group's share, then the project's within it (a project without a group is
           a group of its own): 28 bits each, in steps of 1/10,000 of a guarantee */
        const struct group *g = project_group(s, p);
        uint64_t share_q = (share_quantum(g ? g->share : p->share) << 28) | share_quantum(p->share);
        uint64_t prio = (uint64_t)(SCHED_MAX_TIERS - rank);
        return (prio << 56) | (((1ULL << 56) - 1) - share_q);
    }
    }
}

int cmp_entries(const struct order_entry *a, const struct order_entry *b)
{
    if (a->key1 != b->key1)
        return a->key1 > b->key1 ? -1 : 1;
    if (a->submit_ms != b->submit_ms)
        return a->submit_ms < b->submit_ms ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static int cmp_entries_q(const void *a, const void *b)
{
    return cmp_entries(a, b);
}

static void entry_fill(const struct sched *s, struct order_entry *e, const struct job *j)
{
    e->key1 = j->key1;
    e->submit_ms = j->submit_ms;
    e->id = j->id;
    e->slot = job_slot(s, j);
    e->shape = j->shape;
    e->project = j->project;
    e->rank = (uint8_t)job_eff_rank(s, j);
    int64_t d = job_duration(j) / 60000;
    e->dur_min = (uint16_t)(d > 65535 ? 65535 : d);
}

void order_insert(struct sched *s, struct job *j)
{
    j->key1 = job_key1(s, j, s->now);
    if (grow((void **)&s->order_new, &s->new_cap, s->nnew + 1, sizeof(*s->order_new)) < 0) {
        s->order_dirty = true; /* the rebuild will find it by scanning the slab */
        return;
    }
    entry_fill(s, &s->order_new[s->nnew++], j);
}

static struct order_entry *find_entry(struct order_entry *arr, size_t n,
                                      const struct order_entry *key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_entries(&arr[mid], key);
        if (c == 0)
            return &arr[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The job left PENDING: tombstone its entry (binary search in the sorted array, a short
 * scan in the unsorted new ones). */
void order_remove(struct sched *s, struct job *j)
{
    struct order_entry key = {.key1 = j->key1, .submit_ms = j->submit_ms, .id = j->id};
    struct order_entry *e = find_entry(s->order, s->norder, &key);
    if (e && e->slot != NONE32) {
        e->slot = NONE32;
        s->order_stale++;
        return;
    }
    for (size_t i = 0; i < s->nnew; i++) {
        if (s->order_new[i].id == j->id && s->order_new[i].slot != NONE32) {
            s->order_new[i] = s->order_new[--s->nnew];
            return;
        }
    }
}

/* The effective rank the job is queued at (its entry's), or -1 when it has no entry. */
int order_entry_rank(const struct sched *s, const struct job *j)
{
    struct order_entry key = {.key1 = j->key1, .submit_ms = j->submit_ms, .id = j->id};
    const struct order_entry *e = find_entry(s->order, s->norder, &key);
    if (e && e->slot != NONE32)
        return e->rank;
    for (size_t i = 0; i < s->nnew; i++)
        if (s->order_new[i].id == j->id && s->order_new[i].slot != NONE32)
            return s->order_new[i].rank;
    return -1;
}

static bool entries_sort(struct sched *s, struct order_entry **arr, size_t *cap, size_t n);

/* Merge the new entries into the sorted array, dropping tombstones on the way. */
void order_merge_new(struct sched *s)
{
    bool compact = s->order_stale > 64 && s->order_stale * 4 > s->norder;
    if (s->nnew == 0 && !compact)
        return;
    if (s->nnew > 1 && !entries_sort(s, &s->order_new, &s->new_cap, s->nnew))
        qsort(s->order_new, s->nnew, sizeof(*s->order_new), cmp_entries_q);
    size_t total = s->norder - s->order_stale + s->nnew;
    struct order_entry *out = malloc((total ? total : 1) * sizeof(*out));
    if (!out) {
        s->order_dirty = true;
        return;
    }
    size_t i = 0, k = 0, n = 0;
    while (i < s->norder || k < s->nnew) {
        if (i < s->norder && s->order[i].slot == NONE32) {
            i++;
            continue;
        }
        bool take_old =
            k >= s->nnew || (i < s->norder && cmp_entries(&s->order[i], &s->order_new[k]) < 0);
        out[n++] = take_old ? s->order[i++] : s->order_new[k++];
    }
    free(s->order);
    s->order = out;
    s->norder = n;
    s->order_cap = total ? total : 1;
    s->order_stale = 0;
    s->nnew = 0;
}

/* ---- the rebuild's sort. The queue of a refresh (100,000 entries of 40 bytes) took glibc's
 * qsort about a third of a full cycle: an indirect merge sort through a comparison called by
 * pointer. An LSD radix sort gives the same order (cmp_entries: key1 down, then submit_ms up,
 * then id up; ids are unique, so the order is total) in a few passes over 16-byte pairs:
 * least significant key first, each pass stable, a byte per pass, and a byte that all
 * entries share costs no pass. */

static uint64_t entry_sort_key(const struct order_entry *e, int stage)
{
    switch (stage) {
    case 0:
        return e->id;
    case 1:
        return (uint64_t)e->submit_ms ^ (1ULL << 63); /* signed to unsigned, order kept */
    default:
        return ~e->key1; /* higher first */
    }
}

/* One stable counting pass of `src` into `dst` by the byte at `shift`. */
static void radix_pass(const struct sort_pair *src, struct sort_pair *dst, size_t n, int shift)
{
    size_t count[256] = {0};
    for (size_t i = 0; i < n; i++)
        count[(src[i].key >> shift) & 0xff]++;
    size_t at = 0;
    for (int b = 0; b < 256; b++) {
        size_t c = count[b];
        count[b] = at;
        at += c;
    }
    for (size_t i = 0; i < n; i++)
        dst[count[(src[i].key >> shift) & 0xff]++] = src[i];
}

/* Sort (*arr)[0..n) as cmp_entries does; false when it leaves that to qsort: a short array
 * (a radix pass costs 256 counters whatever n), or scratch could not grow (arr untouched).
 * The entries are gathered into the spare array in their new order (independent reads,
 * unlike a permutation in place, whose reads each wait for the one before), which then
 * becomes *arr; the old array is the next spare. */
static bool entries_sort(struct sched *s, struct order_entry **arr, size_t *cap, size_t n)
{
    if (n < 256 || n > UINT32_MAX ||
        grow((void **)&s->sort_pairs, &s->sort_pairs_cap, 2 * n, sizeof(*s->sort_pairs)) < 0 ||
        grow((void **)&s->sort_spare, &s->sort_spare_cap, n, sizeof(*s->sort_spare)) < 0)
        return false;
    const struct order_entry *e = *arr;
    struct sort_pair *a = s->sort_pairs, *b = s->sort_pairs + n;
    for (size_t i = 0; i < n; i++)
        a[i].idx = (uint32_t)i;
    for (int stage = 0; stage < 3; stage++) {
        uint64_t all_and = ~0ULL, all_or = 0, prev = 0;
        bool sorted = true;
        for (size_t i = 0; i < n; i++) {
            uint64_t k = entry_sort_key(&e[a[i].idx], stage);
            a[i].key = k;
            all_and &= k;
            all_or |= k;
            sorted &= k >= prev;
            prev = k;
        }
        uint64_t differs = all_and ^ all_or; /* the bits that some entries do not share */
        /* keys already in order need no pass (a stable sort would leave them as they are):
           ids often are, in the slab's order */
        for (int shift = 0; shift < 64 && !sorted; shift += 8) {
            if (!((differs >> shift) & 0xff))
                continue;
            radix_pass(a, b, n, shift);
            struct sort_pair *t = a;
            a = b;
            b = t;
        }
    }
    struct order_entry *out = s->sort_spare;
    for (size_t i = 0; i < n; i++)
        out[i] = e[a[i].idx];
    size_t out_cap = s->sort_spare_cap;
    s->sort_spare = *arr;
    s->sort_spare_cap = *cap;
    *arr = out;
    *cap = out_cap;
    return true;
}

/* The starving list's order: the longest starving first, then the lower id. The keys are
 * read once per job for a sort (cmp_starving read two jobs per comparison). */
struct starving_key {
    int64_t at;
    uint64_t id;
    uint32_t slot;
};

static struct starving_key starving_key_of(const struct sched *s, uint32_t slot)
{
    const struct job *j = &s->jobs[slot];
    return (struct starving_key){job_starve_at(s, j), j->id, slot};
}

static int cmp_starving_key(const void *a, const void *b)
{
    const struct starving_key *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int cmp_starving(const void *a, const void *b, void *ctx)
{
    const struct sched *s = ctx;
    struct starving_key x = starving_key_of(s, ((const struct starving_entry *)a)->slot);
    struct starving_key y = starving_key_of(s, ((const struct starving_entry *)b)->slot);
    return cmp_starving_key(&x, &y);
}

/* The starving list as it is, with each slot's index in it (NULL: none, or no memory: the
 * rebuilt list then starts without proofs, which is always right). */
static struct starving_entry *proofs_take(struct sched *s, size_t *n)
{
    *n = 0;
    size_t had = s->starving_pos_cap;
    if (!s->nstarving || grow((void **)&s->starving_pos, &s->starving_pos_cap, s->jobs_cap,
                              sizeof(*s->starving_pos)) < 0)
        return NULL;
    memset(s->starving_pos + had, 0xff, (s->starving_pos_cap - had) * sizeof(*s->starving_pos));
    struct starving_entry *p = malloc(s->nstarving * sizeof(*p));
    if (!p)
        return NULL;
    memcpy(p, s->starving, s->nstarving * sizeof(*p));
    for (size_t i = 0; i < s->nstarving; i++)
        s->starving_pos[p[i].slot] = (uint32_t)i;
    *n = s->nstarving;
    return p;
}

/* A proof made before the rebuild holds after it for the same job, still starving (its
 * flag, and so its changed bit, untouched by the rebuild), of the same shape, project and
 * effective rank: the rebuild moves the queue's keys, which no starving service reads
 * (it honours every claim), and the reservations it drops count as changes of their
 * nodes (claims_settle). A boost that moved a rank or a pool rule voids it here. */
static void proofs_restore(struct sched *s, struct starving_entry *p, size_t n)
{
    for (size_t i = 0; n && i < s->nstarving; i++) {
        uint32_t slot = s->starving[i].slot, at = s->starving_pos[slot];
        if (at >= n || p[at].slot != slot || !p[at].id)
            continue; /* not listed before (the index is another rebuild's), or no proof */
        const struct starving_entry *old = &p[at];
        const struct job *j = &s->jobs[slot];
        if (old->id == j->id && old->shape == j->shape && old->project == j->project &&
            old->rank == job_eff_rank(s, j))
            s->starving[i] = *old;
    }
    free(p);
}

static void starving_sort(struct sched *s)
{
    struct starving_key *k = malloc(s->nstarving * sizeof(*k));
    if (!k) {
        qsort_r(s->starving, s->nstarving, sizeof(*s->starving), cmp_starving, s);
        return;
    }
    for (size_t i = 0; i < s->nstarving; i++)
        k[i] = starving_key_of(s, s->starving[i].slot);
    qsort(k, s->nstarving, sizeof(*k), cmp_starving_key);
    for (size_t i = 0; i < s->nstarving; i++)
        s->starving[i] = (struct starving_entry){.slot = k[i].slot};
    free(k);
}

/* Its job is no longer a pending starving job (a cancel freed the slot, a start, a hold). */
static bool starving_entry_left(const struct sched *s, const struct starving_entry *e)
{
    const struct job *j = &s->jobs[e->slot];
    return !j->id || j->state != SCHED_PENDING || !(j->flags & JF_STARVING);
}

static void starving_append(struct sched *s, struct job *j)
{
    if (j->flags & JF_STARVING)
        return;
    if (grow((void **)&s->starving, &s->starving_cap, s->nstarving + 1, sizeof(*s->starving)))
        return;
    j->flags |= JF_STARVING;
    walk_look_sync(s, j);
    /* keep the list oldest first: it is short, insertion is fine */
    struct starving_entry e = {.slot = job_slot(s, j)}; /* nothing proven yet */
    starving_forget_slot(s, e.slot); /* one entry per slot: an old one is the last job's */
    slot_bit_set(s->listed_bits, e.slot, true);
    size_t i = s->nstarving++;
    /* past the younger entries, and past those whose job has left (a cancel, a start, a
       hold between cycles: the walk drops them when it meets them): a cancelled job's slot
       reads as zeros, as starving since the epoch, and stopped the insertion behind
       younger jobs */
    while (i > 0 && (starving_entry_left(s, &s->starving[i - 1]) ||
                     cmp_starving(&s->starving[i - 1], &e, s) > 0)) {
        s->starving[i] = s->starving[i - 1];
        i--;
    }
    s->starving[i] = e;
}

void starving_forget_slot(struct sched *s, uint32_t slot)
{
    if (!slot_bit(s->listed_bits, slot))
        return;
    size_t keep = 0;
    for (size_t i = 0; i < s->nstarving; i++)
        if (s->starving[i].slot != slot)
            s->starving[keep++] = s->starving[i];
    s->nstarving = keep;
    slot_bit_set(s->listed_bits, slot, false);
}

void job_mark_eligible(struct sched *s, struct job *j, int64_t now)
{
    (void)s;
    j->eligible_ms = j->ndeps_unmet > 0 ? NEVER : j->begin_ms > now ? j->begin_ms : now;
}

/* A pending job starves once it has waited its tier's starve_after since it became
 * eligible: mark it now, or set a deadline for when it will (fire_deadline calls back). */
void starvation_watch(struct sched *s, struct job *j, int64_t now)
{
    if (j->state != SCHED_PENDING)
        return;
    j->watch_rank = (uint8_t)job_eff_rank(s, j);
    int64_t at = job_starve_at(s, j);
    if (at == NEVER)
        return;
    if (at > now)
        deadline_push(s, at, j->id, DL_STARVE);
    else
        starving_append(s, j);
}

/* The queue sorted again and the starving list made anew from each job's bound; with
 * `rekey`, each pending job's key from the shares as they stand (and, for the multifactor
 * order, its age now), else the keys as the last refresh left them. */
void order_rebuild(struct sched *s, int64_t now, bool rekey)
{
    size_t pending = s->by_state[SCHED_PENDING];
    if (grow((void **)&s->order, &s->order_cap, pending + 1, sizeof(*s->order)) < 0)
        return;
    size_t nproofs;
    struct starving_entry *proofs = proofs_take(s, &nproofs);
    s->nstarving = 0;
    if (s->look_words)
        memset(s->listed_bits, 0, s->look_words * sizeof(*s->listed_bits));
    size_t n = 0;
    for (size_t slot = 0; slot < s->jobs_cap; slot++) {
        struct job *j = &s->jobs[slot];
        if (!j->id)
            continue;
        bool was_starving = j->flags & JF_STARVING;
        if (was_starving && j->state != SCHED_PENDING) {
            j->flags &= (uint8_t)~JF_STARVING;
            walk_look_sync(s, j);
        }
        if ((j->flags & JF_VICTIM_ELIGIBLE) && j->victim_rank != job_eff_rank(s, j)) {
            victim_mark(s, j, false); /* a boost moved it: count it under its new rank */
            victim_mark(s, j, true);
        }
        if (j->state != SCHED_PENDING)
            continue;
        shape_rule_refresh(s, j);
        if (rekey)
            j->key1 = job_key1(s, j, now);
        entry_fill(s, &s->order[n++], j);
        if (s->rewatch || j->watch_rank != job_eff_rank(s, j)) {
            /* a boost (or a new policy) moved its bound: a deadline for the new one. A job
               already starving stays so until the flags are set just below. */
            int64_t at = job_starve_at(s, j);
            j->watch_rank = (uint8_t)job_eff_rank(s, j);
            if (at != NEVER && at > now)
                deadline_push(s, at, j->id, DL_STARVE);
        }
        bool starving = job_starve_at(s, j) <= now;
        if (starving != was_starving) {
            j->flags = starving ? j->flags | JF_STARVING : j->flags & (uint8_t)~JF_STARVING;
            walk_look_sync(s, j);
        }
        if (starving) {
            if (grow((void **)&s->starving, &s->starving_cap, s->nstarving + 1,
                     sizeof(*s->starving)) == 0) {
                s->starving[s->nstarving++] = (struct starving_entry){.slot = job_slot(s, j)};
                slot_bit_set(s->listed_bits, job_slot(s, j), true);
            }
        }
    }
    if (n > 1 && !entries_sort(s, &s->order, &s->order_cap, n))
        qsort(s->order, n, sizeof(*s->order), cmp_entries_q);
    if (s->nstarving > 1)
        starving_sort(s);
    proofs_restore(s, proofs, nproofs);
    s->norder = n;
    s->nnew = 0;
    s->order_stale = 0;
    s->order_dirty = false;
    s->rewatch = false;
}

/* The starving list after a boost (or its end) moved the effective tier, and so the bound,
 * of the pending jobs in slots[0..n) (order.c order_project_rerank): each job is watched at
 * its new rank (a deadline for its new bound, or starving now), its old entry goes (its
 * proof was for the old rank), and the list is sorted again with the new entries in it.
 * Entries whose job has left go too (the walk would drop them). The others keep their
 * proofs. The whole list is sorted, not merged: an entry appended after a boost's end had
 * passed, before its deadline fired, was placed by the ranks as they already read. */
void starving_rewatch(struct sched *s, const uint32_t *slots, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct job *j = &s->jobs[slots[i]];
        int64_t at = job_starve_at(s, j);
        j->watch_rank = (uint8_t)job_eff_rank(s, j);
        if (at != NEVER && at > s->now)
            deadline_push(s, at, j->id, DL_STARVE);
        bool starving = at <= s->now;
        if (starving)
            j->flags |= JF_STARVING;
        else
            j->flags &= (uint8_t)~JF_STARVING;
        walk_look_sync(s, j); /* its slot changed: no proof stands for it */
        slot_bit_set(s->listed_bits, slots[i], false);
    }
    size_t keep = 0;
    for (size_t i = 0; i < s->nstarving; i++) {
        uint32_t slot = s->starving[i].slot;
        if (!slot_bit(s->listed_bits, slot))
            continue; /* a moved job's old entry */
        if (starving_entry_left(s, &s->starving[i])) {
            slot_bit_set(s->listed_bits, slot, false);
            continue;
        }
        s->starving[keep++] = s->starving[i];
    }
    s->nstarving = keep;
    for (size_t i = 0; i < n; i++) {
        struct job *j = &s->jobs[slots[i]];
        if (!(j->flags & JF_STARVING))
            continue;
        if (grow((void **)&s->starving, &s->starving_cap, s->nstarving + 1, sizeof(*s->starving)) <
            0) {
            s->order_dirty = true; /* the rebuild lists it */
            return;
        }
        s->starving[s->nstarving++] = (struct starving_entry){.slot = slots[i]};
        slot_bit_set(s->listed_bits, slots[i], true);
    }
    if (s->nstarving == 0)
        return; /* nothing to sort (and s->starving may be NULL) */
    /* sorted by (bound, id) with each entry's proof carried along */
    struct starving_key *k = malloc(s->nstarving * sizeof(*k));
    struct starving_entry *out = malloc(s->nstarving * sizeof(*out));
    if (!k || !out) {
        free(k);
        free(out);
        s->order_dirty = true;
        return;
    }
    for (size_t i = 0; i < s->nstarving; i++) {
        k[i] = starving_key_of(s, s->starving[i].slot);
        k[i].slot = (uint32_t)i; /* the entry's index, not its slot */
    }
    qsort(k, s->nstarving, sizeof(*k), cmp_starving_key);
    for (size_t i = 0; i < s->nstarving; i++)
        out[i] = s->starving[k[i].slot];
    memcpy(s->starving, out, s->nstarving * sizeof(*out));
    free(out);
    free(k);
}
