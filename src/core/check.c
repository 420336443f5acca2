/*
 * check.c - sched_check(): an integrity walk over the whole model.
 *
 * Every fast path of the core (bucket lists, per-node sums, shape counters, memos, sticky
 * claims) rests on books that must agree with the jobs they summarise. This walk recounts
 * them all from the jobs and says which one disagrees. It is what the unit and property
 * tests call after every event and cycle (docs/scheduling.md "Guarantees").
 *
 * It changes nothing the model relies on; like every query it may refresh a node's
 * release cache.
 */
#include "core/sched.h"
#include "core/types.h"
#include "core/containers.h"
#include "core/policy.h"
#include "core/constraint.h"
#include "core/model.h"
#include "core/deadlines.h"
#include "core/nodes.h"
#include "core/avail.h"
#include "core/queue.h"
#include "core/claims.h"
#include "core/place.h"
#include "core/caches.h"
#include "core/arrays.h"
#include "core/warm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) return err_set(err, -EFAULT, "", __VA_ARGS__)

static int check_job_slab(const struct sched *s, struct sched_error *err)
{
    size_t live = 0, by_state[SCHED_JOB_STATE_COUNT] = {0};
    if (s->look_words * 64 < s->jobs_cap)
        FAIL("%zu look bits for %zu job slots", s->look_words * 64, s->jobs_cap);
    for (size_t slot = 0; slot < s->jobs_cap; slot++) {
        const struct job *j = &s->jobs[slot];
        if (!j->id && walk_look(s, (uint32_t)slot))
            FAIL("free job slot %zu has its look bit set", slot);
        if (!j->id)
            continue;
        live++;
        if (j->state >= SCHED_JOB_STATE_COUNT || sched_job_state_terminal(j->state))
            FAIL("job %llu is live in state %d", (unsigned long long)j->id, j->state);
        by_state[j->state]++;
        bool look = j->reservation != NONE32 || (j->flags & JF_STARVING);
        if (walk_look(s, (uint32_t)slot) != look)
            FAIL("job %llu: its look bit is %s although it %s", (unsigned long long)j->id,
                 look ? "clear" : "set", look ? "holds a reservation or starves" : "does neither");
        uint64_t found;
        if (!u64map_get(&s->job_index, j->id, &found) || found != slot)
            FAIL("job %llu: the id index does not point at its slot", (unsigned long long)j->id);
    }
    if (live != s->njobs || s->job_index.len != live)
        FAIL("%zu live jobs, njobs %zu, index %zu", live, s->njobs, s->job_index.len);
    for (int st = 0; st < SCHED_JOB_STATE_COUNT; st++)
        if (by_state[st] != s->by_state[st])
            FAIL("%zu jobs are %s, the counter says %zu", by_state[st], sched_job_state_name(st),
                 s->by_state[st]);
    return 0;
}

static bool holds_resources(const struct job *j)
{
    return j->state == SCHED_STARTING || j->state == SCHED_RUNNING || j->state == SCHED_STOPPING;
}

/* A holder's allocation: one per node of the gang, distinct nodes, exact sizes, GPU masks
 * of the right count on GPUs that exist, and the node lists it. */
static int check_allocs(const struct sched *s, const struct job *j, struct sched_error *err)
{
    unsigned long long id = (unsigned long long)j->id;
    if (!holds_resources(j)) {
        if (j->nallocs)
            FAIL("job %llu is %s but holds %d allocations", id, sched_job_state_name(j->state),
                 j->nallocs);
        return 0;
    }
    if (j->nallocs != j->nodes)
        FAIL("job %llu holds %d nodes of the %d its gang needs", id, j->nallocs, j->nodes);
    for (int i = 0; i < j->nallocs; i++) {
        const struct sched_alloc *a = &j->allocs[i];
        if (a->node >= s->nnodes)
            FAIL("job %llu: allocation on unknown node %u", id, a->node);
        for (int k = 0; k < i; k++)
            if (j->allocs[k].node == a->node)
                FAIL("job %llu holds node %s twice", id, s->nodes[a->node].name);
        const struct node *n = &s->nodes[a->node];
        if (a->gpus != j->gpus || a->cpus != j->cpus || a->mem_mb != j->mem_mb)
            FAIL("job %llu: allocation on %s differs from its request", id, n->name);
        if (__builtin_popcountll(a->gpu_mask) != a->gpus)
            FAIL("job %llu: %d GPUs but a mask of %d on %s", id, a->gpus,
                 __builtin_popcountll(a->gpu_mask), n->name);
        /* a node shrunk under its jobs lets them keep the indices it no longer has */
        if (n->gpus < 64 && ((a->gpu_mask & ~n->gpu_beyond_mask) >> n->gpus))
            FAIL("job %llu: GPU index beyond %s's %d GPUs", id, n->name, n->gpus);
        bool listed = false;
        for (uint32_t k = 0; k < n->jobs.n && !listed; k++)
            listed = n->jobs.v[k] == job_slot(s, j);
        if (!listed)
            FAIL("job %llu is missing from node %s's job list", id, n->name);
        if (n->gpu_type != (j->gpu_type > 0 ? j->gpu_type : n->gpu_type))
            FAIL("job %llu asked for one GPU type and runs on %s", id, n->name);
        if (j->nodes > 1 && j->gpus > 0 && n->gpu_type != s->nodes[j->allocs[0].node].gpu_type)
            FAIL("gang job %llu spans GPU types", id);
    }
    return 0;
}

