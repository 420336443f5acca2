/*
 * cycle.c - the scheduling cycle (floor 3; docs/scheduling.md "The cycle").
 *
 * 1. fire the time-based rules that are due (time limits, grace ends, boosts expiring,
 *    victims leaving min_runtime or entering protection);
 * 2. refresh shares and re-sort the queue when due, else merge the new entries;
 * 3. serve starving jobs first (oldest first): start now or hold a sticky reservation;
 * 4. walk the queue in priority order: admission limits, static fit, place now honouring
 *    reservations (backfill), else preempt, else reserve for the highest blocked jobs.
 * Jobs the walk skips (their shape is known not to fit this cycle, their project is at
 * its limit) get their reason derived on demand (reason_derive in explain.c).
 */
#include "core/sched.h"
#include "core/types.h"
#include "core/model.h"
#include "core/group.h"
#include "core/deadlines.h"
#include "core/changes.h"
#include "core/nodes.h"
#include "core/victims.h"
#include "core/queue.h"
#include "core/claims.h"
#include "core/lifecycle.h"
#include "core/admit.h"
#include "core/order.h"
#include "core/place.h"
#include "core/reserve.h"
#include "core/preempt.h"
#include "core/memo.h"
#include "core/caches.h"
#include "core/warm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the deadlines due (the heap: deadlines.c) */

/* Act on a live entry that is due (deadline_live holds and d->at <= now: its checks are
 * the rule's conditions, so they are not repeated here). */
static void fire_deadline(struct sched *s, const struct deadline *d, int64_t now)
{
    if (d->kind == DL_BOOST) {
        struct project *p = &s->projects[d->id];
        p->boost = 0;
        p->boost_until = 0;
        order_project_rerank(s, (uint32_t)d->id); /* its jobs alone (cluster.c boost) */
        return;
    }
    struct job *j = job_find(s, d->id);
    switch ((enum deadline_kind)d->kind) {
    case DL_LIMIT:
        job_stop(s, j, SCHED_STOP_TIMEOUT, j->signal, j->grace_ms, 0, now);
        break;
    case DL_KILL: {
        struct sched_decision *dec = decision_push(s, SCHED_D_KILL, j);
        if (dec) {
            dec->cause = j->stop_cause;
            decision_attach_allocs(s, dec, j);
            snprintf(dec->detail, sizeof(dec->detail), "grace over");
        }
        j->flags |= JF_KILL_SENT;
        break;
    }
    case DL_ELIGIBLE:
    case DL_PROTECT:
        victim_eligibility_update(s, j, now);
        /* its age changed who may take it, even when the "anyone" flag did not (a
           borrower): its nodes' preemption answers may change (struct preempt_memo) */
        for (int i = 0; i < j->nallocs; i++)
            node_changed(s, &s->nodes[j->allocs[i].node]);
        break;
    case DL_STARVE:
        starvation_watch(s, j, now);
        break;
    case DL_TOPO: /* its switches' wait is over: the queue's rebuild gives it its new shape */
        j->topo_relaxed = true;
        if (j->state == SCHED_PENDING)
            s->order_dirty = true;
        break;
    default:
        break; /* DL_BEGIN: the walk looks at the begin time itself */
    }
}

/* Only live entries act (deadline_live: a stale one would do nothing, or repeat what the
 * live entry of the same rule does). Each is judged when popped, after the ones before it
 * fired. */
static void fire_deadlines(struct sched *s, int64_t now)
{
    while (s->nheap && s->heap[0].at <= now) {
        struct deadline d = deadline_pop(s);
        if (deadline_live(s, &d))
            fire_deadline(s, &d, now);
    }
    if (now > s->fired_to)
        s->fired_to = now;
}

/* ---- starting */

static void start_job(struct sched *s, struct job *j, struct order_entry *e,
                      const struct sched_alloc *allocs, struct sched_cycle_stats *st)
{
    if (e) {
        e->slot = NONE32;
        s->order_stale++;
    } else {
        order_remove(s, j);
    }
    s->shapes[j->shape].pending--;
    queued_count(s, j, -1);
    if (j->reservation != NONE32)
        reservation_drop(s, j->reservation);
    j->flags &= (uint8_t)~JF_STARVING;
    walk_look_sync(s, j);
    j->pushed_ms = 0;
    job_set_state(s, j, SCHED_STARTING);
    reason_set(j, SCHED_R_NONE, 0, 0, 0);
    job_start(s, j, allocs, j->nodes);
    struct sched_decision *d = decision_push(s, SCHED_D_START, j);
    if (d) {
        d->from = SCHED_PENDING;
        d->to = SCHED_STARTING;
        d->time_limit_ms = j->limit_ms;
        d->signal = j->signal;
        d->grace_ms = j->grace_ms;
        decision_attach_allocs(s, d, j);
        for (int i = 0; j->env && i < j->nallocs; i++)
            d->warm_nodes += node_warm_has(&s->nodes[j->allocs[i].node], j->env);
    }
    st->started++;
}

struct walk {
    struct sched_cycle_stats *st;
    int64_t now;
    struct sched_alloc allocs[SCHED_MAX_JOB_NODES];
    int open_shapes;    /* shapes with pending jobs not yet known not to fit */
    bool stop;          /* strict order without backfill: first block ends the walk */
    bool dropped_lower; /* stale lower reservations were dropped in this walk */
    int res_failed;     /* reservations tried in vain: they use up backfill_depth too,
                           or a deep queue would try one for every job */
    /* CPU-only one-node shapes that found no capacity in this walk: a shape asking as much
       or more in every dimension, with the same pool rule and selectors, finds none either
       (capacity only shrinks within a walk) */
    struct {
        uint8_t rule;
        uint32_t selset;
        int cpus;
        int64_t mem_mb;
    } cpu_nofit[8];
    int ncpu_nofit;
    bool capped;        /* max_starts_per_cycle reached: the rest waits for the next cycle */
    uint64_t moved[32]; /* starving jobs whose reservation a late job pushed back */
    int nmoved;
};

/* The cycle has started as many jobs as the policy allows one cycle (the rest of the walk
 * is the next cycle's, which follows at once: sched_next_wakeup). */
static bool start_cap_reached(const struct sched *s, struct walk *w)
{
    if (s->policy.max_starts_per_cycle > 0 && w->st->started >= s->policy.max_starts_per_cycle)
        w->capped = true;
    return w->capped;
}

static bool preemption_possible(const struct sched *s)
{
    return s->policy.preemption && s->eligible_victims > 0 && s->preempt_budget > 0;
}

static bool reservation_slots_open(const struct sched *s, const struct walk *w)
{
    return s->policy.backfill && s->res_active + w->res_failed < s->policy.backfill_depth;
}

static bool want_reservation(const struct sched *s, const struct walk *w, const struct job *j)
{
    return j->reservation == NONE32 && reservation_slots_open(s, w);
}

/* Make j a reservation unless an ordinary one for a job of its shape no longer than it
 * failed in this walk while no room grew since (room_grew: a dropped reservation, a release
 * moved earlier by a preemption in the walk, which gives a job without a time limit its
 * first foreseeable end; else claims only grow within a walk: it would fail too). A starving
 * job's search neither uses nor leaves that memo: it honours every claim, an ordinary one
 * only those of jobs that outrank it (and may be given its old room back), so a starving
 * failure says nothing of an ordinary search. (It did, and so a starving job served or
 * passed by as quiet changed whether the queue walk's job of its shape reserved.) */
