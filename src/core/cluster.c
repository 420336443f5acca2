/*
 * cluster.c - the cluster entry points (floor 3): creating and destroying a scheduler,
 * the policy, projects and nodes. A node that goes down ends its jobs through the job
 * events (jobs.c sched_job_ended), as an agent report would.
 */
#include "core/sched.h"
#include "core/types.h"
#include "core/containers.h"
#include "core/policy.h"
#include "core/model.h"
#include "core/arrays.h"
#include "core/group.h"
#include "core/deadlines.h"
#include "core/changes.h"
#include "core/nodes.h"
#include "core/avail.h"
#include "core/victims.h"
#include "core/claims.h"
#include "core/lifecycle.h"
#include "core/order.h"
#include "core/topo.h"
#include "core/warm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void sched_destroy(struct sched *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->jobs_cap; i++)
        if (s->jobs[i].id)
            job_free_parts(&s->jobs[i]);
    free(s->jobs);
    free(s->look_bits);
    free(s->walked_bits);
    free(s->slot_project);
    free(s->changed_bits);
    free(s->listed_bits);
    free(s->claims_moved);
    u32vec_release(&s->free_slots);
    u64map_release(&s->job_index);
    warm_release(s);
    for (size_t i = 0; i < s->nnodes; i++) {
        free(s->nodes[i].labels);
        free(s->nodes[i].label_ids);
        free(s->nodes[i].claims);
        free(s->nodes[i].snap);
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
    topo_release(s);
    free(s->topo_scratch);
    u64map_release(&s->shape_index);
    for (size_t i = 0; i < s->nselsets; i++)
        free(s->selsets[i].pairs);
    free(s->selsets);
    free(s->order);
    free(s->order_new);
    free(s->sort_pairs);
    free(s->sort_spare);
    free(s->starving);
    free(s->starving_pos);
    free(s->profile_node);
    free(s->profile_count);
    u64map_release(&s->node_index);
    for (size_t i = 0; i < s->nres; i++) {
        free(s->res[i].nodes);
        free(s->res[i].victims);
    }
    free(s->res);
    free(s->res_live_bits);
    free(s->res_ordinary_bits);
    reservation_hints_clear(s);
    free(s->hints);
    free(s->heap);
    u64map_release(&s->arrays);
    array_counts_free(s);
    free(s->dec);
    free(s->dec_allocs);
    free(s->plan_scratch);
    free(s->cand_scratch);
    for (int i = 0; i < PLAN_MEMOS; i++)
        free(s->plan_memos[i].nodes);
    strtab_release(&s->strings);
    free(s);
}

const struct sched_policy *sched_get_policy(const struct sched *s)
{
    return &s->policy;
}

/* A new policy may not drop a tier or class still in use. Which of today's tiers and
 * classes it drops is found by name once; only then are the projects and jobs looked at,
 * by index (an apply that drops nothing, as every `docket apply` of an unchanged file,
 * walked 100,000 jobs and compared their names: 70 % of a no-op apply, issue 34). */
