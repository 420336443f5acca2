/*
 * jobs.c - job events (floor 3): validation and submission, the agent's reports
 * (running, ended, checkpointed) and the user's actions (cancel, hold, release, requeue).
 * What a job's end means (completed, retried, requeued after preemption ...) is decided
 * here, from how it ended and why it was being stopped (docs/scheduling.md §8).
 */
#include "core/sched.h"
#include "core/types.h"
#include "core/containers.h"
#include "core/policy.h"
#include "core/constraint.h"
#include "core/model.h"
#include "core/deadlines.h"
#include "core/nodes.h"
#include "core/shapes.h"
#include "core/queue.h"
#include "core/claims.h"
#include "core/lifecycle.h"
#include "core/topo.h"
#include "core/arrays.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------ */
/* shapes                                                                               */

/* ------------------------------------------------------------------------------------ */
/* validation                                                                           */

struct resolved {
    int project, tier, klass, gpu_type, gpus, cpus, nodes;
    int64_t mem, limit;
};

static int resolve_names(const struct sched *s, const struct sched_job_spec *sp, struct resolved *r,
                         struct sched_error *err)
{
    r->project = sched_project_find(s, sp->project);
    if (r->project < 0)
        return err_set(err, -EINVAL, "project", "unknown project '%s'", sp->project);
    const struct project *p = &s->projects[r->project];
    if (!sp->user[0] || bounded_len(sp->user, SCHED_NAME_MAX) >= SCHED_NAME_MAX)
        return err_set(err, -EINVAL, "user", "a job needs an owner");
    r->tier = sp->tier[0] ? policy_tier_find(&s->policy, sp->tier) : p->tier;
    if (r->tier < 0)
        return err_set(err, -EINVAL, "tier", "unknown tier '%s'", sp->tier);
    if (r->tier < p->tier)
        return err_set(err, -EINVAL, "tier",
                       "tier '%s' is above project '%s''s tier '%s'; submit at '%s' or below",
                       sp->tier, p->spec.name, s->policy.tiers[p->tier].name,
                       s->policy.tiers[p->tier].name);
    const char *cls = sp->class_name[0] ? sp->class_name : s->policy.default_class;
    r->klass = policy_class_find(&s->policy, cls);
    if (r->klass < 0)
        return err_set(err, -EINVAL, "class", "unknown class '%s'", cls);
    r->gpu_type = -1;
    if (sp->gpu_type[0]) {
        r->gpu_type = type_find_any_case(s, sp->gpu_type);
        if (r->gpu_type < 0)
            return err_set(err, -EINVAL, "gpu_type", "no node has GPU type '%s'", sp->gpu_type);
    }
    return 0;
}

/* A constraint Docket can place: every node of the job meets the same expression. Counts
 * and matching ORs ask for nodes that differ or for one alternative held across a gang,
 * which a placement of alike nodes cannot promise; those are refused with the reason. */
static int check_constraint(const struct sched_job_spec *sp, int nodes, struct sched_error *err)
{
    if (!sp->constraint[0])
        return 0;
    if (bounded_len(sp->constraint, SCHED_CONSTRAINT_MAX) >= SCHED_CONSTRAINT_MAX)
        return err_set(err, -EINVAL, "constraint", "the constraint is longer than %d characters",
                       SCHED_CONSTRAINT_MAX - 1);
    struct feat_shape sh;
    char why[160];
    if (feat_parse(sp->constraint, &sh, why, sizeof(why)) < 0)
        return err_set(err, -EINVAL, "constraint", "%s", why);
    if (sh.counts > 0 && sh.top_count != nodes)
        return err_set(err, -EINVAL, "constraint",
                       "node counts in a constraint ('%s') ask for nodes that differ; Docket "
                       "gives every node of a job the same constraint: drop the count, or "
                       "count all %d node(s) ('a*%d')",
                       sp->constraint, nodes, nodes);
    if (sh.alike && nodes > 1)
        return err_set(err, -EINVAL, "constraint",
                       "a matching OR ('%s') holds %d nodes to one alternative, which Docket "
                       "cannot promise: name one feature, or accept any ('a|b')",
                       sp->constraint, nodes);
    return 0;
}

