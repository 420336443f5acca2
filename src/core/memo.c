/*
 * memo.c - preemption searches that remember their failures (struct preempt_memo).
 *
 * A blocked job searches the whole cluster for victims. On a full cluster where victims
 * are eligible but no plan fits, the same search for the same shape and tier fails cycle
 * after cycle; most of a cycle went there. A failed search leaves a memo in its shape, per
 * effective tier and per kind (reclaim or not). The next job it covers:
 *  - finds nothing changed since: hopeless, nothing searched;
 *  - finds nodes changed (changes.c): those alone are searched again, as the searcher
 *    would see them; still nothing: the memo moves to now, the job is hopeless; a plan
 *    there: the job searches for itself (those nodes for one node, all for a gang).
 * With sched_verify_memos() every job a memo called hopeless is searched in full as well,
 * without acting, and sched_check() fails if that search found victims.
 */
#include "core/memo.h"
#include "core/caches.h"
#include "core/model.h"
#include "core/changes.h"
#include "core/preempt.h"

static struct preempt_memo *memo_of(struct shape *sh, int rank, bool reclaim)
{
    return reclaim ? &sh->reclaim_fail[rank] : &sh->preempt_fail[rank];
}

/* The job a memo is about, as the walk knows it: its priority, length and whether it
 * holds a reservation (the walk asks from its queue entry, without the job). */
struct memo_job {
    uint64_t key1;
    int64_t submit_ms;
    uint64_t id;
    int64_t dur;
    bool reserved;
};

static struct memo_job memo_job_of(const struct job *j)
{
    return (struct memo_job){j->key1, j->submit_ms, j->id, job_duration(j),
                             j->reservation != NONE32};
}

/* job_outranks() on the memo's searcher */
static bool outranks_searcher(const struct memo_job *j, const struct preempt_memo *m)
{
    if (j->key1 != m->key1)
        return j->key1 > m->key1;
    if (j->submit_ms != m->submit_ms)
        return j->submit_ms < m->submit_ms;
    return j->id < m->id;
}

/* Made under the current epochs, for this job (not above the searcher, at least as
 * long, without a reservation of its own), and not in the future. */
static bool memo_covers(const struct sched *s, const struct preempt_memo *m, bool reclaim_memo,
                        const struct memo_job *j, int64_t now)
{
    if (!m->live || m->epoch != s->memo_epoch || (reclaim_memo && m->repoch != s->reclaim_epoch))
        return false;
    if (j->dur < m->dur || now < m->at || j->reserved)
        return false;
    return !outranks_searcher(j, m);
}

/* Nothing changed since the memo: no node logged after it, no shadow after its time. */
static bool memo_unchanged(const struct sched *s, const struct preempt_memo *m, int64_t now)
{
    if (m->logpos != s->nchlog)
        return false;
    return m->at == now || s->nshlog == 0 || s->shlog[s->nshlog - 1].at <= m->at;
}

/* An unchanged memo proves j hopeless. A reclaim memo proves a narrower search hopeless
 * too, but only while unchanged: its nodes are searched again as a searcher that may
 * reclaim. */
static bool memo_proves(const struct sched *s, struct shape *sh, int rank, bool reclaim,
                        const struct memo_job *j, int64_t now)
{
    const struct preempt_memo *r = memo_of(sh, rank, true), *p = memo_of(sh, rank, false);
    if (memo_covers(s, r, true, j, now) && memo_unchanged(s, r, now))
        return true;
    return !reclaim && memo_covers(s, p, false, j, now) && memo_unchanged(s, p, now);
}

/* For the walk's skip: a queue entry at least `dur` long (its floor in minutes) whose job
 * holds no reservation (the caller knows). */
bool memo_skips_entry(const struct sched *s, const struct order_entry *e, bool reclaim, int64_t dur,
                      int64_t now)
{
    struct memo_job j = {e->key1, e->submit_ms, e->id, dur, false};
    return memo_proves(s, &s->shapes[e->shape], e->rank, reclaim, &j, now);
}

static void memo_set(struct sched *s, struct preempt_memo *m, const struct job *j, int64_t dur,
                     int64_t now, int feasible)
{
    *m = (struct preempt_memo){.live = true,
                               .epoch = s->memo_epoch,
                               .repoch = s->reclaim_epoch,
                               .at = now,
                               .dur = dur,
                               .logpos = s->nchlog,
                               .key1 = j->key1,
                               .submit_ms = j->submit_ms,
                               .id = j->id,
                               .feasible = feasible};
    s->chlog_mark = s->nchlog;
}

/* Checked again up to now: the searcher, its length and its epochs stay. */
static void memo_move(struct sched *s, struct preempt_memo *m, int64_t now, int more_feasible)
{
    m->at = now;
    m->logpos = s->nchlog;
    m->feasible += more_feasible;
    s->chlog_mark = s->nchlog;
}

