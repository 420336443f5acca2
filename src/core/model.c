/*
 * model.c - the bottom of the model (floor 1): lookups and derived values of jobs,
 * projects and nodes (effective rank, expected end, billing rate, selector matches, node
 * profiles, a node's releases), and the decision queue. The indexes are in their own files
 * (nodes.c, claims.c, victims.c, queue.c, deadlines.c, shapes.c, avail.c, changes.c,
 * group.c) and the job life cycle in lifecycle.c; this file calls none of them.
 */
#include "core/model.h"
#include "core/containers.h"
#include "core/policy.h"
#include "core/constraint.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------------------------ */
/* helpers                                                                              */

struct job *job_find(const struct sched *s, uint64_t id)
{
    uint64_t slot;
    if (!u64map_get(&s->job_index, id, &slot))
        return NULL;
    return &s->jobs[slot];
}

uint32_t job_slot(const struct sched *s, const struct job *j)
{
    return (uint32_t)(j - s->jobs);
}

int walk_look_grow(struct sched *s, size_t slots)
{
    size_t words = (slots + 63) / 64;
    if (words <= s->look_words)
        return 0;
    uint64_t **more[] = {&s->walked_bits, &s->changed_bits, &s->listed_bits};
    for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
        uint64_t *m = realloc(*more[i], words * sizeof(*m));
        if (!m)
            return -ENOMEM;
        memset(m + s->look_words, 0, (words - s->look_words) * sizeof(*m));
        *more[i] = m;
    }
    uint32_t *sp = realloc(s->slot_project, words * 64 * sizeof(*sp));
    if (!sp)
        return -ENOMEM;
    memset(sp + s->look_words * 64, 0xff, (words - s->look_words) * 64 * sizeof(*sp));
    s->slot_project = sp;
    uint64_t *b = realloc(s->look_bits, words * sizeof(*b));
    if (!b)
        return -ENOMEM;
    memset(b + s->look_words, 0, (words - s->look_words) * sizeof(*b));
    s->look_bits = b;
    s->look_words = words;
    return 0;
}

void walk_look_sync(struct sched *s, const struct job *j)
{
    uint32_t slot = job_slot(s, j);
    if (slot / 64 >= s->look_words)
        return; /* a slot past the bits never holds a job (walk_look_grow at its creation) */
    slot_changed(s, slot);
    uint64_t bit = 1ULL << (slot % 64);
    if (j->id && (j->reservation != NONE32 || (j->flags & JF_STARVING)))
        s->look_bits[slot / 64] |= bit;
    else
        s->look_bits[slot / 64] &= ~bit;
}

const struct sched_class_spec *job_class(const struct sched *s, const struct job *j)
{
    return &s->policy.classes[j->klass];
}

bool job_preemptible_class(const struct sched *s, const struct job *j)
{
    return job_class(s, j)->preemptible;
}

/* Effective tier rank after the project's boost: 0 is the highest. */
int job_eff_rank(const struct sched *s, const struct job *j)
{
    const struct project *p = &s->projects[j->project];
    int r = (int)j->tier - (p->boost_until > s->now ? p->boost : 0);
    return r < 0 ? 0 : r;
}

/* Age counts from eligibility, not submission: time held, waiting for a dependency or for
 * a begin time is not starvation (DESIGN §3.7). */
int64_t job_starve_at(const struct sched *s, const struct job *j)
{
    int64_t after = s->policy.tiers[job_eff_rank(s, j)].starve_after_ms;
    if (after <= 0 || j->eligible_ms == NEVER)
        return NEVER;
    return j->eligible_ms + after;
}

/* When a holder of resources is expected to release them: its time limit plus grace
 * (the most it can run), or its kill time when already stopping. NEVER without limit. */
int64_t job_expected_end(const struct sched *s, const struct job *j)
{
    (void)s;
    if (j->state == SCHED_STOPPING)
        return j->kill_at_ms;
    if (j->limit_ms <= 0)
        return NEVER;
    return j->start_ms + j->limit_ms + j->grace_ms;
}