static bool reserve(struct sched *s, struct walk *w, struct job *j, bool starving)
{
    struct shape *sh = &s->shapes[j->shape];
    bool memo = !starving;
    bool known = sh->res_fail_cycle == s->cycle && sh->res_fail_grew == s->room_grew;
    if (memo && known && job_duration(j) >= sh->res_fail_dur)
        return false;
    if (reservation_make(s, j, w->now, starving) == 0) {
        w->st->reservations++;
        return true;
    }
    if (memo && (!known || job_duration(j) < sh->res_fail_dur)) {
        sh->res_fail_cycle = s->cycle;
        sh->res_fail_grew = s->room_grew;
        sh->res_fail_dur = job_duration(j);
    }
    return false;
}

static bool holds_preempting(const struct sched *s, const struct job *j)
{
    return j->reservation != NONE32 && s->res[j->reservation].preempting;
}

/* Could a search find victims for a job of the selector set, effective rank, project and
 * GPUs? false: no search is needed to know there are none. */
static bool preemption_open(const struct sched *s, uint32_t selset, int rank, uint32_t project,
                            int gpus)
{
    return preemption_possible(s) &&
           victims_exist_for(s, selset, rank, project_can_reclaim(s, project, gpus));
}

/* Preempt for j, through the preemption memos (memo.c) in the priority walk. */
static bool try_preempt(struct sched *s, struct walk *w, struct job *j)
{
    if (!preemption_possible(s))
        return false;
    if (!preemption_open(s, s->shapes[j->shape].selset, job_eff_rank(s, j), j->project,
                         j->gpus * j->nodes)) {
        gate_verify(s, j, w->now);
        return false; /* no search could find a victim: every tier it may take is empty */
    }
    if (preempt_memoised(s, j, w->now, w->st) == 0) {
        w->st->preempted++;
        s->preempt_budget--; /* counts preemptions, never searches: no memo changes it */
        return true;
    }
    return false;
}

/* A job that may not start now (admission, static reason) must not hold room for later:
 * its reservation, sticky or not, goes back to the others. */
static void give_back_reservation(struct sched *s, struct job *j)
{
    if (j->reservation != NONE32)
        reservation_drop(s, j->reservation);
}

/* The job could not start: preempt, reserve, or just say why. */
static void job_blocked(struct sched *s, struct walk *w, struct job *j, enum place_result pr,
                        bool shape_just_failed)
{
    struct shape *sh = &s->shapes[j->shape];
    if (holds_preempting(s, j)) {
        reason_set(j, SCHED_R_PREEMPTING, s->res[j->reservation].start, 0, 0);
        return;
    }
    if (try_preempt(s, w, j)) {
        reason_set(j, SCHED_R_PREEMPTING, s->res[j->reservation].start, 0, 0);
        return;
    }
    if (s->policy.backfill && j->reservation == NONE32) {
        /* the walk goes in priority order: a reservation still held by a lower job is
           from an earlier cycle and must not hold this one back. Once done, every
           reservation left belongs to a job walked earlier, so once a cycle suffices. */
        if (!w->dropped_lower) {
            reservation_drop_lower(s, j);
            w->dropped_lower = true;
        }
        if (want_reservation(s, w, j) && !reserve(s, w, j, false))
            w->res_failed++;
    }
    if (pr == PLACE_NO_CAPACITY && sh->nofit_zone)
        reason_set(j, SCHED_R_RESERVED_ZONE, 0, 0, 0);
    else if (pr == PLACE_CLAIMED)
        reason_set(j, SCHED_R_RESERVATION,
                   j->reservation != NONE32 ? s->res[j->reservation].start : -1, 0, 0);
    else if (j->reservation != NONE32)
        reason_set(j, SCHED_R_RESOURCES, s->res[j->reservation].start, 0, 0);
    else
        reason_set(j, shape_just_failed ? SCHED_R_RESOURCES : SCHED_R_PRIORITY, -1, 0, 0);
    if (!s->policy.backfill)
        w->stop = true;
}

/* May j still use the nodes its reservation holds (a boost that ended changes the pools
 * it may use)? A yes is kept with the reservation while nothing it rests on moved: a
 * gang's reservation spans many nodes, and it is asked every cycle its job is walked
 * (on Philly a fifth of docket-sim's time went into asking again). */
static bool reservation_usable(struct sched *s, const struct job *j)
{
    if (j->reservation == NONE32)
        return true;
    struct reservation *r = &s->res[j->reservation];
    if (reservation_usable_proven(s, r, j)) {
        if (cache_verifying(s, SCHED_CACHE_RES_USABLE))
            cache_verified(s, SCHED_CACHE_RES_USABLE, j->id, reservation_nodes_usable(s, r, j));
        return true;
    }
    if (!reservation_nodes_usable(s, r, j))
        return false;
    r->usable_node_epoch = s->node_epoch;
    r->usable_epoch = s->memo_epoch;
    r->usable_shape = j->shape;
    return true;
}

/* Admission and static fit; false (with the reason set, and any reservation given back)
 * when the job may not start whatever the load. */
static bool job_admissible(struct sched *s, struct walk *w, struct job *j)
{
    job_walked_set(s, job_slot(s, j), true);
    if (job_admission(s, j, w->now) != SCHED_R_NONE) {
        give_back_reservation(s, j);
        return false;
    }
    int stat = shape_static_reason(s, &s->shapes[j->shape], j->id);
    if (stat != SCHED_R_NONE) {
        reason_set(j, (enum sched_reason)stat, 0, 0, 0);
        give_back_reservation(s, j);
        return false;
    }
    if (!reservation_usable(s, j))
        give_back_reservation(s, j); /* a boost ended, its zone changed: it may not use them */
    else if (j->reservation != NONE32 && s->res[j->reservation].end <= w->now)
        give_back_reservation(s, j); /* its window passed unused (a clock jump): made again */
    /* victims that leave early do not move the reservation's start: others may have been
       let in beside it until then; the job starts early only if the room is there */
    return true;
}

/* A job whose sticky room is ready but which starts later than its reservation said (a
 * victim outlived its kill by the agent's latency) would run into the reservations that
 * were made to follow it. Those followers give way, except other preemptors, whose victims
 * are already signalled: ordinary ones are recomputed by the walk, starving ones are noted
 * in w->moved and reserved again at once after the late job (reserve_moved), so they keep
 * their place right behind it. True when one did. */
