/*
 * explain.c - the read side: job, node and project views, totals, and the answers to
 * "why is my job not running?" (sched_explain) and "where do resources go next?"
 * (sched_forecast). Nothing here changes the model.
 */
#include "core/sched.h"
#include "core/types.h"
#include "core/containers.h"
#include "core/model.h"
#include "core/group.h"
#include "core/nodes.h"
#include "core/queue.h"
#include "core/admit.h"
#include "core/reserve.h"
#include "core/topo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reason of a pending job the last walk did not look at: derived from the same rules
 * in the same order (admission, static fit, reservation), else Priority: a job ahead of it
 * with the same shape is already waiting for the same resources. */
static enum sched_reason reason_derive(const struct sched *s, const struct job *j, int64_t *value,
                                       int64_t *in_use, int64_t *req)
{
    *value = *in_use = *req = 0;
    if (j->state == SCHED_HELD)
        return SCHED_R_HELD;
    if (j->state != SCHED_PENDING)
        return SCHED_R_NONE;
    if (job_walked(s, job_slot(s, j))) {
        *value = j->r_value;
        *in_use = j->r_in_use;
        *req = j->r_request;
        return (enum sched_reason)j->reason;
    }
    struct admission a;
    enum sched_reason r = admission_check(s, j, s->now, &a);
    if (r != SCHED_R_NONE) {
        *value = a.value;
        *in_use = a.in_use;
        *req = a.request;
        return r;
    }
    const struct shape *sh = &s->shapes[j->shape];
    if (sh->static_cycle == s->node_epoch && sh->static_reason != SCHED_R_NONE)
        return (enum sched_reason)sh->static_reason;
    if (j->reservation != NONE32) {
        *value = s->res[j->reservation].start;
        return s->res[j->reservation].preempting ? SCHED_R_PREEMPTING : SCHED_R_RESOURCES;
    }
    /* what the walk would have said of it had it looked (consider, job_blocked) */
    if (sh->claimed_cycle == s->cycle && job_duration(j) >= sh->claimed_seen)
        return *value = -1, SCHED_R_RESERVATION;
    if (sh->nofit_cycle == s->cycle && sh->nofit_zone)
        return SCHED_R_RESERVED_ZONE;
    return SCHED_R_PRIORITY;
}

static void job_view_fill(const struct sched *s, const struct job *j, struct sched_job_view *v)
{
    memset(v, 0, sizeof(*v));
    int64_t a, b, c;
    v->id = j->id;
    v->state = (enum sched_job_state)j->state;
    v->reason = reason_derive(s, j, &a, &b, &c);
    v->stop_cause = (enum sched_stop_cause)j->stop_cause;
    v->project = s->projects[j->project].spec.name;
    v->user = strtab_get(&s->strings, j->user);
    v->tier = s->policy.tiers[j->tier].name;
    v->eff_tier = s->policy.tiers[job_eff_rank(s, j)].name;
    v->class_name = s->policy.classes[j->klass].name;
    v->gpu_type = j->gpu_type > 0 ? s->gpu_types[j->gpu_type] : "";
    v->gpus_per_node = j->gpus;
    v->cpus_per_node = j->cpus;
    v->nodes = j->nodes;
    v->mem_mb_per_node = j->mem_mb;
    v->submit_ms = j->submit_ms;
    v->start_ms = j->nallocs ? j->start_ms : 0;
    v->time_limit_ms = j->limit_ms;
    v->kill_at_ms = j->state == SCHED_STOPPING ? j->kill_at_ms : 0;
    v->preempt_count = j->preempt_count;
    v->retries_left = j->retries_left;
    v->preemptor = j->preemptor;
    v->reservation_ms = j->reservation != NONE32 ? s->res[j->reservation].start : -1;
    v->env = strtab_get(&s->strings, j->env);
    v->allocs = j->allocs;
    v->nallocs = j->nallocs;
}

int sched_job_get(const struct sched *s, uint64_t id, struct sched_job_view *out)
{
    const struct job *j = job_find(s, id);
    if (!j)
        return -ENOENT;
    job_view_fill(s, j, out);
    return 0;
}

size_t sched_job_count(const struct sched *s)
{
    return s->njobs;
}