/* How long the job may hold its resources once started: limit plus grace; NEVER without
 * a limit. */
int64_t job_duration(const struct job *j)
{
    return j->limit_ms > 0 ? j->limit_ms + j->grace_ms : NEVER;
}

double job_billing_rate(const struct sched *s, const struct job *j)
{
    double w = s->policy.default_gpu_weight;
    if (j->nallocs > 0) {
        const struct node *n = &s->nodes[j->allocs[0].node];
        w = policy_gpu_weight(&s->policy, s->gpu_types[n->gpu_type]);
    } else if (j->gpu_type > 0) {
        w = policy_gpu_weight(&s->policy, s->gpu_types[j->gpu_type]);
    }
    double per_node = j->gpus * w + j->cpus * s->policy.cpu_weight +
                      (double)j->mem_mb / 1024.0 * s->policy.mem_weight_per_gb;
    return per_node * j->nodes;
}

int type_find(const struct sched *s, const char *name)
{
    for (int i = 1; i < s->ntypes; i++)
        if (strcmp(s->gpu_types[i], name) == 0)
            return i;
    return -1;
}

int type_find_any_case(const struct sched *s, const char *name)
{
    int t = type_find(s, name);
    for (int i = 1; t < 0 && i < s->ntypes; i++)
        if (strcasecmp(s->gpu_types[i], name) == 0)
            t = i;
    return t;
}

struct user_count *user_count_get(struct sched *s, uint32_t project, uint32_t user, bool create)
{
    uint64_t key = ((uint64_t)project << 32) | user, idx;
    if (u64map_get(&s->user_counts, key, &idx))
        return &s->ucounts[idx];
    if (!create)
        return NULL;
    if (grow((void **)&s->ucounts, &s->ucounts_cap, s->nucounts + 1, sizeof(*s->ucounts)) < 0)
        return NULL;
    if (u64map_put(&s->user_counts, key, s->nucounts) < 0)
        return NULL;
    memset(&s->ucounts[s->nucounts], 0, sizeof(s->ucounts[0]));
    return &s->ucounts[s->nucounts++];
}

void queued_count(struct sched *s, const struct job *j, int delta)
{
    s->projects[j->project].queued += delta;
    struct user_count *uc = user_count_get(s, j->project, j->user, delta > 0);
    if (uc)
        uc->queued += delta;
}

/* ------------------------------------------------------------------------------------ */
/* decisions                                                                            */

struct sched_decision *decision_push(struct sched *s, enum sched_decision_kind kind,
                                     const struct job *j)
{
    if (s->dec_returned) {
        s->ndec = 0;
        s->ndec_allocs = 0;
        s->dec_returned = false;
    }
    if (grow((void **)&s->dec, &s->dec_cap, s->ndec + 1, sizeof(*s->dec)) < 0)
        return NULL;
    struct sched_decision *d = &s->dec[s->ndec++];
    memset(d, 0, sizeof(*d));
    d->kind = kind;
    if (j) {
        d->job_id = j->id;
        d->from = d->to = j->state;
        d->cause = j->stop_cause;
    }
    return d;
}

/* Allocations are copied into an arena; pointers are fixed when the cycle returns, since
 * the arena may move while decisions accumulate. `allocs` holds the arena offset + 1. */
void decision_attach_allocs(struct sched *s, struct sched_decision *d, const struct job *j)
{
    if (!d || j->nallocs == 0)
        return;
    if (grow((void **)&s->dec_allocs, &s->dec_allocs_cap, s->ndec_allocs + j->nallocs,
             sizeof(*s->dec_allocs)) < 0)
        return;
    memcpy(&s->dec_allocs[s->ndec_allocs], j->allocs, j->nallocs * sizeof(*j->allocs));
    d->allocs = (const struct sched_alloc *)(uintptr_t)(s->ndec_allocs + 1);
    d->nallocs = j->nallocs;
    s->ndec_allocs += j->nallocs;
}