static int check_sizes(const struct sched *s, const struct sched_job_spec *sp, struct resolved *r,
                       struct sched_error *err)
{
    r->gpus = sp->gpus_per_node;
    r->cpus = sp->cpus_per_node ? sp->cpus_per_node : 1;
    r->nodes = sp->nodes ? sp->nodes : 1;
    r->mem = sp->mem_mb_per_node;
    if (bounded_len(sp->env, SCHED_ENV_MAX) >= SCHED_ENV_MAX)
        return err_set(err, -EINVAL, "template", "an environment key is at most %d bytes",
                       SCHED_ENV_MAX - 1);
    if (r->gpus < 0 || r->gpus > SCHED_MAX_NODE_GPUS)
        return err_set(err, -EINVAL, "gpus", "gpus per node must be 0..%d", SCHED_MAX_NODE_GPUS);
    if (r->gpu_type > 0 && r->gpus == 0)
        return err_set(err, -EINVAL, "gpu_type", "a GPU type needs gpus > 0");
    if (r->cpus < 0 || r->cpus > 1 << 20)
        return err_set(err, -EINVAL, "cpus", "cpus per node out of range");
    if (r->mem < 0 || r->mem > (1LL << 40))
        return err_set(err, -EINVAL, "mem", "memory per node out of range");
    if (r->nodes < 0 || r->nodes > SCHED_MAX_JOB_NODES)
        return err_set(err, -EINVAL, "nodes", "nodes must be 1..%d", SCHED_MAX_JOB_NODES);
    const struct sched_class_spec *c = &s->policy.classes[r->klass];
    r->limit = sp->time_limit_ms ? sp->time_limit_ms : c->default_limit_ms;
    if (sp->time_limit_ms < 0 || sp->time_limit_ms > 366LL * 24 * 3600 * 1000)
        return err_set(err, -EINVAL, "time_limit", "time limit out of range");
    if (c->max_limit_ms > 0 && r->limit > c->max_limit_ms)
        return err_set(err, -EINVAL, "time_limit", "class '%s' allows at most %lld s", c->name,
                       (long long)(c->max_limit_ms / 1000));
    if (sp->signal < 0 || sp->signal > 64)
        return err_set(err, -EINVAL, "signal", "signal %d out of range", sp->signal);
    if (sp->grace_ms < -1 || sp->grace_ms > 24LL * 3600 * 1000)
        return err_set(err, -EINVAL, "grace", "grace out of range");
    if (sp->retries < 0 || sp->retries > c->max_retries)
        return err_set(err, -EINVAL, "retries", "class '%s' allows at most %d retries", c->name,
                       c->max_retries);
    if (sp->retries > 0 && !sp->idempotent)
        return err_set(err, -EINVAL, "retries", "automatic retries need idempotent: true");
    if (sp->array_limit < 0)
        return err_set(err, -EINVAL, "array", "array limit must not be negative");
    if (sp->switches < 0 || sp->switches > SCHED_MAX_JOB_NODES)
        return err_set(err, -EINVAL, "switches", "switches must be 0..%d", SCHED_MAX_JOB_NODES);
    if (sp->switches_wait_ms < 0 || sp->switches_wait_ms > 366LL * 24 * 3600 * 1000)
        return err_set(err, -EINVAL, "switches", "the wait of switches is out of range");
    if (sp->nselectors < 0 || sp->nselectors > SCHED_MAX_LABELS)
        return err_set(err, -EINVAL, "selectors", "at most %d selectors", SCHED_MAX_LABELS);
    for (int i = 0; i < sp->nselectors; i++)
        if (!sp->selectors[i].key[0])
            return err_set(err, -EINVAL, "selectors", "a selector needs a key");
    return check_constraint(sp, r->nodes, err);
}

static int check_deps(const struct sched *s, const struct sched_job_spec *sp,
                      struct sched_error *err)
{
    if (sp->ndeps < 0 || sp->ndeps > SCHED_MAX_DEPS)
        return err_set(err, -EINVAL, "deps", "at most %d dependencies", SCHED_MAX_DEPS);
    for (int i = 0; i < sp->ndeps; i++) {
        char field[32];
        snprintf(field, sizeof(field), "deps[%d].job", i);
        if (sp->deps[i].kind < SCHED_DEP_AFTEROK || sp->deps[i].kind > SCHED_DEP_AFTER)
            return err_set(err, -EINVAL, field, "unknown dependency type");
        if (sp->deps[i].job_id == sp->id)
            return err_set(err, -EINVAL, field, "a job cannot depend on itself");
        if (sp->deps[i].array && sp->deps[i].job_id == sp->array_id)
            return err_set(err, -EINVAL, field, "a task cannot depend on its own array");
        if (sp->deps[i].array) {
            if (!sp->deps[i].never && !array_find(s, sp->deps[i].job_id))
                return err_set(err, -EINVAL, field, "array %llu is not live (ended or unknown)",
                               (unsigned long long)sp->deps[i].job_id);
            continue;
        }
        if (!sp->deps[i].never && !job_find(s, sp->deps[i].job_id))
            return err_set(err, -EINVAL, field, "job %llu is not live (finished or unknown)",
                           (unsigned long long)sp->deps[i].job_id);
    }
    return 0;
}

/* Could the job run if the cluster were empty (every known node, any state)? Reports
 * the first constraint that rules every node out, with its field. */
static int check_fits_empty(const struct sched *s, const struct sched_job_spec *sp,
                            const struct resolved *r, struct sched_error *err)
{
    struct job tmp;
    memset(&tmp, 0, sizeof(tmp));
    tmp.klass = (uint8_t)r->klass;
    tmp.preempt_count = sp->preempt_count;
    enum pool_rule rule = job_pool_rule(s, &tmp, r->tier);
    int stage_count[6] = {0};
    const char *fields[6] = {"gpu_type",
                             "gpus",
                             "cpus",
                             "mem",
                             sp->constraint[0] ? "selectors and constraint" : "selectors",
                             "tier"};
    int fit = 0;
    int fit_by_type[NTYPES] = {0}; /* a gang of GPUs runs on one type (place.c) */
    /* by profile when they are fresh (a count per group of alike nodes), else node by node */
    bool by_profile = !s->profiles_dirty;
    size_t count = by_profile ? s->nprofiles : s->nnodes;
    for (size_t i = 0; i < count; i++) {
        const struct node *n = &s->nodes[by_profile ? s->profile_node[i] : i];
        int w = by_profile ? s->profile_count[i] : 1;
        bool ok = r->gpu_type <= 0 || n->gpu_type == r->gpu_type;
        if (ok && (stage_count[0] += w) && n->gpus >= r->gpus && (stage_count[1] += w) &&
            n->cpus >= r->cpus && (stage_count[2] += w) && n->mem_mb >= r->mem &&
            (stage_count[3] += w)) {
            bool sel = true;
            for (int k = 0; k < sp->nselectors && sel; k++) {
                bool found = false;
                for (int l = 0; l < n->nlabels; l++)
                    if (!strcmp(n->labels[l].key, sp->selectors[k].key) &&
                        !strcmp(n->labels[l].value, sp->selectors[k].value))
                        found = true;
                sel = found != sp->selectors[k].negate;
            }
            sel = sel && (!sp->constraint[0] || feat_match(sp->constraint, n->labels, n->nlabels));
            if (sel && (stage_count[4] += w) && node_pool_allowed(n, rule)) {
                stage_count[5] += w;
                fit_by_type[n->gpu_type] += w;
            }
        }
    }
    for (int t = 0; t < NTYPES; t++) {
        bool one_type = r->gpus > 0 && r->nodes > 1;
        if (one_type ? fit_by_type[t] > fit : true)
            fit = one_type ? fit_by_type[t] : fit + fit_by_type[t];
    }
    if (fit >= r->nodes)
        return 0;
    for (int st = 0; st < 6; st++)
        if (stage_count[st] < r->nodes)
            return err_set(err, -EINVAL, fields[st],
                           "can never run: %d node(s) pass the %s check, the job needs %d "
                           "(%d GPUs, %d CPUs, %lld MiB per node)",
                           stage_count[st], fields[st], r->nodes, r->gpus, r->cpus,
                           (long long)r->mem);
    return err_set(err, -EINVAL, "nodes",
                   "can never run: only %d node(s) of one GPU type fit, it needs %d", fit,
                   r->nodes);
}

