/*
 * network.c - job network boundaries in docketd (network.h, docs/network.md).
 *
 * State: the policy's section, and the addresses held by running jobs, one entry per
 * rank: job, node, address and the job's peer key (its project's group, or the project
 * when it names none). Entries live in memory: an entry whose job is no longer starting,
 * running or stopping is dropped at the next assignment, and after a restart the list
 * starts empty (an address still in use on a node is then refused by that node's agent,
 * and the job's launch fails and is retried elsewhere; docs/network.md "Limits").
 * The agents do the enforcing; this file decides what each is told.
 */
#include "controller/network.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctl.h"
#include "controller/loop.h"
#include "core/sched.h"
#include "protocol/network.h"
#include "protocol/proto.h"
#include "util/dbuf.h"
#include "util/str.h"
#include "util/xalloc.h"

struct held_addr {
    uint64_t job;
    int rank;
    uint32_t node;
    uint32_t addr;
    char key[SCHED_NAME_MAX]; /* the peer key: group, else project */
    int64_t refused;          /* packets its rules refused, as its node last sampled */
};

struct ctl_net {
    struct net_policy policy;
    struct held_addr *held;
    size_t nheld, cap;
};

static struct ctl_net *net_of(struct ctl *c)
{
    if (!c->net) {
        c->net = xnonnull(calloc(1, sizeof(*c->net)), "network");
        net_policy_defaults(&c->net->policy);
    }
    return c->net;
}

void ctl_net_take(struct ctl *c, const struct proto_policy *pp)
{
    if (pp->network)
        net_of(c)->policy = *pp->network;
}

void ctl_net_json(struct ctl *c, json_t *doc, const struct proto_policy *pp)
{
    const struct net_policy *p = pp && pp->network ? pp->network : &net_of(c)->policy;
    json_object_set_new(doc, "network", net_policy_json(p));
}

void ctl_net_free(struct ctl *c)
{
    if (!c->net)
        return;
    free(c->net->held);
    free(c->net);
    c->net = NULL;
}

/* ---- whose rules apply ----------------------------------------------------------------- */

static void project_group(struct ctl *c, const char *project, char *out, size_t len)
{
    struct sched_project_view pv;
    int i = sched_project_find(c->sched, project);
    out[0] = '\0';
    if (i >= 0 && sched_project_get(c->sched, (size_t)i, &pv) == 0)
        str_copy(out, len, pv.spec.group);
}

static const struct net_rule *rule_for(const struct net_policy *p, const char *group,
                                       const char *project)
{
    for (int i = 0; i < p->nrules; i++) {
        const struct net_rule *r = &p->rules[i];
        if ((group && group[0] && strcmp(r->group, group) == 0) ||
            (project && strcmp(r->project, project) == 0))
            return r;
    }
    return NULL;
}

static bool isolated(const struct net_policy *p, const char *class_name)
{
    return p->isolate && !net_policy_host_class(p, class_name);
}

void ctl_net_describe(struct ctl *c, const char *project, const char *class_name, char *out,
                      size_t len)
{
    const struct net_policy *p = &net_of(c)->policy;
    if (!isolated(p, class_name)) {
        snprintf(out, len, p->isolate ? "the node's network (class %s)" : "the node's network",
                 class_name);
        return;
    }
    char group[SCHED_NAME_MAX];
    project_group(c, project, group, sizeof(group));
    const struct net_rule *gr = group[0] ? rule_for(p, group, NULL) : NULL;
    const struct net_rule *pr = rule_for(p, NULL, project);
    int nallow = (gr ? gr->nallow : 0) + (pr ? pr->nallow : 0);
    int64_t rate = pr && pr->rate_mbit ? pr->rate_mbit : gr ? gr->rate_mbit : 0;
    char cap[48] = "";
    if (rate > 0)
        snprintf(cap, sizeof(cap), "; cap %lld Mbit/s", (long long)rate);
    snprintf(out, len, "own namespace; peers: %s %s; %d allowed destination%s%s%s",
             group[0] ? "group" : "project", group[0] ? group : project, nallow,
             nallow == 1 ? "" : "s", p->controller ? "; controller" : "", cap);
}

/* ---- addresses ------------------------------------------------------------------------- */

static bool job_live(struct ctl *c, uint64_t id)
{
    struct sched_job_view v;
    return sched_job_get(c->sched, id, &v) == 0 &&
           (v.state == SCHED_STARTING || v.state == SCHED_RUNNING || v.state == SCHED_STOPPING);
}