static bool late_on_own_room(struct sched *s, struct walk *w, const struct job *j, int64_t now)
{
    if (j->reservation == NONE32)
        return false;
    const struct reservation *own = &s->res[j->reservation];
    if ((!own->preempting && !own->starving) || own->start > now)
        return false; /* not due yet: not late */
    int64_t dur = job_duration(j);
    int64_t end = dur >= NEVER - now ? NEVER : now + dur;
    bool dropped = false;
    for (int i = 0; i < own->nnodes; i++) {
        struct node *n = &s->nodes[own->nodes[i]];
        for (int k = 0; k < n->nclaims;) {
            const struct claim *c = &n->claims[k];
            const struct reservation *r = &s->res[c->res];
            /* a claim already due is a peer waiting too, not a follower */
            bool follower = c->start >= own->start && c->start > now && c->start < end;
            if (c->res != j->reservation && !r->preempting && (follower || !r->starving)) {
                if (r->starving && w->nmoved < 32)
                    w->moved[w->nmoved++] = r->job_id;
                struct job *f = &s->jobs[r->slot];
                if (f->id == r->job_id) { /* explain says who pushed it back */
                    f->pushed_ms = now;
                    f->pushed_by = j->id;
                }
                reservation_drop(s, n->claims[k].res);
                dropped = true;
            } else {
                k++;
            }
        }
    }
    return dropped;
}

/* The starving jobs a late job pushed back get their sticky reservation again now, before
 * anyone else in the walk reserves (they were promised that room first). */
static void reserve_moved(struct sched *s, struct walk *w)
{
    for (int i = 0; i < w->nmoved; i++) {
        struct job *m = job_find(s, w->moved[i]);
        if (m && m->state == SCHED_PENDING && m->reservation == NONE32 &&
            reservation_make(s, m, w->now, true) == 0)
            w->st->reservations++;
    }
    w->nmoved = 0;
}

/* After a placement attempt: a late sticky job pushes back its followers and tries again;
 * the job starts if there is room; the starving followers are reserved again behind it. */
static enum place_result start_if_room(struct sched *s, struct walk *w, struct job *j,
                                       struct order_entry *e, enum place_result pr)
{
    if (pr == PLACE_CLAIMED && late_on_own_room(s, w, j, w->now))
        pr = place_job(s, j, w->now, w->allocs, NULL, NULL);
    if (pr == PLACE_OK)
        start_job(s, j, e, w->allocs, w->st);
    reserve_moved(s, w);
    return pr;
}

/* The claimed memo: in this walk, claims held off a job of the shape that would run this
 * long, or any job of it ending after the latest end a node with room allowed (held_until,
 * known for one-node shapes checked without an own claim); longer jobs are held off too
 * while claims only grow (no reservation dropped since) and room only shrinks. */
static void shape_claimed_note(struct sched *s, struct shape *sh, int64_t dur, int64_t held_until,
                               int64_t now)
{
    if (held_until >= now && held_until < NEVER && held_until - now + 1 < dur)
        dur = held_until - now + 1;
    if (shape_claimed(s, sh, dur))
        return; /* proves less than what is known */
    if (sh->claimed_cycle != s->cycle || dur < sh->claimed_seen)
        sh->claimed_seen = dur;
    sh->claimed_cycle = s->cycle;
    sh->claimed_dur = dur;
    sh->claimed_grew = s->room_grew;
}

static bool cpu_shape(const struct shape *sh)
{
    return sh->gpus == 0 && sh->gpu_type <= 0 && sh->nodes == 1;
}

static bool cpu_nofit_known(const struct walk *w, const struct shape *sh)
{
    for (int i = 0; cpu_shape(sh) && i < w->ncpu_nofit; i++)
        if (w->cpu_nofit[i].rule == sh->pool_rule && w->cpu_nofit[i].selset == sh->selset &&
            w->cpu_nofit[i].cpus <= sh->cpus && w->cpu_nofit[i].mem_mb <= sh->mem_mb)
            return true;
    return false;
}

static void cpu_nofit_note(struct walk *w, const struct shape *sh)
{
    if (!cpu_shape(sh) || cpu_nofit_known(w, sh))
        return;
    int slot = w->ncpu_nofit < 8 ? w->ncpu_nofit : 7; /* full: the last gives way */
    for (int i = 0; i < w->ncpu_nofit; i++)
        if (w->cpu_nofit[i].rule == sh->pool_rule && w->cpu_nofit[i].selset == sh->selset &&
            w->cpu_nofit[i].cpus >= sh->cpus && w->cpu_nofit[i].mem_mb >= sh->mem_mb) {
            slot = i; /* this one proves more: it replaces one it covers */
            break;
        }
    if (slot == w->ncpu_nofit)
        w->ncpu_nofit++;
    w->cpu_nofit[slot].rule = sh->pool_rule;
    w->cpu_nofit[slot].selset = sh->selset;
    w->cpu_nofit[slot].cpus = sh->cpus;
    w->cpu_nofit[slot].mem_mb = sh->mem_mb;
}

/* Try to start one pending job; set its reason otherwise. */
/* No capacity for the shape in this walk (capacity only shrinks within one). Whether the
 * reserved pool would take it is settled now, once, for every job of the shape: the
 * reason of the ones walked later and of those the walk skips (reason_derive) agree. */
static void shape_nofit(struct sched *s, struct walk *w, struct shape *sh)
{
    sh->nofit_cycle = s->cycle;
    sh->nofit_zone = sh->pool_rule == POOL_RULE_NORMAL_ONLY && reserved_could_fit(s, sh);
    if (w && sh->pending > 0)
        w->open_shapes--;
}

static void consider(struct sched *s, struct walk *w, struct job *j, struct order_entry *e)
{
    struct shape *sh = &s->shapes[j->shape];
    w->st->considered++;
    if (!job_admissible(s, w, j))
        return;
    enum place_result pr = PLACE_NO_CAPACITY;
    bool fresh_fail = false;
    if (sh->nofit_cycle != s->cycle && cpu_nofit_known(w, sh)) {
        shape_nofit(s, w, sh); /* a smaller CPU shape found no room */
        fresh_fail = true;
    } else if (shape_claimed(s, sh, job_duration(j)) && j->reservation == NONE32) {
        pr = PLACE_CLAIMED; /* a shorter job of this shape was already held off */
    } else if (sh->nofit_cycle != s->cycle) {
        bool lower = false; /* only asked while stale lower reservations may be left */
        int64_t held_until;
        pr = place_job(s, j, w->now, w->allocs, w->dropped_lower ? NULL : &lower, &held_until);
        if (pr == PLACE_CLAIMED && lower) {
            reservation_drop_lower(s, j);
            pr = place_job(s, j, w->now, w->allocs, NULL, &held_until);
        }
        pr = start_if_room(s, w, j, e, pr);
        if (pr == PLACE_OK)
            return;
        if (pr == PLACE_NO_CAPACITY) {
            shape_nofit(s, w, sh);
            fresh_fail = true;
            cpu_nofit_note(w, sh);
        } else {
            shape_claimed_note(s, sh, job_duration(j), j->reservation == NONE32 ? held_until : -1,
                               w->now);
        }
    }
    job_blocked(s, w, j, pr, fresh_fail);
}

/* Could a job skipped here still change anything? Each skip rests on a memo that is exact
 * for it: its project is held back (for GPUs, when it asks for GPUs), or its shape found
 * no capacity (capacity only shrinks within a walk) or was held off by claims for a job no
 * longer than it, and it could take no reservation slot nor preempt. A job that holds a
 * reservation is never skipped: its own claims may let it in, or it must give the room
 * back (only shapes with such jobs pay for the look at the job). */
enum skip { SKIP_NO, SKIP_LIMIT, SKIP_NOFIT, SKIP_CLAIMED };