struct node_sum {
    int gpus, cpus, njobs;
    int64_t mem;
    uint64_t mask;
    int victim_gpus[SCHED_MAX_TIERS], victim_cpus[SCHED_MAX_TIERS];
    int victim_allocs[SCHED_MAX_TIERS];
    int stopping_gpus, stopping_cpus;
};

/* Does node n match selector set k, from its labels (not the node's cache)? */
static bool labels_match(const struct sched *s, const struct node *n, uint32_t k)
{
    const struct selset *ss = &s->selsets[k];
    for (int i = 0; i < ss->n; i++) {
        if (ss->pairs[i].expr) {
            if (!feat_match(strtab_get(&s->strings, ss->pairs[i].value), n->labels, n->nlabels))
                return false;
            continue;
        }
        bool found = false;
        for (int l = 0; l < n->nlabels && !found; l++)
            found = n->label_ids[l].key == ss->pairs[i].key &&
                    n->label_ids[l].value == ss->pairs[i].value;
        if (found == ss->pairs[i].negate)
            return false;
    }
    return true;
}

/* The victim gate's counts: for each selector set 1..63, the eligible victims' allocations
 * on the nodes it matches, by rank, recounted from the jobs (sum). */
static int check_victim_gate(const struct sched *s, const struct node_sum *sum,
                             struct sched_error *err)
{
    size_t nsel = s->nselsets < NSELBITS ? s->nselsets : NSELBITS;
    for (size_t k = 1; k < nsel; k++) {
        int count[SCHED_MAX_TIERS] = {0};
        for (size_t i = 0; i < s->nnodes; i++)
            if (labels_match(s, &s->nodes[i], (uint32_t)k))
                for (int r = 0; r < SCHED_MAX_TIERS; r++)
                    count[r] += sum[i].victim_allocs[r];
        for (int r = 0; r < SCHED_MAX_TIERS; r++)
            if (count[r] != s->sel_victims[k][r])
                FAIL("selector set %zu: %d eligible victim allocations of rank %d on its "
                     "nodes, the victim gate counts %d",
                     k, count[r], r, s->sel_victims[k][r]);
    }
    return 0;
}

/* Does what was derived from the job's effective rank (its queue entry, its starvation
 * watch, its victim rank) read the rank it has? Not while a refresh is due, nor once its
 * project's boost has passed and the boost's deadline (the next cycle) has yet to fire:
 * the rank reads the time and has already moved. */
static bool rank_settled(const struct sched *s, const struct job *j)
{
    const struct project *p = &s->projects[j->project];
    return !s->order_dirty && !(p->boost && p->boost_until <= s->now);
}