/* ------------------------------------------------------------------------------------ */
/* lifecycle                                                                            */

/* ------------------------------------------------------------------------------------ */
/* projects                                                                             */

int sched_project_find(const struct sched *s, const char *name)
{
    for (size_t i = 0; i < s->nprojects; i++)
        if (strcmp(s->projects[i].spec.name, name) == 0)
            return (int)i;
    return -ENOENT;
}

/* Accrue a project's decayed usage up to `now`: U(t) = U(t0)·d + r·τ·(1 - d) with
 * d = 2^-(dt/h) and τ = h/ln 2, which is the exact integral for a constant rate r. */
void project_accrue(struct sched *s, struct project *p, int64_t now)
{
    if (now <= p->usage_at)
        return;
    double h = (double)s->policy.fairshare_half_life_ms / 1000.0;
    double dt = (double)(now - p->usage_at) / 1000.0;
    double d = exp2(-dt / h);
    double tau = h / LN2;
    p->usage = p->usage * d + p->rate * tau * (1.0 - d);
    p->usage_at = now;
}

void projects_accrue(struct sched *s, int64_t now)
{
    for (size_t i = 0; i < s->nprojects; i++)
        project_accrue(s, &s->projects[i], now);
}

/* ------------------------------------------------------------------------------------ */
/* nodes                                                                                */

static bool selset_match_labels(const struct sched *s, const struct node *n, uint32_t selset);

/* Cached per node for the first 63 selector sets (a cluster has few distinct ones); the
 * cache is reset when the node's labels change. */
bool node_matches_selset(const struct sched *s, const struct node *cn, uint32_t selset)
{
    if (selset == 0)
        return true;
    if (selset >= 64)
        return selset_match_labels(s, cn, selset);
    uint64_t bit = 1ULL << selset;
    struct node *n = (struct node *)(uintptr_t)cn;
    if (!(n->sel_known & bit)) {
        n->sel_known |= bit;
        if (selset_match_labels(s, n, selset))
            n->sel_match |= bit;
    }
    return n->sel_match & bit;
}

uint64_t node_selsets(const struct sched *s, const struct node *n)
{
    size_t nsel = s->nselsets < NSELBITS ? s->nselsets : NSELBITS;
    uint64_t all = (nsel >= NSELBITS ? ~0ULL : (1ULL << nsel) - 1) & ~1ULL;
    if ((n->sel_known & all) == all)
        return n->sel_match & all; /* every set's answer is cached (node_matches_selset) */
    uint64_t mask = 0;
    for (size_t k = 1; k < nsel; k++)
        if (node_matches_selset(s, n, (uint32_t)k))
            mask |= 1ULL << k;
    return mask;
}

static bool selset_match_labels(const struct sched *s, const struct node *n, uint32_t selset)
{
    const struct selset *ss = &s->selsets[selset];
    for (int i = 0; i < ss->n; i++) {
        if (ss->pairs[i].expr) {
            const char *expr = strtab_get(&s->strings, ss->pairs[i].value);
            if (!feat_match(expr, n->labels, n->nlabels))
                return false;
            continue;
        }
        bool found = false;
        for (int k = 0; k < n->nlabels; k++) {
            if (n->label_ids[k].key == ss->pairs[i].key &&
                n->label_ids[k].value == ss->pairs[i].value) {
                found = true;
                break;
            }
        }
        if (found == ss->pairs[i].negate)
            return false;
    }
    return true;
}

/* The reserved zone: nodes labelled with the reserved label, in node order, as long as
 * their GPUs stay within reserved_max_ratio of all GPUs. */
