/*
 * loop.c - docketd's scheduling loop around the core (core/sched.h): debounced and
 * periodic cycles, the decisions applied (state persisted, job events written, commands
 * queued for agents), node timeouts, and the restart path that reloads the database
 * into the core. Design: docs/controller.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/admin.h"
#include "controller/alerts.h"
#include "controller/anchor.h"
#include "controller/network.h"
#include "controller/lifecycle.h"
#include "controller/logarch.h"
#include "controller/storage.h"
#include "controller/conn.h"
#include "controller/ctl.h"
#include "controller/deps.h"
#include "controller/live.h"
#include "controller/warm.h"
#include "controller/http.h"
#include "controller/idem.h"
#include "controller/logs.h"
#include "controller/leader.h"
#include "controller/lease.h"
#include "controller/loop.h"
#include "controller/metrics.h"
#include "controller/secrets.h"
#include "controller/services.h"
#include "controller/turns.h"
#include "controller/usage.h"
#include "protocol/agent_msg.h"
#include "util/clock.h"
#include "util/dbuf.h"
#include "util/str.h"
#include "util/xalloc.h"

/* A job the cycle started whose start command could not be made (a secret would not
 * open): failed as if its agent had reported launch_failed, once the cycle's decisions
 * are applied (the core must not change while they are read). */
struct ctl_launch_fail {
    uint64_t job;
    char message[512];
    struct ctl_launch_fail *next;
};

/* ------------------------------------------------------------------------------------ */
/* Audit and job events                                                                  */

void ctl_store_diverged(struct ctl *c, const char *what, uint64_t job)
{
    log_error("store_diverged", "what=%s job=%llu error=\"%s\" action=exit", what,
              (unsigned long long)job, store_errmsg(c->store));
    if (c->diverged)
        return;
    c->diverged = true;
    c->shutting_down = true;
    c->exit_code = 1;
    /* nothing of this iteration reaches the disk, and nobody who waited for it is told
     * it did: the restart reloads the core from what was committed before */
    if (store_in_tx(c->store))
        (void)store_rollback(c->store);
    for (struct ctl_reply *r = c->replies; r; r = r->next)
        if (r->gen == 0)
            r->gen = UINT64_MAX;
    ctl_replies_release(c, UINT64_MAX, -EIO);
    event_base_loopexit(c->base, NULL);
}

int ctl_job_event(struct ctl *c, uint64_t job, const char *type, const char *from, const char *to,
                  const char *node, const char *reason, const char *detail)
{
    struct store_event e = {job, clock_now_ms(), type, from, to, node, reason, detail, 0};
    int rc = store_begin(c->store);
    if (rc == 0)
        rc = store_event_add(c->store, &e);
    if (rc < 0)
        log_error("store_failed", "what=job_event error=\"%s\"", store_errmsg(c->store));
    ctl_commit_soon(c);
    return rc;
}

int ctl_audit_text(struct ctl *c, const char *actor, const char *action, const char *target,
                   const char *before, const char *after, const char *reason)
{
    struct store_audit e = {0,      clock_now_ms(), actor, action,
                            target, before,         after, reason ? reason : ""};
    int rc = store_begin(c->store);
    if (rc == 0)
        rc = store_audit_add(c->store, &e);
    if (rc < 0)
        log_error("store_failed", "what=audit error=\"%s\"", store_errmsg(c->store));
    else
        ctl_anchor_dirty(c);
    ctl_commit_soon(c);
    return rc;
}