/* Node counters, masks and lists against the allocations of the jobs. */
static int check_nodes(const struct sched *s, struct sched_error *err)
{
    struct node_sum *sum = calloc(s->nnodes ? s->nnodes : 1, sizeof(*sum));
    if (!sum)
        return err_set(err, -ENOMEM, "", "out of memory");
    int rc = 0, eligible = 0, by_rank[SCHED_MAX_TIERS] = {0};
    for (size_t slot = 0; slot < s->jobs_cap && rc == 0; slot++) {
        const struct job *j = &s->jobs[slot];
        if (!j->id)
            continue;
        rc = check_allocs(s, j, err);
        if (rc == 0 && s->slot_project[slot] != j->project)
            rc = err_set(err, -EFAULT, "", "slot %zu: its project index says %u, its job's is %u",
                         slot, s->slot_project[slot], j->project);
        if (rc == 0 && (j->flags & JF_VICTIM_ELIGIBLE) && rank_settled(s, j) &&
            j->victim_rank != job_eff_rank(s, j))
            rc = err_set(err, -EFAULT, "", "victim %llu is counted at rank %d, its rank is %d",
                         (unsigned long long)j->id, j->victim_rank, job_eff_rank(s, j));
        eligible += (j->flags & JF_VICTIM_ELIGIBLE) != 0;
        if (j->flags & JF_VICTIM_ELIGIBLE)
            by_rank[j->victim_rank]++;
        for (int i = 0; i < j->nallocs && rc == 0; i++) {
            const struct sched_alloc *a = &j->allocs[i];
            struct node_sum *ns = &sum[a->node];
            if (ns->mask & a->gpu_mask)
                rc = err_set(err, -EFAULT, "", "a GPU of node %s is given twice (job %llu)",
                             s->nodes[a->node].name, (unsigned long long)j->id);
            ns->mask |= a->gpu_mask;
            ns->gpus += a->gpus;
            ns->cpus += a->cpus;
            ns->mem += a->mem_mb;
            ns->njobs++;
            if (j->state == SCHED_STOPPING) {
                ns->stopping_gpus += a->gpus;
                ns->stopping_cpus += a->cpus;
            }
            if (j->flags & JF_VICTIM_ELIGIBLE) {
                ns->victim_gpus[j->victim_rank] += a->gpus;
                ns->victim_cpus[j->victim_rank] += a->cpus;
                ns->victim_allocs[j->victim_rank]++;
            }
        }
    }
    if (rc == 0 && eligible != s->eligible_victims)
        rc = err_set(err, -EFAULT, "", "%d jobs marked eligible victims, the counter says %d",
                     eligible, s->eligible_victims);
    for (int r = 0; r < SCHED_MAX_TIERS && rc == 0; r++)
        if (by_rank[r] != s->eligible_by_rank[r])
            rc = err_set(err, -EFAULT, "", "%d eligible victims of rank %d, the counter says %d",
                         by_rank[r], r, s->eligible_by_rank[r]);
    for (size_t i = 0; i < s->nnodes && rc == 0; i++) {
        const struct node *n = &s->nodes[i];
        const struct node_sum *ns = &sum[i];
        if (ns->gpus != n->gpus_used || ns->cpus != n->cpus_used || ns->mem != n->mem_used ||
            ns->mask != n->gpu_used_mask || ns->njobs != (int)n->jobs.n)
            rc = err_set(err, -EFAULT, "",
                         "node %s: counters (%d GPUs, %d CPUs, %u jobs) disagree with its "
                         "jobs (%d GPUs, %d CPUs, %d jobs)",
                         n->name, n->gpus_used, n->cpus_used, n->jobs.n, ns->gpus, ns->cpus,
                         ns->njobs);
        uint64_t own = n->gpus < 64 ? (1ULL << n->gpus) - 1 : ~0ULL;
        if (rc == 0 && n->gpu_beyond_mask != (n->gpu_used_mask & ~own))
            rc = err_set(err, -EFAULT, "", "node %s: the GPUs held beyond its size are stale",
                         n->name);
        int free_gpus = node_free_gpus(n);
        if (rc == 0 && n->room_logged != free_gpus)
            rc = err_set(err, -EFAULT, "",
                         "node %s: %d GPUs free, but its last counted change saw %d "
                         "(room_changes: a change of its room went uncounted)",
                         n->name, free_gpus, n->room_logged);
        if (rc == 0 && !avail_profile_fresh(s, n))
            rc = err_set(err, -EFAULT, "", "node %s: the availability profile is stale", n->name);
        if (rc == 0 &&
            (ns->stopping_gpus != n->stopping_gpus || ns->stopping_cpus != n->stopping_cpus))
            rc = err_set(err, -EFAULT, "", "node %s: the stopping sums are stale", n->name);
        for (int r = 0; r < SCHED_MAX_TIERS && rc == 0; r++)
            if (ns->victim_gpus[r] != n->victim_gpus[r] ||
                ns->victim_cpus[r] != n->victim_cpus[r] ||
                ns->victim_allocs[r] != n->victim_allocs[r])
                rc = err_set(err, -EFAULT, "", "node %s: preemptible sums of rank %d are stale",
                             n->name, r);
    }
    if (rc == 0)
        rc = check_victim_gate(s, sum, err);
    free(sum);
    return rc;
}

/* Only UP nodes sit in the free-capacity buckets, each in the one of its free GPUs (free
 * CPUs for a CPU-only node). */
static int check_buckets(const struct sched *s, struct sched_error *err)
{
    size_t listed = 0;
    for (int t = 0; t < NTYPES; t++)
        for (int p = 0; p < NPOOLS; p++)
            for (int k = 0; k < NBUCKETS; k++) {
                uint32_t prev = NONE32;
                for (uint32_t idx = s->buckets[t][p][k]; idx != NONE32; idx = s->nodes[idx].next) {
                    const struct node *n = &s->nodes[idx];
                    if (!n->in_bucket || n->gpu_type != t || n->prev != prev ||
                        (n->reserved ? POOL_RESERVED : POOL_NORMAL) != p || node_bucket_key(n) != k)
                        FAIL("node %s sits in the wrong free-capacity bucket", n->name);
                    if (++listed > s->nnodes)
                        FAIL("a free-capacity bucket list loops");
                    prev = idx;
                }
            }
    size_t up = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct node *n = &s->nodes[i];
        if (n->in_bucket != node_schedulable(n))
            FAIL("node %s is %s but %s the free-capacity index", n->name,
                 sched_node_state_name(n->state), n->in_bucket ? "in" : "not in");
        up += n->in_bucket;
    }
    if (up != listed)
        FAIL("%zu nodes are indexed, %zu are listed", up, listed);
    return 0;
}