size_t sched_job_slots(const struct sched *s)
{
    return s->jobs_cap;
}

int sched_job_at(const struct sched *s, size_t slot, struct sched_job_view *out)
{
    if (slot >= s->jobs_cap || !s->jobs[slot].id)
        return -ENOENT;
    job_view_fill(s, &s->jobs[slot], out);
    return 0;
}

size_t sched_node_count(const struct sched *s)
{
    return s->nnodes;
}

const char *sched_node_name(const struct sched *s, uint32_t index)
{
    return index < s->nnodes ? s->nodes[index].name : "";
}

int sched_node_get(const struct sched *s, uint32_t index, struct sched_node_view *out)
{
    if (index >= s->nnodes)
        return -ENOENT;
    const struct node *n = &s->nodes[index];
    memset(out, 0, sizeof(*out));
    out->name = n->name;
    out->gpu_type = s->gpu_types[n->gpu_type];
    out->state = (enum sched_node_state)n->state;
    out->gpus = n->gpus;
    out->gpus_used = n->gpus_used;
    out->cpus = n->cpus;
    out->cpus_used = n->cpus_used;
    out->mem_mb = n->mem_mb;
    out->mem_used_mb = n->mem_used;
    out->gpu_mem_mb = n->gpu_mem_mb;
    out->gpu_used_mask = n->gpu_used_mask;
    out->reserved = n->reserved;
    out->njobs = (int)n->jobs.n;
    out->labels = n->labels;
    out->nlabels = n->nlabels;
    out->nwarm = n->nwarm;
    return 0;
}

size_t sched_project_count(const struct sched *s)
{
    return s->nprojects;
}

static double project_usage_now(const struct sched *s, const struct project *p)
{
    struct project copy = *p;
    project_accrue((struct sched *)(uintptr_t)s, &copy, s->now);
    return copy.usage / ((double)s->policy.fairshare_half_life_ms / 1000.0 / LN2);
}

int sched_project_get(const struct sched *s, size_t index, struct sched_project_view *out)
{
    if (index >= s->nprojects)
        return -ENOENT;
    const struct project *p = &s->projects[index];
    memset(out, 0, sizeof(*out));
    out->spec = p->spec;
    int rank = (int)p->tier - (p->boost_until > s->now ? p->boost : 0);
    out->eff_tier = s->policy.tiers[rank < 0 ? 0 : rank].name;
    out->boost_levels = p->boost_until > s->now ? p->boost : 0;
    out->boost_until_ms = out->boost_levels ? p->boost_until : 0;
    out->gpus_in_use = p->gpus_in_use;
    out->running = p->running;
    out->queued = p->queued;
    out->usage = project_usage_now(s, p);
    double g = p->spec.guarantee_gpus > 0 ? p->spec.guarantee_gpus : 0.01;
    out->share = out->usage / g;
    return 0;
}

void sched_totals_get(const struct sched *s, struct sched_totals *out)
{
    memset(out, 0, sizeof(*out));
    memcpy(out->jobs_by_state, s->by_state, sizeof(out->jobs_by_state));
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct node *n = &s->nodes[i];
        out->nodes_by_state[n->state]++;
        out->gpus_total += n->gpus;
        out->gpus_used += n->gpus_used;
        out->cpus_total += n->cpus;
        out->cpus_used += n->cpus_used;
        if (node_schedulable(n))
            out->gpus_usable += n->gpus;
    }
    out->cycles = s->cycle - 1;
    size_t b = sizeof(*s) + s->jobs_cap * sizeof(*s->jobs) + u64map_bytes(&s->job_index) +
               s->order_cap * sizeof(*s->order) + s->new_cap * sizeof(*s->order_new) +
               s->sort_pairs_cap * sizeof(*s->sort_pairs) +
               s->sort_spare_cap * sizeof(*s->sort_spare) + s->nodes_cap * sizeof(*s->nodes) +
               s->shapes_cap * sizeof(*s->shapes) + u64map_bytes(&s->shape_index) +
               s->heap_cap * sizeof(*s->heap) + s->free_slots.cap * sizeof(uint32_t) +
               s->dec_cap * sizeof(*s->dec) + s->dec_allocs_cap * sizeof(*s->dec_allocs) +
               s->res_cap * sizeof(*s->res);
    for (size_t i = 0; i < s->jobs_cap; i++) {
        const struct job *j = &s->jobs[i];
        if (!j->id)
            continue;
        b += (size_t)j->nallocs * sizeof(*j->allocs) + (size_t)j->ndeps * sizeof(*j->deps) +
             (size_t)j->nselectors * sizeof(*j->selectors) +
             (size_t)j->dependents_cap * sizeof(*j->dependents);
    }
    out->core_bytes = b;
}