/* j as the memo's searcher: its priority and length (claims bind and windows run alike). */
static struct job memo_searcher(const struct job *j, const struct preempt_memo *m)
{
    struct job p = *j;
    p.key1 = m->key1;
    p.submit_ms = m->submit_ms;
    p.id = m->id;
    p.grace_ms = 0;
    p.limit_ms = m->dur >= NEVER ? 0 : m->dur;
    p.reservation = NONE32;
    return p;
}

/* sched_verify_memos(): would a full search for the job cache c gave up on find victims? */
static void search_verify(struct sched *s, enum sched_cache c, struct job *j, int64_t now)
{
    if (cache_verifying(s, c))
        cache_verified(s, c, j->id, preempt_for(s, j, now, true, NULL) != 0);
}

void memo_verify(struct sched *s, struct job *j, int64_t now)
{
    search_verify(s, SCHED_CACHE_SHAPE_MEMO, j, now);
}

static void own_memo_verify(struct sched *s, struct job *j, int64_t now)
{
    search_verify(s, SCHED_CACHE_OWN_MEMO, j, now);
}

void gate_verify(struct sched *s, struct job *j, int64_t now)
{
    search_verify(s, SCHED_CACHE_VICTIM_GATE, j, now);
}

enum recheck { STILL_HOPELESS, SEARCH_CHANGED, SEARCH_ALL };

/* The memo covers j but nodes changed: search them as its searcher would. */
static enum recheck memo_recheck(struct sched *s, struct preempt_memo *m, struct job *j,
                                 int64_t now, struct preempt_scope *sc,
                                 struct sched_cycle_stats *st)
{
    const uint32_t *nodes;
    size_t n = changes_since(s, m->logpos, m->at, now, &nodes);
    if (n == SIZE_MAX)
        return SEARCH_ALL;
    st->preempt_rechecks++;
    const struct shape *sh = &s->shapes[j->shape];
    st->preempt_recheck_nodes += (int)n;
    struct job probe = memo_searcher(j, m);
    struct preempt_scope psc = {.nodes = nodes, .nnodes = n};
    int rc = preempt_for(s, &probe, now, true, &psc);
    if (sh->nodes > 1) {
        /* a gang: the nodes of one type that may have a plan are at most those the memo
           counted plus the changed ones that have one now */
        if (m->feasible + psc.feasible >= sh->nodes)
            return SEARCH_ALL;
        memo_move(s, m, now, psc.feasible);
        return STILL_HOPELESS;
    }
    if (rc < 0) {
        memo_move(s, m, now, 0);
        return STILL_HOPELESS;
    }
    sc->nodes = nodes;
    sc->nnodes = n;
    return SEARCH_CHANGED;
}

/* The job's own memo (in its reservation): made by it, under the current epochs, for the
 * same kind of search at the tier it has now (a boost lets it take more), not in the
 * future. */
static bool own_memo_covers(const struct sched *s, const struct preempt_memo *m,
                            const struct job *j, bool reclaim, int64_t now)
{
    return m->live && m->epoch == s->memo_epoch && m->reclaim == reclaim &&
           m->rank == job_eff_rank(s, j) && (!reclaim || m->repoch == s->reclaim_epoch) &&
           now >= m->at;
}

static void own_memo_set(struct sched *s, struct preempt_memo *m, const struct job *j, bool reclaim,
                         int64_t now, int feasible)
{
    *m = (struct preempt_memo){.live = true,
                               .epoch = s->memo_epoch,
                               .repoch = s->reclaim_epoch,
                               .at = now,
                               .logpos = s->nchlog,
                               .feasible = feasible,
                               .reclaim = reclaim,
                               .rank = (uint8_t)job_eff_rank(s, j)};
    s->chlog_mark = s->nchlog;
}

/* j holds a reservation of its own: on the nodes it claims it has more room than the
 * shape memo's searcher had, elsewhere it sees what a job of its priority sees. Its own
 * memo (its last failure) leaves the changed nodes to search; else a shape memo that
 * covers it but for the reservation leaves those and its claimed nodes. -2: search all. */
