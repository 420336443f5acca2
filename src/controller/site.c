/*
 * site.c - a Slurm site's GPU names and partitions (site.h, docs/slurm.md "A site's
 * partitions and GPU names"): kept from the policy document, applied to each job at
 * submit, served for sinfo and squeue.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controller/http.h"
#include "controller/loop.h"
#include "controller/restore.h"
#include "controller/site.h"
#include "protocol/site.h"
#include "util/str.h"

void ctl_site_take(struct ctl *c, const struct proto_policy *pp)
{
    if (pp->gpu_aliases) {
        json_decref(c->gpu_aliases);
        c->gpu_aliases = json_incref(pp->gpu_aliases);
    }
    if (pp->partitions) {
        json_decref(c->partitions);
        c->partitions = json_incref(pp->partitions);
    }
    if (pp->node_labels) {
        json_decref(c->node_labels);
        c->node_labels = json_incref(pp->node_labels);
    }
}

void ctl_site_node_labels_merge(struct ctl *c, const char *node, json_t *labels)
{
    json_object_update(labels, json_object_get(c->node_labels, node));
}

/* The node's stored labels with the policy's `want` over them (a new reference). */
static json_t *labels_with(const struct ctl_node *n, const json_t *want)
{
    json_t *labels = json_loads(n->rec.labels ? n->rec.labels : "{}", 0, NULL);
    if (!labels)
        labels = json_object();
    json_object_update(labels, (json_t *)want);
    return labels;
}

int ctl_site_node_labels_check(struct ctl *c, const struct proto_policy *pp, struct proto_error *e)
{
    const char *name;
    json_t *want;
    json_object_foreach(pp->node_labels, name, want) {
        struct ctl_node *n = ctl_node_by_name(c, name);
        if (!n)
            continue;
        json_t *labels = labels_with(n, want);
        size_t count = json_object_size(labels);
        json_decref(labels);
        if (count > SCHED_MAX_LABELS) {
            char f[96];
            snprintf(f, sizeof(f), "node_labels.%.64s", name);
            return proto_errorf(e, 400, NULL, f,
                                "node %s would have %zu labels with its own: at most %d", name,
                                count, SCHED_MAX_LABELS);
        }
    }
    return 0;
}

int ctl_site_node_labels_write(struct ctl *c, const struct proto_policy *pp)
{
    const char *name;
    json_t *want;
    json_object_foreach(pp->node_labels, name, want) {
        struct ctl_node *n = ctl_node_by_name(c, name);
        int idx = n ? sched_node_find(c->sched, name) : -1;
        struct sched_node_view nv;
        if (idx < 0 || sched_node_get(c->sched, (uint32_t)idx, &nv) < 0)
            continue; /* not registered yet: it gets them when it registers */
        json_t *labels = labels_with(n, want);
        char *text = json_object_size(labels) <= SCHED_MAX_LABELS
                         ? json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS)
                         : NULL;
        json_decref(labels);
        int rc = text ? ctl_node_put(c, n, sched_node_state_name(nv.state), n->rec.reason, text)
                      : -E2BIG;
        free(text);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void ctl_site_node_labels_take(struct ctl *c, const struct proto_policy *pp)
{
    const char *name;
    json_t *want;
    json_object_foreach(pp->node_labels, name, want) {
        struct ctl_node *n = ctl_node_by_name(c, name);
        if (!n || sched_node_find(c->sched, name) < 0)
            continue;
        json_t *labels = labels_with(n, want);
        struct sched_label l[SCHED_MAX_LABELS];
        struct sched_error se;
        int nl = ctl_labels_from_json(labels, l, SCHED_MAX_LABELS);
        char *text = json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(labels);
        if (text && sched_node_set_labels(c->sched, name, l, nl, &se) == 0) {
            free(n->rec.labels);
            n->rec.labels = text;
        } else {
            free(text);
        }
    }
}

void ctl_site_json(struct ctl *c, json_t *doc, const struct proto_policy *pp)
{
    json_t *aliases = pp && pp->gpu_aliases ? pp->gpu_aliases : c->gpu_aliases;
    json_t *parts = pp && pp->partitions ? pp->partitions : c->partitions;
    if (aliases)
        json_object_set(doc, "gpu_aliases", aliases);
    if (parts)
        json_object_set(doc, "partitions", parts);
    json_t *nl = pp && pp->node_labels ? pp->node_labels : c->node_labels;
    if (nl)
        json_object_set(doc, "node_labels", nl);
}

void ctl_site_stop(struct ctl *c)
{
    json_decref(c->gpu_aliases);
    json_decref(c->partitions);
    json_decref(c->node_labels);
    c->gpu_aliases = c->partitions = c->node_labels = NULL;
}

static int add_part_nodes(struct proto_jobspec *ps, const json_t *part, struct proto_error *e)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(part, "nodes"), k, v) {
        const char *s = json_string_value(v);
        if (ps->nselectors >= PROTO_MAX_SELECTORS)
            return proto_errorf(e, 400, NULL, "selectors",
                                "partition '%s''s nodes and the job's selectors make more than "
                                "%d selectors",
                                ps->partition, PROTO_MAX_SELECTORS);
        struct proto_selector *sel = &ps->selectors[ps->nselectors++];
        sel->negate = s[0] == '!';
        str_copy(sel->key, sizeof(sel->key), k);
        str_copy(sel->value, sizeof(sel->value), sel->negate ? s + 1 : s);
    }
    return 0;
}