/* Project and user counters against the jobs (one pass over the jobs). */
/* A group's counters are its projects' sums (the projects' are checked against the jobs). */
static int check_groups(const struct sched *s, struct sched_error *err)
{
    for (size_t i = 0; i < s->ngroups; i++) {
        const struct group *g = &s->groups[i];
        int gpus = 0, running = 0, n = 0;
        for (size_t k = 0; k < s->nprojects; k++)
            if (s->projects[k].group == i) {
                gpus += s->projects[k].gpus_in_use;
                running += s->projects[k].running;
                n++;
            }
        if (gpus != g->gpus_in_use || running != g->running || n != g->nprojects)
            FAIL("group %s: counters (%d GPUs, %d running, %d projects) disagree with its "
                 "projects (%d, %d, %d)",
                 g->name, g->gpus_in_use, g->running, g->nprojects, gpus, running, n);
    }
    return 0;
}

static int check_counters(const struct sched *s, struct sched_error *err)
{
    enum { PN = 3 + SCHED_MAX_TIERS }; /* GPUs, running, queued, eligible victims by rank */
    int *proj = calloc(PN * (s->nprojects + 1), sizeof(*proj));
    int *user = calloc(3 * (s->nucounts + 1), sizeof(*user));
    int rc = 0;
    if (!proj || !user) {
        rc = err_set(err, -ENOMEM, "", "out of memory");
        goto out;
    }
    for (size_t slot = 0; slot < s->jobs_cap; slot++) {
        const struct job *j = &s->jobs[slot];
        if (!j->id)
            continue;
        int *p = &proj[PN * j->project];
        uint64_t u;
        bool has_user = u64map_get(&s->user_counts, ((uint64_t)j->project << 32) | j->user, &u);
        bool queued = j->state == SCHED_PENDING || j->state == SCHED_HELD;
        p[2] += queued;
        if (queued && !has_user) {
            rc = err_set(err, -EFAULT, "", "job %llu is queued without a user counter",
                         (unsigned long long)j->id);
            goto out;
        }
        if (queued)
            user[3 * u + 2]++;
        if (j->flags & JF_VICTIM_ELIGIBLE)
            p[3 + j->victim_rank]++;
        if (!j->nallocs)
            continue;
        p[0] += j->gpus * j->nodes;
        p[1]++;
        if (!has_user) {
            rc = err_set(err, -EFAULT, "", "job %llu runs without a user counter",
                         (unsigned long long)j->id);
            goto out;
        }
        user[3 * u] += j->gpus * j->nodes;
        user[3 * u + 1]++;
    }
    for (size_t i = 0; i < s->nprojects && rc == 0; i++) {
        const struct project *pr = &s->projects[i];
        const int *p = &proj[PN * i];
        if (p[0] != pr->gpus_in_use || p[1] != pr->running || p[2] != pr->queued)
            rc = err_set(err, -EFAULT, "",
                         "project %s: counters (%d GPUs, %d running, %d queued) disagree with "
                         "its jobs (%d, %d, %d)",
                         pr->spec.name, pr->gpus_in_use, pr->running, pr->queued, p[0], p[1], p[2]);
        for (int r = 0; r < SCHED_MAX_TIERS && rc == 0; r++)
            if (p[3 + r] != pr->eligible_by_rank[r])
                rc = err_set(err, -EFAULT, "",
                             "project %s: %d eligible victims of rank %d, the counter says %d",
                             pr->spec.name, p[3 + r], r, pr->eligible_by_rank[r]);
    }
    for (size_t u = 0; u < s->nucounts && rc == 0; u++)
        if (user[3 * u] != s->ucounts[u].gpus || user[3 * u + 1] != s->ucounts[u].running ||
            user[3 * u + 2] != s->ucounts[u].queued)
            rc = err_set(err, -EFAULT, "", "user counter %zu is stale", u);
    if (rc == 0)
        rc = check_groups(s, err);
out:
    free(proj);
    free(user);
    return rc;
}

/* One entry per slot; an entry proven quiet whose slot has not changed since is for the
 * job there, still pending and starving, of the shape and project it names. */