/* Drop the entries of jobs that no longer run, and every earlier entry of `job`. */
static void sweep(struct ctl *c, struct ctl_net *n, uint64_t job)
{
    size_t k = 0;
    for (size_t i = 0; i < n->nheld; i++)
        if (n->held[i].job != job && job_live(c, n->held[i].job))
            n->held[k++] = n->held[i];
    n->nheld = k;
}

static bool addr_taken(const struct ctl_net *n, uint32_t node, uint32_t addr)
{
    for (size_t i = 0; i < n->nheld; i++)
        if (n->held[i].node == node && n->held[i].addr == addr)
            return true;
    return false;
}

/* The node's job range from its registration ("job_net"). */
static bool node_range(struct ctl *c, uint32_t node, uint32_t *net, int *prefix)
{
    struct ctl_node *cn = ctl_node_at(c, node);
    bool ok = false;
    if (!cn || !cn->rec.info)
        return false;
    json_t *info = json_loads(cn->rec.info, 0, NULL);
    json_t *jn = json_object_get(info, "job_net");
    ok = json_is_string(jn) && net_cidr_parse(json_string_value(jn), net, prefix);
    json_decref(info);
    return ok;
}

/* The lowest free address of the node's range; .0, .1 (the site's, say for the node) and
 * the broadcast address are never given. */
static int pick_addr(struct ctl *c, struct ctl_net *n, uint32_t node, uint32_t *out, char *why,
                     size_t whylen)
{
    uint32_t net;
    int prefix;
    const char *name = sched_node_name(c->sched, node);
    if (!node_range(c, node, &net, &prefix)) {
        snprintf(why, whylen, "node %s has no job range (node.yaml job_net) for a job network",
                 name ? name : "?");
        return -1;
    }
    uint32_t size = (uint32_t)1 << (32 - prefix);
    for (uint32_t h = 2; h + 1 < size; h++)
        if (!addr_taken(n, node, net + h)) {
            *out = net + h;
            return 0;
        }
    snprintf(why, whylen, "node %s: every address of its job range is in use", name ? name : "?");
    return -1;
}

static void hold(struct ctl_net *n, const struct held_addr *h)
{
    if (n->nheld == n->cap) {
        n->cap = n->cap ? n->cap * 2 : 64;
        n->held = xnonnull(realloc(n->held, n->cap * sizeof(*n->held)), "network addresses");
    }
    n->held[n->nheld++] = *h;
}

/* ---- the start command's object -------------------------------------------------------- */

static void merge_allow(struct net_job *j, const struct net_rule *r)
{
    for (int i = 0; r && i < r->nallow && j->nallow < NET_MAX_JOB_ALLOW; i++)
        j->allow[j->nallow++] = r->allow[i];
}

static json_t *rank_object(struct ctl_net *n, const char *key, const char *group,
                           const char *project, uint32_t addr, const char *describe)
{
    const struct net_policy *p = &n->policy;
    struct net_job j;
    memset(&j, 0, sizeof(j));
    j.addr = addr;
    str_copy(j.policy, sizeof(j.policy), describe);
    const struct net_rule *gr = group[0] ? rule_for(p, group, NULL) : NULL;
    const struct net_rule *pr = rule_for(p, NULL, project);
    merge_allow(&j, gr);
    merge_allow(&j, pr);
    j.rate_mbit = pr && pr->rate_mbit ? pr->rate_mbit : gr ? gr->rate_mbit : 0;
    memcpy(j.dns, p->dns, sizeof(j.dns));
    j.ndns = p->ndns;
    j.controller = p->controller;
    uint32_t *peers = calloc(n->nheld ? n->nheld : 1, sizeof(*peers));
    for (size_t i = 0; peers && i < n->nheld && j.npeers < NET_MAX_PEERS; i++)
        if (strcmp(n->held[i].key, key) == 0 && n->held[i].addr != addr)
            peers[j.npeers++] = n->held[i].addr;
    j.peers = peers;
    json_t *o = net_job_json(&j);
    free(peers);
    return o;
}