static bool same_profile(const struct node *a, const struct node *b)
{
    if (a->gpu_type != b->gpu_type || a->gpus != b->gpus || a->cpus != b->cpus ||
        a->mem_mb != b->mem_mb || a->reserved != b->reserved || a->nlabels != b->nlabels)
        return false;
    for (int i = 0; i < a->nlabels; i++)
        if (a->label_ids[i].key != b->label_ids[i].key ||
            a->label_ids[i].value != b->label_ids[i].value)
            return false;
    return true;
}

/* Group the nodes into profiles (done lazily, before a submission needs them). */
void profiles_refresh(struct sched *s)
{
    if (!s->profiles_dirty)
        return;
    s->nprofiles = 0;
    size_t cap = s->profiles_cap;
    for (size_t i = 0; i < s->nnodes; i++) {
        size_t p = 0;
        while (p < s->nprofiles && !same_profile(&s->nodes[s->profile_node[p]], &s->nodes[i]))
            p++;
        if (p == s->nprofiles) {
            size_t cap2 = cap;
            if (grow((void **)&s->profile_node, &cap, p + 1, sizeof(*s->profile_node)) < 0 ||
                grow((void **)&s->profile_count, &cap2, p + 1, sizeof(*s->profile_count)) < 0)
                return; /* stays dirty: validation falls back to every node */
            s->profile_node[p] = (uint32_t)i;
            s->profile_count[p] = 0;
            s->nprofiles++;
        }
        s->profile_count[p]++;
    }
    s->profiles_cap = cap;
    s->profiles_dirty = false;
}

int sched_node_find(const struct sched *s, const char *name)
{
    uint32_t id = strtab_find(&s->strings, name);
    uint64_t idx;
    if (!id || !u64map_get(&s->node_index, id, &idx))
        return -ENOENT;
    return (int)idx;
}

/* ------------------------------------------------------------------------------------ */
/* job state bookkeeping                                                                */

bool job_outranks(const struct sched *s, const struct job *a, const struct job *b)
{
    (void)s;
    if (a->key1 != b->key1)
        return a->key1 > b->key1;
    if (a->submit_ms != b->submit_ms)
        return a->submit_ms < b->submit_ms;
    return a->id < b->id;
}

const struct sched_alloc *job_alloc_on(const struct job *j, uint32_t node)
{
    for (int i = 0; i < j->nallocs; i++)
        if (j->allocs[i].node == node)
            return &j->allocs[i];
    return NULL;
}

static int cmp_release(const void *a, const void *b)
{
    const struct release *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

/* The node's releases in time order, each entry holding the running total released by
 * then. A cache: queries that are const for the model may refresh it. */
const struct node *node_releases(const struct sched *s, const struct node *cn)
{
    struct node *n = (struct node *)(uintptr_t)cn;
    if (!n->rel_dirty)
        return n;
    size_t cap = (size_t)n->rel_cap;
    if (grow((void **)&n->rel, &cap, n->jobs.n + 1, sizeof(*n->rel)) < 0) {
        n->nrel = 0;
        return n; /* stays dirty: retried next time; meanwhile nothing is released */
    }
    n->rel_cap = (int)cap;
    uint32_t idx = (uint32_t)(n - s->nodes);
    int nr = 0;
    for (uint32_t i = 0; i < n->jobs.n; i++) {
        const struct job *j = &s->jobs[n->jobs.v[i]];
        const struct sched_alloc *al = job_alloc_on(j, idx);
        int64_t e = job_expected_end(s, j);
        if (al && e < NEVER)
            n->rel[nr++] = (struct release){e, al->gpus, al->cpus, al->mem_mb};
    }
    qsort(n->rel, nr, sizeof(*n->rel), cmp_release);
    for (int i = 1; i < nr; i++) {
        n->rel[i].gpus += n->rel[i - 1].gpus;
        n->rel[i].cpus += n->rel[i - 1].cpus;
        n->rel[i].mem += n->rel[i - 1].mem;
    }
    n->nrel = nr;
    n->rel_dirty = false;
    return n;
}