static int check_starving_entry(const struct sched *s, const struct starving_entry *e,
                                uint8_t *listed, struct sched_error *err)
{
    if (e->slot >= s->jobs_cap)
        return err_set(err, -EFAULT, "", "a starving entry names slot %u of %zu", e->slot,
                       s->jobs_cap);
    if (listed[e->slot]++)
        return err_set(err, -EFAULT, "", "slot %u is twice on the starving list", e->slot);
    const struct job *j = &s->jobs[e->slot];
    if (e->id && !slot_bit(s->changed_bits, e->slot) &&
        (j->id != e->id || j->state != SCHED_PENDING || !(j->flags & JF_STARVING) ||
         j->shape != e->shape || j->project != e->project))
        return err_set(err, -EFAULT, "",
                       "the quiet proof of job %llu stands, but its slot holds job %llu (%s)",
                       (unsigned long long)e->id, (unsigned long long)j->id,
                       sched_job_state_name(j->state));
    uint32_t sel = e->id && e->shape < s->nshapes ? s->shapes[e->shape].selset : 0;
    if (e->id && e->sel != (sel < NSELBITS ? sel : 0))
        return err_set(err, -EFAULT, "",
                       "the quiet proof of job %llu counts selector set %u, its shape's is %u",
                       (unsigned long long)e->id, e->sel, sel);
    return 0;
}

/* The starving list is oldest first (by bound, then id) among the entries whose job still
 * starves, each of which has reached its bound: entries whose job has left are passed over
 * (the walk drops them), and the check waits while a boost's end is still to fire. */
static int check_starving_order(const struct sched *s, struct sched_error *err)
{
    if (s->order_dirty)
        return 0;
    for (size_t i = 0; i < s->nprojects; i++)
        if (s->projects[i].boost && s->projects[i].boost_until <= s->now)
            return 0;
    const struct job *prev = NULL;
    for (size_t i = 0; i < s->nstarving; i++) {
        const struct job *j = &s->jobs[s->starving[i].slot];
        if (!j->id || j->state != SCHED_PENDING || !(j->flags & JF_STARVING))
            continue;
        int64_t at = job_starve_at(s, j);
        if (at > s->now)
            return err_set(err, -EFAULT, "", "job %llu is on the starving list before its bound",
                           (unsigned long long)j->id);
        if (prev) {
            int64_t pat = job_starve_at(s, prev);
            if (pat > at || (pat == at && prev->id > j->id))
                return err_set(err, -EFAULT, "",
                               "the starving list has job %llu after the younger job %llu",
                               (unsigned long long)j->id, (unsigned long long)prev->id);
        }
        prev = j;
    }
    return 0;
}

/* Every pending job is in the queue exactly once; shape counts match; a job the last walk
 * looked at has a reason. */
static int check_queue(const struct sched *s, struct sched_error *err)
{
    size_t *shape_pending = calloc(s->nshapes ? s->nshapes : 1, sizeof(*shape_pending));
    uint8_t *seen = calloc(s->jobs_cap ? s->jobs_cap : 1, 1);
    uint8_t *starving = calloc(s->jobs_cap ? s->jobs_cap : 1, 1);
    int rc = 0;
    if (!shape_pending || !seen || !starving) {
        rc = err_set(err, -ENOMEM, "", "out of memory");
        goto out;
    }
    for (size_t i = 0; i < s->nstarving && rc == 0; i++)
        rc = check_starving_entry(s, &s->starving[i], starving, err);
    for (size_t slot = 0; slot < s->jobs_cap && rc == 0; slot++)
        if (slot_bit(s->listed_bits, (uint32_t)slot) != (starving[slot] != 0))
            rc = err_set(err, -EFAULT, "", "slot %zu: its listed bit says %d, the list %d", slot,
                         slot_bit(s->listed_bits, (uint32_t)slot), starving[slot] != 0);
    const struct order_entry *lists[2] = {s->order, s->order_new};
    size_t counts[2] = {s->norder, s->nnew};
    for (int l = 0; l < 2 && rc == 0; l++)
        for (size_t i = 0; i < counts[l] && rc == 0; i++) {
            const struct order_entry *e = &lists[l][i];
            if (e->slot == NONE32)
                continue;
            const struct job *j = &s->jobs[e->slot];
            if (j->id != e->id || j->state != SCHED_PENDING)
                continue; /* a stale entry the walk drops when it meets it */
            if (seen[e->slot]++)
                rc = err_set(err, -EFAULT, "", "job %llu is queued twice",
                             (unsigned long long)j->id);
            if (rank_settled(s, j) && e->rank != job_eff_rank(s, j))
                rc = err_set(err, -EFAULT, "", "job %llu is queued at rank %d, its rank is %d",
                             (unsigned long long)j->id, e->rank, job_eff_rank(s, j));
            if (l == 0 && i > 0 && cmp_entries(&lists[l][i - 1], e) > 0 && !s->order_dirty)
                rc = err_set(err, -EFAULT, "", "the queue is out of order at job %llu",
                             (unsigned long long)j->id);
        }
    for (size_t slot = 0; slot < s->jobs_cap && rc == 0; slot++) {
        const struct job *j = &s->jobs[slot];
        if (!j->id || j->state != SCHED_PENDING)
            continue;
        if (!seen[slot] && !s->order_dirty)
            rc = err_set(err, -EFAULT, "", "pending job %llu is not in the queue",
                         (unsigned long long)j->id);
        if (j->shape >= s->nshapes)
            rc = err_set(err, -EFAULT, "", "job %llu has no shape", (unsigned long long)j->id);
        else
            shape_pending[j->shape]++;
        if (job_walked(s, (uint32_t)slot) && j->reason == SCHED_R_NONE)
            rc = err_set(err, -EFAULT, "", "pending job %llu was walked and has no reason",
                         (unsigned long long)j->id);
        if ((j->flags & JF_STARVING) && !starving[slot])
            rc = err_set(err, -EFAULT, "", "starving job %llu is not on the starving list",
                         (unsigned long long)j->id);
        if (rank_settled(s, j) && j->watch_rank != job_eff_rank(s, j))
            rc = err_set(err, -EFAULT, "", "job %llu is watched at rank %d, its rank is %d",
                         (unsigned long long)j->id, j->watch_rank, job_eff_rank(s, j));
    }
    if (rc == 0)
        rc = check_starving_order(s, err);
    for (size_t i = 0; i < s->nshapes && rc == 0; i++)
        if (shape_pending[i] != s->shapes[i].pending)
            rc = err_set(err, -EFAULT, "", "shape %zu counts %u pending jobs, there are %zu", i,
                         s->shapes[i].pending, shape_pending[i]);
out:
    free(shape_pending);
    free(seen);
    free(starving);
    return rc;
}

