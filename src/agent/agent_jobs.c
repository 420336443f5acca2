/*
 * agent_jobs.c - the agent's job table: supervisors launched for start commands (through
 * a spare made in advance on cgroup v1), GPUs never double-booked, stop commands passed
 * on, the end of a job read from its directory or, when its supervisor died, reclaimed
 * in a child and reported lost, jobs of an earlier life adopted after a restart, and
 * reported jobs retired. See agent_int.h and docs/agent.md.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/supnet.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

struct ajob *ag_job_find(struct agent *a, uint64_t id)
{
    for (struct ajob *j = a->jobs; j; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

static struct ajob *job_add(struct agent *a, uint64_t id)
{
    struct ajob *j = xcalloc(1, sizeof *j);
    j->id = id;
    j->next = a->jobs;
    a->jobs = j;
    return j;
}

void ag_job_remove(struct agent *a, struct ajob *dead)
{
    ag_probes_stop(a, dead->id);
    for (struct ajob **p = &a->jobs; *p; p = &(*p)->next)
        if (*p == dead) {
            *p = dead->next;
            free(dead);
            return;
        }
}

static void done_push(struct agent *a, uint64_t id)
{
    struct doneq *d = xcalloc(1, sizeof *d);
    d->id = id;
    d->at = clock_mono_ms();
    *a->done_tail = d;
    a->done_tail = &d->next;
}

static void event_started(struct agent *a, struct ajob *j)
{
    struct agent_event e;
    memset(&e, 0, sizeof e);
    e.job = j->id;
    e.run = j->run;
    str_copy(e.type, sizeof e.type, "started");
    e.time_ms = clock_now_ms();
    e.pid = j->st.pid > 0 ? j->st.pid : j->sup_pid;
    e.port = j->port;
    ag_queue_event(a, agent_event_to_json(&e), 0);
}

/* A service replica's port (probe.c) into its environment as $PORT. 0, or -errno with
 * err filled (no port free). */