/* sched_verify_memos(): a job the walk skipped could not start now: admission refuses it
 * (a limit mark), or it is admitted and a full placement finds no room for it (no fit,
 * claims). A stale entry is dropped unread. */
static void walk_skip_verify(struct sched *s, const struct walk *w, const struct order_entry *e,
                             enum skip why)
{
    if (!cache_verifying(s, SCHED_CACHE_WALK_SKIP))
        return;
    const struct job *j = &s->jobs[e->slot];
    if (j->id != e->id || j->state != SCHED_PENDING)
        return;
    struct admission a;
    bool could = admission_check(s, j, w->now, &a) == SCHED_R_NONE;
    if (could && why != SKIP_LIMIT) {
        struct sched_alloc *scratch = calloc((size_t)s->shapes[j->shape].nodes, sizeof(*scratch));
        if (!scratch)
            return;
        could = place_job(s, j, w->now, scratch, NULL, NULL) == PLACE_OK;
        free(scratch);
    }
    cache_verified(s, SCHED_CACHE_WALK_SKIP, j->id, !could);
}

static enum skip entry_skippable(struct sched *s, const struct walk *w, const struct order_entry *e)
{
    const struct shape *sh = &s->shapes[e->shape];
    if (walk_look(s, e->slot))
        return SKIP_NO; /* it holds a reservation or starves: the walk sees to it */
    const struct project *p = &s->projects[e->project];
    const struct group *g = project_group(s, p);
    if (p->blocked_cycle == s->cycle || (sh->gpus > 0 && (p->gpu_blocked_cycle == s->cycle ||
                                                          (g && g->gpu_blocked_cycle == s->cycle))))
        return SKIP_LIMIT;
    int64_t dur = (int64_t)e->dur_min * 60000; /* at most the job's: see order_entry */
    bool claimed = shape_claimed(s, sh, dur);
    if (sh->nofit_cycle != s->cycle && !claimed)
        return SKIP_NO;
    if (reservation_slots_open(s, w))
        return SKIP_NO;
    if (s->policy.backfill && !w->dropped_lower && s->res_active > 0)
        return SKIP_NO; /* the first blocked job drops the lower reservations (job_blocked) */
    enum skip why = sh->nofit_cycle == s->cycle ? SKIP_NOFIT : SKIP_CLAIMED;
    if (!preemption_possible(s))
        return why;
    /* the job itself is read only to verify: a job that holds a reservation or starves
       (the memo is for neither) was let through above by its slot's look bit, and a
       stale entry skipped here is one the walk would drop without a decision */
    struct job *j = &s->jobs[e->slot];
    if (s->verify_memos && (j->id != e->id || j->state != SCHED_PENDING))
        return SKIP_NO; /* the walk sees to it */
    bool reclaim = false;
    if (!victims_gate(s, sh->selset, e->rank, e->project, sh->gpus * sh->nodes, &reclaim)) {
        gate_verify(s, j, w->now);
        return why; /* no victim on a node it may use: no search needed to know */
    }
    if (!memo_skips_entry(s, e, reclaim, dur, w->now))
        return SKIP_NO;
    w->st->preempt_memo_skips++;
    if (s->verify_memos)
        memo_verify(s, j, w->now);
    return why;
}

/* A starving job keeps every right of its tier (it may preempt) and gets a sticky
 * reservation when nothing else starts it; with no foreseeable start it says Resources.
 * Returns what its placement found (PLACE_NO_CAPACITY when it was not placed). */
static enum place_result serve_starving(struct sched *s, struct walk *w, struct job *j,
                                        bool *admitted)
{
    *admitted = job_admissible(s, w, j);
    if (!*admitted)
        return PLACE_NO_CAPACITY;
    /* an ordinary reservation it got before it starved becomes sticky: lower jobs may no
       longer take it away (they did, and re-made it later each cycle) */
    if (j->reservation != NONE32 && !s->res[j->reservation].preempting &&
        !s->res[j->reservation].starving)
        reservation_make_sticky(s, j->reservation);
    /* it respects every claim there is: its own sticky reservation, made against them,
       is what guarantees its start */
    struct shape *sh = &s->shapes[j->shape];
    enum place_result pr = PLACE_NO_CAPACITY;
    if (sh->nofit_cycle != s->cycle)
        pr = place_job_memo(s, j, w->now, w->allocs); /* served each cycle: from its memo */
    if (pr == PLACE_NO_CAPACITY && sh->nofit_cycle != s->cycle)
        shape_nofit(s, NULL, sh); /* the queue walk counts its open shapes itself */
    pr = start_if_room(s, w, j, NULL, pr);
    if (pr == PLACE_OK)
        return pr;
    if (holds_preempting(s, j) || try_preempt(s, w, j)) {
        reason_set(j, SCHED_R_PREEMPTING, s->res[j->reservation].start, 0, 0);
        return pr;
    }
    if (j->reservation == NONE32)
        (void)reserve(s, w, j, true);
    /* no foreseeable start (its nodes run jobs without a limit) still has a reason */
    reason_set(j, pr == PLACE_CLAIMED ? SCHED_R_RESERVATION : SCHED_R_RESOURCES,
               j->reservation != NONE32 ? s->res[j->reservation].start : -1, 0, 0);
    return pr;
}

/* ---- quiet starving jobs (struct starving_entry) */

/* memo_epoch but for the logs' moves, node_epoch (a node's state, capacity, labels or
 * pool) and project_changes (a project's guarantee or limits): each only grows, so their
 * sum moves exactly when one of them does */
static uint64_t quiet_epoch(const struct sched *s)
{
    return s->memo_epoch - s->log_resets + s->node_epoch + s->project_changes;
}

/* A shape's selector set as its proof counts it: 1..63, or 0 for node_changes. */
static uint8_t quiet_sel(const struct sched *s, uint32_t shape)
{
    uint32_t sel = s->shapes[shape].selset;
    return (uint8_t)(sel > 0 && sel < NSELBITS ? sel : 0);
}

/* The changes counted on the nodes the selectors of a shape (its quiet_sel) match. */
static uint64_t quiet_nodes_at(const struct sched *s, uint8_t sel)
{
    return sel ? s->sel_changes[sel] : s->node_changes;
}

static uint64_t quiet_nodes(const struct sched *s, uint32_t shape)
{
    return quiet_nodes_at(s, quiet_sel(s, shape));
}

/* The changes counted on nodes that have or had room for the shape (room_changes): on
 * the nodes its selectors match, or else on those of its GPU type. */
static uint64_t quiet_room(const struct sched *s, uint32_t shape)
{
    const struct shape *sh = &s->shapes[shape];
    int level = sh->gpus < NBUCKETS ? sh->gpus : NBUCKETS - 1;
    if (sh->selset > 0 && sh->selset < NSELBITS)
        return s->sel_room_changes[sh->selset][level];
    return s->room_changes[sh->gpu_type > 0 ? sh->gpu_type : NTYPES][level];
}

/* The usage j's admission reads: its project's and group's, and its array's running
 * tasks, which count in every project (a task of another project ending frees its %limit). */
