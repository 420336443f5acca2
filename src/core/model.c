/*
 * model.c - the cluster model: creation, projects, nodes, the job slab and the job life
 * cycle (start, release, requeue, finish), and the decision queue. Policy decisions are
 * made in cycle.c, place.c, reserve.c and preempt.c; this file keeps the books straight.
 */
#include "core/internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int type_intern(struct sched *s, const char *name)
{
    if (!name[0])
        return 0;
    int t = type_find(s, name);
    if (t > 0)
        return t;
    if (s->ntypes >= NTYPES)
        return -ENOSPC;
    snprintf(s->gpu_types[s->ntypes], SCHED_NAME_MAX, "%s", name);
    return s->ntypes++;
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

struct sched *sched_create(const struct sched_policy *policy, struct sched_error *err)
{
    struct sched_policy def;
    if (!policy) {
        sched_policy_defaults(&def);
        policy = &def;
    }
    if (policy_validate(policy, err) < 0) {
        errno = EINVAL;
        return NULL;
    }
    struct sched *s = calloc(1, sizeof(*s));
    if (!s) {
        err_set(err, -ENOMEM, "", "out of memory");
        return NULL;
    }
    s->policy = *policy;
    s->reserved_min_rank = policy_tier_find(policy, policy->reserved_min_tier);
    s->ntypes = 1;
    s->cycle = 1;
    s->node_epoch = 1;
    s->order_dirty = true;
    s->last_refresh = INT64_MIN / 2;
    s->res_refreshed = INT64_MIN / 2;
    memset(s->buckets, 0xff, sizeof(s->buckets));
    /* selset 0 is the empty set */
    if (grow((void **)&s->selsets, &s->selsets_cap, 1, sizeof(*s->selsets)) < 0) {
        free(s);
        err_set(err, -ENOMEM, "", "out of memory");
        return NULL;
    }
    s->selsets[0].pairs = NULL;
    s->selsets[0].n = 0;
    s->nselsets = 1;
    groups_sync_policy(s);
    return s;
}

static void job_free_parts(struct job *j)
{
    free(j->deps);
    free(j->allocs);
    free(j->selectors);
    free(j->dependents);
}

void sched_destroy(struct sched *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->jobs_cap; i++)
        if (s->jobs[i].id)
            job_free_parts(&s->jobs[i]);
    free(s->jobs);
    u32vec_release(&s->free_slots);
    u64map_release(&s->job_index);
    for (size_t i = 0; i < s->nnodes; i++) {
        free(s->nodes[i].labels);
        free(s->nodes[i].label_ids);
        free(s->nodes[i].claims);
        free(s->nodes[i].rel);
        free(s->nodes[i].prof);
        u32vec_release(&s->nodes[i].jobs);
    }
    free(s->nodes);
    free(s->projects);
    free(s->groups);
    changes_free(s);
    u64map_release(&s->user_counts);
    free(s->ucounts);
    free(s->shapes);
    u64map_release(&s->shape_index);
    for (size_t i = 0; i < s->nselsets; i++)
        free(s->selsets[i].pairs);
    free(s->selsets);
    free(s->order);
    free(s->order_new);
    free(s->starving);
    free(s->profile_node);
    free(s->profile_count);
    u64map_release(&s->node_index);
    for (size_t i = 0; i < s->nres; i++) {
        free(s->res[i].nodes);
        free(s->res[i].victims);
    }
    free(s->res);
    free(s->heap);
    u64map_release(&s->arrays);
    free(s->array_counts);
    free(s->dec);
    free(s->dec_allocs);
    strtab_release(&s->strings);
    free(s);
}

const struct sched_policy *sched_get_policy(const struct sched *s)
{
    return &s->policy;
}

/* A new policy may not drop a tier or class still in use. */
static int policy_in_use_check(const struct sched *s, const struct sched_policy *p,
                               struct sched_error *err)
{
    for (size_t i = 0; i < s->nprojects; i++)
        if (policy_tier_find(p, s->policy.tiers[s->projects[i].tier].name) < 0)
            return err_set(err, -EBUSY, "tiers", "tier '%s' is used by project '%s'",
                           s->policy.tiers[s->projects[i].tier].name, s->projects[i].spec.name);
    for (size_t i = 0; i < s->jobs_cap; i++) {
        const struct job *j = &s->jobs[i];
        if (!j->id)
            continue;
        if (policy_tier_find(p, s->policy.tiers[j->tier].name) < 0)
            return err_set(err, -EBUSY, "tiers", "tier '%s' is used by job %llu",
                           s->policy.tiers[j->tier].name, (unsigned long long)j->id);
        if (policy_class_find(p, s->policy.classes[j->klass].name) < 0)
            return err_set(err, -EBUSY, "classes", "class '%s' is used by job %llu",
                           s->policy.classes[j->klass].name, (unsigned long long)j->id);
    }
    return 0;
}