static int give_port(struct agent *a, struct ajob *j, struct agent_job *spec, char *err,
                     size_t errlen)
{
    if (!spec->service_port)
        return 0;
    int port = ag_port_take(a);
    if (port < 0) {
        snprintf(err, errlen, "no port of --service-ports %d-%d is free", a->cfg.service_port_lo,
                 a->cfg.service_port_hi);
        return port;
    }
    if (port == 0)
        return 0; /* no range here: the replica runs without a port */
    char **env = realloc(spec->env, (size_t)(spec->nenv + 2) * sizeof *env);
    if (!env) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    spec->env = env;
    for (int i = 0; i < spec->nenv; i++) /* ours, over any the job set */
        if (strncmp(env[i], "PORT=", 5) == 0) {
            free(env[i]);
            env[i] = env[--spec->nenv];
        }
    if (asprintf(&env[spec->nenv], "PORT=%d", port) < 0) {
        env[spec->nenv] = NULL;
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    env[++spec->nenv] = NULL;
    j->port = port;
    return 0;
}

/* Once its logs are all shipped, a finished job's exit goes out (exactly its facts). */
void ag_queue_exit(struct agent *a, struct ajob *j)
{
    struct agent_event e;
    memset(&e, 0, sizeof e);
    e.job = j->id;
    e.run = j->run;
    e.time_ms = j->st.end_ms ? j->st.end_ms : clock_now_ms();
    /* a quarantined scratch is reported as a reclaim that failed (an event of the job,
     * an alert), though the node stays in service */
    if ((!j->st.reclaim_ok || j->st.quarantined[0]) && j->st.exit_kind != AGENT_EXIT_LOST) {
        struct agent_event r = e;
        str_copy(r.type, sizeof r.type, "reclaim_failed");
        str_copy(r.message, sizeof r.message,
                 !j->st.reclaim_ok ? (j->st.reclaim_msg[0] ? j->st.reclaim_msg : "reclaim failed")
                                   : j->st.quarantined);
        ag_queue_event(a, agent_event_to_json(&r), 0);
    }
    str_copy(e.type, sizeof e.type, "exited");
    e.exit_kind = j->st.exit_kind;
    e.exit_code = j->st.exit_code;
    str_copy(e.message, sizeof e.message, j->st.message);
    e.has_usage = true;
    e.usage = j->st.usage;
    ag_queue_event(a, agent_event_to_json(&e), j->id);
    j->exit_queued = true;
    log_info("job_exited", "job=%llu kind=%s code=%d message=\"%s\"", (unsigned long long)j->id,
             agent_exit_kind_name(e.exit_kind), e.exit_code, e.message);
}

/* The job's final state is known (j->st): hold the node's health to its reclaim. */
static void job_ended(struct agent *a, struct ajob *j)
{
    if (!j->st.reclaim_ok) {
        a->reclaim_failed = true;
        if (snprintf(a->reclaim_msg, sizeof a->reclaim_msg, "reclaim failed for job %llu: %s",
                     (unsigned long long)j->id, j->st.reclaim_msg) < 0)
            a->reclaim_msg[0] = '\0';
        log_error("reclaim_failed", "job=%llu message=\"%s\"", (unsigned long long)j->id,
                  j->st.reclaim_msg);
    }
    if (j->st.quarantined[0])
        log_warn("scratch_quarantined", "job=%llu message=\"%s\"", (unsigned long long)j->id,
                 j->st.quarantined);
    j->exited = true;
    j->ended_mono = clock_mono_ms();
    ag_probes_stop(a, j->id);
}

/* How long the reclaim of a dead supervisor's job waits for its processes to go: 5 s, or
 * the test-only $DOCKET_NODE_TEST_RECLAIM_MS (tests/system/agent_hostile.bats holds a
 * reclaim open longer than any test's own step, to show the agent runs other jobs
 * meanwhile, at any speed). */
static int lost_reclaim_wait_ms(void)
{
    const char *v = getenv("DOCKET_NODE_TEST_RECLAIM_MS");
    int ms = v && *v ? atoi(v) : 0;
    return ms > 0 ? ms : 5000;
}

/* In a child of ours: what the dead supervisor left (its cgroup, its scratch dir) is
 * reclaimed, and its final word written for it (final.json, "lost"), which the parent
 * reads when the child ends. Up to 5 s, so never on the event loop. */
static void __attribute__((noreturn)) reclaim_lost(struct agent *a, struct ajob *j, const char *dir)
{
    struct sup_state st = j->st;
    st.job = j->id;
    st.exit_kind = AGENT_EXIT_LOST;
    str_copy(st.state, sizeof st.state, "exited");
    str_copy(st.message, sizeof st.message, "supervisor died");
    st.reclaim_ok = true;
    st.reclaim_msg[0] = '\0';
    st.quarantined[0] = '\0';
    char msg[256] = "";
    struct cg_job cg;
    if (a->cg.mode != CG_NONE && cg_job_init(&cg, &a->cg, a->cfg.name, j->id) == 0 &&
        cg_job_reclaim(&cg, lost_reclaim_wait_ms(), NULL, msg, sizeof msg) < 0) {
        st.reclaim_ok = false;
        str_copy(st.reclaim_msg, sizeof st.reclaim_msg, msg);
    }
    if (st.reclaim_ok && sup_net_remove(a->cfg.name, j->id, a->cfg.nft, msg, sizeof msg) < 0) {
        st.reclaim_ok = false;
        snprintf(st.reclaim_msg, sizeof st.reclaim_msg, "cannot remove the job's network: %s", msg);
    }
    char scratch[PATH_MAX + 32];
    snprintf(scratch, sizeof scratch, "%s/job_%llu", a->cfg.scratch_root,
             (unsigned long long)j->id);
    int rc = a->cfg.keep_scratch
                 ? 0
                 : sup_scratch_remove(a->cfg.scratch_root, scratch, j->id, msg, sizeof msg);
    if (rc > 0)
        str_copy(st.quarantined, sizeof st.quarantined, msg);
    if (rc < 0 && st.reclaim_ok) {
        st.reclaim_ok = false;
        str_copy(st.reclaim_msg, sizeof st.reclaim_msg, msg);
    }
    st.end_ms = clock_now_ms();
    _exit(sup_state_write(dir, &st) == 0 ? 0 : 1);
}

void ag_job_finished(struct agent *a, struct ajob *j)
{
    if (j->exited || j->reclaim_pid > 0)
        return;
    char dir[PATH_MAX];
    sup_job_dir(&a->sup, j->id, dir, sizeof dir);
    struct sup_state st;
    if (sup_state_read(dir, &st) == 0 && strcmp(st.state, "exited") == 0) {
        j->st = st;
        job_ended(a, j);
        return;
    }
    /* the supervisor died without its final word: reclaim in a child, report lost */
    pid_t pid = fork();
    if (pid == 0)
        reclaim_lost(a, j, dir);
    if (pid > 0) {
        j->reclaim_pid = pid;
        log_info("reclaiming", "job=%llu child=%d reason=\"supervisor died\"",
                 (unsigned long long)j->id, (int)pid);
        return;
    }
    j->st.exit_kind = AGENT_EXIT_LOST;
    str_copy(j->st.message, sizeof j->st.message, "supervisor died");
    j->st.end_ms = clock_now_ms();
    j->st.reclaim_ok = false;
    snprintf(j->st.reclaim_msg, sizeof j->st.reclaim_msg, "cannot fork to reclaim: %s",
             strerror(errno));
    job_ended(a, j);
}

/* The reclaiming child `pid` ended: its final.json is the job's end. */
bool ag_reclaim_done(struct agent *a, pid_t pid, int status)
{
    for (struct ajob *j = a->jobs; j; j = j->next) {
        if (j->reclaim_pid != pid)
            continue;
        j->reclaim_pid = 0;
        char dir[PATH_MAX];
        sup_job_dir(&a->sup, j->id, dir, sizeof dir);
        struct sup_state st;
        if (sup_state_read(dir, &st) == 0 && strcmp(st.state, "exited") == 0) {
            j->st = st;
        } else {
            j->st.exit_kind = AGENT_EXIT_LOST;
            str_copy(j->st.message, sizeof j->st.message, "supervisor died");
            j->st.end_ms = clock_now_ms();
            j->st.reclaim_ok = false;
            snprintf(j->st.reclaim_msg, sizeof j->st.reclaim_msg,
                     "the reclaim did not finish (status %d)", status);
        }
        job_ended(a, j);
        return true;
    }
    return false;
}

/* A new spare supervisor, made from a fresh loop turn so the launch that used the last
 * one goes first. */
void ag_kick_spare(struct agent *a)
{
    if (!a->cfg.no_spare && a->cg.mode == CG_V1) {
        struct timeval tv = {0, 1000};
        evtimer_add(a->spare_ev, &tv);
    }
}

void ag_spare_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct agent *a = arg;
    char err[256];
    if (a->spare.pid > 0 || a->stopping || clock_mono_ms() < a->spare_next)
        return;
    if (sup_spare_start(&a->sup, &a->spare, err, sizeof err) < 0) {
        log_warn("spare_failed", "message=\"%s\"", err);
        a->spare_next = clock_mono_ms() + 1000;
    }
}