static int policy_in_use_check(const struct sched *s, const struct sched_policy *p,
                               struct sched_error *err)
{
    bool tier_gone[SCHED_MAX_TIERS] = {false}, class_gone[SCHED_MAX_CLASSES] = {false};
    bool any = false;
    for (int t = 0; t < s->policy.ntiers; t++)
        any |= tier_gone[t] = policy_tier_find(p, s->policy.tiers[t].name) < 0;
    for (int c = 0; c < s->policy.nclasses; c++)
        any |= class_gone[c] = policy_class_find(p, s->policy.classes[c].name) < 0;
    if (!any)
        return 0;
    for (size_t i = 0; i < s->nprojects; i++)
        if (tier_gone[s->projects[i].tier])
            return err_set(err, -EBUSY, "tiers", "tier '%s' is used by project '%s'",
                           s->policy.tiers[s->projects[i].tier].name, s->projects[i].spec.name);
    for (size_t i = 0; i < s->jobs_cap; i++) {
        const struct job *j = &s->jobs[i];
        if (!j->id)
            continue;
        if (tier_gone[j->tier])
            return err_set(err, -EBUSY, "tiers", "tier '%s' is used by job %llu",
                           s->policy.tiers[j->tier].name, (unsigned long long)j->id);
        if (class_gone[j->klass])
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

/* Count every running job again as a victim under the policy (min_runtime, protection,
 * classes, tiers). */
static void victims_recount(struct sched *s)
{
    for (size_t i = 0; i < s->jobs_cap; i++) {
        struct job *j = &s->jobs[i];
        if (j->id && j->nallocs) {
            victim_mark(s, j, false);
            victim_rules_after_policy(s, j, s->now);
        }
    }
}

/* A policy whose tiers and classes are as they were (indices stay): each changed part voids
 * what read it, and nothing else. The sticky reservations (preemptors', starving jobs')
 * are promises and stay; ordinary ones are made again by the next walk anyway. */
static int policy_apply_parts(struct sched *s, const struct sched_policy *p, unsigned diff)
{
    if (diff & POLICY_ORDER)
        projects_accrue(s, s->now); /* usage so far at the old weights */
    s->policy = *p;
    if (diff == POLICY_KNOBS)
        return 0; /* read afresh where used: nothing derived keeps them */
    if (diff & POLICY_GROUPS)
        groups_sync_policy(s);
    /* who may take what (pools, victims, reclaim) and the priorities a memo states */
    if (diff & (POLICY_ORDER | POLICY_ZONE | POLICY_GUARDS | POLICY_GROUPS))
        s->memo_epoch++;
    if (diff & POLICY_ZONE) {
        s->reserved_min_rank = policy_tier_find(p, p->reserved_min_tier);
        reserved_zone_recompute(s);
    }
    if (diff & (POLICY_ORDER | POLICY_ZONE | POLICY_GROUPS | POLICY_BACKFILL))
        reservations_drop_all(s, true);
    if (diff & POLICY_GUARDS)
        victims_recount(s);
    /* keys, shares, and the pool rules of shapes (max_preemptions decides whether a
       low job may borrow the reserved zone) */
    if (diff & (POLICY_ORDER | POLICY_ZONE | POLICY_GROUPS | POLICY_GUARDS))
        s->order_dirty = true;
    return 0;
}

int sched_set_policy(struct sched *s, const struct sched_policy *p, struct sched_error *err)
{
    int rc = sched_policy_check(s, p, err);
    if (rc)
        return rc;
    unsigned diff = policy_diff(&s->policy, p);
    if (diff == 0)
        return 0; /* the same policy (docket apply of an unchanged file): every promise holds */
    if (!(diff & (POLICY_TIERS | POLICY_CLASSES)))
        return policy_apply_parts(s, p, diff);
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
    victims_recount(s);
    s->order_dirty = true;
    s->rewatch = true;
    return 0;
}

void sched_project_spec_init(struct sched_project_spec *p)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->tier, sizeof(p->tier), "normal");
    p->gpu_limit = p->max_running = p->max_queued = -1;
    p->user_max_running = p->user_gpu_limit = -1;
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
    double old_guarantee = pr->spec.guarantee_gpus;
    pr->spec = *p;
    pr->tier = (uint8_t)policy_tier_find(&s->policy, p->tier);
    /* what reads a project's guarantee and limits: the quiet proofs (its jobs' admission,
       whether it may reclaim: project_changes), and the reclaim memos (over its guarantee,
       its jobs may be taken by a project under its own: reclaim_epoch). A preemption memo
       of a job that may not reclaim reads neither, nor do a reservation's usable proof or a
       placement memo: they keep (a guarantee or limit flip voided them all, and every job
       holding a reservation searched the whole cluster again: 16 times a job end, issue
       34). A new project, its tier or its pause moves the queue and every memo. */
    s->project_changes++;
    if (old_guarantee != p->guarantee_gpus)
        s->reclaim_epoch++;
    if (idx < 0 || old_tier != pr->tier || was_paused != p->paused) {
        s->order_dirty = true;
        s->memo_epoch++;
    }
    project_share_refresh(s, pr);
    return 0;
}