static int preempt_reserved(struct sched *s, struct preempt_memo *m, bool reclaim, struct job *j,
                            int64_t now, struct sched_cycle_stats *st)
{
    struct reservation *r = &s->res[j->reservation];
    struct preempt_memo *own = &r->own;
    bool by_own = own_memo_covers(s, own, j, reclaim, now);
    struct memo_job unreserved = memo_job_of(j);
    unreserved.reserved = false;
    if (!by_own && !memo_covers(s, m, reclaim, &unreserved, now))
        return -2;
    const struct preempt_memo *from = by_own ? own : m;
    const uint32_t *nodes;
    size_t n = changes_since(s, from->logpos, from->at, now, &nodes);
    if (n == SIZE_MAX)
        return -2;
    for (int i = 0; !by_own && i < r->nnodes; i++)
        n = changes_also(s, n, r->nodes[i]);
    st->preempt_rechecks++;
    st->preempt_recheck_nodes += (int)n;
    struct preempt_scope sc = {.nodes = nodes, .nnodes = n};
    int want = s->shapes[j->shape].nodes;
    if (by_own && own->not_earlier) {
        /* the cheapest plan stays the one it was, no earlier than the reservation, unless a
           changed node is that one or has a plan that may be cheaper: then choose again */
        (void)preempt_for(s, j, now, true, &sc);
        bool again = sc.feasible > 0 &&
                     (own->chosen.node == NONE32 || !plan_costlier(&sc.best, &own->chosen));
        for (size_t i = 0; i < n && !again; i++)
            again = nodes[i] == own->chosen.node;
        if (again)
            return -2;
        struct plan_cost chosen = own->chosen;
        own_memo_set(s, own, j, reclaim, now, 0);
        own->not_earlier = true;
        own->chosen = chosen;
        own_memo_verify(s, j, now);
        return -1;
    }
    if (want > 1) { /* a gang: count, as in memo_recheck */
        (void)preempt_for(s, j, now, true, &sc);
        if (from->feasible + sc.feasible >= want)
            return -2;
        own_memo_set(s, own, j, reclaim, now, from->feasible + sc.feasible);
        own_memo_verify(s, j, now);
        return -1;
    }
    int rc = preempt_for(s, j, now, false, &sc);
    if (rc < 0) {
        /* a plan on a changed node no earlier than the reservation: the cheapest of all,
           since the other nodes had none */
        own_memo_set(s, own, j, reclaim, now, 0);
        own->not_earlier = sc.not_earlier;
        own->chosen = sc.best;
        own_memo_verify(s, j, now);
    }
    return rc;
}

/* Preempt for j (preempt_for's answer), through the memos. Each memo states the priority
 * it holds for, so the starving walk (oldest first) may use them as the priority walk. */
int preempt_memoised(struct sched *s, struct job *j, int64_t now, struct sched_cycle_stats *st)
{
    struct shape *sh = &s->shapes[j->shape];
    int rank = job_eff_rank(s, j);
    bool reclaim = project_can_reclaim(s, j->project, j->gpus * j->nodes);
    struct memo_job mj = memo_job_of(j);
    int64_t dur = mj.dur;
    struct preempt_memo *m = memo_of(sh, rank, reclaim);
    struct preempt_scope sc = {0};
    if (mj.reserved) {
        int rc = preempt_reserved(s, m, reclaim, j, now, st);
        if (rc != -2)
            return rc;
    } else if (memo_proves(s, sh, rank, reclaim, &mj, now)) {
        st->preempt_memo_skips++;
        memo_verify(s, j, now);
        return -1;
    } else if (memo_covers(s, m, reclaim, &mj, now)) {
        enum recheck r = memo_recheck(s, m, j, now, &sc, st);
        if (r == STILL_HOPELESS) {
            memo_verify(s, j, now);
            return -1;
        }
        if (r == SEARCH_CHANGED) { /* its best plan is on a changed node: the rest fail */
            int rc = preempt_for(s, j, now, false, &sc);
            if (rc < 0) { /* the searcher had a plan there, j has none: j's memo now */
                memo_set(s, m, j, dur, now, 0);
                memo_verify(s, j, now);
            }
            return rc;
        }
    }
    st->preempt_full++;
    sc = (struct preempt_scope){0};
    int rc = preempt_for(s, j, now, false, &sc);
    /* a gang with enough nodes that failed to start them together is not remembered: its
       plans, chosen by cost, change with time */
    if (rc < 0 && sc.feasible < sh->nodes) {
        memo_set(s, m, j, sc.fail_dur < dur ? sc.fail_dur : dur, now, sc.feasible);
        if (mj.reserved)
            own_memo_set(s, &s->res[j->reservation].own, j, reclaim, now, sc.feasible);
    } else if (rc < 0 && sc.not_earlier) {
        /* plans there were, the cheapest no earlier than its own reservation: a memo of its
           own (the shape's would wrong the jobs without one). Unchanged nodes' plans only
           start later as time passes and the reservation's start stays, so this holds
           until a changed node has a plan (then the cheapest must be chosen again). */
        struct preempt_memo *own = &s->res[j->reservation].own;
        own_memo_set(s, own, j, reclaim, now, 0);
        own->not_earlier = true;
        own->chosen = sh->nodes == 1 ? sc.best : (struct plan_cost){.node = NONE32};
    }
    return rc;
}