static int check_reservation(const struct sched *s, uint32_t r, struct sched_error *err)
{
    const struct reservation *res = &s->res[r];
    const struct job *j = &s->jobs[res->slot];
    unsigned long long id = (unsigned long long)res->job_id;
    if (j->id != res->job_id || j->reservation != r)
        FAIL("reservation %u of job %llu: the job does not hold it", r, id);
    if (j->state != SCHED_PENDING)
        FAIL("job %llu holds a reservation while %s", id, sched_job_state_name(j->state));
    if (res->nnodes != j->nodes)
        FAIL("job %llu: a reservation of %d nodes for a gang of %d", id, res->nnodes, j->nodes);
    if (res->end <= res->start)
        FAIL("job %llu: a reservation that ends before it starts", id);
    for (int i = 0; i < res->nnodes; i++) {
        if (res->nodes[i] >= s->nnodes)
            FAIL("job %llu: a reservation on an unknown node", id);
        const struct node *n = &s->nodes[res->nodes[i]];
        int found = 0;
        for (int k = 0; k < n->nclaims; k++)
            found += n->claims[k].res == r;
        if (found != 1)
            FAIL("job %llu: %d claims on node %s for one reservation", id, found, n->name);
        for (int k = 0; k < i; k++)
            if (res->nodes[k] == res->nodes[i])
                FAIL("job %llu: a reservation names node %s twice", id, n->name);
    }
    if (reservation_usable_proven(s, res, j) && !reservation_nodes_usable(s, res, j))
        FAIL("job %llu: its reservation is proven usable, but a node of it is not", id);
    return 0;
}

/* Claims against reservations, and no node promised beyond what it will have: at the start
 * of every claim (or now, for claims already due), the claims active then fit in what is
 * free plus what the running jobs will have released. */
static int check_claims(const struct sched *s, struct sched_error *err)
{
    int active = 0;
    for (size_t r = 0; r < s->nres; r++) {
        const struct reservation *res = &s->res[r];
        bool ordinary = res->live && !res->preempting && !res->starving;
        if (r / 64 >= s->res_words || slot_bit(s->res_live_bits, (uint32_t)r) != res->live ||
            slot_bit(s->res_ordinary_bits, (uint32_t)r) != ordinary)
            FAIL("reservation %zu: its live or ordinary bit is stale", r);
        if (!s->res[r].live)
            continue;
        int rc = check_reservation(s, (uint32_t)r, err);
        if (rc)
            return rc;
        active += !s->res[r].preempting && !s->res[r].starving;
    }
    if (active != s->res_active)
        FAIL("%d ordinary reservations live, the counter says %d", active, s->res_active);
    if (s->nhints != 0)
        FAIL("%zu reservation hints outlived their walk", s->nhints);
    for (size_t slot = 0; slot < s->jobs_cap; slot++) {
        const struct job *j = &s->jobs[slot];
        if (j->id && j->reservation != NONE32 &&
            (j->reservation >= s->nres || !s->res[j->reservation].live))
            FAIL("job %llu points at a dead reservation", (unsigned long long)j->id);
    }
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct node *n = &s->nodes[i];
        for (int k = 0; k < n->nclaims; k++) {
            const struct claim *c = &n->claims[k];
            if (c->res >= s->nres || !s->res[c->res].live)
                FAIL("node %s carries a claim of a dead reservation", n->name);
            int64_t t = c->start > s->now ? c->start : s->now;
            if (c->end <= t)
                continue;
            struct avail a = node_avail_at(s, n, t, NONE32);
            if (a.gpus < 0 || a.cpus < 0 || a.mem < 0)
                FAIL("node %s is promised beyond its capacity at %lld (job %llu's claim)", n->name,
                     (long long)t, (unsigned long long)s->res[c->res].job_id);
        }
    }
    return 0;
}