/* Never double-book a GPU: each index must exist here and belong to no live job (a job
 * whose reclaim has not finished still holds its GPUs; -EBUSY names it in *holder). */
static int gpus_check(struct agent *a, const struct agent_job *spec, const struct ajob *self,
                      struct ajob **holder, char *err, size_t errlen)
{
    for (int i = 0; i < spec->ngpus; i++) {
        int g = spec->gpus[i];
        if (g >= a->cfg.inv.ngpus) {
            snprintf(err, errlen, "GPU %d does not exist on node '%s' (%d GPUs)", g, a->cfg.name,
                     a->cfg.inv.ngpus);
            return -EINVAL;
        }
        for (struct ajob *o = a->jobs; o; o = o->next) {
            if (o == self || o->exited)
                continue;
            for (int k = 0; k < o->ngpus; k++)
                if (o->gpus[k] == g) {
                    snprintf(err, errlen, "GPU %d is still in use by job %llu", g,
                             (unsigned long long)o->id);
                    *holder = o;
                    return -EBUSY;
                }
        }
    }
    return 0;
}

static void defer_start(struct agent *a, const struct agent_cmd *c, int64_t deadline)
{
    struct deferred_start *d = xcalloc(1, sizeof *d), **p = &a->deferred;
    d->cmd = *c;
    json_incref(d->cmd.job);
    d->deadline = deadline;
    while (*p)
        p = &(*p)->next;
    *p = d;
}