/* Could node n ever hold one node of the job (type, size, selectors, pool)? */
static bool node_could_hold(const struct node *n, const struct sched_job_spec *sp,
                            const struct resolved *r, enum pool_rule rule)
{
    if ((r->gpu_type > 0 && n->gpu_type != r->gpu_type) || n->gpus < r->gpus || n->cpus < r->cpus ||
        n->mem_mb < r->mem || !node_pool_allowed(n, rule))
        return false;
    for (int k = 0; k < sp->nselectors; k++) {
        bool found = false;
        for (int l = 0; l < n->nlabels; l++)
            if (!strcmp(n->labels[l].key, sp->selectors[k].key) &&
                !strcmp(n->labels[l].value, sp->selectors[k].value))
                found = true;
        if (found == sp->selectors[k].negate)
            return false;
    }
    return true;
}

static const char *node_label(const struct node *n, const char *key)
{
    for (int l = 0; l < n->nlabels; l++)
        if (!strcmp(n->labels[l].key, key))
            return n->labels[l].value;
    return "";
}

/* A gang that requires one domain (docs/scheduling.md §3, "Topology") can never run when
 * no domain has as many nodes that could hold it, whatever their state. */
static int check_fits_one_domain(const struct sched *s, const struct sched_job_spec *sp,
                                 const struct resolved *r, struct sched_error *err)
{
    const char *level;
    if (topo_rule(&s->policy.classes[r->klass], r->nodes, sp->switches, &level) !=
        SCHED_TOPO_REQUIRED)
        return 0;
    struct job tmp;
    memset(&tmp, 0, sizeof(tmp));
    tmp.klass = (uint8_t)r->klass;
    tmp.preempt_count = sp->preempt_count;
    enum pool_rule rule = job_pool_rule(s, &tmp, r->tier);
    const char **vals = calloc(s->nnodes ? s->nnodes : 1, sizeof(*vals));
    int *count = calloc(s->nnodes ? s->nnodes : 1, sizeof(*count));
    int best = -1, nd = 0;
    for (size_t i = 0; vals && count && i < s->nnodes; i++) {
        const struct node *n = &s->nodes[i];
        if (!node_could_hold(n, sp, r, rule))
            continue;
        const char *v = node_label(n, level);
        int d = 0;
        while (d < nd && strcmp(vals[d], v))
            d++;
        if (d == nd)
            vals[nd++] = v;
        if (++count[d] >= r->nodes || best < 0 || count[d] > count[best])
            best = d;
        if (count[d] >= r->nodes)
            break;
    }
    int most = best >= 0 ? count[best] : 0;
    const char *where = best >= 0 && vals[best][0] ? vals[best] : "nodes without one";
    int rc = 0;
    if (vals && count && most < r->nodes)
        rc = err_set(err, -EINVAL, sp->switches ? "switches" : "nodes",
                     "can never run: it needs %d nodes under one %s, and the most that "
                     "could hold it under one are %d (%s)",
                     r->nodes, level, most, where);
    free(vals);
    free(count);
    return rc;
}

/* Slurm's --switches=N@wait: the rule holds until `wait` after submission (kept across
 * requeues), then its class's rule applies (cycle.c fires DL_TOPO; the queue's rebuild
 * gives the job its new shape). A wait already over (a restart) is over at once. */
static void topo_watch(struct sched *s, struct job *j, int64_t now)
{
    if (!j->switches || j->switches_wait_ms <= 0)
        return;
    int64_t at = j->submit_ms + j->switches_wait_ms;
    if (at <= now)
        j->topo_relaxed = true;
    else
        deadline_push(s, at, j->id, DL_TOPO);
}

/* Every check of a new job but that its id is free (an update keeps the id). */
static int validate_request(const struct sched *s, const struct sched_job_spec *sp,
                            struct resolved *r, struct sched_error *err)
{
    int rc = resolve_names(s, sp, r, err);
    if (rc == 0)
        rc = check_sizes(s, sp, r, err);
    if (rc == 0)
        rc = check_deps(s, sp, err);
    if (rc == 0)
        rc = check_fits_empty(s, sp, r, err);
    if (rc == 0)
        rc = check_fits_one_domain(s, sp, r, err);
    return rc;
}

static int validate(const struct sched *s, const struct sched_job_spec *sp, struct resolved *r,
                    struct sched_error *err)
{
    if (sp->id == 0 || sp->id >= UINT64_MAX - 1)
        return err_set(err, -EINVAL, "id", "job id must be positive");
    if (job_find(s, sp->id))
        return err_set(err, -EEXIST, "id", "job %llu already exists", (unsigned long long)sp->id);
    return validate_request(s, sp, r, err);
}

int sched_job_validate(const struct sched *s, const struct sched_job_spec *spec,
                       struct sched_error *err)
{
    struct resolved r;
    return validate(s, spec, &r, err);
}

void sched_job_spec_init(struct sched_job_spec *j)
{
    memset(j, 0, sizeof(*j));
    j->nodes = 1;
    j->cpus_per_node = 1;
    j->grace_ms = -1;
}