static uint64_t quiet_usage(const struct sched *s, const struct job *j)
{
    const struct project *p = &s->projects[j->project];
    const struct group *g = project_group(s, p);
    uint64_t ai, arr = 0;
    if (j->array_id && u64map_get(&s->arrays, j->array_id, &ai))
        arr = s->array_counts[ai].changes;
    return p->usage_changes + (g ? g->usage_changes : 0) + arr;
}

/* What of the usage the service read is as it was. An admitted job that no limit can hold
 * back read only whether its project may reclaim, which matters only while a borrower's
 * job of its tier is there for it to take. */
static bool quiet_usage_holds(const struct sched *s, const struct starving_entry *e)
{
    if (e->limited || e->how == QUIET_ADMISSION)
        return e->usage == quiet_usage(s, &s->jobs[e->slot]);
    return project_can_reclaim(s, e->project, e->gpus) == e->reclaims ||
           !reclaim_victims_exist(s, s->shapes[e->shape].selset, e->rank);
}

/* What the walk knows that the rest of it uses, of j's: its shape found no capacity, its
 * project or group is at a limit (set in this cycle). */
static uint8_t quiet_marks(struct sched *s, const struct job *j)
{
    const struct project *p = &s->projects[j->project];
    const struct group *g = project_group(s, p);
    uint64_t c = s->cycle;
    return (uint8_t)((s->shapes[j->shape].nofit_cycle == c ? QUIET_NOFIT : 0) |
                     (p->blocked_cycle == c ? QUIET_PROJECT : 0) |
                     (p->gpu_blocked_cycle == c ? QUIET_PROJECT_GPUS : 0) |
                     (g && g->gpu_blocked_cycle == c ? QUIET_GROUP_GPUS : 0));
}

/* What a starving job's service would end in, as known without serving it. */
enum quiet_verdict {
    QV_SERVE,   /* not known: serve it */
    QV_STANDS,  /* as its last service: its reason stands */
    QV_ROOM,    /* ... known from the room, its nodes having changed */
    QV_NO_ROOM, /* its shape found no room in this walk: Resources, at its reservation */
    QV_CLAIMED, /* claims hold it off: Reservation, at its reservation */
};

/* Claims held off a job of the shape, at most as long as j, in this walk with its nodes as
 * they are, and j's own claims are on no node with room for it now: then claims hold j
 * off as well. Every node with room refused the other job; j counts every claim there
 * that job counted, and that job's own too (j's own lie elsewhere), over a window at
 * least as long, and room and claims are as they were. */
static bool claimed_in_walk(const struct sched *s, const struct shape *sh, uint32_t shape,
                            const struct job *j)
{
    if (sh->starving_claimed_cycle != s->cycle ||
        sh->starving_claimed_nodes != quiet_nodes(s, shape) ||
        job_duration(j) < sh->starving_claimed_dur || j->reservation == NONE32)
        return false;
    const struct reservation *own = &s->res[j->reservation];
    for (int i = 0; i < own->nnodes; i++)
        if (node_free_fit(&s->nodes[own->nodes[i]], sh))
            return false; /* it may start on its own room */
    return true;
}

/* Does the proof of e still hold at `now`, and what does it say? Read from the entry, the
 * slot bits and the counters alone where it can: the job itself is read only to tell
 * claims holding it off from other jobs' services in this walk (a cache miss per starving
 * job and cycle was what serving them cost, bench/RESULTS.md). A change of the slot's job
 * (it started, left, stopped starving, got or lost a reservation, another job took the
 * slot) set its changed bit. */
static unsigned quiet_moved(const struct sched *s, const struct starving_entry *e, int64_t now)
{
    return (slot_bit(s->changed_bits, e->slot) ? 1u << SCHED_QI_SLOT : 0) |
           (e->epoch != quiet_epoch(s) ? 1u << SCHED_QI_EPOCH : 0) |
           (!quiet_usage_holds(s, e) ? 1u << SCHED_QI_USAGE : 0) |
           (e->reclaims && e->repoch != s->reclaim_epoch ? 1u << SCHED_QI_RECLAIM : 0) |
           (now >= e->wake ? 1u << SCHED_QI_WAKE : 0);
}

static enum quiet_verdict quiet_on_nodes(const struct sched *s, const struct starving_entry *e);

static enum quiet_verdict quiet_holds(const struct sched *s, const struct starving_entry *e,
                                      int64_t now)
{
    if (!e->id || quiet_moved(s, e, now))
        return QV_SERVE;
    return quiet_on_nodes(s, e);
}

/* The rest of the proof: its nodes and the room for its shape. */
static enum quiet_verdict quiet_on_nodes(const struct sched *s, const struct starving_entry *e)
{
    if (e->how == QUIET_ADMISSION || e->nodes == quiet_nodes_at(s, e->sel))
        return QV_STANDS; /* held back by admission, which no node changes; or nothing moved */
    if (e->how == QUIET_NODES)
        return QV_SERVE;
    /* nodes moved, but it holds its sticky room and no victim is there for it: its
       placement alone decides, and it is known when no node where its shape has or had
       room changed, or its shape found none in this walk (room only shrinks within one),
       or claims held off its shape in this walk */
    const struct shape *sh = &s->shapes[e->shape];
    if (preemption_open(s, sh->selset, e->rank, e->project, e->gpus))
        return QV_SERVE;
    if (e->room == quiet_room(s, e->shape))
        return QV_ROOM;
    if (sh->nofit_cycle == s->cycle)
        return e->how == QUIET_NO_ROOM ? QV_ROOM : QV_NO_ROOM;
    return claimed_in_walk(s, sh, e->shape, &s->jobs[e->slot]) ? QV_CLAIMED : QV_SERVE;
}

/* The entry after a verdict known without a service: it rests on the room as it is now.
 * No room stands while no node with room for the shape changes (it found none); claims
 * holding it off stand so too, until the other job's refusal could end (and its own
 * reservation's start, which serving it would reach): claimed_in_walk's argument holds at
 * every time before. A refusal that could end now leaves the room counter behind (it never
 * comes back), and the next walk asks again. */
static bool quiet_turn(struct sched *s, struct starving_entry *e, enum quiet_verdict v, int64_t now)
{
    const struct shape *sh = &s->shapes[e->shape];
    if (v == QV_NO_ROOM) {
        e->how = QUIET_NO_ROOM;
        e->room = quiet_room(s, e->shape);
        e->marks |= QUIET_NOFIT;
        return true;
    }
    const struct job *j = &s->jobs[e->slot];
    int64_t until = sh->starving_claimed_until, start = s->res[j->reservation].start;
    e->how = QUIET_CLAIMED;
    e->marks &= (uint8_t)~QUIET_NOFIT;
    if (until <= now)
        return false;
    e->room = quiet_room(s, e->shape);
    e->wake = until < start ? until : start;
    return true;
}

/* A job passed by with its outcome known at the nodes as they are now: the proof may rest
 * on them as a fresh one would (quiet_stamp), unless it was known only because this walk's
 * preemptions ran out (a victim may be there, and the next walk must look). */
static void quiet_renew(struct sched *s, struct starving_entry *e)
{
    if (e->how != QUIET_ADMISSION &&
        !(s->policy.preemption && s->eligible_victims > 0 && s->preempt_budget <= 0))
        e->nodes = quiet_nodes_at(s, e->sel);
}