bool ag_is_deferred(const struct agent *a, uint64_t id)
{
    for (const struct deferred_start *d = a->deferred; d; d = d->next)
        if (d->cmd.job_id == id)
            return true;
    return false;
}

static void deferred_drop(struct deferred_start *d)
{
    json_decref(d->cmd.job);
    free(d);
}

void ag_deferred_free(struct agent *a)
{
    while (a->deferred) {
        struct deferred_start *d = a->deferred;
        a->deferred = d->next;
        deferred_drop(d);
    }
}

/* The run a start command's job goes under (its output and events), 0 when not given. */
static int cmd_run(const struct agent_cmd *c)
{
    json_t *run = json_object_get(c->job, "run");
    return json_is_integer(run) && json_integer_value(run) > 0 &&
                   json_integer_value(run) <= INT32_MAX
               ? (int)json_integer_value(run)
               : 0;
}

/* A start refused before any process: its exit (launch_failed, with why) is reported. */
static void start_refused(struct ajob *j, const char *why)
{
    j->exited = true;
    j->st.reclaim_ok = true;
    j->st.exit_kind = AGENT_EXIT_LAUNCH_FAILED;
    str_copy(j->st.message, sizeof j->st.message, why);
}

static void start_job(struct agent *a, const struct agent_cmd *c, int64_t defer_until);

void ag_apply_start(struct agent *a, const struct agent_cmd *c)
{
    start_job(a, c, clock_mono_ms() + AG_START_DEFER_MS);
}

void ag_retry_deferred(struct agent *a)
{
    struct deferred_start *list = a->deferred;
    a->deferred = NULL; /* each one goes back at the end if it must wait on */
    while (list) {
        struct deferred_start *d = list;
        list = d->next;
        start_job(a, &d->cmd, d->deadline);
        deferred_drop(d);
    }
}

/* Launch the job of start command c. Its GPUs may still be held by a job told to stop:
 * then it waits (until defer_until, monotonic) among the deferred starts. */