/* ------------------------------------------------------------------------------------ */
/* explain                                                                              */

static void explain_priority(const struct sched *s, const struct job *j, int64_t now,
                             struct sched_explain *x)
{
    const struct project *p = &s->projects[j->project];
    snprintf(x->tier, sizeof(x->tier), "%s", s->policy.tiers[j->tier].name);
    int rank = job_eff_rank(s, j);
    x->tier_rank = rank;
    snprintf(x->eff_tier, sizeof(x->eff_tier), "%s", s->policy.tiers[rank].name);
    x->boost_levels = p->boost_until > now ? p->boost : 0;
    x->fairshare_usage = project_usage_now(s, p);
    x->fairshare_guarantee = p->spec.guarantee_gpus;
    x->fairshare_share = p->share;
    x->submit_ms = j->submit_ms;
    x->age_ms = now - j->submit_ms;
    if (s->policy.ordering == SCHED_ORDER_MULTIFACTOR)
        x->mf_priority = (double)job_key1(s, j, now) / 1000.0;
}

static bool entry_live(const struct sched *s, const struct order_entry *e)
{
    if (e->slot == NONE32)
        return false;
    const struct job *j = &s->jobs[e->slot];
    return j->id == e->id && j->state == SCHED_PENDING;
}

/* Position in the queue (sorted entries, then the not yet merged new ones) and the
 * nearest jobs ahead. */
static void explain_position(const struct sched *s, const struct job *j, struct sched_explain *x)
{
    struct order_entry me = {.key1 = j->key1, .submit_ms = j->submit_ms, .id = j->id};
    int rank = job_eff_rank(s, j);
    long pos = 0, tpos = 0, total = 0, ttotal = 0;
    const struct order_entry *ahead[SCHED_EXPLAIN_AHEAD];
    int nahead = 0;
    const struct order_entry *lists[2] = {s->order, s->order_new};
    size_t counts[2] = {s->norder, s->nnew};
    for (int l = 0; l < 2; l++) {
        for (size_t i = 0; i < counts[l]; i++) {
            const struct order_entry *e = &lists[l][i];
            if (!entry_live(s, e))
                continue;
            bool before = cmp_entries(e, &me) < 0;
            total++;
            if (e->rank == rank)
                ttotal++;
            if (!before)
                continue;
            pos++;
            if (e->rank == rank)
                tpos++;
            if (nahead < SCHED_EXPLAIN_AHEAD) {
                ahead[nahead++] = e;
            } else {
                memmove(ahead, ahead + 1, (SCHED_EXPLAIN_AHEAD - 1) * sizeof(ahead[0]));
                ahead[SCHED_EXPLAIN_AHEAD - 1] = e;
            }
        }
    }
    x->position = pos + 1;
    x->pending_total = total;
    x->tier_position = tpos + 1;
    x->tier_total = ttotal;
    for (int i = 0; i < nahead; i++) {
        const struct job *a = &s->jobs[ahead[i]->slot];
        struct sched_explain_job *o = &x->ahead[x->nahead++];
        int64_t v, u, r;
        o->id = a->id;
        snprintf(o->project, sizeof(o->project), "%s", s->projects[a->project].spec.name);
        snprintf(o->tier, sizeof(o->tier), "%s", s->policy.tiers[job_eff_rank(s, a)].name);
        o->gpus = a->gpus * a->nodes;
        o->nodes = a->nodes;
        o->reason = reason_derive(s, a, &v, &u, &r);
    }
}

