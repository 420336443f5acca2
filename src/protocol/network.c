/*
 * network.c - the readers and writers of network.h: the policy's `network:` section and a
 * start command's `network` object. Each reader checks types, ranges and unknown fields
 * and names the JSON path of what it refuses.
 */
#include "protocol/network.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/proto.h"
#include "util/str.h"

void net_policy_defaults(struct net_policy *p)
{
    memset(p, 0, sizeof(*p));
    p->controller = true;
}

/* ---- addresses ------------------------------------------------------------------------ */

bool net_addr_parse(const char *s, uint32_t *out)
{
    unsigned b[4];
    char tail;
    if (!s || sscanf(s, "%3u.%3u.%3u.%3u%c", &b[0], &b[1], &b[2], &b[3], &tail) != 4)
        return false;
    for (int i = 0; i < 4; i++)
        if (b[i] > 255)
            return false;
    for (const char *p = s; *p; p++) /* no signs, blanks or leading junk sscanf allows */
        if (!isdigit((unsigned char)*p) && *p != '.')
            return false;
    *out = b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];
    return true;
}

void net_addr_text(uint32_t a, char *out, size_t len)
{
    snprintf(out, len, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

bool net_cidr_parse(const char *s, uint32_t *net, int *prefix)
{
    char buf[32];
    if (!s || strlen(s) >= sizeof(buf))
        return false;
    str_copy(buf, sizeof(buf), s);
    char *slash = strchr(buf, '/');
    int n = 32;
    if (slash) {
        *slash = '\0';
        char *end;
        long v = strtol(slash + 1, &end, 10);
        if (!isdigit((unsigned char)slash[1]) || *end || v < 0 || v > 32)
            return false;
        n = (int)v;
    }
    uint32_t a;
    if (!net_addr_parse(buf, &a))
        return false;
    uint32_t mask = n == 0 ? 0 : ~(uint32_t)0 << (32 - n);
    if (a & ~mask)
        return false;
    *net = a;
    *prefix = n;
    return true;
}

bool net_host_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    bool letter = false;
    if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!isalnum(ch) && ch != '-' && ch != '.')
            return false;
        letter |= isalpha(ch) != 0;
    }
    return letter; /* all digits and dots would be a mistyped address */
}

/* ---- small typed readers ------------------------------------------------------------- */

static int get_addr(const json_t *v, const char *f, uint32_t *out, struct proto_error *err)
{
    if (!json_is_string(v) || !net_addr_parse(json_string_value(v), out))
        return proto_errorf(err, 400, NULL, f, "%s must be an IPv4 address", f);
    return 0;
}