int sched_policy_check(const struct sched *s, const struct sched_policy *p, struct sched_error *err)
{
    int rc = policy_validate(p, err);
    return rc ? rc : policy_in_use_check(s, p, err);
}

int sched_set_policy(struct sched *s, const struct sched_policy *p, struct sched_error *err)
{
    int rc = sched_policy_check(s, p, err);
    if (rc)
        return rc;
    /* remap tier and class indices by name */
    for (size_t i = 0; i < s->nprojects; i++)
        s->projects[i].tier =
            (uint8_t)policy_tier_find(p, s->policy.tiers[s->projects[i].tier].name);
    for (size_t i = 0; i < s->jobs_cap; i++) {
        struct job *j = &s->jobs[i];
        if (!j->id)
            continue;
        j->tier = (uint8_t)policy_tier_find(p, s->policy.tiers[j->tier].name);
        j->klass = (uint8_t)policy_class_find(p, s->policy.classes[j->klass].name);
    }
    projects_accrue(s, s->now);
    s->policy = *p;
    s->reserved_min_rank = policy_tier_find(p, p->reserved_min_tier);
    groups_sync_policy(s);
    s->memo_epoch++;
    reserved_zone_recompute(s);
    reservations_drop_all(s, false);
    /* who may be preempted follows the policy (min_runtime, protection, classes, tiers):
       count every running job again under it */
    for (size_t i = 0; i < s->jobs_cap; i++) {
        struct job *j = &s->jobs[i];
        if (j->id && j->nallocs) {
            victim_mark(s, j, false);
            victim_eligibility_update(s, j, s->now);
        }
    }
    s->order_dirty = true;
    s->rewatch = true;
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* projects                                                                             */

void sched_project_spec_init(struct sched_project_spec *p)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->tier, sizeof(p->tier), "normal");
    p->gpu_limit = p->max_running = p->max_queued = -1;
    p->user_max_running = p->user_gpu_limit = -1;
}

int sched_project_find(const struct sched *s, const char *name)
{
    for (size_t i = 0; i < s->nprojects; i++)
        if (strcmp(s->projects[i].spec.name, name) == 0)
            return (int)i;
    return -ENOENT;
}

static int project_spec_check(const struct sched *s, const struct sched_project_spec *p,
                              struct sched_error *err)
{
    if (!p->name[0] || bounded_len(p->name, SCHED_NAME_MAX) >= SCHED_NAME_MAX)
        return err_set(err, -EINVAL, "name", "a project needs a name of 1-63 characters");
    if (policy_tier_find(&s->policy, p->tier) < 0)
        return err_set(err, -EINVAL, "tier", "unknown tier '%s'", p->tier);
    if (!(p->guarantee_gpus >= 0) || p->guarantee_gpus > 1e7)
        return err_set(err, -EINVAL, "guarantee_gpus", "guarantee must be within 0..1e7");
    const struct {
        const char *f;
        int v;
    } lim[] = {{"gpu_limit", p->gpu_limit},
               {"max_running", p->max_running},
               {"max_queued", p->max_queued},
               {"user_max_running", p->user_max_running},
               {"user_gpu_limit", p->user_gpu_limit}};
    for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++)
        if (lim[i].v < -1)
            return err_set(err, -EINVAL, lim[i].f, "%s must be -1 (none) or >= 0", lim[i].f);
    return 0;
}