/* ------------------------------------------------------------------------------------ */
/* adding jobs                                                                          */

static int64_t effective_grace(const struct sched *s, const struct sched_job_spec *sp, int klass)
{
    int64_t g = sp->grace_ms >= 0 ? sp->grace_ms : s->policy.default_grace_ms;
    int64_t cap = s->policy.classes[klass].max_grace_ms;
    return cap > 0 && g > cap ? cap : g;
}

static int add_dependent(struct job *target, uint32_t slot, uint64_t id)
{
    size_t cap = (size_t)target->dependents_cap;
    if (grow((void **)&target->dependents, &cap, (size_t)target->ndependents + 1,
             sizeof(*target->dependents)) < 0)
        return -ENOMEM;
    target->dependents_cap = (int)cap;
    target->dependents[target->ndependents].slot = slot;
    target->dependents[target->ndependents].id = id;
    target->ndependents++;
    return 0;
}

/* Take a slot and fill the job from a validated spec. NULL on allocation failure. */
static struct job *job_create(struct sched *s, const struct sched_job_spec *sp,
                              const struct resolved *r)
{
    uint32_t slot;
    if (s->free_slots.n) {
        slot = s->free_slots.v[--s->free_slots.n];
    } else {
        size_t cap = s->jobs_cap;
        if (grow((void **)&s->jobs, &cap, s->jobs_cap + 1, sizeof(*s->jobs)) < 0 ||
            walk_look_grow(s, cap) < 0)
            return NULL;
        memset(&s->jobs[s->jobs_cap], 0, (cap - s->jobs_cap) * sizeof(*s->jobs));
        for (size_t i = cap; i-- > s->jobs_cap + 1;)
            (void)u32vec_push(&s->free_slots, (uint32_t)i);
        slot = (uint32_t)s->jobs_cap;
        s->jobs_cap = cap;
    }
    struct job *j = &s->jobs[slot];
    memset(j, 0, sizeof(*j));
    job_walked_set(s, slot, false);
    starving_forget_slot(s, slot); /* an entry left for the last job there is not this one's */
    j->user = strtab_intern(&s->strings, sp->user);
    if (sp->env[0] && !(j->env = strtab_intern(&s->strings, sp->env)))
        goto fail;
    if (sp->nselectors) {
        j->selectors = malloc(sp->nselectors * sizeof(*j->selectors));
        if (!j->selectors)
            goto fail;
        memcpy(j->selectors, sp->selectors, sp->nselectors * sizeof(*j->selectors));
        j->nselectors = sp->nselectors;
    }
    if (sp->constraint[0]) {
        size_t len = strlen(sp->constraint) + 1;
        j->constraint = malloc(len);
        if (!j->constraint)
            goto fail;
        memcpy(j->constraint, sp->constraint, len);
    }
    if (sp->ndeps) {
        j->deps = calloc(sp->ndeps, sizeof(*j->deps));
        if (!j->deps)
            goto fail;
        j->ndeps = sp->ndeps;
        for (int i = 0; i < sp->ndeps; i++) {
            j->deps[i].kind = sp->deps[i].kind;
            j->deps[i].id = sp->deps[i].job_id;
            j->deps[i].array = sp->deps[i].array;
            j->deps[i].never = sp->deps[i].never;
        }
    }
    if (u64map_put(&s->job_index, sp->id, slot) < 0 || !j->user)
        goto fail;
    j->id = sp->id;
    j->project = (uint32_t)r->project;
    s->slot_project[slot] = j->project;
    j->tier = (uint8_t)r->tier;
    j->klass = (uint8_t)r->klass;
    j->gpu_type = (int16_t)r->gpu_type;
    j->gpus = r->gpus;
    j->cpus = r->cpus;
    j->nodes = r->nodes;
    j->mem_mb = r->mem;
    j->limit_ms = r->limit;
    j->submit_ms = sp->submit_ms;
    j->begin_ms = sp->begin_ms;
    j->signal = sp->signal ? sp->signal : s->policy.default_signal;
    j->grace_ms = effective_grace(s, sp, r->klass);
    j->retries_left = sp->retries;
    j->preempt_count = sp->preempt_count;
    j->array_id = sp->array_id;
    j->switches = sp->switches;
    j->switches_wait_ms = sp->switches_wait_ms;
    j->deps_any = sp->deps_any;
    j->reservation = NONE32;
    j->flags =
        (uint8_t)((sp->has_checkpoint_signal ? JF_CKPT_SIGNAL : 0) |
                  (sp->idempotent ? JF_IDEMPOTENT : 0) | (sp->no_requeue ? JF_NO_REQUEUE : 0));
    s->njobs++;
    s->by_state[SCHED_PENDING]++; /* state 0; callers move it on with job_set_state */
    return j;
fail:
    free(j->selectors);
    free(j->constraint);
    free(j->deps);
    memset(j, 0, sizeof(*j));
    (void)u32vec_push(&s->free_slots, slot);
    return NULL;
}

static void leave_queue(struct sched *s, struct job *j);

/* Undo job_create for a job that was never counted anywhere else. Dependency links that
 * point at it go stale harmlessly: they are checked by id. */
static void job_discard(struct sched *s, struct job *j)
{
    uint32_t slot = job_slot(s, j);
    u64map_del(&s->job_index, j->id);
    s->by_state[j->state]--;
    s->njobs--;
    job_free_parts(j); /* its placement memo too: a pending job may have one */
    memset(j, 0, sizeof(*j));
    walk_look_sync(s, j);
    (void)u32vec_push(&s->free_slots, slot);
}

/* A dependency on a whole array: settled now when the array's counters decide it (an
 * array the core no longer knows has ended, and the caller settled how), else the job
 * waits among the array's waiters. */