int ctl_audit(struct ctl *c, const char *actor, const char *action, const char *target,
              const json_t *before, const json_t *after, const char *reason)
{
    char *b = before ? json_dumps(before, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    char *a = after ? json_dumps(after, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    int rc = ctl_audit_text(c, actor, action, target, b, a, reason);
    free(b);
    free(a);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Nodes                                                                                 */

struct ctl_node *ctl_node_at(struct ctl *c, uint32_t index)
{
    if (index >= c->nnodes)
        return NULL;
    return c->nodes[index];
}

struct ctl_node *ctl_node_by_name(struct ctl *c, const char *name)
{
    int i = sched_node_find(c->sched, name);
    return i < 0 ? NULL : ctl_node_at(c, (uint32_t)i);
}

int ctl_node_put(struct ctl *c, const struct ctl_node *n, const char *state, const char *reason,
                 const char *labels)
{
    struct store_node rec = n->rec; /* a shallow copy: labels and info stay n's */
    str_copy(rec.state, sizeof(rec.state), state);
    str_copy(rec.reason, sizeof(rec.reason), reason);
    rec.labels = (char *)labels;
    int rc = store_begin(c->store);
    if (rc == 0)
        rc = store_node_put(c->store, &rec);
    ctl_commit_soon(c);
    return rc;
}

int ctl_node_save(struct ctl *c, struct ctl_node *n)
{
    int i = sched_node_find(c->sched, n->name);
    struct sched_node_view v;
    if (i >= 0 && sched_node_get(c->sched, (uint32_t)i, &v) == 0)
        str_copy(n->rec.state, sizeof(n->rec.state), sched_node_state_name(v.state));
    int rc = store_begin(c->store);
    if (rc == 0)
        rc = store_node_put(c->store, &n->rec);
    if (rc < 0)
        log_error("store_failed", "what=node error=\"%s\"", store_errmsg(c->store));
    ctl_commit_soon(c);
    return rc;
}

static json_t *heartbeat_reply(struct ctl *c, struct ctl_node *n, int64_t ack)
{
    json_t *cmds = json_array();
    for (struct ctl_cmd *k = n->cmds; k; k = k->next)
        if (k->seq > ack)
            json_array_append(cmds, k->json);
    int i = sched_node_find(c->sched, n->name);
    struct sched_node_view v;
    const char *st = "UP";
    if (i >= 0 && sched_node_get(c->sched, (uint32_t)i, &v) == 0)
        st = sched_node_state_name(v.state);
    json_t *reply = json_pack("{s:o,s:s}", "commands", cmds, "node_state", st);
    ctl_lifecycle_reply(c, n, reply);
    return reply;
}

/* Answer a parked heartbeat (now or at the commit). */
static void unpark(struct ctl *c, struct ctl_node *n)
{
    if (!n->parked)
        return;
    struct evhttp_request *req = n->parked;
    n->parked = NULL;
    event_del(n->park_timer);
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    if (con)
        ctl_conn_watch(c, con, NULL, NULL);
    ctl_reply_json(c, req, 200, heartbeat_reply(c, n, -1));
}

void ctl_node_wake(struct ctl *c, struct ctl_node *n)
{
    unpark(c, n);
}

void ctl_node_drop_commands(struct ctl_node *n)
{
    while (n->cmds) {
        struct ctl_cmd *k = n->cmds;
        n->cmds = k->next;
        json_decref(k->json);
        free(k);
    }
    n->cmds_tail = NULL;
}

void ctl_node_drop_job_commands(struct ctl_node *n, uint64_t id)
{
    struct ctl_cmd **at = &n->cmds, *last = NULL;
    while (*at) {
        struct ctl_cmd *k = *at;
        if (k->job != id) {
            last = k;
            at = &k->next;
            continue;
        }
        *at = k->next;
        json_decref(k->json);
        free(k);
    }
    n->cmds_tail = last;
}

int ctl_node_command(struct ctl *c, struct ctl_node *n, uint64_t job, json_t *cmd)
{
    struct ctl_cmd *k = calloc(1, sizeof(*k));
    if (!k) {
        json_decref(cmd);
        return -ENOMEM;
    }
    k->seq = ++n->rec.cmd_seq;
    k->job = job;
    json_object_set_new(cmd, "seq", json_integer(k->seq));
    k->json = cmd;
    if (n->cmds_tail)
        n->cmds_tail->next = k;
    else
        n->cmds = k;
    n->cmds_tail = k;
    int rc = ctl_node_save(c, n);
    if (rc < 0) /* the command sequence must survive a restart, or agents would skip */
        ctl_store_diverged(c, "node_command", job);
    unpark(c, n);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Jobs: spec conversion and state persistence                                           */

void ctl_spec_to_sched(const struct proto_jobspec *p, uint64_t id, int64_t submit_ms,
                       uint64_t array_id, int array_limit, struct sched_job_spec *out)
{
    sched_job_spec_init(out);
    out->id = id;
    str_copy(out->project, sizeof(out->project), p->project);
    str_copy(out->user, sizeof(out->user), p->user);
    str_copy(out->tier, sizeof(out->tier), p->tier);
    str_copy(out->class_name, sizeof(out->class_name), p->class_name);
    str_copy(out->gpu_type, sizeof(out->gpu_type), p->gpu_type);
    out->gpus_per_node = p->gpus;
    out->cpus_per_node = p->cpus;
    out->mem_mb_per_node = p->mem_mb;
    out->nodes = p->nodes;
    out->time_limit_ms = p->time_limit_ms;
    out->submit_ms = submit_ms;
    out->begin_ms = p->begin_ms;
    out->ndeps = 0;
    for (int i = 0; i < p->ndeps && i < SCHED_MAX_DEPS; i++) {
        out->deps[out->ndeps].kind = ctl_dep_kind(p->deps[i].type);
        out->deps[out->ndeps].job_id = p->deps[i].job;
        out->deps[out->ndeps].array = p->deps[i].array;
        out->ndeps++;
    }
    out->deps_any = p->deps_any;
    out->nselectors = 0;
    for (int i = 0; i < p->nselectors && i < SCHED_MAX_LABELS; i++) {
        struct sched_selector *s = &out->selectors[out->nselectors++];
        str_copy(s->key, sizeof(s->key), p->selectors[i].key);
        str_copy(s->value, sizeof(s->value), p->selectors[i].value);
        s->negate = p->selectors[i].negate;
    }
    str_copy(out->constraint, sizeof(out->constraint), p->constraint);
    out->signal = p->signal;
    out->grace_ms = p->grace_ms;
    out->has_checkpoint_signal = p->checkpoint;
    out->retries = p->retries;
    out->switches = p->switches;
    out->switches_wait_ms = p->switches_wait_ms;
    out->idempotent = p->idempotent;
    out->no_requeue = !p->requeue;
    out->hold = p->hold;
    out->array_id = array_id;
    out->array_limit = array_limit;
    /* its template's version, resolved at submission: the core takes the nodes where it
       is warm first (docs/scheduling.md §3 "Warm nodes") */
    const char *tpl = json_string_value(json_object_get(p->extra, "template"));
    if (tpl && strlen(tpl) < sizeof(out->env))
        str_copy(out->env, sizeof(out->env), tpl);
}

static json_t *allocs_json(struct ctl *c, const struct sched_alloc *a, int n)
{
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        json_t *g = json_array();
        for (int b = 0; b < 64; b++)
            if (a[i].gpu_mask & ((uint64_t)1 << b))
                json_array_append_new(g, json_integer(b));
        const char *name = sched_node_name(c->sched, a[i].node);
        json_array_append_new(arr,
                              json_pack("{s:s,s:o,s:i,s:I}", "node", name ? name : "?", "gpus", g,
                                        "cpus", a[i].cpus, "mem_mb", (json_int_t)a[i].mem_mb));
    }
    return arr;
}

static void nodes_list(struct ctl *c, const struct sched_alloc *a, int n, char *out, size_t len)
{
    struct dbuf b;
    dbuf_init(&b, len - 1);
    dbuf_puts(&b, ",");
    for (int i = 0; i < n; i++) {
        const char *name = sched_node_name(c->sched, a[i].node);
        dbuf_printf(&b, "%s,", name ? name : "?");
    }
    str_copy(out, len, b.failed ? "" : b.data);
    dbuf_release(&b);
}

const char *ctl_node_addr(struct ctl *c, uint32_t index)
{
    struct ctl_node *n = ctl_node_at(c, index);
    static char addr[256];
    addr[0] = '\0';
    if (n && n->rec.info) {
        json_t *info = json_loads(n->rec.info, 0, NULL);
        json_t *a = json_object_get(info, "addr");
        if (json_is_string(a) && json_string_length(a) > 0)
            str_copy(addr, sizeof(addr), json_string_value(a));
        json_decref(info);
    }
    if (!addr[0])
        str_copy(addr, sizeof(addr), n ? n->name : "");
    return addr;
}

struct proto_class_node ctl_class_node(const struct ctl *c, const char *name)
{
    for (int i = 0; i < c->nclass_nodes; i++)
        if (strcmp(c->class_nodes[i].name, name) == 0)
            return c->class_nodes[i].n;
    return (struct proto_class_node){0, 0, {0, 0, PROTO_IDLE_NONE}, PROTO_LEASE_DEFAULT_MS, 0};
}

/* The class node fields a parsed document gives for class i, the earlier ones where not. */
static struct proto_class_node class_node_of(const struct ctl *c, const struct proto_policy *pp,
                                             int i)
{
    struct proto_class_node old = ctl_class_node(c, pp->policy.classes[i].name);
    struct proto_class_node n = pp->has_classes ? pp->class_node[i] : old;
    if (n.pids_max < 0)
        n.pids_max = old.pids_max;
    if (n.default_mem_mb < 0)
        n.default_mem_mb = old.default_mem_mb;
    if (n.idle.action == PROTO_IDLE_UNSET)
        n.idle = old.idle;
    if (n.lease_ms < 0)
        n.lease_ms = old.lease_ms;
    if (n.session_idle_ms < 0)
        n.session_idle_ms = old.session_idle_ms;
    return n;
}

void ctl_class_nodes_take(struct ctl *c, const struct proto_policy *pp)
{
    struct ctl_class_node next[SCHED_MAX_CLASSES];
    int n = pp->policy.nclasses < SCHED_MAX_CLASSES ? pp->policy.nclasses : SCHED_MAX_CLASSES;
    for (int i = 0; i < n; i++) {
        str_copy(next[i].name, sizeof(next[i].name), pp->policy.classes[i].name);
        next[i].n = class_node_of(c, pp, i);
    }
    memcpy(c->class_nodes, next, sizeof(next[0]) * (size_t)n);
    c->nclass_nodes = n;
}

void ctl_class_nodes_json(const struct ctl *c, json_t *classes, const struct sched_policy *p,
                          const struct proto_policy *pp)
{
    struct proto_class_node cn[SCHED_MAX_CLASSES];
    for (int i = 0; i < p->nclasses && i < SCHED_MAX_CLASSES; i++)
        cn[i] = pp ? class_node_of(c, pp, i) : ctl_class_node(c, p->classes[i].name);
    proto_class_node_json(classes, p, cn);
}

/* The start command of docs/api.md for node rank `rank` of the job: with the class's
 * pids.max, and its default memory limit for a job that asks for none (a limit, not a
 * reservation: the core places the job by what it asked). */
static json_t *start_cmd(struct ctl *c, const struct store_job *row, const json_t *spec,
                         const struct sched_decision *d, int rank, int run)
{
    const struct sched_alloc *a = &d->allocs[rank];
    json_t *gpus = json_array(), *nodelist = json_array();
    for (int b = 0; b < 64; b++)
        if (a->gpu_mask & ((uint64_t)1 << b))
            json_array_append_new(gpus, json_integer(b));
    for (int i = 0; i < d->nallocs; i++)
        json_array_append_new(nodelist, json_string(sched_node_name(c->sched, d->allocs[i].node)));
    json_t *job = json_object();
    json_object_set_new(job, "id", json_integer((json_int_t)row->id));
    json_object_set_new(job, "name", json_string(row->name));
    json_object_set_new(job, "project", json_string(row->project));
    json_object_set_new(job, "tier", json_string(row->tier));
    json_object_set_new(job, "class", json_string(row->class_name));
    json_object_set_new(job, "user", json_string(row->user));
    static const char *const copy[] = {"command", "script", "workdir", "output", "error"};
    for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++) {
        json_t *v = json_object_get(spec, copy[i]);
        json_object_set(job, copy[i], v ? v : json_null());
    }
    /* the project's storage areas on this node (storage.c), over the job's own values */
    json_object_set_new(job, "env",
                        ctl_storage_job_env(c, row->project, spec,
                                            sched_node_name(c->sched, a->node),
                                            json_object_get(spec, "env")));
    json_object_set_new(job, "gpus", gpus);
    json_object_set_new(job, "cpus", json_integer(a->cpus));
    struct proto_class_node cn = ctl_class_node(c, row->class_name);
    json_object_set_new(job, "mem_mb", json_integer(a->mem_mb > 0 ? a->mem_mb : cn.default_mem_mb));
    json_object_set_new(job, "pids_max", json_integer(cn.pids_max));
    json_object_set_new(job, "lease_ms", json_integer(cn.lease_ms));
    json_object_set_new(job, "time_limit_ms", json_integer(d->time_limit_ms));
    json_object_set_new(job, "signal", json_integer(d->signal));
    json_object_set_new(job, "grace_ms", json_integer(d->grace_ms));
    json_object_set_new(job, "nodelist", nodelist);
    json_object_set_new(job, "node_rank", json_integer(rank));
    json_object_set_new(job, "world_size", json_integer(d->nallocs));
    json_object_set_new(job, "master_addr", json_string(ctl_node_addr(c, d->allocs[0].node)));
    json_object_set_new(job, "master_port", json_integer(29500));
    json_object_set_new(job, "array_index", json_integer(row->array_index));
    json_object_set_new(job, "run", json_integer(run));
    if (row->array_id)
        json_object_set_new(job, "array_id", json_integer((json_int_t)row->array_id));
    json_t *slurm = json_object_get(spec, "slurm"); /* a Slurm-style job (docs/slurm.md) */
    if (json_is_object(slurm))
        json_object_set(job, "slurm", slurm);
    /* docs/interactive.md: rank 0 runs the command on a terminal, the others hold their
     * nodes for the session (its srun, or what the person starts there) */
    if (json_is_true(json_object_get(spec, "tty")))
        json_object_set_new(
            job, "tty",
            json_pack("{s:I}", "idle_ms",
                      (json_int_t)(cn.session_idle_ms > 0 ? cn.session_idle_ms
                                                          : PROTO_SESSION_IDLE_DEFAULT_MS)));
    /* its template's modules and setup, as resolved at submit (docs/environments.md) */
    json_t *environment = json_object_get(spec, "environment");
    if (json_is_object(environment))
        json_object_set(job, "environment", environment);
    /* its container, as resolved at submit (docs/environments.md "Containers") */
    json_t *container = json_object_get(spec, "container");
    if (json_is_object(container))
        json_object_set(job, "container", container);
    ctl_services_start_cmd(c, row->id, job); /* a replica's port and probes */
    return json_pack("{s:s,s:o}", "type", "start", "job", job);
}

static void send_to_allocs(struct ctl *c, const struct sched_decision *d, const char *type)
{
    for (int i = 0; i < d->nallocs; i++) {
        struct ctl_node *n = ctl_node_at(c, d->allocs[i].node);
        if (!n)
            continue;
        json_t *cmd = json_pack("{s:s,s:I}", "type", type, "job", (json_int_t)d->job_id);
        if (strcmp(type, "signal") == 0) {
            json_object_set_new(cmd, "signal", json_integer(d->signal));
            json_object_set_new(cmd, "grace_ms", json_integer(d->grace_ms));
        }
        ctl_node_command(c, n, d->job_id, cmd);
    }
}

/* A Slurm-style job: srun on its first node starts tasks on the others through the step
 * hosts the agents run there, and a --container-image step's tasks through each node's
 * supervisor (docs/slurm.md). Each run gets a fresh key, known only to the job's
 * processes (one node or several), and each node's address: a step host listens there
 * on a port the kernel picks, which its node reports (agent.c, ev_step_host), so no port
 * can be predicted and held first by another job. */
static void slurm_steps(struct ctl *c, const struct sched_decision *d, const struct store_job *row,
                        json_t *slurm)
{
    char key[80];
    if (!json_is_object(slurm) || d->nallocs < 1 || ctl_random_token("", key, sizeof(key)) < 0)
        return;
    json_t *hosts = json_array();
    for (int i = 0; i < d->nallocs; i++)
        json_array_append_new(hosts, json_string(ctl_node_addr(c, d->allocs[i].node)));
    json_object_set_new(slurm, "step_key", json_string(key));
    json_object_set_new(slurm, "step_hosts", hosts);
}

/* A job's spec, parsed. One cycle may start thousands of an array's tasks, which share one
 * stored spec (spec_id): it is parsed once for the cycle, not once a task (issue 11: 1,000
 * tasks of a 131 KB script held the loop 4 s). Each parse is counted in the cycle's debug
 * line (specs_parsed=, limits.bats). The caller owns the reference. */
static json_t *cycle_spec(struct ctl *c, const struct store_job *row)
{
    char key[24];
    if (!row->spec_id) {
        c->cycle_spec_parses += row->spec != NULL;
        return row->spec ? json_loads(row->spec, 0, NULL) : NULL;
    }
    snprintf(key, sizeof(key), "%llu", (unsigned long long)row->spec_id);
    if (!c->cycle_specs)
        c->cycle_specs = json_object();
    json_t *spec = json_object_get(c->cycle_specs, key);
    if (!spec && row->spec) {
        c->cycle_spec_parses++;
        if ((spec = json_loads(row->spec, 0, NULL)))
            json_object_set_new(c->cycle_specs, key, spec);
    }
    return json_incref(spec);
}

/* The job's secrets opened for its start command, {} when it names none; NULL when one
 * cannot be opened: the job's launch then fails after the cycle (fail_launches). */
static json_t *start_secrets(struct ctl *c, const struct store_job *row, const json_t *spec)
{
    const json_t *names = json_object_get(spec, "secrets");
    const json_t *auth = json_object_get(json_object_get(spec, "container"), "registry_auth");
    if (json_array_size(names) == 0 && !json_is_string(auth))
        return json_object();
    struct ctl_launch_fail *f = calloc(1, sizeof(*f));
    json_t *env = f ? ctl_secret_env(c, row->project, names, f->message, sizeof(f->message)) : NULL;
    /* the registry's credentials ride with the secrets under a name of Docket's own: the
     * node writes them into an authfile for skopeo and leaves them out of the job's env */
    json_t *one = json_is_string(auth) ? json_pack("[O]", auth) : NULL;
    json_t *reg =
        env && one ? ctl_secret_env(c, row->project, one, f->message, sizeof(f->message)) : NULL;
    json_decref(one);
    if (env && json_is_string(auth) && !reg) {
        json_decref(env);
        env = NULL;
    } else if (reg) {
        json_object_set(env, AGENT_REGISTRY_AUTH_ENV,
                        json_object_get(reg, json_string_value(auth)));
        json_decref(reg);
    }
    if (env) {
        free(f);
        return env;
    }
    log_error("launch_failed", "job=%llu error=\"%s\"", (unsigned long long)row->id,
              f ? f->message : "out of memory");
    if (f) {
        f->job = row->id;
        f->next = c->launch_fails;
        c->launch_fails = f;
    }
    return NULL;
}

/* Each rank's `network` object (network.c) as an array, json_null() when the job keeps
 * the node's network; NULL when it cannot be given one: its launch then fails after the
 * cycle (fail_launches), with the reason. */
static json_t *start_networks(struct ctl *c, const struct store_job *row,
                              const struct sched_decision *d)
{
    json_t *nets = NULL;
    struct ctl_launch_fail *f = calloc(1, sizeof(*f));
    char why[sizeof(f->message)];
    if (f && ctl_net_assign(c, row, d, &nets, why, sizeof(why)) == 0) {
        free(f);
        return nets ? nets : json_null();
    }
    log_error("launch_failed", "job=%llu error=\"%s\"", (unsigned long long)row->id,
              f ? why : "out of memory");
    if (f) {
        str_copy(f->message, sizeof(f->message), why);
        f->job = row->id;
        f->next = c->launch_fails;
        c->launch_fails = f;
    }
    return NULL;
}

/* Rank `rank`'s network object into its start command's job; its MASTER_ADDR is then
 * rank 0's job address, where rank 0's processes listen. */
static void net_into_cmd(json_t *job, const json_t *nets, int rank)
{
    json_t *mine = json_array_get(nets, (size_t)rank), *first = json_array_get(nets, 0);
    if (!mine)
        return;
    json_object_set(job, "network", mine);
    json_object_set(job, "master_addr", json_object_get(first, "addr"));
}

/* The start of a job: its run number is the next one (logs and events are kept per run);
 * the caller stores the run (store_run_add) with the job's row. */
static void apply_start(struct ctl *c, const struct sched_decision *d, struct store_job *row,
                        int64_t now, struct store_run *run)
{
    json_t *spec = cycle_spec(c, row);
    if (json_is_object(json_object_get(spec, "slurm"))) {
        /* the step key and hosts are this run's own: never in a spec the cycle shares
         * among an array's tasks (cycle_spec), which each start command refers to */
        json_t *own = json_copy(spec);
        json_object_set_new(own, "slurm", json_deep_copy(json_object_get(spec, "slurm")));
        json_decref(spec);
        spec = own;
        /* SLURM_JOB_PARTITION: the partition it runs in, sinfo's "docket" when none */
        const char *part = json_string_value(json_object_get(spec, "partition"));
        json_object_set_new(json_object_get(spec, "slurm"), "partition",
                            json_string(part && part[0] ? part : "docket"));
        slurm_steps(c, d, row, json_object_get(spec, "slurm"));
    }
    json_t *secrets = start_secrets(c, row, spec);
    json_t *nets = secrets ? start_networks(c, row, d) : NULL;
    if (secrets && !nets) {
        json_decref(secrets);
        secrets = NULL; /* no command goes out: the launch fails after the cycle */
    }
    int last = store_run_last(c->store, row->id);
    memset(run, 0, sizeof(*run));
    run->job = row->id;
    run->run = last < 0 ? -1 : last + 1; /* a failed read: the write below fails too */
    run->start_ms = now;
    run->lease_ms = ctl_class_node(c, row->class_name).lease_ms; /* the start command's */
    for (int i = 0; secrets && i < d->nallocs; i++) {
        struct ctl_node *n = ctl_node_at(c, d->allocs[i].node);
        if (!n)
            continue;
        json_t *cmd = start_cmd(c, row, spec, d, i, run->run);
        net_into_cmd(json_object_get(cmd, "job"), nets, i);
        /* values in memory only, for the agent: never stored, logged or shown */
        if (json_object_size(secrets) > 0)
            json_object_set(json_object_get(cmd, "job"), "secret_env", secrets);
        ctl_node_command(c, n, row->id, cmd);
    }
    json_decref(secrets);
    json_decref(nets);
    json_decref(spec);
    json_t *al = allocs_json(c, d->allocs, d->nallocs);
    free(row->alloc);
    row->alloc = json_dumps(al, JSON_COMPACT);
    json_decref(al);
    nodes_list(c, d->allocs, d->nallocs, row->nodes, sizeof(row->nodes));
    str_copy(run->nodes, sizeof(run->nodes), row->nodes);
    row->stop_cause[0] = '\0';
    free(row->exit);
    row->exit = NULL;
    ctl_metrics_queue_wait(c, row->tier, (double)(now - row->submit_ms) / 1000.0);
}

static void apply_state(struct ctl *c, const struct sched_decision *d, struct store_job *row,
                        int64_t now)
{
    struct sched_job_view v;
    if (d->to == SCHED_PENDING || d->to == SCHED_HELD) {
        free(row->alloc);
        row->alloc = NULL;
        row->nodes[0] = '\0';
        row->start_ms = 0;
        if (sched_job_get(c->sched, row->id, &v) == 0)
            row->preempt_count = v.preempt_count;
    }
    if (sched_job_state_terminal(d->to)) {
        row->end_ms = now;
        ctl_logs_job_ended(c, row->id);
    }
    if (d->cause != SCHED_STOP_NONE)
        str_copy(row->stop_cause, sizeof(row->stop_cause), sched_stop_cause_name(d->cause));
    if (d->preemptor)
        row->preemptor = d->preemptor;
}

/* Does decision d end a run (the job leaves STARTING/RUNNING/STOPPING)? */
static bool run_ends(const struct sched_decision *d)
{
    bool was = d->from == SCHED_STARTING || d->from == SCHED_RUNNING || d->from == SCHED_STOPPING;
    bool is = d->to == SCHED_STARTING || d->to == SCHED_RUNNING || d->to == SCHED_STOPPING;
    return d->kind == SCHED_D_STATE && was && !is;
}

/* Whether template version `ref` has anything to warm (an image, a prepare script). */
static bool template_warmable(struct ctl *c, const char *ref)
{
    char name[PROTO_NAME_MAX];
    int version;
    struct proto_error e;
    const struct proto_template *tp =
        c->templates && proto_template_ref_parse(ref, "template", name, &version, &e) == 0
            ? proto_template_find(c->templates, name, version)
            : NULL;
    return tp && (json_is_string(json_object_get(tp->doc, "image")) ||
                  json_is_string(json_object_get(tp->doc, "prepare")));
}

/* A decision's detail for its event: a start of a job whose template has something to
 * warm says whether it was warm where the job landed (docs/scheduling.md §3 "Warm
 * nodes"). */
static void start_detail(struct ctl *c, const struct sched_decision *d, const struct store_job *row,
                         char *out, size_t len)
{
    if (d->kind != SCHED_D_START || !row->template_ref[0] ||
        !template_warmable(c, row->template_ref))
        snprintf(out, len, "%s", d->detail);
    else if (d->nallocs > 1)
        snprintf(out, len, "%s warm on %d of its %d nodes", row->template_ref, d->warm_nodes,
                 d->nallocs);
    else if (d->warm_nodes)
        snprintf(out, len, "placed on a warm node (%s ready there)", row->template_ref);
    else
        snprintf(out, len, "%s not warm there", row->template_ref);
}

static void apply_job(struct ctl *c, const struct sched_decision *d, int64_t now)
{
    struct store_job row;
    if (store_job_get(c->store, d->job_id, &row) < 0) {
        log_error("decision_for_unknown_job", "job=%llu", (unsigned long long)d->job_id);
        return;
    }
    const char *type = "state";
    struct store_run run = {.run = 0};
    char node[64] = "";
    if (d->nallocs > 0)
        str_copy(node, sizeof(node), sched_node_name(c->sched, d->allocs[0].node));
    switch (d->kind) {
    case SCHED_D_START:
        type = "start";
        apply_start(c, d, &row, now, &run);
        row.state = SCHED_STARTING;
        break;
    case SCHED_D_SIGNAL:
        type = "signal";
        send_to_allocs(c, d, "signal");
        row.state = d->to;
        str_copy(row.stop_cause, sizeof(row.stop_cause), sched_stop_cause_name(d->cause));
        if (d->preemptor)
            row.preemptor = d->preemptor;
        break;
    case SCHED_D_KILL:
        type = "kill";
        send_to_allocs(c, d, "kill");
        row.state = d->to; /* a gang that lost a node: RUNNING -> STOPPING with the kill */
        if (d->cause)
            str_copy(row.stop_cause, sizeof(row.stop_cause), sched_stop_cause_name(d->cause));
        break;
    default:
        apply_state(c, d, &row, now);
        row.state = d->to;
        break;
    }
    /* the core made this decision already: a write that fails here cannot be undone in
     * it, so docketd stops rather than run on with the two disagreeing */
    int rc = store_begin(c->store);
    if (rc == 0)
        rc = store_job_update(c->store, &row);
    if (rc == 0 && d->kind == SCHED_D_START)
        rc = run.run > 0 ? store_run_add(c->store, &run) : -EIO;
    if (rc == 0 && run_ends(d))
        rc = store_run_end(c->store, row.id, now, sched_job_state_name(d->to),
                           d->cause ? sched_stop_cause_name(d->cause) : "");
    if (d->kind == SCHED_D_STATE && (d->to == SCHED_FAILED || d->to == SCHED_NODE_FAIL))
        ctl_alerts_job_failed(c, row.id, row.project, sched_job_state_name(d->to), node);
    /* every decision names the states it goes from and to (a kill after the grace stays
     * STOPPING -> STOPPING; a gang's kill is its change to STOPPING) */
    const char *from = sched_job_state_name(d->from);
    const char *to = sched_job_state_name(d->to);
    char detail[sizeof(d->detail) + 128];
    start_detail(c, d, &row, detail, sizeof(detail));
    if (rc == 0)
        rc = ctl_job_event(c, row.id, type, from, to, node,
                           d->cause ? sched_stop_cause_name(d->cause) : "", detail);
    if (rc < 0)
        ctl_store_diverged(c, "job_decision", row.id);
    ctl_services_job_written(c, row.id); /* a replica held for its backoff: HELD now */
    if (d->kind == SCHED_D_START)        /* followers of the run before: it may be complete now */
        ctl_logs_job_ended(c, row.id);
    log_info("job_decision", "job=%llu type=%s from=%s to=%s node=%s", (unsigned long long)row.id,
             type, from, to, node[0] ? node : "-");
    store_job_release(&row);
}

static void apply(struct ctl *c, const struct sched_decision *d, int64_t now)
{
    if (d->kind == SCHED_D_NODE_STATE) {
        struct ctl_node *n = ctl_node_at(c, d->node);
        if (n && ctl_node_save(c, n) < 0)
            ctl_store_diverged(c, "node_state", 0);
        log_info("node_state", "node=%s from=%s to=%s", n ? n->name : "?",
                 sched_node_state_name(d->node_from), sched_node_state_name(d->node_to));
        return;
    }
    apply_job(c, d, now);
}

/* ------------------------------------------------------------------------------------ */
/* The cycle                                                                             */

static void schedule_next(struct ctl *c, int64_t now)
{
    int64_t next = sched_next_wakeup(c->sched, now);
    int64_t delay = c->cfg.cycle_interval_ms;
    if (next != INT64_MAX && next - now < delay)
        delay = next - now < 1 ? 1 : next - now;
    struct timeval tv = {(time_t)(delay / 1000), (suseconds_t)((delay % 1000) * 1000)};
    event_add(c->cycle_ev, &tv);
    c->cycle_at_ms = clock_mono_ms() + delay;
}

/* Jobs whose start command could not be made end as launch failures, store first, then
 * the core (as an agent's launch_failed report would). */
static void fail_launches(struct ctl *c, int64_t now)
{
    while (c->launch_fails) {
        struct ctl_launch_fail *f = c->launch_fails;
        c->launch_fails = f->next;
        struct store_job row;
        struct sched_error se;
        int rc = store_job_get(c->store, f->job, &row);
        if (rc == 0) {
            free(row.exit);
            json_t *x = json_pack("{s:s,s:i,s:s}", "kind", "launch_failed", "code", 0, "message",
                                  f->message);
            row.exit = x ? json_dumps(x, JSON_COMPACT) : NULL;
            json_decref(x);
            rc = row.exit ? store_begin(c->store) : -ENOMEM;
            if (rc == 0)
                rc = store_job_update(c->store, &row);
            char node[sizeof(row.nodes)]; /* ",a,b," as stored -> "a,b" */
            str_copy(node, sizeof(node), row.nodes + strspn(row.nodes, ","));
            for (size_t n = strlen(node); n > 0 && node[n - 1] == ','; n--)
                node[n - 1] = '\0';
            if (rc == 0)
                rc = ctl_job_event(c, f->job, "launch_failed", "", "", node, "", f->message);
            store_job_release(&row);
        }
        /* the core started the job already: when its end cannot be written (or taken),
         * stop as for any decision the store missed; a restart finds the job STARTING
         * with no start command anywhere, and the node's first heartbeat ends it lost */
        if (rc < 0 || sched_job_ended(c->sched, f->job, SCHED_EXIT_LAUNCH_FAILED, 0, now, &se) < 0)
            ctl_store_diverged(c, "launch_failed", f->job);
        free(f);
        ctl_cycle_soon(c);
    }
}

void ctl_cycle_now(struct ctl *c)
{
    int64_t now = clock_now_ms();
    int64_t t0 = clock_mono_us();
    size_t n = 0;
    struct sched_cycle_stats stats;
    c->cycle_spec_parses = 0;
    const struct sched_decision *d =
        sched_cycle(c->sched, now, SCHED_CYCLE_INCREMENTAL, &n, &stats);
    c->turn.core_us += clock_mono_us() - t0;
    /* the decisions array is borrowed until the next mutation: applying them only
     * reads the core (views), so it stays valid through the loop */
    for (size_t i = 0; i < n; i++)
        apply(c, &d[i], now);
    fail_launches(c, now);
    json_decref(c->cycle_specs);
    c->cycle_specs = NULL;
    c->last_cycle_us = clock_mono_us() - t0;
    c->turn.starts += stats.started;
    ctl_hist_observe(&c->metrics.cycle, (double)c->last_cycle_us / 1e6);
    ctl_live_cycled(c, n > 0 || stats.full);
    if (n)
        log_debug("cycle", "decisions=%zu started=%d pending=%d running=%d specs_parsed=%d", n,
                  stats.started, stats.pending, stats.running, c->cycle_spec_parses);
    schedule_next(c, now);
}

static void cycle_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ctl *c = arg;
    int64_t t0 = ctl_turn_enter(c);
    ctl_cycle_now(c);
    ctl_turn_leave(c, CTL_TURN_CYCLE, t0);
}

/* The debounce: cycle_delay, stretched to twice the last cycle's cost (at most 50 ms) so
 * that under a stream of events cycles never take more than about a third of the loop. */
static int64_t cycle_delay_us(const struct ctl *c)
{
    int64_t d = c->cfg.cycle_delay_ms * 1000, adaptive = 2 * c->last_cycle_us;
    if (adaptive > 50000)
        adaptive = 50000;
    return adaptive > d ? adaptive : d;
}

void ctl_cycle_soon(struct ctl *c)
{
    int64_t delay = cycle_delay_us(c);
    int64_t at = clock_mono_ms() + delay / 1000;
    if (event_pending(c->cycle_ev, EV_TIMEOUT, NULL) && c->cycle_at_ms <= at)
        return;
    struct timeval tv = {(time_t)(delay / 1000000), (suseconds_t)(delay % 1000000)};
    event_add(c->cycle_ev, &tv);
    c->cycle_at_ms = at;
}

/* Every second: nodes silent past node_timeout plus the fencing margin become
 * UNREACHABLE: no new work goes there, but their jobs run on under their leases
 * (lease.c), and the commands queued for them wait for the agent's return. The margin is
 * the agent's (docs/agent.md "Fencing and leases"): a cut-off agent stops a job margin/2 before its
 * lease ends; waiting the margin past it covers a slow reclaim and clocks that run at
 * different rates, so a job never runs twice. */
static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ctl *c = arg;
    int64_t t0 = ctl_turn_enter(c);
    int64_t mono = clock_mono_ms(), now = clock_now_ms();
    int64_t silent_max = c->cfg.node_timeout_ms + ctl_lease_margin_ms(c);
    for (size_t i = 0; i < c->nnodes; i++) {
        struct ctl_node *n = c->nodes[i];
        struct sched_node_view v;
        if (!n || sched_node_get(c->sched, (uint32_t)i, &v) < 0 || v.state == SCHED_NODE_DOWN)
            continue;
        if (v.state == SCHED_NODE_UNREACHABLE) {
            ctl_leases_tick(c, n, mono);
            continue;
        }
        if (mono - n->last_hb_ms <= silent_max)
            continue;
        struct sched_error err;
        if (sched_node_set_state(c->sched, n->name, SCHED_NODE_UNREACHABLE, now, &err) == 0) {
            str_copy(n->rec.reason, sizeof(n->rec.reason), "missed heartbeats");
            if (ctl_node_save(c, n) < 0)
                ctl_store_diverged(c, "node_unreachable", 0);
            n->reconciled = false;
            ctl_warm_node_lost(c, n);
            ctl_leases_watch(n, mono);
            log_warn("node_unreachable", "node=%s jobs=%d silent_ms=%lld", n->name, v.njobs,
                     (long long)(mono - n->last_hb_ms));
            ctl_cycle_soon(c);
        }
    }
    ctl_usage_prune(c);
    ctl_idem_prune(c);
    ctl_services_tick(c);
    ctl_lifecycle_tick(c);
    ctl_storage_tick(c);
    ctl_logarch_tick(c);
    ctl_leader_tick(c);
    ctl_turn_leave(c, CTL_TURN_TIMER, t0);
}

int ctl_loop_start(struct ctl *c)
{
    c->cycle_ev = xnonnull(evtimer_new(c->base, cycle_cb, c), "cycle timer");
    c->tick_ev = xnonnull(event_new(c->base, -1, EV_PERSIST, tick_cb, c), "tick timer");
    struct timeval one = {1, 0};
    event_add(c->tick_ev, &one);
    ctl_cycle_soon(c);
    return 0;
}

void ctl_loop_stop(struct ctl *c)
{
    if (c->cycle_ev)
        event_free(c->cycle_ev);
    if (c->tick_ev)
        event_free(c->tick_ev);
    c->cycle_ev = c->tick_ev = NULL;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct ctl_node *n = c->nodes[i];
        if (!n)
            continue;
        if (n->parked) {
            struct evhttp_connection *con = evhttp_request_get_connection(n->parked);
            if (con)
                ctl_conn_watch(c, con, NULL, NULL);
            n->parked = NULL;
        }
        if (n->park_timer)
            event_free(n->park_timer);
        ctl_node_drop_commands(n);
        store_node_release(&n->rec);
        free(n->held);
        free(n);
    }
    free(c->nodes);
    c->nodes = NULL;
    c->nnodes = c->nodes_alloc = 0;
}