int sched_project_storage_hold(struct sched *s, const char *project, const char *why,
                               struct sched_error *err)
{
    int idx = sched_project_find(s, project);
    if (idx < 0)
        return err_set(err, -ENOENT, "project", "unknown project '%s'", project);
    struct project *p = &s->projects[idx];
    if (strcmp(p->storage_hold, why) == 0)
        return 0;
    bool changed = !p->storage_hold[0] != !why[0];
    snprintf(p->storage_hold, sizeof(p->storage_hold), "%s", why);
    if (changed) { /* as a pause: the walk and the memos see the project anew */
        s->order_dirty = true;
        s->memo_epoch++;
    }
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
    /* its jobs' tiers moved, and nothing else: theirs made again, not the whole queue's */
    order_project_rerank(s, (uint32_t)idx);
    return 0;
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
    victim_sel_node(s, n, -1); /* its victims leave the selector sets it matched ... */
    free(n->labels);
    free(n->label_ids);
    n->sel_known = n->sel_match = 0;
    node_moved(s, n);
    n->labels = copy;
    n->label_ids = ids;
    n->nlabels = nlabels;
    victim_sel_node(s, n, 1); /* ... and join those it matches now */
    return 0;
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
    bool shrinks = spec->gpus < n->gpus || spec->cpus < n->cpus || spec->mem_mb < n->mem_mb;
    if (n->in_bucket)
        bucket_remove(s, (uint32_t)idx);
    n->gpu_type = (int16_t)type;
    n->gpus = spec->gpus;
    n->gpu_beyond_mask = n->gpus < 64 ? n->gpu_used_mask & ~((1ULL << n->gpus) - 1) : 0;
    n->cpus = spec->cpus;
    node_profile_touch(s, n);
    n->mem_mb = spec->mem_mb;
    n->gpu_mem_mb = spec->gpu_mem_mb;
    s->zone_dirty = true;
    s->profiles_dirty = true;
    node_set_state_internal(s, n, spec->state);
    /* a promise made on the room it had cannot stand on less: every reservation there, sticky
       ones too, is made again by the next walk (a node event: docs/scheduling.md) */
    while (shrinks && n->nclaims > 0)
        reservation_drop(s, n->claims[0].res);
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
    /* no full refresh, and no reservation dropped: nothing in the queue's keys reads
       labels, and what does read them (selector matches, static reasons, the reservations'
       usable proofs, the placement and preemption memos) reads node_epoch, which
       node_labels_set moved. A reservation on this node that its job may no longer use is
       given back when its job is walked (reservation_usable); one elsewhere stays, at worst
       late, as after a job that ended early (docs/scheduling.md §6). The refresh made a
       relabel cost 10 times a job end, and making every ordinary reservation again 6 times
       (issue 34); property seed 3673, which once needed the refresh, needed the change log
       of a cancelled victim's nodes (docs/scheduling.md) */
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Nothing else moves: no cache reads the warm sets (warm.c), and placement asks them
 * afresh each time it orders the nodes of a bucket. */
int sched_node_set_warm(struct sched *s, const char *node, const char *const *keys, int nkeys,
                        struct sched_error *err)
{
    int idx = sched_node_find(s, node);
    if (idx < 0)
        return err_set(err, -ENOENT, "node", "unknown node '%s'", node);
    if (nkeys < 0 || nkeys > SCHED_MAX_WARM)
        return err_set(err, -EINVAL, "warm", "at most %d environments warm on a node, not %d",
                       SCHED_MAX_WARM, nkeys);
    uint32_t ids[SCHED_MAX_WARM];
    for (int i = 0; i < nkeys; i++) {
        size_t len = keys[i] ? bounded_len(keys[i], SCHED_ENV_MAX) : 0;
        if (len == 0 || len >= SCHED_ENV_MAX)
            return err_set(err, -EINVAL, "warm", "an environment key is 1 to %d bytes",
                           SCHED_ENV_MAX - 1);
    }
    for (int i = 0; i < nkeys; i++)
        if (!(ids[i] = strtab_intern(&s->strings, keys[i])))
            return err_set(err, -ENOMEM, "", "out of memory");
    qsort(ids, (size_t)nkeys, sizeof(ids[0]), cmp_u32);
    int n = 0;
    for (int i = 0; i < nkeys; i++)
        if (n == 0 || ids[n - 1] != ids[i])
            ids[n++] = ids[i];
    if (node_warm_replace(s, &s->nodes[idx], ids, n) < 0)
        return err_set(err, -ENOMEM, "", "out of memory");
    return 0;
}

bool sched_node_warm(const struct sched *s, uint32_t index, const char *env)
{
    uint32_t id = env && env[0] ? strtab_find(&s->strings, env) : 0;
    return index < s->nnodes && id && node_warm_has(&s->nodes[index], id);
}

/* Job j loses its part on node n: a gang is stopped (the end comes from its other
 * agents), a job of one node ends NODE_FAIL now. */
static void job_fail_on_node(struct sched *s, struct job *j, const struct node *n, int64_t now)
{
    if (j->nallocs > 1) {
        /* a gang lost one node: kill the rest, the end comes from the agents; the kill
         * carries the state it left (RUNNING -> STOPPING), so the job's events have
         * every state change */
        enum sched_job_state was = j->state;
        if (j->state != SCHED_STOPPING) {
            j->stop_cause = SCHED_STOP_NODE_FAIL;
            job_set_state(s, j, SCHED_STOPPING);
            j->stop_ms = now;
            j->kill_at_ms = now;
            job_nodes_touch(s, j); /* its release moves to now */
        }
        struct sched_decision *d = decision_push(s, SCHED_D_KILL, j);
        if (d) {
            d->from = was;
            d->cause = SCHED_STOP_NODE_FAIL;
            snprintf(d->detail, sizeof(d->detail), "node %s failed", n->name);
            decision_attach_allocs(s, d, j);
        }
        j->flags |= JF_KILL_SENT;
        return;
    }
    struct sched_error e;
    j->stop_cause = j->stop_cause == SCHED_STOP_NONE ? SCHED_STOP_NODE_FAIL : j->stop_cause;
    int rc = sched_job_ended(s, j->id, SCHED_EXIT_LOST, 0, now, &e);
    (void)rc; /* the job is live and holds resources: it cannot fail */
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
        if (j->id && j->nallocs > 0)
            job_fail_on_node(s, j, n, now);
    }
    free(slots);
}