/* A topology gang: its domain with the most nodes that have room for it now. */
static void explain_topology(const struct sched *s, const struct job *j, struct sched_explain *x)
{
    const struct shape *sh = &s->shapes[j->shape];
    if (!topo_required(sh) && !topo_best_effort(sh))
        return;
    x->topo_mode = (enum sched_topo_mode)sh->topo_mode;
    snprintf(x->topo_level, sizeof(x->topo_level), "%s", strtab_get(&s->strings, sh->topo_key));
    uint32_t *vals = calloc(s->nnodes ? 2 * s->nnodes : 1, sizeof(*vals));
    if (!vals)
        return;
    uint32_t *free_here = vals + s->nnodes;
    size_t nd = 0;
    int best = -1;
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct node *n = &s->nodes[i];
        if (!node_schedulable(n) || !node_static_fit(s, n, sh, true))
            continue;
        uint32_t v = topo_node_domain(n, sh->topo_key);
        int d = topo_domain_index(vals, nd, v);
        if (d < 0) {
            d = (int)nd++;
            vals[d] = v;
        }
        free_here[d] += node_free_fit(n, sh);
        if (best < 0 || free_here[d] > free_here[best])
            best = d;
    }
    x->topo_domains = (int)nd;
    if (best >= 0) {
        x->topo_best_free = (int)free_here[best];
        snprintf(x->topo_best_domain, sizeof(x->topo_best_domain), "%s",
                 vals[best] ? strtab_get(&s->strings, vals[best]) : "");
    }
    free(vals);
}

/* Candidate nodes, best first: those that fit now, then by how soon they would. */
static void explain_nodes(const struct sched *s, const struct job *j, int64_t now,
                          struct sched_explain *x)
{
    const struct shape *sh = &s->shapes[j->shape];
    int64_t dur = j->limit_ms > 0 ? j->limit_ms + j->grace_ms : NEVER;
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct node *n = &s->nodes[i];
        if (!node_schedulable(n) || !node_static_fit(s, n, sh, true))
            continue;
        x->nodes_matching++;
        struct sched_explain_node cand;
        memset(&cand, 0, sizeof(cand));
        snprintf(cand.name, sizeof(cand.name), "%s", n->name);
        cand.state = (enum sched_node_state)n->state;
        cand.gpus_free = n->gpus - n->gpus_used;
        cand.gpus_total = n->gpus;
        cand.cpus_free = n->cpus - n->cpus_used;
        cand.mem_free_mb = n->mem_mb - n->mem_used;
        cand.fits_now = node_free_fit(n, sh);
        cand.reserved = n->reserved;
        int64_t at = node_earliest(s, n, &s->shapes[j->shape], now, dur, j->reservation);
        cand.free_at_ms = at == NEVER ? -1 : at;
        /* insertion into the best-first list: fits now, then earliest free */
        int pos = x->nnodes;
        while (pos > 0) {
            const struct sched_explain_node *o = &x->nodes[pos - 1];
            int64_t oa = o->free_at_ms < 0 ? NEVER : o->free_at_ms;
            int64_t ca = cand.free_at_ms < 0 ? NEVER : cand.free_at_ms;
            bool better =
                (cand.fits_now && !o->fits_now) || (cand.fits_now == o->fits_now && ca < oa);
            if (!better)
                break;
            pos--;
        }
        if (pos >= SCHED_EXPLAIN_NODES)
            continue;
        int last = x->nnodes < SCHED_EXPLAIN_NODES ? x->nnodes : SCHED_EXPLAIN_NODES - 1;
        memmove(&x->nodes[pos + 1], &x->nodes[pos], (last - pos) * sizeof(x->nodes[0]));
        x->nodes[pos] = cand;
        if (x->nnodes < SCHED_EXPLAIN_NODES)
            x->nnodes++;
    }
}

static void explain_forecast(const struct sched *s, const struct job *j, int64_t now,
                             struct sched_explain *x)
{
    x->forecast_start_ms = -1;
    if (j->reservation != NONE32) {
        const struct reservation *r = &s->res[j->reservation];
        x->has_reservation = true;
        x->forecast_start_ms = r->start;
        for (int i = 0; i < r->nvictims && x->nvictims < 8; i++)
            if (job_find(s, r->victims[i]) && job_find(s, r->victims[i])->nallocs)
                x->waiting_on_victims[x->nvictims++] = r->victims[i];
        return;
    }
    /* no reservation: the earliest start its nodes allow, ignoring jobs ahead */
    int64_t best = NEVER;
    for (int i = 0; i < x->nnodes; i++)
        if (x->nodes[i].free_at_ms >= 0 && x->nodes[i].free_at_ms < best)
            best = x->nodes[i].free_at_ms;
    if (j->nodes == 1 && best < NEVER)
        x->forecast_start_ms = best > now ? best : now;
}

