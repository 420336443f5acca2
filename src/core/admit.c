/*
 * admit.c - admission (floor 2): the limits that hold a job back whatever room there is
 * (project and group GPU limits, running and per-user limits, arrays), and the reasons a
 * job waits.
 */
#include "core/admit.h"
#include "core/containers.h"
#include "core/model.h"
#include "core/group.h"

void reason_set(struct job *j, enum sched_reason r, int64_t value, int64_t in_use, int64_t req)
{
    j->reason = (uint8_t)r;
    j->r_value = value;
    j->r_in_use = in_use;
    j->r_request = req;
}

/* The limits admission_check applies that read usage (the project's, group's, user's or
 * array's running jobs and GPUs), one row each, in the order of the checks: -1 when the
 * job has none of that kind. admission_check reads each limit from here, and
 * admission_limited() is derived from the same rows, so a limit cannot be checked
 * without a quiet proof knowing that usage can hold the job back. */
enum usage_limit {
    UL_PROJECT_GPUS,
    UL_GROUP_GPUS,
    UL_PROJECT_RUNNING,
    UL_USER_RUNNING,
    UL_USER_GPUS,
    UL_ARRAY,
    UL_COUNT
};

static int usage_limit(const struct sched *s, const struct job *j, enum usage_limit l)
{
    const struct project *p = &s->projects[j->project];
    const struct group *g = project_group(s, p);
    uint64_t ai;
    switch (l) {
    case UL_PROJECT_GPUS:
        return p->spec.gpu_limit;
    case UL_GROUP_GPUS:
        return g ? group_gpu_limit(s, g) : -1;
    case UL_PROJECT_RUNNING:
        return p->spec.max_running;
    case UL_USER_RUNNING:
        return p->spec.user_max_running;
    case UL_USER_GPUS:
        return p->spec.user_gpu_limit;
    default: /* UL_ARRAY: a %limit of 0 is none */
        if (j->array_id && u64map_get(&s->arrays, j->array_id, &ai) &&
            s->array_counts[ai].limit > 0)
            return s->array_counts[ai].limit;
        return j->array_id ? 0 : -1; /* a task's count may gain a limit with its next task */
    }
}

bool admission_limited(const struct sched *s, const struct job *j)
{
    for (int l = 0; l < UL_COUNT; l++)
        if (usage_limit(s, j, (enum usage_limit)l) >= 0)
            return true;
    return false;
}

/* Limits that hold this job back without blocking others: dependencies, begin time,
 * the admission switch, project, group and user limits, the array's %limit. The rules
 * alone, changing nothing: the walk (job_admission) and explain (reason_derive) ask them. */
enum sched_reason admission_check(const struct sched *s, const struct job *j, int64_t now,
                                  struct admission *a)
{
    const struct project *p = &s->projects[j->project];
    int total = j->gpus * j->nodes;
    *a = (struct admission){0};
    if (j->dep_never)
        return SCHED_R_DEPENDENCY_NEVER;
    if (j->ndeps_unmet > 0)
        return a->value = j->ndeps_unmet, SCHED_R_DEPENDENCY;
    if (j->begin_ms > now)
        return a->value = j->begin_ms, SCHED_R_BEGIN_TIME;
    if (p->spec.paused)
        return a->blocks = ADM_BLOCKS_PROJECT, SCHED_R_ADMISSION_PAUSED;
    if (p->storage_hold[0])
        return a->blocks = ADM_BLOCKS_PROJECT, SCHED_R_STORAGE_QUOTA;
    /* a GPU limit caps GPUs: a CPU-only job of a project at its limit still runs */
    int plimit = usage_limit(s, j, UL_PROJECT_GPUS);
    if (total > 0 && plimit >= 0 && p->gpus_in_use + total > plimit) {
        *a = (struct admission){plimit, p->gpus_in_use, total,
                                p->gpus_in_use >= plimit ? ADM_BLOCKS_PROJECT_GPUS
                                                         : ADM_BLOCKS_NONE};
        return SCHED_R_QUOTA_LIMIT;
    }
    const struct group *g = project_group(s, p);
    int glimit = usage_limit(s, j, UL_GROUP_GPUS);
    if (total > 0 && glimit >= 0 && g->gpus_in_use + total > glimit) {
        *a = (struct admission){glimit, g->gpus_in_use, total,
                                g->gpus_in_use >= glimit ? ADM_BLOCKS_GROUP_GPUS : ADM_BLOCKS_NONE};
        return SCHED_R_QUOTA_LIMIT;
    }
    int rlimit = usage_limit(s, j, UL_PROJECT_RUNNING);
    if (rlimit >= 0 && p->running >= rlimit) {
        *a = (struct admission){rlimit, p->running, 1, ADM_BLOCKS_PROJECT};
        return SCHED_R_JOB_LIMIT;
    }
    int urun = usage_limit(s, j, UL_USER_RUNNING), ugpus = usage_limit(s, j, UL_USER_GPUS);
    if (urun >= 0 || ugpus >= 0) {
        const struct user_count *uc =
            user_count_get((struct sched *)(uintptr_t)s, j->project, j->user, false);
        int running = uc ? uc->running : 0, gpus = uc ? uc->gpus : 0;
        if (urun >= 0 && running >= urun) {
            *a = (struct admission){urun, running, 1, ADM_BLOCKS_NONE};
            return SCHED_R_JOB_LIMIT;
        }
        if (total > 0 && ugpus >= 0 && gpus + total > ugpus) {
            *a = (struct admission){ugpus, gpus, total, ADM_BLOCKS_NONE};
            return SCHED_R_QUOTA_LIMIT;
        }
    }
    int alimit = usage_limit(s, j, UL_ARRAY);
    uint64_t ai;
    if (alimit > 0 && u64map_get(&s->arrays, j->array_id, &ai) &&
        s->array_counts[ai].running >= alimit) {
        *a = (struct admission){alimit, s->array_counts[ai].running, 1, ADM_BLOCKS_NONE};
        return SCHED_R_JOB_LIMIT;
    }
    return SCHED_R_NONE;
}

/* The admission rules applied in the walk: the job's reason set, and a limit that holds
 * back every job of its project (or group, for GPUs) marked for this cycle, so the walk
 * skips the rest from their entries. */
enum sched_reason job_admission(struct sched *s, struct job *j, int64_t now)
{
    struct admission a;
    enum sched_reason r = admission_check(s, j, now, &a);
    if (r == SCHED_R_NONE)
        return r;
    reason_set(j, r, a.value, a.in_use, a.request);
    struct project *p = &s->projects[j->project];
    struct group *g = project_group(s, p);
    if (a.blocks == ADM_BLOCKS_PROJECT)
        p->blocked_cycle = s->cycle;
    else if (a.blocks == ADM_BLOCKS_PROJECT_GPUS)
        p->gpu_blocked_cycle = s->cycle;
    else if (a.blocks == ADM_BLOCKS_GROUP_GPUS && g)
        g->gpu_blocked_cycle = s->cycle;
    return r;
}