static int get_addr_list(const json_t *v, const char *f, uint32_t *out, int max, int *n,
                         struct proto_error *err)
{
    if (!json_is_array(v) || json_array_size(v) > (size_t)max)
        return proto_errorf(err, 400, NULL, f, "%s must be a list of at most %d addresses", f, max);
    *n = 0;
    for (size_t i = 0; i < json_array_size(v); i++) {
        char fi[160];
        snprintf(fi, sizeof(fi), "%s[%zu]", f, i);
        int rc = get_addr(json_array_get(v, i), fi, &out[(*n)++], err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int get_rate(const json_t *o, const char *path, int64_t *out, struct proto_error *err)
{
    char f[160];
    snprintf(f, sizeof(f), "%s.bandwidth_mbit", path);
    json_t *v = json_object_get(o, "bandwidth_mbit");
    return v ? proto_get_int(v, f, 1, NET_MAX_RATE_MBIT, out, err) : 0;
}

static bool allow_to_ok(const char *s)
{
    uint32_t net;
    int prefix;
    return net_cidr_parse(s, &net, &prefix) || net_host_name_ok(s);
}

/* {"to": "10.1.0.0/16" | "a.b" , "ports": [443]} */
static int parse_allow(const json_t *v, const char *f, struct net_allow *out,
                       struct proto_error *err)
{
    static const char *const known[] = {"to", "ports", NULL};
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, f, "%s must be an object {to, ports}", f);
    int rc = proto_check_fields(v, f, known, err);
    if (rc < 0)
        return rc;
    memset(out, 0, sizeof(*out));
    json_t *to = json_object_get(v, "to");
    char ff[200];
    snprintf(ff, sizeof(ff), "%s.to", f);
    if (!json_is_string(to) || json_string_length(to) > NET_TO_MAX ||
        !allow_to_ok(json_string_value(to)))
        return proto_errorf(err, 400, NULL, ff,
                            "%s must be a CIDR (10.1.0.0/16), an address or a host name", ff);
    str_copy(out->to, sizeof(out->to), json_string_value(to));
    json_t *ports = json_object_get(v, "ports");
    if (!ports)
        return 0;
    snprintf(ff, sizeof(ff), "%s.ports", f);
    if (!json_is_array(ports) || json_array_size(ports) > NET_MAX_PORTS)
        return proto_errorf(err, 400, NULL, ff, "%s must be a list of at most %d ports", ff,
                            NET_MAX_PORTS);
    for (size_t i = 0; i < json_array_size(ports); i++) {
        int64_t port;
        char fi[220];
        snprintf(fi, sizeof(fi), "%s[%zu]", ff, i);
        if ((rc = proto_get_int(json_array_get(ports, i), fi, 1, 65535, &port, err)) < 0)
            return rc;
        out->ports[out->nports++] = (uint16_t)port;
    }
    return 0;
}

static int parse_allow_list(const json_t *v, const char *f, struct net_allow *out, int max, int *n,
                            struct proto_error *err)
{
    if (!json_is_array(v) || json_array_size(v) > (size_t)max)
        return proto_errorf(err, 400, NULL, f, "%s must be a list of at most %d entries", f, max);
    *n = 0;
    for (size_t i = 0; i < json_array_size(v); i++) {
        char fi[160];
        snprintf(fi, sizeof(fi), "%s[%zu]", f, i);
        int rc = parse_allow(json_array_get(v, i), fi, &out[(*n)++], err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- the policy's section ------------------------------------------------------------ */

static int parse_rule(const json_t *v, const char *f, struct net_rule *out, struct proto_error *err)
{
    static const char *const known[] = {"group", "project", "allow", "bandwidth_mbit", NULL};
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, f, "%s must be an object", f);
    int rc = proto_check_fields(v, f, known, err);
    if (rc < 0)
        return rc;
    memset(out, 0, sizeof(*out));
    json_t *g = json_object_get(v, "group"), *p = json_object_get(v, "project");
    char ff[200];
    if (!g == !p)
        return proto_errorf(err, 400, NULL, f, "%s must name exactly one of group and project", f);
    snprintf(ff, sizeof(ff), "%s.%s", f, g ? "group" : "project");
    if ((rc = proto_get_name(g ? g : p, ff, g ? out->group : out->project, err)) < 0)
        return rc;
    json_t *allow = json_object_get(v, "allow");
    snprintf(ff, sizeof(ff), "%s.allow", f);
    if (allow &&
        (rc = parse_allow_list(allow, ff, out->allow, NET_MAX_ALLOW, &out->nallow, err)) < 0)
        return rc;
    return get_rate(v, f, &out->rate_mbit, err);
}

static bool rule_same_subject(const struct net_rule *a, const struct net_rule *b)
{
    return strcmp(a->group, b->group) == 0 && strcmp(a->project, b->project) == 0;
}

static int parse_rules(const json_t *v, struct net_policy *out, struct proto_error *err)
{
    if (!json_is_array(v) || json_array_size(v) > NET_MAX_RULES)
        return proto_errorf(err, 400, NULL, "network.rules",
                            "network.rules must be a list of at most %d rules", NET_MAX_RULES);
    for (size_t i = 0; i < json_array_size(v); i++) {
        char f[64];
        snprintf(f, sizeof(f), "network.rules[%zu]", i);
        struct net_rule *r = &out->rules[out->nrules];
        int rc = parse_rule(json_array_get(v, i), f, r, err);
        if (rc < 0)
            return rc;
        for (int k = 0; k < out->nrules; k++)
            if (rule_same_subject(&out->rules[k], r))
                return proto_errorf(err, 400, NULL, f, "%s: %s '%s' has a rule already", f,
                                    r->group[0] ? "group" : "project",
                                    r->group[0] ? r->group : r->project);
        out->nrules++;
    }
    return 0;
}

static int parse_host_classes(const json_t *v, struct net_policy *out, struct proto_error *err)
{
    const char *f = "network.host_classes";
    if (!json_is_array(v) || json_array_size(v) > NET_MAX_HOST_CLASSES)
        return proto_errorf(err, 400, NULL, f, "%s must be a list of at most %d class names", f,
                            NET_MAX_HOST_CLASSES);
    for (size_t i = 0; i < json_array_size(v); i++) {
        char fi[64];
        snprintf(fi, sizeof(fi), "%s[%zu]", f, i);
        int rc =
            proto_get_name(json_array_get(v, i), fi, out->host_classes[out->nhost_classes], err);
        if (rc < 0)
            return rc;
        out->nhost_classes++;
    }
    return 0;
}

int net_policy_parse(const json_t *v, struct net_policy *out, struct proto_error *err)
{
    static const char *const known[] = {"isolate", "controller", "host_classes",
                                        "dns",     "rules",      NULL};
    net_policy_defaults(out);
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, "network", "network must be an object");
    int rc = proto_check_fields(v, "network", known, err);
    json_t *x;
    if (rc == 0 && (x = json_object_get(v, "isolate")))
        rc = proto_get_bool(x, "network.isolate", &out->isolate, err);
    if (rc == 0 && (x = json_object_get(v, "controller")))
        rc = proto_get_bool(x, "network.controller", &out->controller, err);
    if (rc == 0 && (x = json_object_get(v, "host_classes")))
        rc = parse_host_classes(x, out, err);
    if (rc == 0 && (x = json_object_get(v, "dns")))
        rc = get_addr_list(x, "network.dns", out->dns, NET_MAX_DNS, &out->ndns, err);
    if (rc == 0 && (x = json_object_get(v, "rules")))
        rc = parse_rules(x, out, err);
    return rc;
}

static json_t *addr_list_json(const uint32_t *a, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        char t[16];
        net_addr_text(a[i], t, sizeof(t));
        json_array_append_new(arr, json_string(t));
    }
    return arr;
}

static json_t *allow_list_json(const struct net_allow *a, int n)
{
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        json_t *o = json_pack("{s:s}", "to", a[i].to);
        if (a[i].nports > 0) {
            json_t *ports = json_array();
            for (int k = 0; k < a[i].nports; k++)
                json_array_append_new(ports, json_integer(a[i].ports[k]));
            json_object_set_new(o, "ports", ports);
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

json_t *net_policy_json(const struct net_policy *p)
{
    json_t *o = json_pack("{s:b,s:b}", "isolate", p->isolate, "controller", p->controller);
    json_t *hc = json_array(), *rules = json_array();
    for (int i = 0; i < p->nhost_classes; i++)
        json_array_append_new(hc, json_string(p->host_classes[i]));
    for (int i = 0; i < p->nrules; i++) {
        const struct net_rule *r = &p->rules[i];
        json_t *ro = json_object();
        json_object_set_new(ro, r->group[0] ? "group" : "project",
                            json_string(r->group[0] ? r->group : r->project));
        json_object_set_new(ro, "allow", allow_list_json(r->allow, r->nallow));
        if (r->rate_mbit > 0)
            json_object_set_new(ro, "bandwidth_mbit", json_integer(r->rate_mbit));
        json_array_append_new(rules, ro);
    }
    json_object_set_new(o, "host_classes", hc);
    json_object_set_new(o, "dns", addr_list_json(p->dns, (size_t)p->ndns));
    json_object_set_new(o, "rules", rules);
    return o;
}

bool net_policy_host_class(const struct net_policy *p, const char *class_name)
{
    for (int i = 0; i < p->nhost_classes; i++)
        if (strcmp(p->host_classes[i], class_name) == 0)
            return true;
    return false;
}

/* ---- a start command's `network` ----------------------------------------------------- */

static int parse_peers(const json_t *v, struct net_job *out, struct proto_error *err)
{
    const char *f = "job.network.peers";
    if (!json_is_array(v) || json_array_size(v) > NET_MAX_PEERS)
        return proto_errorf(err, 400, NULL, f, "%s must be a list of at most %d addresses", f,
                            NET_MAX_PEERS);
    size_t n = json_array_size(v);
    out->peers = n ? calloc(n, sizeof(*out->peers)) : NULL;
    if (n && !out->peers)
        return proto_errorf(err, 500, NULL, f, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char fi[64];
        snprintf(fi, sizeof(fi), "%s[%zu]", f, i);
        int rc = get_addr(json_array_get(v, i), fi, &out->peers[out->npeers++], err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int parse_job_fields(const json_t *v, struct net_job *out, struct proto_error *err)
{
    json_t *x = json_object_get(v, "addr");
    int rc = get_addr(x, "job.network.addr", &out->addr, err);
    if (rc == 0 && (x = json_object_get(v, "policy"))) {
        if (!json_is_string(x) || json_string_length(x) >= sizeof(out->policy))
            return proto_errorf(err, 400, NULL, "job.network.policy",
                                "job.network.policy must be a short string");
        str_copy(out->policy, sizeof(out->policy), json_string_value(x));
    }
    if (rc == 0 && (x = json_object_get(v, "peers")))
        rc = parse_peers(x, out, err);
    if (rc == 0 && (x = json_object_get(v, "allow")))
        rc = parse_allow_list(x, "job.network.allow", out->allow, NET_MAX_JOB_ALLOW, &out->nallow,
                              err);
    if (rc == 0 && (x = json_object_get(v, "dns")))
        rc = get_addr_list(x, "job.network.dns", out->dns, NET_MAX_DNS, &out->ndns, err);
    if (rc == 0 && (x = json_object_get(v, "controller")))
        rc = proto_get_bool(x, "job.network.controller", &out->controller, err);
    if (rc == 0)
        rc = get_rate(v, "job.network", &out->rate_mbit, err);
    return rc;
}

int net_job_parse(const json_t *v, struct net_job *out, struct proto_error *err)
{
    static const char *const known[] = {"addr", "policy",     "peers",          "allow",
                                        "dns",  "controller", "bandwidth_mbit", NULL};
    memset(out, 0, sizeof(*out));
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, "job.network", "job.network must be an object");
    int rc = proto_check_fields(v, "job.network", known, err);
    if (rc == 0)
        rc = parse_job_fields(v, out, err);
    if (rc < 0)
        net_job_release(out);
    return rc;
}

json_t *net_job_json(const struct net_job *j)
{
    char addr[16];
    net_addr_text(j->addr, addr, sizeof(addr));
    json_t *o =
        json_pack("{s:s,s:s,s:b}", "addr", addr, "policy", j->policy, "controller", j->controller);
    json_object_set_new(o, "peers", addr_list_json(j->peers, j->npeers));
    json_object_set_new(o, "allow", allow_list_json(j->allow, j->nallow));
    json_object_set_new(o, "dns", addr_list_json(j->dns, (size_t)j->ndns));
    if (j->rate_mbit > 0)
        json_object_set_new(o, "bandwidth_mbit", json_integer(j->rate_mbit));
    return o;
}

void net_job_release(struct net_job *j)
{
    free(j->peers);
    j->peers = NULL;
    j->npeers = 0;
}