static int link_array_dep(struct sched *s, struct job *j, struct job_dep *dep)
{
    struct array_count *a = array_find(s, dep->id);
    enum dep_verdict v = a ? array_dep_verdict(a, dep->kind) : DEP_MET;
    if (v == DEP_MET) {
        dep->met = true;
        return 0;
    }
    if (v == DEP_NEVER) {
        dep->never = true;
        j->dep_never = true;
    } else if (array_add_waiter(a, job_slot(s, j), j->id) < 0) {
        return -ENOMEM;
    }
    j->ndeps_unmet++;
    return 0;
}

/* Wire dependencies on live jobs; those already settled are counted as met. */
static int job_link_deps(struct sched *s, struct job *j)
{
    for (int i = 0; i < j->ndeps; i++) {
        struct job *t = job_find(s, j->deps[i].id);
        if (j->deps[i].array && !j->deps[i].never) {
            int rc = link_array_dep(s, j, &j->deps[i]);
            if (rc < 0)
                return rc;
            continue;
        }
        if (j->deps[i].never) { /* ended already, never to be met: pending for good */
            j->dep_never = true;
            j->ndeps_unmet++;
            continue;
        }
        /* after:ID on a job that has started already: met (it only waits for a start) */
        if (!t || (j->deps[i].kind == SCHED_DEP_AFTER && t->state != SCHED_PENDING &&
                   t->state != SCHED_HELD)) {
            j->deps[i].met = true;
            continue;
        }
        if (add_dependent(t, job_slot(s, j), j->id) < 0)
            return -ENOMEM;
        j->ndeps_unmet++;
    }
    if (j->deps_any && j->ndeps)
        job_deps_any_count(j);
    return 0;
}

int sched_job_submit(struct sched *s, const struct sched_job_spec *sp, int64_t now,
                     struct sched_error *err)
{
    struct resolved r;
    zone_refresh(s);
    profiles_refresh(s);
    int rc = validate(s, sp, &r, err);
    if (rc)
        return rc;
    const struct project *p = &s->projects[r.project];
    if (p->spec.max_queued >= 0 && p->queued >= p->spec.max_queued)
        return err_set(err, -ENOSPC, "project",
                       "project '%s' already has %d queued jobs (max_queued %d)", p->spec.name,
                       p->queued, p->spec.max_queued);
    s->now = now;
    struct job *j = job_create(s, sp, &r);
    if (!j)
        return err_set(err, -ENOMEM, "", "out of memory");
    if (job_link_deps(s, j) < 0 || (sp->array_id && array_register(s, sp) < 0)) {
        job_discard(s, j);
        return err_set(err, -ENOMEM, "", "out of memory");
    }
    queued_count(s, j, 1);
    topo_watch(s, j, now);
    if (sp->hold) {
        job_set_state(s, j, SCHED_HELD);
        j->reason = SCHED_R_HELD;
        /* explain shows the nodes it could use: it needs its shape (not counted pending) */
        j->shape = shape_intern(s, j, job_eff_rank(s, j), NULL);
        return 0;
    }
    if (j->begin_ms > now)
        deadline_push(s, j->begin_ms, j->id, DL_BEGIN);
    j->shape = shape_intern(s, j, job_eff_rank(s, j), NULL);
    order_insert(s, j);
    job_mark_eligible(s, j, now);
    starvation_watch(s, j, now);
    return 0;
}

/* The jobs `user` has queued over all projects (its counters are per project). */
static int64_t user_queued(const struct sched *s, const char *user)
{
    uint32_t uid = strtab_find(&s->strings, user);
    int64_t n = 0;
    if (!uid)
        return 0;
    for (size_t p = 0; p < s->nprojects; p++) {
        const struct user_count *uc =
            user_count_get((struct sched *)(uintptr_t)s, (uint32_t)p, uid, false);
        n += uc ? uc->queued : 0;
    }
    return n;
}

int sched_queue_room(const struct sched *s, const char *project, const char *user, size_t n_project,
                     size_t n_user, bool user_exempt, struct sched_error *err)
{
    int pi = sched_project_find(s, project);
    if (pi >= 0) {
        const struct project *p = &s->projects[pi];
        bool own = p->spec.max_queued >= 0;
        int64_t cap = own ? p->spec.max_queued : s->policy.default_max_queued;
        if ((own || cap > 0) && (int64_t)p->queued + (int64_t)n_project > cap)
            return err_set(err, -ENOSPC, "project",
                           "project '%s' has %d queued jobs and %zu more are asked for: its "
                           "max_queued is %lld%s",
                           p->spec.name, p->queued, n_project, (long long)cap,
                           own ? "" : " (the policy's default, settings.max_queued)");
    }
    int64_t ucap = s->policy.user_max_queued;
    if (!user_exempt && ucap > 0) {
        int64_t q = user_queued(s, user);
        if (q + (int64_t)n_user > ucap)
            return err_set(err, -ENOSPC, "user",
                           "user '%s' has %lld queued jobs and %zu more are asked for: "
                           "user_max_queued is %lld (settings.user_max_queued)",
                           user, (long long)q, n_user, (long long)ucap);
    }
    return 0;
}

static int withdraw(struct sched *s, uint64_t id, bool coming_back, struct sched_error *err)
{
    struct job *j = job_find(s, id);
    if (!j)
        return err_set(err, -ENOENT, "job", "job %llu is not live", (unsigned long long)id);
    if (j->state != SCHED_PENDING && j->state != SCHED_HELD)
        return err_set(err, -EINVAL, "state",
                       "only pending or held jobs can be withdrawn; job %llu is %s",
                       (unsigned long long)id, sched_job_state_name(j->state));
    leave_queue(s, j);
    queued_count(s, j, -1);
    if (j->array_id && array_unregister(s, j, coming_back))
        array_waiters_settle(s, j->array_id);
    job_discard(s, j);
    return 0;
}

int sched_job_withdraw(struct sched *s, uint64_t id, struct sched_error *err)
{
    return withdraw(s, id, false, err);
}