int sched_job_lost_on(struct sched *s, uint64_t id, const char *node, int64_t now,
                      struct sched_error *err)
{
    int idx = sched_node_find(s, node);
    if (idx < 0)
        return err_set(err, -ENOENT, "node", "unknown node '%s'", node);
    struct job *j = job_find(s, id);
    if (!j)
        return err_set(err, -ENOENT, "job", "unknown job %llu", (unsigned long long)id);
    bool there = false;
    for (int k = 0; k < j->nallocs; k++)
        there = there || j->allocs[k].node == (uint32_t)idx;
    if (!there) /* holds nothing there (nallocs is 0 once it holds nothing) */
        return err_set(err, -EINVAL, "job", "job %llu does not run on '%s'", (unsigned long long)id,
                       node);
    if (j->state == SCHED_STOPPING && j->stop_cause == SCHED_STOP_NODE_FAIL &&
        (j->flags & JF_KILL_SENT))
        return 0; /* a gang already stopped for a lost node: its end comes from the agents */
    s->now = now;
    job_fail_on_node(s, j, &s->nodes[idx], now);
    return 0;
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
    if (st == SCHED_NODE_DOWN)
        node_fail_jobs(s, n, now);
    node_set_state_internal(s, n, st);
    /* the ordinary reservations stay, as after a relabel (sched_node_set_labels): one on
       this node is given back when its job is walked (reservation_usable reads node_epoch,
       which the state moved); sticky ones on a dead node cannot hold */
    for (size_t r = res_next(s, 0, false); r < s->nres; r = res_next(s, r + 1, false)) {
        for (int k = 0; k < s->res[r].nnodes; k++)
            if (s->res[r].nodes[k] == (uint32_t)idx && !node_schedulable(n)) {
                reservation_drop(s, (uint32_t)r);
                break;
            }
    }
    return 0;
}