/* The reason a verdict sets (QV_NO_ROOM, QV_CLAIMED): as serve_starving does. */
static void quiet_reason(struct sched *s, const struct starving_entry *e, enum quiet_verdict v)
{
    struct job *j = &s->jobs[e->slot];
    reason_set(j, v == QV_CLAIMED ? SCHED_R_RESERVATION : SCHED_R_RESOURCES,
               s->res[j->reservation].start, 0, 0);
}

/* The skipped service's effects on the rest of the walk, as it would have left them. */
static void quiet_replay(struct sched *s, const struct starving_entry *e)
{
    job_walked_set(s, e->slot, true); /* its reason stands */
    if (!e->marks)
        return;
    struct shape *sh = &s->shapes[e->shape];
    struct project *p = &s->projects[e->project];
    struct group *g = project_group(s, p);
    if ((e->marks & QUIET_NOFIT) && sh->nofit_cycle != s->cycle)
        shape_nofit(s, NULL, sh);
    if (e->marks & QUIET_PROJECT)
        p->blocked_cycle = s->cycle;
    if (e->marks & QUIET_PROJECT_GPUS)
        p->gpu_blocked_cycle = s->cycle;
    if ((e->marks & QUIET_GROUP_GPUS) && g)
        g->gpu_blocked_cycle = s->cycle;
}

/* The counters a service moves when it changes anything. */
struct quiet_counts {
    uint64_t nodes, epoch, repoch, usage;
    size_t ndec;
};

static struct quiet_counts quiet_counts(struct sched *s, const struct job *j)
{
    return (struct quiet_counts){s->node_changes, quiet_epoch(s), s->reclaim_epoch,
                                 quiet_usage(s, j), s->ndec};
}

/* Did the service between a and b change nothing (the marks aside)? */
static bool quiet_unmoved(const struct quiet_counts *a, const struct quiet_counts *b)
{
    return a->nodes == b->nodes && a->epoch == b->epoch && a->repoch == b->repoch &&
           a->usage == b->usage && a->ndec == b->ndec;
}

/* ... and the job's own outcome and the marks the walk holds, for sched_verify_memos(). */
struct quiet_view {
    struct quiet_counts c;
    uint8_t state, reason, marks;
    int64_t r_value, r_in_use, r_request;
    uint32_t reservation;
    int64_t res_start;
};

static struct quiet_view quiet_view(struct sched *s, const struct job *j)
{
    return (struct quiet_view){quiet_counts(s, j),
                               j->state,
                               j->reason,
                               quiet_marks(s, j),
                               j->r_value,
                               j->r_in_use,
                               j->r_request,
                               j->reservation,
                               j->reservation != NONE32 ? s->res[j->reservation].start : 0};
}

static bool quiet_view_same(const struct quiet_view *a, const struct quiet_view *b)
{
    return quiet_unmoved(&a->c, &b->c) && a->state == b->state && a->reason == b->reason &&
           a->r_value == b->r_value && a->r_in_use == b->r_in_use && a->r_request == b->r_request &&
           a->reservation == b->reservation && a->res_start == b->res_start;
}

/* sched_verify_memos(): a job about to be skipped as quiet is served all the same (before
 * the replay). The service must change nothing but the marks, set none the replay would
 * not, and leave every one the replay sets. */
static void quiet_verify(struct sched *s, struct walk *w, const struct starving_entry *e)
{
    if (!cache_verifying(s, SCHED_CACHE_QUIET))
        return;
    struct job *j = &s->jobs[e->slot];
    if (j->id != e->id || j->state != SCHED_PENDING || !(j->flags & JF_STARVING) ||
        j->shape != e->shape || j->project != e->project || job_walked(s, e->slot)) {
        cache_verified(s, SCHED_CACHE_QUIET, e->id, false); /* its changed bit should be set */
        return;
    }
    struct quiet_view before = quiet_view(s, j);
    bool admitted;
    (void)serve_starving(s, w, j, &admitted);
    struct quiet_view after = quiet_view(s, j);
    uint8_t set = after.marks & (uint8_t)~before.marks;
    cache_verified(s, SCHED_CACHE_QUIET, j->id,
                   quiet_view_same(&before, &after) && !(set & ~e->marks) &&
                       !(e->marks & ~after.marks));
}

/* The marks the outcome of j's service implies by itself (another job may have set them
 * first): its project or group held back by admission; its shape without room, a fact
 * about the nodes that only a proof resting on them may replay. */
static uint8_t quiet_own_marks(const struct sched *s, const struct job *j, enum quiet_how how,
                               enum place_result pr, int64_t now)
{
    if (how == QUIET_ADMISSION) {
        struct admission a;
        (void)admission_check(s, j, now, &a);
        return a.blocks == ADM_BLOCKS_PROJECT        ? QUIET_PROJECT
               : a.blocks == ADM_BLOCKS_PROJECT_GPUS ? QUIET_PROJECT_GPUS
               : a.blocks == ADM_BLOCKS_GROUP_GPUS   ? QUIET_GROUP_GPUS
                                                     : 0;
    }
    return pr == PLACE_NO_CAPACITY && s->shapes[j->shape].nofit_cycle == s->cycle ? QUIET_NOFIT : 0;
}

/* sched_verify_memos(): the one input that alone ended e's proof, if one did
 * (SCHED_QI_COUNT: none, or several). */
static enum sched_quiet_input quiet_ended_by(const struct sched *s, const struct starving_entry *e,
                                             int64_t now)
{
    if (!e->id)
        return SCHED_QI_COUNT;
    unsigned moved = quiet_moved(s, e, now);
    if (!moved)
        return SCHED_QI_NODES; /* the verdict was QV_SERVE: its nodes said so */
    if ((moved & (moved - 1)) || quiet_on_nodes(s, e) == QV_SERVE)
        return SCHED_QI_COUNT;
    return (enum sched_quiet_input)__builtin_ctz(moved);
}

/* It holds a sticky reservation of its own, not a preemption's (whose victims it waits
 * for). */
static bool sticky_room(const struct sched *s, const struct job *j)
{
    return j->reservation != NONE32 && s->res[j->reservation].starving &&
           !s->res[j->reservation].preempting;
}

/* After a service that left j pending: prove it quiet when the service changed nothing
 * (a fixed point) and what it waits for is not a time alone. */