int sched_project_upsert(struct sched *s, const struct sched_project_spec *p,
                         struct sched_error *err)
{
    int rc = project_spec_check(s, p, err);
    if (rc)
        return rc;
    int idx = sched_project_find(s, p->name);
    struct project *pr;
    if (idx < 0) {
        if (grow((void **)&s->projects, &s->projects_cap, s->nprojects + 1, sizeof(*s->projects)) <
            0)
            return err_set(err, -ENOMEM, "", "out of memory");
        pr = &s->projects[s->nprojects++];
        memset(pr, 0, sizeof(*pr));
        pr->usage_at = s->now;
        pr->group = NONE32;
    } else {
        pr = &s->projects[idx];
    }
    if (group_attach(s, pr, p->group) < 0) {
        if (idx < 0)
            s->nprojects--;
        return err_set(err, -ENOMEM, "", "out of memory");
    }
    uint8_t old_tier = pr->tier;
    bool was_paused = pr->spec.paused;
    pr->spec = *p;
    pr->tier = (uint8_t)policy_tier_find(&s->policy, p->tier);
    if (idx < 0 || old_tier != pr->tier || was_paused != p->paused)
        s->order_dirty = true;
    s->memo_epoch++; /* its guarantee may have moved (struct preempt_memo) */
    project_share_refresh(s, pr);
    return 0;
}