static void explain_sentence(const struct sched *s, const struct job *j, struct sched_explain *x)
{
    const char *proj = s->projects[j->project].spec.name;
    char *o = x->sentence;
    size_t n = sizeof(x->sentence);
    int total = j->gpus * j->nodes;
    switch (x->reason) {
    case SCHED_R_QUOTA_LIMIT:
        snprintf(o, n, "%s uses %lld of its %lld-GPU limit; this job needs %lld more",
                 x->limit_name, (long long)x->limit_in_use, (long long)x->limit_value,
                 (long long)x->limit_request);
        break;
    case SCHED_R_JOB_LIMIT:
        snprintf(o, n, "%s: %lld of %lld jobs already running", x->limit_name,
                 (long long)x->limit_in_use, (long long)x->limit_value);
        break;
    case SCHED_R_DEPENDENCY:
        snprintf(o, n, "waiting for %lld job(s) it depends on", (long long)x->limit_value);
        break;
    case SCHED_R_DEPENDENCY_NEVER:
        snprintf(o, n,
                 "a job it depends on ended in a way that can never satisfy the "
                 "dependency: cancel it");
        break;
    case SCHED_R_HELD:
        snprintf(o, n, "held: release it to let it run");
        break;
    case SCHED_R_BEGIN_TIME:
        snprintf(o, n, "asked not to start before its begin time");
        break;
    case SCHED_R_ADMISSION_PAUSED:
        snprintf(o, n, "project %s is paused: running jobs go on, nothing new starts", proj);
        break;
    case SCHED_R_STORAGE_QUOTA:
        snprintf(o, n, "project %s is over its storage quota: %s", proj,
                 s->projects[j->project].storage_hold);
        break;
    case SCHED_R_GPU_TYPE:
        snprintf(o, n, "no usable node has %d free-able %s GPUs", j->gpus,
                 j->gpu_type > 0 ? s->gpu_types[j->gpu_type] : "");
        break;
    case SCHED_R_NODE_SELECTOR:
        snprintf(o, n, "no usable node matches its selectors");
        break;
    case SCHED_R_RESERVED_ZONE:
        snprintf(o, n, "only reserved-pool nodes could take it and tier %s may not use them",
                 x->eff_tier);
        break;
    case SCHED_R_RESERVATION:
        snprintf(o, n, "the free resources are held for a higher job's reservation");
        break;
    case SCHED_R_PREEMPTING:
        snprintf(o, n, "lower-tier jobs were signalled to make room; waiting for their grace");
        break;
    case SCHED_R_RESOURCES:
        if (x->nodes_matching == 0)
            snprintf(o, n,
                     "waiting for %d GPU(s) on %d node(s): no node that could hold it "
                     "is up now (drained, down or unreachable)",
                     total, j->nodes);
        else if (x->topo_mode == SCHED_TOPO_REQUIRED)
            snprintf(o, n, "waiting for %d nodes under one %s: %d free under %s%s", j->nodes,
                     x->topo_level, x->topo_best_free,
                     x->topo_best_domain[0] ? x->topo_best_domain : "nodes without one",
                     x->has_reservation ? "; resources are reserved for it" : "");
        else
            snprintf(o, n,
                     "waiting for %d GPU(s) on %d node(s): %d node(s) could hold it, "
                     "none has room now%s",
                     total, j->nodes, x->nodes_matching,
                     x->has_reservation ? "; resources are reserved for it" : "");
        break;
    case SCHED_R_PRIORITY:
        snprintf(o, n, "%ld job(s) ahead of it in the queue wait for the same resources",
                 x->position - 1);
        break;
    default:
        o[0] = 0;
        break;
    }
}