static void fill_name(char *dst, size_t len, const json_t *part, const char *key)
{
    const char *v = json_string_value(json_object_get(part, key));
    if (!dst[0] && v)
        str_copy(dst, len, v);
}

/* The GPU type as the nodes spell it, when one spells it in another case: the job's spec
 * then names what it runs on (a100-80gb -> A100-80GB). */
static void canonical_type(struct ctl *c, struct proto_jobspec *ps)
{
    for (size_t n = 0; n < sched_node_count(c->sched); n++) {
        struct sched_node_view v;
        if (sched_node_get(c->sched, (uint32_t)n, &v) < 0 || !v.gpu_type)
            continue;
        if (strcmp(v.gpu_type, ps->gpu_type) == 0)
            return;
        if (strcasecmp(v.gpu_type, ps->gpu_type) == 0) {
            str_copy(ps->gpu_type, sizeof(ps->gpu_type), v.gpu_type);
            return;
        }
    }
}

int ctl_site_job_spec(struct ctl *c, struct proto_jobspec *ps, struct proto_error *e)
{
    const char *type = ps->gpu_type[0] ? proto_gpu_alias(c->gpu_aliases, ps->gpu_type) : NULL;
    if (type)
        str_copy(ps->gpu_type, sizeof(ps->gpu_type), type);
    if (ps->gpu_type[0])
        canonical_type(c, ps);
    bool slurm = json_object_get(ps->extra, "slurm") != NULL;
    const json_t *part = NULL;
    if (ps->partition[0]) {
        part = proto_partition_find(c->partitions, ps->partition);
        if (!part && json_array_size(c->partitions) > 0)
            return proto_errorf(e, 400, NULL, "partition",
                                "invalid partition '%s': the site's are listed by sinfo",
                                ps->partition);
    } else if (slurm) {
        part = proto_partition_find(c->partitions, NULL);
        if (part)
            str_copy(ps->partition, sizeof(ps->partition),
                     json_string_value(json_object_get(part, "name")));
    }
    if (!part)
        return 0;
    if (!proto_partition_allows(part, ps->project))
        return proto_errorf(e, 403, NULL, "partition",
                            "partition '%s' does not admit project '%s' (Slurm: the account "
                            "is not permitted to use this partition)",
                            ps->partition, ps->project);
    fill_name(ps->tier, sizeof(ps->tier), part, "tier");
    fill_name(ps->class_name, sizeof(ps->class_name), part, "class");
    int64_t def_ms = json_integer_value(json_object_get(part, "default_time")) * 1000;
    int64_t max_ms = json_integer_value(json_object_get(part, "max_time")) * 1000;
    if (ps->time_limit_ms == 0)
        ps->time_limit_ms = def_ms ? def_ms : max_ms;
    return add_part_nodes(ps, part, e);
}

void ctl_site_job_leave_partition(struct ctl *c, struct proto_jobspec *ps)
{
    const json_t *part =
        ps->partition[0] ? proto_partition_find(c->partitions, ps->partition) : NULL;
    int kept = 0;
    for (int i = 0; i < ps->nselectors; i++) {
        const struct proto_selector *sel = &ps->selectors[i];
        const char *want =
            json_string_value(json_object_get(json_object_get(part, "nodes"), sel->key));
        bool from_part = want && (want[0] == '!') == sel->negate &&
                         strcmp(sel->negate ? want + 1 : want, sel->value) == 0;
        if (!from_part)
            ps->selectors[kept++] = *sel;
    }
    ps->nselectors = kept;
    ps->partition[0] = '\0';
}

int ctl_site_job_check(struct ctl *c, const struct proto_jobspec *ps, struct proto_error *e)
{
    const json_t *part =
        ps->partition[0] ? proto_partition_find(c->partitions, ps->partition) : NULL;
    int64_t max_ms = json_integer_value(json_object_get(part, "max_time")) * 1000;
    if (part && max_ms > 0 && ps->time_limit_ms > max_ms)
        return proto_errorf(e, 400, NULL, "time_limit",
                            "partition '%s' allows at most %lld minutes (MaxTime): ask for less "
                            "with -t",
                            ps->partition, (long long)(max_ms / 60000));
    return 0;
}

static bool node_in(const struct sched_node_view *v, const json_t *part)
{
    const char *k;
    json_t *want;
    json_object_foreach((json_t *)json_object_get(part, "nodes"), k, want) {
        const char *s = json_string_value(want);
        bool negate = s[0] == '!', found = false;
        for (int i = 0; i < v->nlabels && !found; i++)
            found = strcmp(v->labels[i].key, k) == 0 &&
                    strcmp(v->labels[i].value, negate ? s + 1 : s) == 0;
        if (found == negate)
            return false;
    }
    return true;
}

void h_partitions(struct ctl_req *r)
{
    json_t *list = json_array();
    size_t i;
    json_t *part;
    json_array_foreach(r->c->partitions, i, part) {
        json_t *o = json_deep_copy(part), *nodes = json_array();
        for (size_t n = 0; n < sched_node_count(r->c->sched); n++) {
            struct sched_node_view v;
            if (sched_node_get(r->c->sched, (uint32_t)n, &v) == 0 && node_in(&v, part))
                json_array_append_new(nodes, json_string(v.name));
        }
        json_object_set_new(o, "node_names", nodes);
        json_array_append_new(list, o);
    }
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "partitions", list));
}