static int cmp_deadline(const void *a, const void *b)
{
    const struct deadline *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

struct rule_due {
    enum deadline_kind kind;
    int64_t at;
    const char *what;
};

static bool deadline_listed(const struct deadline *v, size_t n, enum deadline_kind kind,
                            uint64_t id, int64_t at)
{
    struct deadline key = {.at = at, .id = id, .kind = (uint8_t)kind};
    return bsearch(&key, v, n, sizeof(*v), cmp_deadline) != NULL;
}

/* The deadline heap (deadlines.c): a heap; what sched_next_wakeup() answers from it is its
 * earliest live entry (never a stale one); and every time rule still to come (after the
 * last cycle's time, by which the due ones fired) has its entry at its exact time: each
 * running job's limit, each stopping job's kill, each preemptible job's coming of age and
 * protection, each pending job's begin time and starvation bound. */
static int check_deadlines(const struct sched *s, struct sched_error *err)
{
    int64_t live = NEVER;
    for (size_t i = 0; i < s->nheap; i++) {
        if (i > 0 && s->heap[(i - 1) / 2].at > s->heap[i].at)
            FAIL("the deadline heap is out of order at %zu", i);
        if (s->heap[i].at < live && deadline_live(s, &s->heap[i]))
            live = s->heap[i].at;
    }
    if (deadline_next_live(s) != live)
        FAIL("the next wakeup would be %lld, the earliest live deadline is %lld",
             (long long)deadline_next_live(s), (long long)live);
    struct deadline *v = malloc((s->nheap + 1) * sizeof(*v));
    if (!v)
        return err_set(err, -ENOMEM, "", "out of memory");
    if (s->nheap)
        memcpy(v, s->heap, s->nheap * sizeof(*v));
    qsort(v, s->nheap, sizeof(*v), cmp_deadline);
    int64_t done = s->fired_to;
    int rc = 0;
    for (size_t slot = 0; slot < s->jobs_cap && rc == 0; slot++) {
        const struct job *j = &s->jobs[slot];
        if (!j->id)
            continue;
        struct rule_due want[6];
        int n = 0;
        bool runs = j->state == SCHED_RUNNING || j->state == SCHED_STARTING;
        if (runs && j->limit_ms > 0)
            want[n++] = (struct rule_due){DL_LIMIT, j->start_ms + j->limit_ms, "limit"};
        if (j->state == SCHED_STOPPING && !(j->flags & JF_KILL_SENT))
            want[n++] = (struct rule_due){DL_KILL, j->kill_at_ms, "kill"};
        if (j->nallocs && job_class(s, j)->preemptible) {
            int64_t protect = job_class(s, j)->protect_after_ms;
            want[n++] = (struct rule_due){DL_ELIGIBLE, j->start_ms + s->policy.min_runtime_ms,
                                          "coming of age"};
            if (protect > 0)
                want[n++] = (struct rule_due){DL_PROTECT, j->start_ms + protect, "protection"};
        }
        /* a job queued at s->now with a begin time or starvation bound already come gets
           none: the cycle that follows its event sees to it */
        if (j->state == SCHED_PENDING && j->begin_ms > s->now)
            want[n++] = (struct rule_due){DL_BEGIN, j->begin_ms, "begin time"};
        if (!j->topo_relaxed && j->switches && j->switches_wait_ms > 0)
            want[n++] =
                (struct rule_due){DL_TOPO, j->submit_ms + j->switches_wait_ms, "switches' wait"};
        const struct project *p = &s->projects[j->project];
        bool boost_over = p->boost && p->boost_until <= s->now; /* its deadline re-watches */
        if (j->state == SCHED_PENDING && !(j->flags & JF_STARVING) && !s->order_dirty &&
            !s->rewatch && !boost_over && job_starve_at(s, j) > s->now)
            want[n++] = (struct rule_due){DL_STARVE, job_starve_at(s, j), "starvation"};
        for (int k = 0; k < n && rc == 0; k++)
            if (want[k].at > done && want[k].at < NEVER &&
                !deadline_listed(v, s->nheap, want[k].kind, j->id, want[k].at))
                rc = err_set(err, -EFAULT, "", "job %llu (%s): no deadline for its %s at %lld",
                             (unsigned long long)j->id, sched_job_state_name(j->state),
                             want[k].what, (long long)want[k].at);
    }
    for (size_t i = 0; i < s->nprojects && rc == 0; i++) {
        const struct project *p = &s->projects[i];
        if (p->boost && p->boost_until > done &&
            !deadline_listed(v, s->nheap, DL_BOOST, i, p->boost_until))
            rc = err_set(err, -EFAULT, "", "project %s: no deadline for its boost's end",
                         p->spec.name);
    }
    free(v);
    return rc;
}

/* The arrays' counters recounted from their live tasks, and every dependency on a whole
 * array still open where the array's counters leave it open (arrays.c settles the rest). */
static int check_arrays(const struct sched *s, struct sched_error *err)
{
    int *count = calloc(s->narrays + 1, 3 * sizeof(int));
    if (!count)
        return err_set(err, -ENOMEM, "", "out of memory");
    int rc = 0;
    for (size_t i = 0; i < s->jobs_cap && rc == 0; i++) {
        const struct job *j = &s->jobs[i];
        if (!j->id)
            continue;
        for (int k = 0; k < j->ndeps && rc == 0; k++) {
            const struct job_dep *d = &j->deps[k];
            if (!d->array || d->met || d->never)
                continue;
            const struct array_count *a = array_find(s, d->id);
            if (!a || array_dep_verdict(a, d->kind) != DEP_WAIT)
                rc = err_set(err, -EFAULT, "",
                             "job %llu: its dependency on array %llu is open, but the array %s",
                             (unsigned long long)j->id, (unsigned long long)d->id,
                             a ? "settles it" : "is gone");
        }
        uint64_t ai;
        if (!j->array_id || !u64map_get(&s->arrays, j->array_id, &ai)) {
            if (j->array_id && rc == 0)
                rc = err_set(err, -EFAULT, "", "job %llu: its array %llu is not counted",
                             (unsigned long long)j->id, (unsigned long long)j->array_id);
            continue;
        }
        count[3 * ai]++;
        count[3 * ai + 1] += (j->flags & JF_STARTED) != 0;
        count[3 * ai + 2] += j->nallocs > 0;
    }
    for (size_t i = 0; i < s->narrays && rc == 0; i++) {
        const struct array_count *a = &s->array_counts[i];
        if (a->jobs != count[3 * i] || a->started != count[3 * i + 1] ||
            a->running != count[3 * i + 2] || a->tasks < a->ended + a->jobs || a->failed > a->ended)
            rc = err_set(err, -EFAULT, "",
                         "an array counts %d live tasks, %d started, %d running, %d in all, "
                         "%d ended, %d failed; its tasks: %d live, %d started, %d running",
                         a->jobs, a->started, a->running, a->tasks, a->ended, a->failed,
                         count[3 * i], count[3 * i + 1], count[3 * i + 2]);
    }
    free(count);
    return rc;
}

int sched_check(const struct sched *s, struct sched_error *err)
{
    int rc = check_job_slab(s, err);
    if (rc == 0)
        rc = check_nodes(s, err);
    if (rc == 0)
        rc = check_buckets(s, err);
    if (rc == 0)
        rc = check_counters(s, err);
    if (rc == 0)
        rc = check_queue(s, err);
    if (rc == 0)
        rc = check_claims(s, err);
    if (rc == 0)
        rc = check_deadlines(s, err);
    if (rc == 0)
        rc = check_arrays(s, err);
    for (size_t i = 0; rc == 0 && i < s->jobs_cap; i++) {
        const struct job *j = &s->jobs[i];
        uint32_t bad;
        if (j->id && j->state == SCHED_PENDING && j->place && place_memo_check(s, j, &bad) < 0)
            FAIL("job %llu: its placement memo is wrong about node %s", (unsigned long long)j->id,
                 bad < s->nnodes ? s->nodes[bad].name : "(its size)");
    }
    uint32_t warm_bad;
    if (rc == 0 && warm_check(s, &warm_bad) < 0)
        FAIL("warm environments: %s%s is wrong (warm.c)",
             warm_bad < s->nnodes ? "the set of node " : "the count of nodes per key",
             warm_bad < s->nnodes ? s->nodes[warm_bad].name : "");
    for (int c = 0; rc == 0 && c < SCHED_CACHE_COUNT; c++)
        if (s->cache_wrong[c])
            FAIL("the %s of job %llu is wrong: %s (sched_verify_memos)",
                 sched_cache_name((enum sched_cache)c), (unsigned long long)s->cache_wrong[c],
                 cache_wrong_means((enum sched_cache)c));
    return rc;
}