static void explain_limit_name(const struct sched *s, const struct job *j, struct sched_explain *x)
{
    const struct project *p = &s->projects[j->project];
    const char *pn = p->spec.name;
    const struct group *g = project_group(s, p);
    bool project_full = p->spec.gpu_limit >= 0 && p->spec.gpu_limit == x->limit_value &&
                        p->gpus_in_use == x->limit_in_use;
    if (x->reason == SCHED_R_QUOTA_LIMIT && !project_full && g &&
        group_gpu_limit(s, g) == x->limit_value && g->gpus_in_use == x->limit_in_use)
        snprintf(x->limit_name, sizeof(x->limit_name), "group %s gpu_limit", g->name);
    else if (x->reason == SCHED_R_QUOTA_LIMIT)
        snprintf(x->limit_name, sizeof(x->limit_name), "%s %s", pn,
                 p->spec.gpu_limit == x->limit_value ? "gpu_limit" : "user_gpu_limit");
    else if (x->reason == SCHED_R_JOB_LIMIT)
        snprintf(x->limit_name, sizeof(x->limit_name), "%s %s", pn,
                 p->spec.max_running == x->limit_value && p->running == x->limit_in_use
                     ? "max_running"
                 : j->array_id ? "array %limit"
                               : "user_max_running");
}

static void explain_running(const struct sched *s, const struct job *j, int64_t now,
                            struct sched_explain *x)
{
    const struct sched_class_spec *c = job_class(s, j);
    x->preempt_count = j->preempt_count;
    x->expected_end_ms = j->limit_ms > 0 ? j->start_ms + j->limit_ms : -1;
    x->preemptible_from_ms = j->start_ms + s->policy.min_runtime_ms;
    /* a job without a time limit is never immune (docs/scheduling.md §5) */
    x->protected_at_ms =
        c->protect_after_ms > 0 && job_may_be_immune(j) ? j->start_ms + c->protect_after_ms : -1;
    int rank = job_eff_rank(s, j);
    if (!c->preemptible)
        snprintf(x->not_preemptible_why, sizeof(x->not_preemptible_why),
                 "class %s is never preempted", c->name);
    else if (job_immune_by_count(s, j))
        snprintf(x->not_preemptible_why, sizeof(x->not_preemptible_why),
                 "already preempted %d times (max_preemptions)", j->preempt_count);
    else if (x->protected_at_ms >= 0 && now >= x->protected_at_ms)
        snprintf(x->not_preemptible_why, sizeof(x->not_preemptible_why),
                 "protected after %lld h of run time", (long long)(c->protect_after_ms / 3600000));
    else if (rank == 0)
        snprintf(x->not_preemptible_why, sizeof(x->not_preemptible_why), "no tier is above %s",
                 s->policy.tiers[0].name);
    else if (now < x->preemptible_from_ms && !(j->flags & JF_BORROWER))
        snprintf(x->not_preemptible_why, sizeof(x->not_preemptible_why),
                 "younger than min_runtime");
    if (!x->not_preemptible_why[0] || (now < x->preemptible_from_ms && c->preemptible &&
                                       !job_immune_by_count(s, j) && rank > 0)) {
        x->preemptible = !x->not_preemptible_why[0];
        snprintf(x->preemptible_by, sizeof(x->preemptible_by), "%s",
                 rank > 0 ? s->policy.tiers[rank - 1].name : "");
    }
}