static void start_job(struct agent *a, const struct agent_cmd *c, int64_t defer_until)
{
    struct ajob *j = ag_job_find(a, c->job_id);
    if ((j && !j->exited) || sup_start_seq(&a->sup, c->job_id) >= c->seq ||
        ag_is_deferred(a, c->job_id))
        return; /* running, or this very command already launched it: never twice */
    if (j)
        ag_job_remove(a, j); /* an earlier run's report is out of the way: a requeue */
    struct agent_job spec;
    struct proto_error e = {0};
    j = job_add(a, c->job_id);
    /* the run the job's output and events go under, even when the rest is refused */
    j->run = cmd_run(c);
    if (agent_job_parse(c->job, &spec, &e) < 0) {
        log_error("bad_start_command", "job=%llu field=%s message=\"%s\"",
                  (unsigned long long)c->job_id, e.field, e.message);
        j->exited = true;
        j->st.reclaim_ok = true;
        j->st.exit_kind = AGENT_EXIT_LAUNCH_FAILED;
        if (snprintf(j->st.message, sizeof j->st.message, "bad start command: %s", e.message) < 0)
            j->st.message[0] = '\0';
        return;
    }
    char err[512] = "";
    struct ajob *holder = NULL;
    int rc = gpus_check(a, &spec, j, &holder, err, sizeof err);
    if (rc == -EBUSY && holder->stop_sent && clock_mono_ms() < defer_until) {
        agent_job_release(&spec);
        if (!ag_is_deferred(a, c->job_id))
            log_info("launch_deferred", "job=%llu message=\"%s\"", (unsigned long long)c->job_id,
                     err);
        ag_job_remove(a, j);
        defer_start(a, c, defer_until);
        return;
    }
    if (rc < 0) {
        agent_job_release(&spec);
        log_error("launch_refused", "job=%llu message=\"%s\"", (unsigned long long)c->job_id, err);
        start_refused(j, err);
        return;
    }
    if (spec.net && !sup_net_can_enforce(a->cfg.nft, err, sizeof err)) {
        /* never run a job outside the boundary it was given; the node says why it
         * cannot (UNHEALTHY) so no further job comes until it can */
        agent_job_release(&spec);
        log_error("launch_refused", "job=%llu message=\"%s\"", (unsigned long long)c->job_id, err);
        if (!a->net_msg[0])
            log_warn("network_unenforceable", "node=%s message=\"%s\"", a->cfg.name, err);
        str_copy(a->net_msg, sizeof a->net_msg, err);
        a->net_next = clock_mono_ms() + a->cfg.health_interval_ms;
        start_refused(j, err);
        ag_kick_post(a);
        return;
    }
    if (give_port(a, j, &spec, err, sizeof err) < 0) {
        agent_job_release(&spec);
        log_error("launch_refused", "job=%llu message=\"%s\"", (unsigned long long)c->job_id, err);
        start_refused(j, err);
        return;
    }
    memcpy(j->gpus, spec.gpus, sizeof j->gpus);
    j->ngpus = spec.ngpus;
    j->tty = spec.tty_idle_ms > 0 && spec.node_rank == 0; /* its terminal is rank 0's */
    j->net = spec.net != NULL;
    /* a multi-node job's output is its rank 0's: the other ranks keep theirs here */
    if (spec.node_rank > 0)
        j->final_sent[0] = j->final_sent[1] = true;
    rc = sup_spare_launch(&a->sup, &a->spare, &spec, c->seq, &j->sup_pid, err, sizeof err);
    if (rc == 0)
        ag_kick_spare(a);
    else
        rc = sup_launch(&a->sup, &spec, c->seq, &j->sup_pid, err, sizeof err);
    if (rc == 0)
        ag_probes_start(a, j, &spec);
    agent_job_release(&spec);
    if (rc < 0) {
        log_error("launch_failed", "job=%llu message=\"%s\"", (unsigned long long)c->job_id, err);
        start_refused(j, err);
        return;
    }
    j->ours = true;
    j->sup_start = sup_proc_starttime(j->sup_pid);
    str_copy(j->st.state, sizeof j->st.state, "starting");
    log_info("job_started", "job=%llu supervisor=%d", (unsigned long long)c->job_id, j->sup_pid);
    event_started(a, j);
    if (j->tty) /* offered now: the person is waiting */
        ag_tty_tick(a);
}

/* A stop for a start still waiting: it never launches, and ends as refused. */
static bool stop_deferred(struct agent *a, uint64_t id)
{
    for (struct deferred_start **p = &a->deferred; *p; p = &(*p)->next) {
        struct deferred_start *d = *p;
        if (d->cmd.job_id != id)
            continue;
        *p = d->next;
        struct ajob *old = ag_job_find(a, id);
        if (old)
            ag_job_remove(a, old); /* an earlier run's report */
        struct ajob *j = job_add(a, id);
        j->run = cmd_run(&d->cmd);
        start_refused(j, "stopped before its launch (its GPUs were still being freed)");
        log_info("launch_dropped", "job=%llu", (unsigned long long)id);
        deferred_drop(d);
        return true;
    }
    return false;
}

