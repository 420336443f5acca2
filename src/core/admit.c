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

/* Limits that hold this job back without blocking others: dependencies, begin time,
 * the admission switch, project, group and user limits, the array's %limit. The rules
 * alone, changing nothing: the walk (job_admission) and explain (reason_derive) ask them. */
enum sched_reason admission_check(const struct sched *s, const struct job *j, int64_t now,
                                  struct admission *a)
{
    const struct project *p = &s->projects[j->project];
    int total = j->gpus * j->nodes;
    *a = (struct admission){0};
    if (j->ndeps_unmet > 0)
        return a->value = j->ndeps_unmet, SCHED_R_DEPENDENCY;
    if (j->begin_ms > now)
        return a->value = j->begin_ms, SCHED_R_BEGIN_TIME;
    if (p->spec.paused)
        return a->blocks = ADM_BLOCKS_PROJECT, SCHED_R_ADMISSION_PAUSED;
    /* a GPU limit caps GPUs: a CPU-only job of a project at its limit still runs */
    if (total > 0 && p->spec.gpu_limit >= 0 && p->gpus_in_use + total > p->spec.gpu_limit) {
        *a = (struct admission){p->spec.gpu_limit, p->gpus_in_use, total,
                                p->gpus_in_use >= p->spec.gpu_limit ? ADM_BLOCKS_PROJECT_GPUS
                                                                    : ADM_BLOCKS_NONE};
        return SCHED_R_QUOTA_LIMIT;
    }
    const struct group *g = project_group(s, p);
    int glimit = g ? group_gpu_limit(s, g) : -1;
    if (total > 0 && glimit >= 0 && g->gpus_in_use + total > glimit) {
        *a = (struct admission){glimit, g->gpus_in_use, total,
                                g->gpus_in_use >= glimit ? ADM_BLOCKS_GROUP_GPUS : ADM_BLOCKS_NONE};
        return SCHED_R_QUOTA_LIMIT;
    }
    if (p->spec.max_running >= 0 && p->running >= p->spec.max_running) {
        *a = (struct admission){p->spec.max_running, p->running, 1, ADM_BLOCKS_PROJECT};
        return SCHED_R_JOB_LIMIT;
    }
    if (p->spec.user_max_running >= 0 || p->spec.user_gpu_limit >= 0) {
        const struct user_count *uc =
            user_count_get((struct sched *)(uintptr_t)s, j->project, j->user, false);
        int running = uc ? uc->running : 0, gpus = uc ? uc->gpus : 0;
        if (p->spec.user_max_running >= 0 && running >= p->spec.user_max_running) {
            *a = (struct admission){p->spec.user_max_running, running, 1, ADM_BLOCKS_NONE};
            return SCHED_R_JOB_LIMIT;
        }
        if (total > 0 && p->spec.user_gpu_limit >= 0 && gpus + total > p->spec.user_gpu_limit) {
            *a = (struct admission){p->spec.user_gpu_limit, gpus, total, ADM_BLOCKS_NONE};
            return SCHED_R_QUOTA_LIMIT;
        }
    }
    uint64_t ai;
    if (j->array_id && u64map_get(&s->arrays, j->array_id, &ai)) {
        const struct array_count *ac = &s->array_counts[ai];
        if (ac->limit > 0 && ac->running >= ac->limit) {
            *a = (struct admission){ac->limit, ac->running, 1, ADM_BLOCKS_NONE};
            return SCHED_R_JOB_LIMIT;
        }
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