static void quiet_stamp(struct sched *s, struct starving_entry *e, const struct job *j,
                        const struct quiet_counts *before, enum place_result pr, bool admitted,
                        int64_t now)
{
    e->id = 0;
    struct quiet_counts after = quiet_counts(s, j);
    if (!quiet_unmoved(before, &after))
        return; /* it changed something: the next service starts from there */
    if (s->policy.preemption && s->eligible_victims > 0 && s->preempt_budget <= 0)
        return; /* its preemption was not tried for want of budget */
    int64_t wake = NEVER;
    if (j->reservation != NONE32)
        wake = s->res[j->reservation].start; /* due then: it starts on its own room */
    else if (admitted) /* no start foreseen: until a node's room before a claim closes */
        wake = s->res_horizon_job == j->id ? s->res_horizon : now;
    if (pr == PLACE_CLAIMED) {
        int64_t until = place_memo_wake(s, j, now); /* a refusal by claims ends */
        wake = until < wake ? until : wake;
    }
    if (wake <= now)
        return;
    e->id = j->id;
    slot_bit_set(s->changed_bits, e->slot, false);
    e->shape = j->shape;
    e->sel = quiet_sel(s, j->shape);
    e->project = j->project;
    e->rank = (uint8_t)job_eff_rank(s, j);
    e->gpus = j->gpus * j->nodes;
    e->how = !admitted                                      ? QUIET_ADMISSION
             : pr == PLACE_NO_CAPACITY && sticky_room(s, j) ? QUIET_NO_ROOM
             : pr == PLACE_CLAIMED && sticky_room(s, j)     ? QUIET_CLAIMED
                                                            : QUIET_NODES;
    e->marks = quiet_own_marks(s, j, e->how, pr, now);
    e->epoch = after.epoch;
    e->repoch = s->reclaim_epoch;
    e->reclaims = admitted && project_can_reclaim(s, j->project, e->gpus);
    e->limited = admission_limited(s, j);
    e->nodes = quiet_nodes_at(s, e->sel);
    e->room = quiet_room(s, j->shape);
    e->usage = after.usage;
    e->wake = wake;
}

/* Claims held j off with the nodes of its shape as they are, counted `nodes`
 * (claimed_in_walk): the shortest such job of the shape is kept. */
static void starving_claimed_note(struct sched *s, const struct job *j, uint64_t nodes, int64_t now)
{
    struct shape *sh = &s->shapes[j->shape];
    int64_t dur = job_duration(j);
    if (sh->starving_claimed_cycle == s->cycle && sh->starving_claimed_nodes == nodes &&
        sh->starving_claimed_dur <= dur)
        return;
    sh->starving_claimed_cycle = s->cycle;
    sh->starving_claimed_nodes = nodes;
    sh->starving_claimed_dur = dur;
    sh->starving_claimed_until = place_memo_wake(s, j, now); /* now: unknown */
}

/* Entry i stays in the list, at the next kept place (copied only once one was dropped). */
static void starving_keep(struct sched *s, size_t *keep, size_t i)
{
    if (*keep != i)
        s->starving[*keep] = s->starving[i];
    (*keep)++;
}

/* Has j's sticky starving window passed unused (the room it counted on never came: a job
 * hung past its kill, a clock jump)? Its claim binds nobody any more. */
static bool starving_window_passed(const struct sched *s, const struct job *j, int64_t now)
{
    if (!j->id || j->state != SCHED_PENDING || !(j->flags & JF_STARVING) ||
        j->reservation == NONE32)
        return false;
    const struct reservation *r = &s->res[j->reservation];
    return (r->starving || r->preempting) && r->end <= now;
}

static bool reservations_share_node(const struct reservation *a, const struct reservation *b)
{
    for (int i = 0; i < a->nnodes; i++)
        for (int k = 0; k < b->nnodes; k++)
            if (a->nodes[i] == b->nodes[k])
                return true;
    return false;
}

/* The window of the starving job of entry `from` passed unused: it is made again at once,
 * and the younger starving jobs whose windows share its nodes (made behind it) give theirs
 * back, to be made again behind it in this walk, oldest first (docs/scheduling.md §7).
 * The job's own promise moves too, behind whatever took its room while it could not start
 * (older starving jobs whose windows were still open): explain says when, naming the job
 * itself (property seed 5219: a clock jump landed in a cycle stopped by the start cap,
 * and the renewed window came a cycle later, after the check had read the old one). */
static void starving_renew_from(struct sched *s, size_t from)
{
    struct job *old = &s->jobs[s->starving[from].slot];
    uint32_t expired = old->reservation;
    old->pushed_ms = s->now;
    old->pushed_by = old->id;
    for (size_t i = from + 1; i < s->nstarving; i++) {
        struct job *y = &s->jobs[s->starving[i].slot];
        if (!y->id || y->state != SCHED_PENDING || y->reservation == NONE32)
            continue;
        const struct reservation *r = &s->res[y->reservation];
        if (r->starving && !r->preempting && reservations_share_node(&s->res[expired], r)) {
            y->pushed_ms = s->now; /* explain says who pushed it back */
            y->pushed_by = old->id;
            reservation_drop(s, y->reservation);
        }
    }
    reservation_drop(s, expired);
}

/* Oldest first. The list is compacted on the way: entries of jobs that left the queue or
 * stopped starving are dropped (a slot has one entry at most: sched_check). A job proven quiet is
 * not served again until something it depends on moves (struct starving_entry). */
static void walk_starving(struct sched *s, struct walk *w)
{
    claims_settle(s);
    s->quiet_walk = true;
    size_t keep = 0;
    bool renewing = false; /* an expired window was made again: every later job is served */
    for (size_t i = 0; i < s->nstarving; i++) {
        struct starving_entry *e = &s->starving[i]; /* kept: moved to `keep` (<= i) */
        if (start_cap_reached(s, w)) {
            starving_keep(s, &keep, i); /* served next cycle, first (or dropped then) */
            continue;
        }
        if (starving_window_passed(s, &s->jobs[e->slot], w->now)) {
            starving_renew_from(s, i);
            renewing = true;
        }
        enum quiet_verdict v = renewing ? QV_SERVE : quiet_holds(s, e, w->now);
        if (v != QV_SERVE) {
            bool renew = v == QV_ROOM; /* known from the room: at its nodes as they are */
            if (v == QV_NO_ROOM || v == QV_CLAIMED) {
                renew = quiet_turn(s, e, v, w->now);
                quiet_reason(s, e, v);
            }
            quiet_verify(s, w, e);
            quiet_replay(s, e);
            if (renew)
                quiet_renew(s, e);
            w->st->starving_quiet++;
            starving_keep(s, &keep, i);
            continue;
        }
        struct job *j = &s->jobs[e->slot];
        if (!j->id || j->state != SCHED_PENDING || !(j->flags & JF_STARVING)) {
            slot_bit_set(s->listed_bits, e->slot, false);
            continue;
        }
        struct quiet_counts before = quiet_counts(s, j);
        enum sched_quiet_input alone = SCHED_QI_COUNT;
        struct quiet_view seen = {0};
        if (s->verify_memos && !renewing) {
            alone = quiet_ended_by(s, e, w->now);
            seen = quiet_view(s, j);
        }
        s->res_horizon_job = 0; /* its own search, if the service makes one, sets it */
        uint64_t nodes_before = quiet_nodes(s, j->shape);
        bool admitted;
        enum place_result pr = serve_starving(s, w, j, &admitted);
        w->st->starving_served++;
        if (alone != SCHED_QI_COUNT) {
            struct quiet_view after = quiet_view(s, j);
            if (!quiet_view_same(&seen, &after))
                cache_quiet_witness(s, alone); /* a proof without it was wrong here */
        }
        if (pr == PLACE_CLAIMED && nodes_before == quiet_nodes(s, j->shape))
            starving_claimed_note(s, j, nodes_before, w->now);
        if (j->state == SCHED_PENDING) {
            quiet_stamp(s, e, j, &before, pr, admitted, w->now);
            starving_keep(s, &keep, i);
        } else {
            slot_bit_set(s->listed_bits, e->slot, false);
        }
    }
    s->nstarving = keep;
    s->quiet_walk = false;
}

