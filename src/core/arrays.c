/*
 * arrays.c - the arrays' counters (floor 1): per array its live tasks and those running
 * (its %limit, read by admission), and what a dependency on the whole array reads (Slurm's
 * afterok:ARRAY_ID): how many tasks it has in all, how many ended and how many of those
 * did not complete, how many live ones have started, and who waits on it.
 *
 * A task's submission, first start and end each change the counters in O(1), whatever
 * the array's size. The waiters are read only when the answer for some kind of
 * dependency becomes known, which happens at most three times in an array's life: its
 * first failure (afterok can never be met), the moment every task has started or ended
 * (after), and its last end (all the others). The array is forgotten then; a later
 * dependency on it is settled by the caller, who keeps how its tasks ended.
 * The counters only say when an answer became known (their functions return true);
 * lifecycle.c settles the waiters (array_waiters_settle), so this file stays below it.
 */
#include "core/arrays.h"
#include "core/containers.h"
#include "core/policy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct array_count *array_find(const struct sched *s, uint64_t array_id)
{
    uint64_t ai;
    return u64map_get(&s->arrays, array_id, &ai) ? &s->array_counts[ai] : NULL;
}

static bool all_ended(const struct array_count *a)
{
    return a->jobs == 0 && a->ended >= a->tasks;
}

enum dep_verdict array_dep_verdict(const struct array_count *a, enum sched_dep_kind kind)
{
    switch (kind) {
    case SCHED_DEP_AFTEROK:
        return a->failed ? DEP_NEVER : all_ended(a) ? DEP_MET : DEP_WAIT;
    case SCHED_DEP_AFTERNOTOK:
        return !all_ended(a) ? DEP_WAIT : a->failed ? DEP_MET : DEP_NEVER;
    case SCHED_DEP_AFTER: /* every task started, or ended (cancelled before it started) */
        return a->ended + a->started >= a->tasks ? DEP_MET : DEP_WAIT;
    case SCHED_DEP_AFTERANY:
    default:
        return all_ended(a) ? DEP_MET : DEP_WAIT;
    }
}

/* Which answers are known: a change of it is when the waiters are read. */
static unsigned known_answers(const struct array_count *a)
{
    return (a->failed ? 1u : 0u) | (a->ended + a->started >= a->tasks ? 2u : 0u) |
           (all_ended(a) ? 4u : 0u);
}

int array_add_waiter(struct array_count *a, uint32_t slot, uint64_t id)
{
    size_t cap = (size_t)a->waiters_cap;
    if (grow((void **)&a->waiters, &cap, (size_t)a->nwaiters + 1, sizeof(*a->waiters)) < 0)
        return -ENOMEM;
    a->waiters_cap = (int)cap;
    a->waiters[a->nwaiters].slot = slot;
    a->waiters[a->nwaiters].id = id;
    a->nwaiters++;
    return 0;
}

void array_forget_if_ended(struct sched *s, uint64_t array_id)
{
    struct array_count *a = array_find(s, array_id);
    if (!a || !all_ended(a))
        return;
    free(a->waiters);
    memset(a, 0, sizeof(*a));
    u64map_del(&s->arrays, array_id);
}

static struct array_count *array_new(struct sched *s, uint64_t array_id)
{
    /* reusing a forgotten entry is not worth it: arrays are few */
    if (grow((void **)&s->array_counts, &s->arrays_cap, s->narrays + 1, sizeof(*s->array_counts)) <
            0 ||
        u64map_put(&s->arrays, array_id, s->narrays) < 0)
        return NULL;
    struct array_count *a = &s->array_counts[s->narrays++];
    memset(a, 0, sizeof(*a));
    return a;
}

int array_register(struct sched *s, const struct sched_job_spec *sp)
{
    struct array_count *a = array_find(s, sp->array_id);
    if (!a) {
        if (!(a = array_new(s, sp->array_id)))
            return -ENOMEM;
        a->limit = sp->array_limit;
    } else if (sp->array_limit > 0 && a->limit != sp->array_limit) {
        a->limit = sp->array_limit;
        s->memo_epoch++; /* its waiting jobs' admission moved (struct starving_entry) */
    }
    a->jobs++;
    if (!a->declared)
        a->tasks++;
    if (a->ended + a->jobs > a->tasks) /* more than declared: wait for them too */
        a->tasks = a->ended + a->jobs;
    return 0;
}

bool array_unregister(struct sched *s, const struct job *j, bool coming_back)
{
    struct array_count *a = array_find(s, j->array_id);
    if (!a)
        return false;
    unsigned before = known_answers(a);
    a->jobs--;
    if (!coming_back || !a->declared) /* array_register counts it again */
        a->tasks--;
    if (j->flags & JF_STARTED)
        a->started--;
    if (coming_back)
        return false; /* an update: the task is back at once, nothing was decided */
    /* never submitted after all: the rest of the array may answer now */
    return known_answers(a) != before;
}

bool array_task_started(struct sched *s, const struct job *j)
{
    struct array_count *a = j->array_id ? array_find(s, j->array_id) : NULL;
    if (!a)
        return false;
    unsigned before = known_answers(a);
    a->started++;
    return known_answers(a) != before;
}

bool array_task_ended(struct sched *s, const struct job *j, bool ok)
{
    struct array_count *a = array_find(s, j->array_id);
    if (!a)
        return false;
    unsigned before = known_answers(a);
    a->jobs--;
    if (j->flags & JF_STARTED)
        a->started--;
    a->ended++;
    a->failed += !ok;
    return known_answers(a) != before;
}

bool array_task_gone(struct sched *s, uint64_t array_id, bool ok)
{
    struct array_count *a = array_find(s, array_id);
    if (!a || a->ended + a->jobs >= a->tasks)
        return false; /* not one the core waits for */
    unsigned before = known_answers(a);
    a->ended++;
    a->failed += !ok;
    return known_answers(a) != before;
}

void array_counts_free(struct sched *s)
{
    for (size_t i = 0; i < s->narrays; i++)
        free(s->array_counts[i].waiters);
    free(s->array_counts);
    s->array_counts = NULL;
}

/* ------------------------------------------------------------------------------------ */
/* the API (sched.h)                                                                    */

int sched_array_declare(struct sched *s, uint64_t array_id, int tasks, int ended, int failed,
                        struct sched_error *err)
{
    if (array_id == 0 || tasks <= 0 || ended < 0 || ended >= tasks || failed < 0 || failed > ended)
        return err_set(err, -EINVAL, "array",
                       "array %llu: %d tasks, %d ended, %d failed is not an array to wait for",
                       (unsigned long long)array_id, tasks, ended, failed);
    if (array_find(s, array_id))
        return 0;
    struct array_count *a = array_new(s, array_id);
    if (!a)
        return err_set(err, -ENOMEM, "", "out of memory");
    a->tasks = tasks;
    a->ended = ended;
    a->failed = failed;
    a->declared = true;
    return 0;
}

bool sched_array_known(const struct sched *s, uint64_t array_id)
{
    return array_find(s, array_id) != NULL;
}