void ag_apply_stop(struct agent *a, const struct agent_cmd *c)
{
    if (stop_deferred(a, c->job_id))
        return;
    struct ajob *j = ag_job_find(a, c->job_id);
    if (!j || j->exited)
        return; /* ended already: its exited event tells the controller */
    char cmd[64];
    if (c->type == AGENT_CMD_SIGNAL)
        snprintf(cmd, sizeof cmd, "signal %d %lld", c->signal, (long long)c->grace_ms);
    else
        snprintf(cmd, sizeof cmd, "kill");
    int rc = sup_command(&a->sup, j->id, j->sup_pid, j->sup_start, c->seq, cmd);
    if (rc == 0)
        j->stop_sent = true;
    if (rc == 0 && c->type == AGENT_CMD_SIGNAL)
        str_copy(j->st.state, sizeof j->st.state, "stopping");
    log_info("job_command", "job=%llu command=\"%s\" rc=%d", (unsigned long long)j->id, cmd, rc);
}

void ag_apply_step_host(struct agent *a, const struct agent_cmd *c)
{
    struct ajob *j = ag_job_find(a, c->job_id);
    if (!j || j->exited)
        return;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "step_host %d %s", c->rank, c->addr);
    int rc = sup_command(&a->sup, j->id, j->sup_pid, j->sup_start, c->seq, cmd);
    log_info("step_host", "job=%llu rank=%d addr=%s rc=%d", (unsigned long long)j->id, c->rank,
             c->addr, rc);
}

/* scancel --signal: a signal for the running job that does not stop it (the supervisor's
 * "notify SIG TO": supervisor.c). */
void ag_apply_notify(struct agent *a, const struct agent_cmd *c)
{
    struct ajob *j = ag_job_find(a, c->job_id);
    if (!j || j->exited)
        return;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "notify %d %d", c->signal, c->notify_to);
    int rc = sup_command(&a->sup, j->id, j->sup_pid, j->sup_start, c->seq, cmd);
    log_info("job_command", "job=%llu command=\"%s\" rc=%d", (unsigned long long)j->id, cmd, rc);
}

/* scontrol update TimeLimit= of a running job: the supervisor's "limit MS" (supervisor.c)
 * ends it at the new limit and moves a --signal warning not yet sent. */
void ag_apply_limit(struct agent *a, const struct agent_cmd *c)
{
    struct ajob *j = ag_job_find(a, c->job_id);
    if (!j || j->exited)
        return;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "limit %lld", (long long)c->time_limit_ms);
    int rc = sup_command(&a->sup, j->id, j->sup_pid, j->sup_start, c->seq, cmd);
    log_info("job_command", "job=%llu command=\"%s\" rc=%d", (unsigned long long)j->id, cmd, rc);
}

void ag_report_step_port(struct agent *a, struct ajob *j)
{
    struct agent_event e;
    memset(&e, 0, sizeof e);
    e.job = j->id;
    e.run = j->run;
    str_copy(e.type, sizeof e.type, "step_host");
    e.time_ms = clock_now_ms();
    e.port = j->st.step_port;
    ag_queue_event(a, agent_event_to_json(&e), 0);
    j->step_reported = true;
    log_info("step_port", "job=%llu port=%d", (unsigned long long)j->id, e.port);
}