int sched_job_restore_running(struct sched *s, const struct sched_job_spec *sp,
                              const struct sched_alloc *allocs, int nallocs, int64_t start_ms,
                              enum sched_job_state state, struct sched_error *err)
{
    struct resolved r;
    if (state != SCHED_STARTING && state != SCHED_RUNNING && state != SCHED_STOPPING)
        return err_set(err, -EINVAL, "state", "only starting, running or stopping jobs");
    /* restored jobs skip the can-it-ever-fit check: they already hold their nodes */
    if (sp->id == 0 || job_find(s, sp->id))
        return err_set(err, -EEXIST, "id", "job %llu already exists", (unsigned long long)sp->id);
    int rc = resolve_names(s, sp, &r, err);
    if (rc == 0)
        rc = check_sizes(s, sp, &r, err);
    if (rc)
        return rc;
    if (nallocs < 1 || nallocs != (sp->nodes ? sp->nodes : 1))
        return err_set(err, -EINVAL, "allocation", "allocation does not match the job's nodes");
    for (int i = 0; i < nallocs; i++)
        if (allocs[i].node >= s->nnodes)
            return err_set(err, -EINVAL, "allocation", "unknown node index %u", allocs[i].node);
    struct job *j = job_create(s, sp, &r);
    if (!j)
        return err_set(err, -ENOMEM, "", "out of memory");
    if (sp->array_id && array_register(s, sp) < 0) {
        job_discard(s, j);
        return err_set(err, -ENOMEM, "", "out of memory");
    }
    int64_t saved_now = s->now;
    s->now = start_ms;
    job_set_state(s, j, state);
    job_start(s, j, allocs, nallocs);
    s->now = saved_now > start_ms ? saved_now : start_ms;
    if (state == SCHED_STOPPING) {
        j->kill_at_ms = s->now;
        j->stop_ms = s->now;
        job_nodes_touch(s, j);
    }
    j->shape = shape_intern(s, j, job_eff_rank(s, j), NULL);
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* reports from the agents                                                              */

static struct job *live_job(struct sched *s, uint64_t id, struct sched_error *err)
{
    struct job *j = job_find(s, id);
    if (!j)
        err_set(err, -ENOENT, "job", "job %llu is not live", (unsigned long long)id);
    return j;
}

int sched_job_running(struct sched *s, uint64_t id, int64_t now, struct sched_error *err)
{
    struct job *j = live_job(s, id, err);
    if (!j)
        return -ENOENT;
    if (j->state == SCHED_RUNNING || j->state == SCHED_STOPPING)
        return 0; /* repeated report */
    if (j->state != SCHED_STARTING)
        return err_set(err, -EINVAL, "state", "job %llu is %s, not starting",
                       (unsigned long long)id, sched_job_state_name(j->state));
    s->now = now;
    job_set_state(s, j, SCHED_RUNNING);
    return 0;
}

int sched_job_checkpointed(struct sched *s, uint64_t id, int64_t now, struct sched_error *err)
{
    struct job *j = live_job(s, id, err);
    if (!j)
        return -ENOENT;
    if (j->nallocs == 0)
        return err_set(err, -EINVAL, "state", "job %llu is not running", (unsigned long long)id);
    j->ckpt_ms = now;
    return 0;
}

static bool requeueable(const struct sched *s, const struct job *j)
{
    return job_class(s, j)->requeueable && !(j->flags & JF_NO_REQUEUE);
}

/* Requeue with a STATE decision saying why; the job keeps its id and queue position. */
static void requeue(struct sched *s, struct job *j, enum sched_stop_cause cause, int64_t begin,
                    int64_t lost, const char *detail)
{
    enum sched_job_state from = j->state;
    uint64_t preemptor = j->preemptor;
    job_release_resources(s, j);
    job_to_pending(s, j, begin);
    struct sched_decision *d = decision_push(s, SCHED_D_STATE, j);
    if (d) {
        d->from = from;
        d->to = SCHED_PENDING;
        d->cause = cause;
        d->preemptor = preemptor;
        d->lost_ms = lost;
        snprintf(d->detail, sizeof(d->detail), "%s", detail);
    }
}

static void end_failed(struct sched *s, struct job *j, const char *what, int64_t now)
{
    const struct sched_class_spec *c = job_class(s, j);
    char detail[96];
    if (c->restart_on_failure) {
        snprintf(detail, sizeof(detail), "%s; service restarts", what);
        requeue(s, j, SCHED_STOP_NONE, now + s->policy.service_restart_delay_ms, 0, detail);
    } else if (j->retries_left > 0 && (j->flags & JF_IDEMPOTENT)) {
        j->retries_left--;
        snprintf(detail, sizeof(detail), "%s; retry (%d left)", what, j->retries_left);
        requeue(s, j, SCHED_STOP_NONE, now + s->policy.retry_delay_ms, 0, detail);
    } else {
        job_finish(s, j, SCHED_FAILED, what);
    }
}

int sched_job_ended(struct sched *s, uint64_t id, enum sched_exit_kind how, int code, int64_t now,
                    struct sched_error *err)
{
    struct job *j = live_job(s, id, err);
    if (!j)
        return -ENOENT;
    if (j->nallocs == 0)
        return err_set(err, -EINVAL, "state", "job %llu holds no resources (%s)",
                       (unsigned long long)id, sched_job_state_name(j->state));
    s->now = now;
    char what[64];
    switch (how) {
    case SCHED_EXIT_CODE:
        snprintf(what, sizeof(what), "exit code %d", code);
        break;
    case SCHED_EXIT_SIGNAL:
        snprintf(what, sizeof(what), "killed by signal %d", code);
        break;
    case SCHED_EXIT_OOM:
        snprintf(what, sizeof(what), "out of memory");
        break;
    case SCHED_EXIT_LAUNCH_FAILED:
        snprintf(what, sizeof(what), "launch failed");
        break;
    default:
        snprintf(what, sizeof(what), "lost by its node");
        break;
    }
    int64_t lost = now - (j->ckpt_ms > j->start_ms ? j->ckpt_ms : j->start_ms);
    switch ((enum sched_stop_cause)j->stop_cause) {
    case SCHED_STOP_PREEMPT:
        j->preempt_count++;
        if (requeueable(s, j)) {
            char detail[96];
            snprintf(detail, sizeof(detail), "preempted by job %llu (%s); requeued",
                     (unsigned long long)j->preemptor, what);
            requeue(s, j, SCHED_STOP_PREEMPT, 0, lost, detail);
        } else {
            job_finish(s, j, SCHED_PREEMPTED, what);
        }
        return 0;
    case SCHED_STOP_CANCEL:
        job_finish(s, j, SCHED_CANCELLED, what);
        return 0;
    case SCHED_STOP_REQUEUE:
        requeue(s, j, SCHED_STOP_REQUEUE, 0, lost, "requeued");
        return 0;
    case SCHED_STOP_TIMEOUT:
        job_finish(s, j, SCHED_TIMEOUT, "time limit reached");
        return 0;
    case SCHED_STOP_NODE_FAIL:
        if (requeueable(s, j))
            requeue(s, j, SCHED_STOP_NODE_FAIL, 0, lost, "node failure; requeued");
        else
            job_finish(s, j, SCHED_NODE_FAIL, "node failure");
        return 0;
    default:
        break;
    }
    if (how == SCHED_EXIT_LOST) {
        if (requeueable(s, j))
            requeue(s, j, SCHED_STOP_NODE_FAIL, 0, lost, "lost by its node; requeued");
        else
            job_finish(s, j, SCHED_NODE_FAIL, what);
    } else if (how == SCHED_EXIT_CODE && code == 0) {
        job_finish(s, j, SCHED_COMPLETED, what);
    } else if (how == SCHED_EXIT_LAUNCH_FAILED) {
        job_finish(s, j, SCHED_FAILED, what);
    } else {
        end_failed(s, j, what, now);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* user actions                                                                         */

static void leave_queue(struct sched *s, struct job *j)
{
    if (j->state == SCHED_PENDING) {
        s->shapes[j->shape].pending--;
        order_remove(s, j);
    }
    if (j->reservation != NONE32)
        reservation_drop(s, j->reservation);
    j->flags &= (uint8_t)~JF_STARVING; /* its age starts again when it is back */
    walk_look_sync(s, j);
}

int sched_job_cancel(struct sched *s, uint64_t id, int64_t now, struct sched_error *err)
{
    struct job *j = live_job(s, id, err);
    if (!j)
        return -ENOENT;
    s->now = now;
    switch ((enum sched_job_state)j->state) {
    case SCHED_PENDING:
    case SCHED_HELD:
        job_finish(s, j, SCHED_CANCELLED, "cancelled while pending");
        return 0;
    case SCHED_STARTING:
    case SCHED_RUNNING:
        /* the job's own signal: a job that checkpoints on it saves its work first */
        job_stop(s, j, SCHED_STOP_CANCEL, j->signal, s->policy.cancel_grace_ms, 0, now);
        return 0;
    case SCHED_STOPPING:
        if (j->stop_cause != SCHED_STOP_CANCEL) {
            j->stop_cause = SCHED_STOP_CANCEL; /* it will end cancelled, not requeued */
            job_nodes_touch(s, j);             /* a victim no more: least work lost waits for it */
        }
        return 0;
    default:
        return err_set(err, -EINVAL, "state", "job %llu is %s", (unsigned long long)id,
                       sched_job_state_name(j->state));
    }
}

int sched_job_hold(struct sched *s, uint64_t id, int64_t now, struct sched_error *err)
{
    struct job *j = live_job(s, id, err);
    if (!j)
        return -ENOENT;
    if (j->state == SCHED_HELD)
        return 0;
    if (j->state != SCHED_PENDING)
        return err_set(err, -EINVAL, "state", "only pending jobs can be held; job %llu is %s",
                       (unsigned long long)id, sched_job_state_name(j->state));
    s->now = now;
    leave_queue(s, j);
    job_set_state(s, j, SCHED_HELD);
    j->reason = SCHED_R_HELD;
    return 0;
}

int sched_job_release(struct sched *s, uint64_t id, int64_t now, struct sched_error *err)
{
    struct job *j = live_job(s, id, err);
    if (!j)
        return -ENOENT;
    if (j->state == SCHED_PENDING)
        return 0;
    if (j->state != SCHED_HELD)
        return err_set(err, -EINVAL, "state", "job %llu is %s, not held", (unsigned long long)id,
                       sched_job_state_name(j->state));
    s->now = now;
    job_set_state(s, j, SCHED_PENDING);
    j->reason = SCHED_R_PRIORITY;
    job_walked_set(s, job_slot(s, j), false);
    if (j->begin_ms > now) /* submitted held: it had no wakeup for its begin time */
        deadline_push(s, j->begin_ms, j->id, DL_BEGIN);
    j->shape = shape_intern(s, j, job_eff_rank(s, j), NULL);
    order_insert(s, j);
    job_mark_eligible(s, j, now);
    starvation_watch(s, j, now);
    return 0;
}

int sched_job_requeue(struct sched *s, uint64_t id, int64_t now, struct sched_error *err)
{
    struct job *j = live_job(s, id, err);
    if (!j)
        return -ENOENT;
    if (j->state != SCHED_RUNNING && j->state != SCHED_STARTING)
        return err_set(err, -EINVAL, "state", "only running jobs can be requeued; job %llu is %s",
                       (unsigned long long)id, sched_job_state_name(j->state));
    s->now = now;
    job_stop(s, j, SCHED_STOP_REQUEUE, j->signal, s->policy.cancel_grace_ms, 0, now);
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* a job's request changed (scontrol update, PATCH /v1/jobs/ID)                          */

static int push_live(const struct sched *s, struct u32vec *todo, uint64_t id)
{
    const struct job *t = job_find(s, id);
    return t ? u32vec_push(todo, (uint32_t)(t - s->jobs)) : 0;
}

/* Would the new dependencies wait, through the live jobs' own unmet ones, on the job
 * itself? No end could ever meet such a cycle; a new job cannot close one, an update can
 * (Slurm refuses it too). 0, -ELOOP naming deps, or -ENOMEM. */
static int check_dep_cycle(const struct sched *s, const struct sched_job_spec *sp,
                           struct sched_error *err)
{
    struct u32vec todo = {0};
    struct u64map seen = {0};
    uint64_t one;
    int rc = 0;
    for (int i = 0; i < sp->ndeps && rc == 0; i++) {
        if (sp->deps[i].array && sp->array_id && sp->deps[i].job_id == sp->array_id)
            rc = err_set(err, -ELOOP, "deps", "job %llu would wait on its own array %llu",
                         (unsigned long long)sp->id, (unsigned long long)sp->array_id);
        else
            rc = sp->deps[i].never ? 0 : push_live(s, &todo, sp->deps[i].job_id);
    }
    while (rc == 0 && todo.n) {
        const struct job *j = &s->jobs[todo.v[--todo.n]];
        if (j->id == sp->id) {
            rc = err_set(err, -ELOOP, "deps",
                         "job %llu would wait on itself through the jobs it depends on",
                         (unsigned long long)sp->id);
            break;
        }
        if (u64map_get(&seen, j->id, &one))
            continue;
        rc = u64map_put(&seen, j->id, 1);
        for (int k = 0; k < j->ndeps && rc == 0; k++)
            if (!j->deps[k].met && !j->deps[k].never)
                rc = push_live(s, &todo, j->deps[k].id);
    }
    u32vec_release(&todo);
    u64map_release(&seen);
    return rc == -ENOMEM ? err_set(err, -ENOMEM, "", "out of memory") : rc;
}

int sched_job_update(struct sched *s, const struct sched_job_spec *sp, int64_t now,
                     struct sched_error *err)
{
    struct job *j = live_job(s, sp->id, err);
    if (!j)
        return -ENOENT;
    if (j->state != SCHED_PENDING && j->state != SCHED_HELD)
        return err_set(err, -EINVAL, "state",
                       "only a pending or held job's request changes; job %llu is %s",
                       (unsigned long long)sp->id, sched_job_state_name(j->state));
    struct resolved r;
    zone_refresh(s);
    profiles_refresh(s);
    int rc = validate_request(s, sp, &r, err);
    if (rc == 0)
        rc = check_dep_cycle(s, sp, err);
    if (rc)
        return rc;
    if (r.project != (int)j->project || sp->array_id != j->array_id)
        return err_set(err, -EINVAL, "project", "a job's project and array do not change");
    /* The job leaves and comes back under its id, so every index and cache that read the
     * old request lets go of it the way a withdrawal does, and takes the new one the way a
     * submission does. The jobs waiting on it name it by id: they stay with it. */
    struct dep_ref *waiting = j->dependents;
    int nwaiting = j->ndependents, cap = j->dependents_cap;
    bool started = j->flags & JF_STARTED; /* a requeued task: after:ARRAY counted it */
    j->dependents = NULL;
    j->ndependents = j->dependents_cap = 0;
    struct sched_job_spec again = *sp;
    again.hold = j->state == SCHED_HELD;
    rc = withdraw(s, sp->id, true, err);
    s->memo_epoch++; /* the shapes and proofs that counted it: struct starving_entry */
    if (rc == 0)
        rc = sched_job_submit(s, &again, now, err);
    j = rc == 0 ? job_find(s, sp->id) : NULL;
    if (!j) { /* out of memory after the checks passed: the caller stops (it diverged) */
        free(waiting);
        return rc < 0 ? rc : err_set(err, -ENOMEM, "", "out of memory");
    }
    j->dependents = waiting;
    j->ndependents = nwaiting;
    j->dependents_cap = cap;
    if (started) {
        j->flags |= JF_STARTED;
        if (array_task_started(s, j))
            array_waiters_settle(s, j->array_id);
    }
    return 0;
}

int sched_job_set_limit(struct sched *s, uint64_t id, int64_t limit_ms, int64_t now,
                        struct sched_error *err)
{
    struct job *j = live_job(s, id, err);
    if (!j)
        return -ENOENT;
    if (j->state != SCHED_RUNNING && j->state != SCHED_STARTING)
        return err_set(err, -EINVAL, "state", "job %llu is %s, not running", (unsigned long long)id,
                       sched_job_state_name(j->state));
    const struct sched_class_spec *c = job_class(s, j);
    if (limit_ms <= 0 || limit_ms > 366LL * 24 * 3600 * 1000)
        return err_set(err, -EINVAL, "time_limit", "time limit must be positive and under a year");
    if (c->max_limit_ms > 0 && limit_ms > c->max_limit_ms)
        return err_set(err, -EINVAL, "time_limit", "time limit exceeds class max of %llds",
                       (long long)(c->max_limit_ms / 1000));
    s->now = now;
    j->limit_ms = limit_ms;
    /* the old deadline stays in the heap, dead (deadline_live reads the limit again) */
    deadline_push(s, j->start_ms + limit_ms, j->id, DL_LIMIT);
    job_nodes_touch(s, j); /* its nodes' releases move: reservations may start earlier */
    s->memo_epoch++;
    return 0;
}

void sched_array_task_gone(struct sched *s, uint64_t array_id, bool ok, int64_t now)
{
    if (!array_task_gone(s, array_id, ok))
        return;
    s->now = now; /* the waiters it frees become eligible now */
    array_waiters_settle(s, array_id);
}
