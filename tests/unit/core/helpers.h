/*
 * helpers.h - small hand-built clusters for the core's unit tests. Everything goes
 * through the public API of core/sched.h; nothing is stubbed.
 */
#ifndef DOCKET_TEST_CORE_HELPERS_H
#define DOCKET_TEST_CORE_HELPERS_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/sched.h"

#include <stdio.h>
#include <string.h>

#define SEC  1000LL
#define MIN  (60 * SEC)
#define HOUR (60 * MIN)
#define T0   (1700000000000LL) /* an arbitrary epoch for the tests */

static inline struct sched *mk_sched_with(const struct sched_policy *p)
{
    struct sched_error err;
    struct sched *s = sched_create(p, &err);
    assert_non_null(s);
    return s;
}

static inline struct sched *mk_sched(void)
{
    struct sched_policy p;
    sched_policy_defaults(&p);
    return mk_sched_with(&p);
}

static inline void add_node_l(struct sched *s, const char *name, const char *type, int gpus,
                              const char *label_k, const char *label_v)
{
    struct sched_node_spec n;
    memset(&n, 0, sizeof(n));
    snprintf(n.name, sizeof(n.name), "%s", name);
    snprintf(n.gpu_type, sizeof(n.gpu_type), "%s", gpus ? type : "");
    n.gpus = gpus;
    n.cpus = 64;
    n.mem_mb = 512 * 1024;
    n.state = SCHED_NODE_UP;
    if (label_k) {
        snprintf(n.labels[0].key, SCHED_NAME_MAX, "%s", label_k);
        snprintf(n.labels[0].value, SCHED_NAME_MAX, "%s", label_v);
        n.nlabels = 1;
    }
    struct sched_error err;
    int rc = sched_node_upsert(s, &n, T0, &err);
    assert_int_equal(rc, 0);
}

static inline void add_node(struct sched *s, const char *name, const char *type, int gpus)
{
    add_node_l(s, name, type, gpus, NULL, NULL);
}

static inline void add_project(struct sched *s, const char *name, const char *tier,
                               double guarantee, int gpu_limit)
{
    struct sched_project_spec p;
    sched_project_spec_init(&p);
    snprintf(p.name, sizeof(p.name), "%s", name);
    snprintf(p.tier, sizeof(p.tier), "%s", tier);
    p.guarantee_gpus = guarantee;
    p.gpu_limit = gpu_limit;
    struct sched_error err;
    int rc = sched_project_upsert(s, &p, &err);
    assert_int_equal(rc, 0);
}

/* A project named `name` with no limits, tier normal; tweak the returned spec, then
 * put_project(). */
static inline struct sched_project_spec project_spec(const char *name)
{
    struct sched_project_spec p;
    sched_project_spec_init(&p);
    snprintf(p.name, sizeof(p.name), "%s", name);
    return p;
}

static inline void put_project(struct sched *s, const struct sched_project_spec *p)
{
    struct sched_error err;
    if (sched_project_upsert(s, p, &err))
        fail_msg("project %s: %s", p->name, err.message);
}

static inline void spec_fill(struct sched_job_spec *j, uint64_t id, const char *project,
                             const char *tier, const char *cls, int gpus, int nodes,
                             int64_t limit_ms, int64_t submit)
{
    sched_job_spec_init(j);
    j->id = id;
    snprintf(j->project, sizeof(j->project), "%s", project);
    snprintf(j->user, sizeof(j->user), "alice");
    snprintf(j->tier, sizeof(j->tier), "%s", tier ? tier : "");
    snprintf(j->class_name, sizeof(j->class_name), "%s", cls ? cls : "");
    j->gpus_per_node = gpus;
    j->nodes = nodes;
    j->time_limit_ms = limit_ms;
    j->submit_ms = submit;
}

static inline void submit(struct sched *s, uint64_t id, const char *project, const char *tier,
                          const char *cls, int gpus, int nodes, int64_t limit_ms, int64_t now)
{
    struct sched_job_spec j;
    spec_fill(&j, id, project, tier, cls, gpus, nodes, limit_ms, now);
    struct sched_error err;
    int rc = sched_job_submit(s, &j, now, &err);
    if (rc)
        fail_msg("submit %llu: %s (%s)", (unsigned long long)id, err.message, err.field);
}

struct cyc {
    const struct sched_decision *d;
    size_t n;
};

static inline struct cyc cycle(struct sched *s, int64_t now)
{
    struct cyc c;
    c.d = sched_cycle(s, now, SCHED_CYCLE_INCREMENTAL, &c.n, NULL);
    return c;
}

static inline const struct sched_decision *find_dec(struct cyc c, enum sched_decision_kind k,
                                                    uint64_t job)
{
    for (size_t i = 0; i < c.n; i++)
        if (c.d[i].kind == k && c.d[i].job_id == job)
            return &c.d[i];
    return NULL;
}

static inline int count_dec(struct cyc c, enum sched_decision_kind k)
{
    int n = 0;
    for (size_t i = 0; i < c.n; i++)
        n += c.d[i].kind == k;
    return n;
}

static inline enum sched_job_state state_of(struct sched *s, uint64_t id)
{
    struct sched_job_view v;
    if (sched_job_get(s, id, &v) != 0)
        return SCHED_JOB_STATE_COUNT;
    return v.state;
}

static inline enum sched_reason reason_of(struct sched *s, uint64_t id)
{
    struct sched_job_view v;
    assert_int_equal(sched_job_get(s, id, &v), 0);
    return v.reason;
}

/* Confirm a START: the agent reports the job running. */
static inline void run(struct sched *s, uint64_t id, int64_t now)
{
    struct sched_error err;
    assert_int_equal(sched_job_running(s, id, now, &err), 0);
}

static inline void end(struct sched *s, uint64_t id, enum sched_exit_kind how, int code,
                       int64_t now)
{
    struct sched_error err;
    int rc = sched_job_ended(s, id, how, code, now, &err);
    if (rc)
        fail_msg("end %llu: %s", (unsigned long long)id, err.message);
}

#define assert_state(s, id, st)                                                                    \
    do {                                                                                           \
        enum sched_job_state got_ = state_of((s), (id));                                           \
        if (got_ != (st))                                                                          \
            fail_msg("job %llu: expected %s, got %s", (unsigned long long)(id),                    \
                     sched_job_state_name(st),                                                     \
                     got_ == SCHED_JOB_STATE_COUNT ? "(gone)" : sched_job_state_name(got_));       \
    } while (0)

#define assert_reason(s, id, r)                                                                    \
    do {                                                                                           \
        enum sched_reason got_ = reason_of((s), (id));                                             \
        if (got_ != (r))                                                                           \
            fail_msg("job %llu: expected reason %s, got %s", (unsigned long long)(id),             \
                     sched_reason_name(r), sched_reason_name(got_));                               \
    } while (0)

#endif