void ag_report_preparing(struct agent *a, struct ajob *j, const char *dir)
{
    char path[PATH_MAX + 16], key[AGENT_MESSAGE_MAX + 1];
    snprintf(path, sizeof path, "%s/preparing", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    ssize_t n = read(fd, key, sizeof key - 1);
    close(fd);
    if (n <= 0)
        return;
    key[n] = '\0';
    struct agent_event e;
    memset(&e, 0, sizeof e);
    e.job = j->id;
    e.run = j->run;
    str_copy(e.type, sizeof e.type, "preparing");
    e.time_ms = clock_now_ms();
    str_copy(e.message, sizeof e.message, key);
    ag_queue_event(a, agent_event_to_json(&e), 0);
    j->prep_reported = true;
    str_copy(j->prep_key, sizeof j->prep_key, key);
    log_info("preparing", "job=%llu environment=%s", (unsigned long long)j->id, key);
}

void ag_report_prepared(struct agent *a, struct ajob *j)
{
    struct agent_event e;
    memset(&e, 0, sizeof e);
    e.job = j->id;
    e.run = j->run;
    str_copy(e.type, sizeof e.type, "prepared");
    e.time_ms = clock_now_ms();
    str_copy(e.message, sizeof e.message, j->prep_key);
    ag_queue_event(a, agent_event_to_json(&e), 0);
    j->prep_key[0] = '\0';
}

/* A job the controller is done with (exit acknowledged, output shipped): its directory
 * is marked and queued for removal, and it leaves the table (unlinked by the caller). */
void ag_retire(struct agent *a, struct ajob *j)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    sup_job_dir(&a->sup, j->id, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/reported", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    done_push(a, j->id);
    ag_probes_stop(a, j->id);
    free(j);
}

void ag_adopt(struct agent *a, uint64_t id, const char *dir)
{
    struct sup_state st;
    char path[PATH_MAX + 400];
    snprintf(path, sizeof path, "%s/reported", dir);
    bool reported = access(path, F_OK) == 0;
    int rc = sup_state_read(dir, &st);
    if (rc < 0) {
        snprintf(path, sizeof path, "%s/job.json", dir);
        if (access(path, F_OK) != 0)
            return;
        memset(&st, 0, sizeof st); /* launched but the supervisor never wrote: lost */
    }
    if (rc == 0 && strcmp(st.state, "exited") == 0 && reported) {
        done_push(a, id); /* nothing left to do but remove it later */
        return;
    }
    struct ajob *j = job_add(a, id);
    j->st = st;
    snprintf(path, sizeof path, "%s/job.json", dir);
    json_error_t je;
    json_t *spec = json_load_file(path, 0, &je);
    json_t *run = json_object_get(json_object_get(spec, "job"), "run");
    if (json_is_integer(run) && json_integer_value(run) > 0 && json_integer_value(run) <= INT32_MAX)
        j->run = (int)json_integer_value(run);
    j->tty = json_is_object(json_object_get(json_object_get(spec, "job"), "tty")) &&
             json_integer_value(json_object_get(json_object_get(spec, "job"), "node_rank")) == 0;
    if (json_integer_value(json_object_get(json_object_get(spec, "job"), "node_rank")) > 0)
        j->final_sent[0] = j->final_sent[1] = true; /* rank 0 ships the output */
    json_t *gpus = json_object_get(json_object_get(spec, "job"), "gpus");
    for (size_t i = 0; i < json_array_size(gpus) && j->ngpus < AGENT_MAX_GPUS; i++)
        j->gpus[j->ngpus++] = (int)json_integer_value(json_array_get(gpus, i));
    if (strcmp(st.state, "exited") != 0) /* a replica's probes go on */
        ag_probes_adopt(a, j, json_object_get(spec, "job"));
    json_decref(spec);
    j->sup_pid = st.sup_pid;
    j->sup_start = st.sup_start;
    if (strcmp(st.state, "exited") == 0) {
        j->exited = true;
        j->ended_mono = clock_mono_ms();
    } else if (!sup_alive(st.sup_pid, st.sup_start)) {
        ag_job_finished(a, j);
        /* the supervisor may have finished between our two reads */
    }
    log_info("job_found", "job=%llu state=%s supervisor=%d reported=%s", (unsigned long long)id,
             j->exited ? "exited" : st.state, st.sup_pid, reported ? "yes" : "no");
}

/* Spare groups of an earlier life (a spare killed before it could clean up). */
void ag_sweep_spares(struct agent *a)
{
    struct cg_job node;
    if (a->cg.mode != CG_V1 || cg_node_init(&node, &a->cg, a->cfg.name) < 0)
        return;
    DIR *d = opendir(node.dir[CG_FREEZER]);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        struct cg_job sp;
        char msg[256] = "";
        if (strncmp(e->d_name, "spare_", 6) != 0 ||
            cg_job_init_leaf(&sp, &a->cg, a->cfg.name, e->d_name) < 0)
            continue;
        if (cg_job_reclaim(&sp, 2000, NULL, msg, sizeof msg) < 0)
            log_warn("stale_spare", "group=%s message=\"%s\"", e->d_name, msg);
    }
    if (d)
        closedir(d);
}