int sched_project_boost(struct sched *s, const char *project, int levels, int64_t until_ms,
                        int64_t now, struct sched_error *err)
{
    int idx = sched_project_find(s, project);
    if (idx < 0)
        return err_set(err, -ENOENT, "project", "unknown project '%s'", project);
    if (levels < 0 || levels >= s->policy.ntiers)
        return err_set(err, -EINVAL, "levels", "boost must be 0..%d tiers", s->policy.ntiers - 1);
    if (levels > 0 && until_ms <= now)
        return err_set(err, -EINVAL, "until", "a boost must end in the future");
    struct project *p = &s->projects[idx];
    s->now = now;
    p->boost = levels;
    p->boost_until = levels ? until_ms : 0;
    if (levels)
        deadline_push(s, until_ms, (uint64_t)idx, DL_BOOST);
    s->order_dirty = true;
    return 0;
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

static bool selset_match_labels(const struct sched *s, const struct node *n, uint32_t selset)
{
    const struct selset *ss = &s->selsets[selset];
    for (int i = 0; i < ss->n; i++) {
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

static bool node_has_label_ids(const struct node *n, uint32_t kid, uint32_t vid)
{
    for (int i = 0; i < n->nlabels; i++)
        if (n->label_ids[i].key == kid && n->label_ids[i].value == vid)
            return true;
    return false;
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

void reserved_zone_recompute(struct sched *s)
{
    s->profiles_dirty = true;
    s->memo_epoch++; /* pools and borrowers may change (struct preempt_memo) */
    int total = 0;
    for (size_t i = 0; i < s->nnodes; i++)
        total += s->nodes[i].gpus;
    double budget = s->policy.reserved_max_ratio * total;
    int used = 0;
    uint32_t kid = strtab_find(&s->strings, s->policy.reserved_label_key);
    uint32_t vid = strtab_find(&s->strings, s->policy.reserved_label_value);
    for (size_t i = 0; i < s->nnodes; i++) {
        struct node *n = &s->nodes[i];
        bool want =
            kid && vid && node_has_label_ids(n, kid, vid) && used + n->gpus <= budget + 1e-9;
        if (want)
            used += n->gpus;
        if (want != n->reserved) {
            bool in = n->in_bucket;
            if (in)
                bucket_remove(s, (uint32_t)i);
            n->reserved = want;
            if (in)
                bucket_insert(s, (uint32_t)i);
        }
    }
}

static int node_labels_set(struct sched *s, struct node *n, const struct sched_label *labels,
                           int nlabels, struct sched_error *err)
{
    if (nlabels < 0 || nlabels > SCHED_MAX_LABELS)
        return err_set(err, -EINVAL, "labels", "at most %d labels per node", SCHED_MAX_LABELS);
    struct sched_label *copy = NULL;
    struct sel_pair *ids = NULL;
    if (nlabels) {
        copy = malloc(nlabels * sizeof(*copy));
        ids = malloc(nlabels * sizeof(*ids));
        if (!copy || !ids) {
            free(copy);
            free(ids);
            return err_set(err, -ENOMEM, "", "out of memory");
        }
    }
    for (int i = 0; i < nlabels; i++) {
        if (!labels[i].key[0]) {
            free(copy);
            free(ids);
            return err_set(err, -EINVAL, "labels", "a label needs a key");
        }
        copy[i] = labels[i];
        ids[i].key = strtab_intern(&s->strings, labels[i].key);
        ids[i].value = strtab_intern(&s->strings, labels[i].value);
        ids[i].negate = false;
        if (!ids[i].key || !ids[i].value) {
            free(copy);
            free(ids);
            return err_set(err, -ENOMEM, "", "out of memory");
        }
    }
    free(n->labels);
    free(n->label_ids);
    n->sel_known = n->sel_match = 0;
    s->node_epoch++;
    n->labels = copy;
    n->label_ids = ids;
    n->nlabels = nlabels;
    return 0;
}

int sched_node_find(const struct sched *s, const char *name)
{
    uint32_t id = strtab_find(&s->strings, name);
    uint64_t idx;
    if (!id || !u64map_get(&s->node_index, id, &idx))
        return -ENOENT;
    return (int)idx;
}

/* Recompute the reserved zone once after a burst of node changes. */
void zone_refresh(struct sched *s)
{
    if (s->zone_dirty) {
        reserved_zone_recompute(s);
        s->zone_dirty = false;
    }
}

static int node_spec_check(const struct sched_node_spec *n, struct sched_error *err)
{
    if (!n->name[0] || bounded_len(n->name, SCHED_NAME_MAX) >= SCHED_NAME_MAX)
        return err_set(err, -EINVAL, "name", "a node needs a name of 1-63 characters");
    if (n->gpus < 0 || n->gpus > SCHED_MAX_NODE_GPUS)
        return err_set(err, -EINVAL, "gpus", "a node has 0..%d GPUs", SCHED_MAX_NODE_GPUS);
    if (n->gpus > 0 && !n->gpu_type[0])
        return err_set(err, -EINVAL, "gpu_type", "a node with GPUs needs a GPU type");
    if (n->cpus < 0 || n->cpus > 1 << 20)
        return err_set(err, -EINVAL, "cpus", "cpus out of range");
    if (n->mem_mb < 0 || n->gpu_mem_mb < 0)
        return err_set(err, -EINVAL, "mem_mb", "memory must not be negative");
    if ((unsigned)n->state >= SCHED_NODE_STATE_COUNT)
        return err_set(err, -EINVAL, "state", "unknown node state");
    return 0;
}

int sched_node_upsert(struct sched *s, const struct sched_node_spec *spec, int64_t now,
                      struct sched_error *err)
{
    int rc = node_spec_check(spec, err);
    if (rc)
        return rc;
    s->now = now;
    int type = type_intern(s, spec->gpu_type);
    if (type < 0)
        return err_set(err, -ENOSPC, "gpu_type", "too many GPU types (max %d)",
                       SCHED_MAX_GPU_TYPES);
    int idx = sched_node_find(s, spec->name);
    struct node *n;
    if (idx < 0) {
        if (grow((void **)&s->nodes, &s->nodes_cap, s->nnodes + 1, sizeof(*s->nodes)) < 0)
            return err_set(err, -ENOMEM, "", "out of memory");
        uint32_t name_id = strtab_intern(&s->strings, spec->name);
        if (!name_id || u64map_put(&s->node_index, name_id, s->nnodes) < 0)
            return err_set(err, -ENOMEM, "", "out of memory");
        idx = (int)s->nnodes++;
        n = &s->nodes[idx];
        memset(n, 0, sizeof(*n));
        n->prev = n->next = NONE32;
        snprintf(n->name, sizeof(n->name), "%s", spec->name);
        n->state = SCHED_NODE_DOWN;
    } else {
        n = &s->nodes[idx];
        if (n->gpu_type != type && n->gpus_used > 0)
            return err_set(err, -EBUSY, "gpu_type",
                           "node '%s' runs jobs on its GPUs: drain it before changing the type",
                           spec->name);
    }
    if (node_labels_set(s, n, spec->labels, spec->nlabels, err) < 0)
        return err->code;
    if (n->in_bucket)
        bucket_remove(s, (uint32_t)idx);
    n->gpu_type = (int16_t)type;
    n->gpus = spec->gpus;
    n->cpus = spec->cpus;
    node_profile_touch(s, n);
    n->mem_mb = spec->mem_mb;
    n->gpu_mem_mb = spec->gpu_mem_mb;
    s->zone_dirty = true;
    s->profiles_dirty = true;
    node_set_state_internal(s, n, spec->state);
    reservations_drop_all(s, true);
    return 0;
}

int sched_node_set_labels(struct sched *s, const char *node, const struct sched_label *labels,
                          int nlabels, struct sched_error *err)
{
    int idx = sched_node_find(s, node);
    if (idx < 0)
        return err_set(err, -ENOENT, "node", "unknown node '%s'", node);
    int rc = node_labels_set(s, &s->nodes[idx], labels, nlabels, err);
    if (rc)
        return rc;
    s->zone_dirty = true;
    s->profiles_dirty = true;
    reservations_drop_all(s, true);
    s->order_dirty = true; /* selectors' static answers may change */
    return 0;
}

/* Set the state and keep the bucket index in step: only UP nodes take new work. */
void node_set_state_internal(struct sched *s, struct node *n, enum sched_node_state st)
{
    uint32_t idx = (uint32_t)(n - s->nodes);
    s->node_epoch++;
    if (st == SCHED_NODE_DRAINING && n->jobs.n == 0)
        st = SCHED_NODE_DRAINED;
    n->state = (uint8_t)st;
    bool want = st == SCHED_NODE_UP;
    if (want && !n->in_bucket)
        bucket_insert(s, idx);
    else if (!want && n->in_bucket)
        bucket_remove(s, idx);
}

static void node_fail_jobs(struct sched *s, struct node *n, int64_t now)
{
    /* copy: ending jobs edits n->jobs */
    uint32_t count = n->jobs.n;
    uint32_t *slots = count ? malloc(count * sizeof(*slots)) : NULL;
    if (count && !slots)
        return;
    if (count)
        memcpy(slots, n->jobs.v, count * sizeof(*slots));
    for (uint32_t i = 0; i < count; i++) {
        struct job *j = &s->jobs[slots[i]];
        if (!j->id || j->nallocs == 0)
            continue;
        if (j->nallocs > 1) {
            /* a gang lost one node: kill the rest, the end comes from the agents */
            if (j->state != SCHED_STOPPING) {
                j->stop_cause = SCHED_STOP_NODE_FAIL;
                job_set_state(s, j, SCHED_STOPPING);
                j->stop_ms = now;
                j->kill_at_ms = now;
                job_nodes_touch(s, j); /* its release moves to now */
            }
            struct sched_decision *d = decision_push(s, SCHED_D_KILL, j);
            if (d) {
                d->cause = SCHED_STOP_NODE_FAIL;
                snprintf(d->detail, sizeof(d->detail), "node %s failed", n->name);
                decision_attach_allocs(s, d, j);
            }
            j->flags |= JF_KILL_SENT;
            continue;
        }
        struct sched_error e;
        j->stop_cause = j->stop_cause == SCHED_STOP_NONE ? SCHED_STOP_NODE_FAIL : j->stop_cause;
        int rc = sched_job_ended(s, j->id, SCHED_EXIT_LOST, 0, now, &e);
        (void)rc; /* the job is live and holds resources: it cannot fail */
    }
    free(slots);
}

int sched_node_set_state(struct sched *s, const char *node, enum sched_node_state st, int64_t now,
                         struct sched_error *err)
{
    int idx = sched_node_find(s, node);
    if (idx < 0)
        return err_set(err, -ENOENT, "node", "unknown node '%s'", node);
    if ((unsigned)st >= SCHED_NODE_STATE_COUNT)
        return err_set(err, -EINVAL, "state", "unknown node state");
    s->now = now;
    struct node *n = &s->nodes[idx];
    if (st == SCHED_NODE_DOWN || st == SCHED_NODE_UNREACHABLE)
        node_fail_jobs(s, n, now);
    node_set_state_internal(s, n, st);
    reservations_drop_all(s, true);
    /* sticky reservations on a dead node cannot hold */
    for (size_t r = 0; r < s->nres; r++) {
        if (!s->res[r].live)
            continue;
        for (int k = 0; k < s->res[r].nnodes; k++)
            if (s->res[r].nodes[k] == (uint32_t)idx && !node_schedulable(n)) {
                reservation_drop(s, (uint32_t)r);
                break;
            }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* job state bookkeeping                                                                */

static void node_stopping_add(struct sched *s, const struct job *j, int sign)
{
    for (int i = 0; i < j->nallocs; i++) {
        struct node *n = &s->nodes[j->allocs[i].node];
        n->stopping_gpus += sign * j->allocs[i].gpus;
        n->stopping_cpus += sign * j->allocs[i].cpus;
    }
}

void job_set_state(struct sched *s, struct job *j, enum sched_job_state st)
{
    if ((j->state == SCHED_STOPPING) != (st == SCHED_STOPPING))
        node_stopping_add(s, j, st == SCHED_STOPPING ? 1 : -1);
    s->by_state[j->state]--;
    j->state = (uint8_t)st;
    s->by_state[st]++;
}

static void node_take(struct sched *s, struct job *j, const struct sched_alloc *a)
{
    struct node *n = &s->nodes[a->node];
    n->gpus_used += a->gpus;
    n->cpus_used += a->cpus;
    n->mem_used += a->mem_mb;
    n->gpu_used_mask |= a->gpu_mask;
    (void)u32vec_push(&n->jobs, job_slot(s, j));
    node_holders_touch(s, n);
    if (n->in_bucket)
        bucket_update(s, a->node);
    if (n->reserved && job_pool_rule(s, j, job_eff_rank(s, j)) != POOL_RULE_RESERVED_FIRST)
        j->flags |= JF_BORROWER;
}

/* The job takes `allocs` (copied) and starts now: counters, usage rate, deadlines. */
void job_start(struct sched *s, struct job *j, const struct sched_alloc *allocs, int nallocs)
{
    struct project *p = &s->projects[j->project];
    project_accrue(s, p, s->now);
    free(j->allocs);
    j->allocs = malloc(nallocs * sizeof(*allocs));
    if (!j->allocs)
        nallocs = 0;
    else
        memcpy(j->allocs, allocs, nallocs * sizeof(*allocs));
    j->nallocs = nallocs;
    j->flags &= (uint8_t) ~(JF_BORROWER | JF_KILL_SENT | JF_VICTIM_ELIGIBLE);
    for (int i = 0; i < nallocs; i++)
        node_take(s, j, &allocs[i]);
    if (j->state == SCHED_STOPPING)
        node_stopping_add(s, j, 1); /* restored while stopping */
    int total_gpus = j->gpus * j->nodes;
    bool was_over = p->gpus_in_use > p->spec.guarantee_gpus + 1e-9;
    p->gpus_in_use += total_gpus;
    if (!was_over && p->gpus_in_use > p->spec.guarantee_gpus + 1e-9)
        s->reclaim_epoch++; /* its jobs may now be reclaimed: struct preempt_memo */
    p->running++;
    group_count(s, p, total_gpus, 1);
    p->rate += job_billing_rate(s, j);
    struct user_count *uc = user_count_get(s, j->project, j->user, true);
    if (uc) {
        uc->running++;
        uc->gpus += total_gpus;
    }
    if (j->array_id) {
        uint64_t ai;
        if (u64map_get(&s->arrays, j->array_id, &ai))
            s->array_counts[ai].running++;
    }
    j->start_ms = s->now;
    j->ckpt_ms = s->now;
    if (j->limit_ms > 0)
        deadline_push(s, j->start_ms + j->limit_ms, j->id, DL_LIMIT);
    victim_eligibility_update(s, j, s->now);
}

/* The job's expected end changed (it is being stopped): its nodes' releases move. */
void job_nodes_touch(struct sched *s, const struct job *j)
{
    for (int i = 0; i < j->nallocs; i++)
        node_holders_touch(s, &s->nodes[j->allocs[i].node]);
}

/* Give back everything the job holds; keep its state (the caller sets the next one). */
void job_release_resources(struct sched *s, struct job *j)
{
    if (j->nallocs == 0)
        return;
    struct project *p = &s->projects[j->project];
    project_accrue(s, p, s->now);
    p->rate -= job_billing_rate(s, j);
    if (p->rate < 1e-9)
        p->rate = p->running > 1 ? p->rate : 0;
    int total_gpus = j->gpus * j->nodes;
    p->gpus_in_use -= total_gpus;
    p->running--;
    group_count(s, p, -total_gpus, -1);
    struct user_count *uc = user_count_get(s, j->project, j->user, false);
    if (uc) {
        uc->running--;
        uc->gpus -= total_gpus;
    }
    if (j->array_id) {
        uint64_t ai;
        if (u64map_get(&s->arrays, j->array_id, &ai))
            s->array_counts[ai].running--;
    }
    victim_mark(s, j, false);
    if (j->state == SCHED_STOPPING)
        node_stopping_add(s, j, -1);
    for (int i = 0; i < j->nallocs; i++) {
        const struct sched_alloc *a = &j->allocs[i];
        struct node *n = &s->nodes[a->node];
        n->gpus_used -= a->gpus;
        n->cpus_used -= a->cpus;
        n->mem_used -= a->mem_mb;
        n->gpu_used_mask &= ~a->gpu_mask;
        u32vec_remove_value(&n->jobs, job_slot(s, j));
        node_holders_touch(s, n);
        if (n->in_bucket)
            bucket_update(s, a->node);
        if (n->state == SCHED_NODE_DRAINING && n->jobs.n == 0) {
            node_set_state_internal(s, n, SCHED_NODE_DRAINED);
            struct sched_decision *d = decision_push(s, SCHED_D_NODE_STATE, NULL);
            if (d) {
                d->node = a->node;
                d->node_from = SCHED_NODE_DRAINING;
                d->node_to = SCHED_NODE_DRAINED;
                snprintf(d->detail, sizeof(d->detail), "last job ended");
            }
        }
    }
    free(j->allocs);
    j->allocs = NULL;
    j->nallocs = 0;
    j->flags &= (uint8_t)~JF_BORROWER;
}

/* Back to the queue with the same id and submit time (requeue, retry, preempted). */
void job_to_pending(struct sched *s, struct job *j, int64_t begin_ms)
{
    job_set_state(s, j, SCHED_PENDING);
    j->reason_cycle = 0; /* derived until the next walk looks at it */
    j->stop_cause = SCHED_STOP_NONE;
    j->preemptor = 0;
    j->kill_at_ms = 0;
    j->begin_ms = begin_ms;
    if (begin_ms > s->now)
        deadline_push(s, begin_ms, j->id, DL_BEGIN);
    s->projects[j->project].queued++;
    j->shape = shape_intern(s, j, job_eff_rank(s, j), NULL);
    order_insert(s, j);
    job_mark_eligible(s, j, s->now);
    starvation_watch(s, j, s->now);
}

static void resolve_dependents(struct sched *s, struct job *done, bool ok);

/* Terminal: emit the state decision, settle dependents, drop the job from the core. */
void job_finish(struct sched *s, struct job *j, enum sched_job_state st, const char *detail)
{
    enum sched_job_state from = j->state;
    if (j->reservation != NONE32)
        reservation_drop(s, j->reservation);
    if (from == SCHED_PENDING || from == SCHED_HELD) {
        s->projects[j->project].queued--;
        if (from == SCHED_PENDING) {
            s->shapes[j->shape].pending--;
            order_remove(s, j);
        }
    }
    job_release_resources(s, j);
    job_set_state(s, j, st);
    struct sched_decision *d = decision_push(s, SCHED_D_STATE, j);
    if (d) {
        d->from = from;
        d->to = st;
        d->preemptor = j->preemptor;
        snprintf(d->detail, sizeof(d->detail), "%s", detail ? detail : "");
    }
    resolve_dependents(s, j, st == SCHED_COMPLETED);
    if (j->array_id) {
        uint64_t ai;
        if (u64map_get(&s->arrays, j->array_id, &ai) && --s->array_counts[ai].jobs == 0)
            u64map_del(&s->arrays, j->array_id);
    }
    s->by_state[st]--;
    u64map_del(&s->job_index, j->id);
    uint32_t slot = job_slot(s, j);
    job_free_parts(j);
    memset(j, 0, sizeof(*j));
    (void)u32vec_push(&s->free_slots, slot);
    s->njobs--;
}

static bool dep_satisfied(enum sched_dep_kind k, bool ok)
{
    return k == SCHED_DEP_AFTERANY || (k == SCHED_DEP_AFTEROK) == ok;
}

static void resolve_dependents(struct sched *s, struct job *done, bool ok)
{
    for (int i = 0; i < done->ndependents; i++) {
        struct job *w = &s->jobs[done->dependents[i].slot];
        if (w->id != done->dependents[i].id)
            continue; /* that waiter is gone and its slot reused */
        for (int k = 0; k < w->ndeps; k++) {
            struct job_dep *dep = &w->deps[k];
            if (dep->id != done->id || dep->met)
                continue;
            if (!dep_satisfied(dep->kind, ok)) {
                char why[128];
                snprintf(why, sizeof(why), "dependency on job %llu can never be satisfied",
                         (unsigned long long)done->id);
                job_finish(s, w, SCHED_CANCELLED, why);
                break;
            }
            dep->met = true;
            if (--w->ndeps_unmet == 0 && w->state == SCHED_PENDING) {
                w->reason_cycle = 0; /* no longer Dependency: derived until walked */
                job_mark_eligible(s, w, s->now);
                starvation_watch(s, w, s->now);
            }
        }
    }
}