int ctl_net_assign(struct ctl *c, const struct store_job *row, const struct sched_decision *d,
                   json_t **out, char *why, size_t whylen)
{
    struct ctl_net *n = net_of(c);
    *out = NULL;
    if (!isolated(&n->policy, row->class_name))
        return 0;
    sweep(c, n, row->id);
    struct held_addr h;
    memset(&h, 0, sizeof(h));
    char group[SCHED_NAME_MAX];
    project_group(c, row->project, group, sizeof(group));
    str_copy(h.key, sizeof(h.key), group[0] ? group : row->project);
    h.job = row->id;
    size_t first = n->nheld;
    for (int r = 0; r < d->nallocs; r++) {
        h.rank = r;
        h.node = d->allocs[r].node;
        if (pick_addr(c, n, h.node, &h.addr, why, whylen) < 0) {
            n->nheld = first; /* nothing held for a launch that fails */
            return -1;
        }
        hold(n, &h);
    }
    char describe[160];
    ctl_net_describe(c, row->project, row->class_name, describe, sizeof(describe));
    *out = json_array();
    for (int r = 0; r < d->nallocs; r++)
        json_array_append_new(*out, rank_object(n, h.key, group, row->project,
                                                n->held[first + (size_t)r].addr, describe));
    return 0;
}

static int64_t job_refused(const struct ctl_net *n, uint64_t id)
{
    int64_t sum = 0;
    for (size_t i = 0; i < n->nheld; i++)
        if (n->held[i].job == id)
            sum += n->held[i].refused;
    return sum;
}

void ctl_net_refused(struct ctl *c, uint64_t id, const char *node, int64_t packets)
{
    struct ctl_net *n = net_of(c);
    for (size_t i = 0; i < n->nheld; i++) {
        const char *name = sched_node_name(c->sched, n->held[i].node);
        if (n->held[i].job == id && name && strcmp(name, node) == 0 && packets >= 0)
            n->held[i].refused = packets;
    }
}

void ctl_net_metrics(struct ctl *c, struct dbuf *b)
{
    struct ctl_net *n = net_of(c);
    dbuf_printf(b, "# HELP docket_job_network_refused_total packets a running job's network "
                   "rules refused (all its ranks)\n"
                   "# TYPE docket_job_network_refused_total counter\n");
    for (size_t i = 0; i < n->nheld; i++) {
        const struct held_addr *h = &n->held[i];
        struct sched_job_view v;
        if (h->rank != 0 || !job_live(c, h->job) || sched_job_get(c->sched, h->job, &v) < 0)
            continue;
        dbuf_printf(b, "docket_job_network_refused_total{job=\"%llu\",project=\"%s\"} %lld\n",
                    (unsigned long long)h->job, v.project, (long long)job_refused(n, h->job));
    }
}

/* Job id's address of each rank from 0 on, while it is live and holds them: each one's
 * entry in turn to fn (ctl_net_job_json and ctl_net_job_key read the same). */
static void each_addr(struct ctl *c, uint64_t id, void (*fn)(void *, uint32_t), void *arg)
{
    struct ctl_net *n = net_of(c);
    for (int rank = 0;; rank++) {
        const struct held_addr *h = NULL;
        for (size_t i = 0; !h && i < n->nheld; i++)
            if (n->held[i].job == id && n->held[i].rank == rank)
                h = &n->held[i];
        if (!h || !job_live(c, id))
            break;
        fn(arg, h->addr);
    }
}

static void addr_to_json(void *arg, uint32_t addr)
{
    char a[16];
    net_addr_text(addr, a, sizeof(a));
    json_array_append_new(arg, json_string(a));
}

json_t *ctl_net_job_json(struct ctl *c, uint64_t id, const char *project, const char *class_name)
{
    struct ctl_net *n = net_of(c);
    char policy[160];
    ctl_net_describe(c, project, class_name, policy, sizeof(policy));
    json_t *addrs = json_array();
    each_addr(c, id, addr_to_json, addrs);
    json_t *o = json_pack("{s:s,s:o}", "policy", policy, "addrs", addrs);
    if (json_array_size(addrs) > 0)
        json_object_set_new(o, "refused", json_integer(job_refused(n, id)));
    return o;
}

struct addr_key {
    struct dbuf *k;
    int n;
};

static void addr_to_key(void *arg, uint32_t addr)
{
    struct addr_key *a = arg;
    dbuf_append(a->k, &addr, sizeof(addr));
    a->n++;
}

void ctl_net_job_key(struct ctl *c, uint64_t id, const char *project, const char *class_name,
                     struct dbuf *k)
{
    char policy[160];
    ctl_net_describe(c, project, class_name, policy, sizeof(policy));
    size_t len = strlen(policy);
    dbuf_append(k, &len, sizeof(len));
    dbuf_append(k, policy, len);
    struct addr_key a = {k, 0};
    each_addr(c, id, addr_to_key, &a);
    int64_t refused = a.n > 0 ? job_refused(net_of(c), id) : -1;
    dbuf_append(k, &a.n, sizeof(a.n)); /* (after the addresses: their count ends them) */
    dbuf_append(k, &refused, sizeof(refused));
}