/* A job further down that holds a reservation may still start on its own room. */
static bool reservations_unwalked(const struct sched *s)
{
    for (size_t r = res_next(s, 0, false); r < s->nres; r = res_next(s, r + 1, false))
        if (!job_walked(s, s->res[r].slot))
            return true;
    return false;
}

static void walk_queue(struct sched *s, struct walk *w)
{
    for (size_t i = 0; i < s->nshapes; i++)
        if (s->shapes[i].pending > 0 && s->shapes[i].nofit_cycle != s->cycle)
            w->open_shapes++;
    size_t i;
    int skipped[SKIP_CLAIMED + 1] = {0}; /* kept here, not in the stats, inside the loop */
    for (i = 0; i < s->norder && !w->stop; i++) {
        struct order_entry *e = &s->order[i];
        if (e->slot == NONE32)
            continue;
        enum skip why = entry_skippable(s, w, e);
        if (why != SKIP_NO) {
            if (s->verify_memos) /* asked here: most of a deep queue is skipped */
                walk_skip_verify(s, w, e, why);
            skipped[why]++;
            continue;
        }
        if (walk_look(s, e->slot) && job_walked(s, e->slot))
            continue; /* starving, served (or proven quiet) first: not read again */
        struct job *j = &s->jobs[e->slot];
        if (j->id != e->id || j->state != SCHED_PENDING) {
            e->slot = NONE32; /* left the queue without telling us: drop it */
            s->order_stale++;
            continue;
        }
        if (j->flags & JF_STARVING)
            continue; /* served first */
        if (start_cap_reached(s, w))
            break; /* the starving walk used the cap up: this job is the next cycle's */
        consider(s, w, j, e);
        if (start_cap_reached(s, w)) {
            i++;
            break; /* the next cycle goes on from here (it follows at once) */
        }
        if (w->open_shapes <= 0 && !preemption_possible(s) && !reservation_slots_open(s, w) &&
            !reservations_unwalked(s)) {
            i++;
            break; /* nothing left in the queue can start or reserve this cycle */
        }
    }
    for (; i < s->norder; i++)
        w->st->not_reached += s->order[i].slot != NONE32;
    w->st->skipped_limit += skipped[SKIP_LIMIT];
    w->st->skipped_nofit += skipped[SKIP_NOFIT];
    w->st->skipped_claimed += skipped[SKIP_CLAIMED];
}

static const struct sched_decision *decisions_return(struct sched *s, size_t *ndec)
{
    if (s->dec_returned) {
        s->ndec = 0;
        s->ndec_allocs = 0;
    }
    for (size_t i = 0; i < s->ndec; i++) {
        uintptr_t off = (uintptr_t)s->dec[i].allocs;
        s->dec[i].allocs = off ? &s->dec_allocs[off - 1] : NULL;
    }
    s->dec_returned = true;
    *ndec = s->ndec;
    return s->dec;
}

/* A forced recomputation (SCHED_CYCLE_RECOMPUTE): every structure derived from the model
 * is made anew (the queue sorted and the starving list from each job's key and bound, the
 * nodes' release lists and availability profiles) and no memo is trusted. What the model
 * holds stays: the shares and keys (refreshed on their own period), the reservations
 * (promises) and their claims. The walk that follows must take the decisions the
 * incremental cycle takes (the property test's twin). */
static void derived_forget(struct sched *s, int64_t now)
{
    s->memo_epoch++;
    for (size_t i = 0; i < s->nnodes; i++) {
        s->nodes[i].rel_dirty = true;
        s->nodes[i].prof_dirty = true;
    }
    order_rebuild(s, now, false);
}

const struct sched_decision *sched_cycle(struct sched *s, int64_t now, enum sched_cycle_mode mode,
                                         size_t *ndec, struct sched_cycle_stats *stats)
{
    struct sched_cycle_stats local;
    struct sched_cycle_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof(*st));
    if (s->dec_returned) {
        s->ndec = 0;
        s->ndec_allocs = 0;
        s->dec_returned = false;
    }
    s->now = now;
    s->cycle++;
    s->recomputing = mode == SCHED_CYCLE_RECOMPUTE;
    if (s->look_words)
        memset(s->walked_bits, 0, s->look_words * sizeof(*s->walked_bits)); /* job_walked() */
    uint64_t pruned_before = s->res_pruned, restored_before = s->res_restored,
             led_before = s->plans_led;
    zone_refresh(s);
    projects_accrue(s, now);
    fire_deadlines(s, now);
    bool refresh = mode == SCHED_CYCLE_REFRESH || s->order_dirty ||
                   now - s->last_refresh >= s->policy.fairshare_refresh_ms;
    if (refresh) {
        order_refresh(s, now);
    } else {
        if (mode == SCHED_CYCLE_RECOMPUTE)
            derived_forget(s, now);
        else
            order_merge_new(s);
        if (now - s->res_refreshed >= s->policy.reservation_refresh_ms) {
            reservations_drop_all(s, true);
            s->res_refreshed = now;
        }
    }
    st->full = refresh || mode == SCHED_CYCLE_RECOMPUTE;
    changes_advance(s, now);
    s->preempt_budget = s->policy.preempt_max_per_cycle;
    struct walk *w = calloc(1, sizeof(*w));
    if (w) {
        w->st = st;
        w->now = now;
        walk_starving(s, w);
        if (!w->capped)
            walk_queue(s, w);
        st->start_capped = w->capped;
        free(w);
    }
    reservation_hints_clear(s); /* the jobs the walk did not reach search again next time */
    /* out of budget with progress made: more preemptions may be due, run again soon;
       without progress, waiting for the next event or timer is enough */
    s->preempt_backlog = s->preempt_budget <= 0 && st->preempted > 0;
    s->start_backlog = st->start_capped;
    deadlines_prune(s); /* the walk's ends and starts left stale entries: never wake for them */
    st->reserve_pruned = (long)(s->res_pruned - pruned_before);
    st->preempt_led = (int)(s->plans_led - led_before);
    st->reservations_restored = (int)(s->res_restored - restored_before);
    st->pending = (int)s->by_state[SCHED_PENDING];
    st->running = (int)(s->by_state[SCHED_RUNNING] + s->by_state[SCHED_STARTING] +
                        s->by_state[SCHED_STOPPING]);
    return decisions_return(s, ndec);
}

int64_t sched_next_wakeup(const struct sched *s, int64_t now)
{
    int64_t t = deadline_next_live(s); /* stale entries never wake anyone */
    if (s->by_state[SCHED_PENDING] > 0) {
        int64_t refresh = s->last_refresh + s->policy.fairshare_refresh_ms;
        int64_t res = s->res_refreshed + s->policy.reservation_refresh_ms;
        if (refresh < t)
            t = refresh;
        if (res < t && s->res_active > 0)
            t = res;
        if (s->preempt_backlog && s->eligible_victims > 0)
            t = now + 1;
        if (s->start_backlog)
            t = now; /* the capped cycle's walk goes on */
    }
    if (s->ndec > 0 && !s->dec_returned)
        t = now; /* events queued decisions: run a cycle to collect them */
    return t < now ? now : t;
}