int sched_explain(const struct sched *s, uint64_t id, int64_t now, struct sched_explain *x)
{
    const struct job *j = job_find(s, id);
    if (!j)
        return -ENOENT;
    memset(x, 0, sizeof(*x));
    x->id = id;
    x->state = (enum sched_job_state)j->state;
    x->forecast_start_ms = -1;
    x->starve_at_ms = -1;
    x->pushed_back_ms = j->pushed_ms > 0 ? j->pushed_ms : -1;
    x->pushed_back_by = j->pushed_ms > 0 ? j->pushed_by : 0;
    x->protected_at_ms = -1;
    x->expected_end_ms = -1;
    explain_priority(s, j, now, x);
    if (j->state == SCHED_PENDING || j->state == SCHED_HELD) {
        x->reason = reason_derive(s, j, &x->limit_value, &x->limit_in_use, &x->limit_request);
        explain_limit_name(s, j, x);
        if (j->state == SCHED_PENDING)
            explain_position(s, j, x);
        explain_nodes(s, j, now, x);
        explain_topology(s, j, x);
        explain_forecast(s, j, now, x);
        int64_t at = job_starve_at(s, j);
        if (at != NEVER && j->state == SCHED_PENDING) {
            x->starve_at_ms = at;
            x->starving = now >= x->starve_at_ms;
        }
        explain_sentence(s, j, x);
    } else if (j->nallocs) {
        explain_running(s, j, now, x);
        if (j->state == SCHED_STOPPING)
            snprintf(x->sentence, sizeof(x->sentence),
                     "stopping (%s)%s; killed at the end of "
                     "its grace",
                     sched_stop_cause_name(j->stop_cause),
                     j->preemptor ? " to make room for a higher job" : "");
        else
            snprintf(x->sentence, sizeof(x->sentence), "%s%s",
                     x->preemptible ? "running; may be preempted by tier " : "running; ",
                     x->preemptible ? x->preemptible_by : x->not_preemptible_why);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* forecast                                                                             */

struct rel {
    int64_t at;
    uint32_t slot, node;
};

static int cmp_rel(const void *a, const void *b)
{
    const struct rel *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return (x->slot > y->slot) - (x->slot < y->slot);
}

/* Who gets node `n` after time `at`: a reservation starting there, else the first
 * pending job in queue order that would fit the node once it is released. */
static void forecast_next(const struct sched *s, uint32_t node, int64_t at, struct sched_release *r)
{
    const struct node *n = &s->nodes[node];
    int64_t best = NEVER;
    for (int i = 0; i < n->nclaims; i++) {
        const struct claim *c = &n->claims[i];
        if (c->start >= at && c->start < best) {
            best = c->start;
            r->next_job = s->res[c->res].job_id;
            r->by_reservation = true;
        }
    }
    if (!r->next_job) {
        for (size_t i = 0; i < s->norder; i++) {
            const struct order_entry *e = &s->order[i];
            if (!entry_live(s, e))
                continue;
            const struct shape *sh = &s->shapes[e->shape];
            if (sh->nodes == 1 && node_static_fit(s, n, sh, true) &&
                s->projects[e->project].blocked_cycle != s->cycle) {
                r->next_job = e->id;
                break;
            }
        }
    }
    const struct job *nj = r->next_job ? job_find(s, r->next_job) : NULL;
    if (nj) {
        snprintf(r->next_project, sizeof(r->next_project), "%s",
                 s->projects[nj->project].spec.name);
        snprintf(r->next_tier, sizeof(r->next_tier), "%s",
                 s->policy.tiers[job_eff_rank(s, nj)].name);
    }
}

size_t sched_forecast(const struct sched *s, int64_t now, struct sched_release *out, size_t max)
{
    size_t cap = 0;
    for (size_t i = 0; i < s->jobs_cap; i++)
        cap += (size_t)s->jobs[i].nallocs;
    struct rel *rels = malloc((cap ? cap : 1) * sizeof(*rels));
    if (!rels)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < s->jobs_cap; i++) {
        const struct job *j = &s->jobs[i];
        if (!j->id || !j->nallocs)
            continue;
        int64_t end = j->state == SCHED_STOPPING ? j->kill_at_ms
                      : j->limit_ms > 0          ? j->start_ms + j->limit_ms
                                                 : NEVER;
        if (end == NEVER)
            continue;
        for (int a = 0; a < j->nallocs; a++)
            rels[n++] = (struct rel){end < now ? now : end, (uint32_t)i, j->allocs[a].node};
    }
    qsort(rels, n, sizeof(*rels), cmp_rel);
    size_t w = 0;
    for (size_t i = 0; i < n && w < max; i++) {
        const struct job *j = &s->jobs[rels[i].slot];
        struct sched_release *r = &out[w++];
        memset(r, 0, sizeof(*r));
        r->at_ms = rels[i].at;
        r->job_id = j->id;
        const struct node *nd = &s->nodes[rels[i].node];
        snprintf(r->node, sizeof(r->node), "%s", nd->name);
        for (int a = 0; a < j->nallocs; a++)
            if (j->allocs[a].node == rels[i].node)
                r->gpus = j->allocs[a].gpus;
        snprintf(r->gpu_type, sizeof(r->gpu_type), "%s", s->gpu_types[nd->gpu_type]);
        forecast_next(s, rels[i].node, rels[i].at, r);
    }
    free(rels);
    return w;
}
