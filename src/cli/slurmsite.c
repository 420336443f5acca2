/*
 * slurmsite.c - a Slurm site's files read into one JSON site, and the policy document
 * made from it (slurmsite.h, docs/slurm.md "A site imports itself").
 */
#define _POSIX_C_SOURCE 200809L
#include "cli/slurmsite.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/slurm.h"
#include "util/dbuf.h"
#include "util/str.h"

enum { LINE_MAX_BYTES = 16384, WORDS_MAX = 128, HOSTS_MAX = 20000 };

static void say(json_t *unmapped, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(json_t *unmapped, const char *fmt, ...)
{
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof(b), fmt, ap);
    va_end(ap);
    json_array_append_new(unmapped, json_string(b));
}

static const char *sget(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

/* Text that is not UTF-8 would make no JSON string (jansson refuses it): none of it is
 * read, and that is said. */
static bool readable(const char *text, const char *file, json_t *unmapped)
{
    json_t *probe = json_string(text);
    json_decref(probe);
    if (!probe)
        say(unmapped, "%s: not UTF-8 text: not read", file);
    return probe != NULL;
}

json_t *slurm_site_new(void)
{
    return json_pack("{s:{},s:[],s:{},s:{},s:[],s:[]}", "nodes", "partitions", "globals",
                     "accounts", "users", "qos");
}

/* ------------------------------------------------------------------------------------ */
/* Lines and words                                                                       */

/* The next logical line of text (comments cut, backslash continuations joined) into
 * out; its first physical line's number in *lineno. False at the end. */
static bool next_line(const char **p, char *out, size_t len, int *lineno, int *at)
{
    size_t o = 0;
    if (!**p)
        return false;
    *lineno = *at + 1;
    while (**p) {
        const char *nl = strchr(*p, '\n');
        size_t n = nl ? (size_t)(nl - *p) : strlen(*p);
        const char *hash = memchr(*p, '#', n);
        size_t keep = hash ? (size_t)(hash - *p) : n;
        bool cont = !hash && keep > 0 && (*p)[keep - 1] == '\\';
        if (cont)
            keep--;
        if (o + keep + 1 < len) {
            memcpy(out + o, *p, keep);
            o += keep;
            out[o++] = ' ';
        }
        (*at)++;
        *p += n + (nl ? 1 : 0);
        if (!cont)
            break;
    }
    out[o] = '\0';
    return true;
}

/* Split on blanks (outside quotes) into at most max words; quotes are removed. */
static int words(char *line, char **w, int max)
{
    int n = 0;
    char *p = line;
    while (*p && n < max) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        char *start = p, *o = p;
        char q = 0;
        while (*p && (q || !isspace((unsigned char)*p))) {
            if ((*p == '"' || *p == '\'') && (!q || q == *p)) {
                q = q ? 0 : *p;
                p++;
                continue;
            }
            *o++ = *p++;
        }
        if (*p)
            p++;
        *o = '\0';
        w[n++] = start;
    }
    return n;
}

/* The value of KEY= among words (keys in any case), or NULL. */
static const char *kv(char **w, int n, const char *key)
{
    size_t k = strlen(key);
    for (int i = 0; i < n; i++)
        if (strncasecmp(w[i], key, k) == 0 && w[i][k] == '=')
            return w[i] + k + 1;
    return NULL;
}

static long long num(const char *s, long long dflt)
{
    char *end;
    long long v = s ? strtoll(s, &end, 10) : 0;
    return s && end != s ? v : dflt;
}

long long slurm_time_secs(const char *s)
{
    if (!s || !*s)
        return -1;
    if (!strcasecmp(s, "UNLIMITED") || !strcasecmp(s, "INFINITE"))
        return 0;
    long long d = 0, f[3] = {0, 0, 0};
    const char *dash = strchr(s, '-');
    char *end;
    if (dash) {
        d = strtoll(s, &end, 10);
        if (end != dash || d < 0 || d > 3660)
            return -1;
        s = dash + 1;
    }
    int nf = 0;
    for (const char *p = s; nf < 3;) {
        if (!isdigit((unsigned char)*p))
            return -1;
        f[nf++] = strtoll(p, &end, 10);
        if (f[nf - 1] > 100000000)
            return -1;
        if (*end == ':') {
            if (nf == 3)
                return -1; /* H:M:S at most */
            p = end + 1;
            continue;
        }
        if (*end)
            return -1;
        break;
    }
    /* Slurm: M, M:S, H:M:S; with days D-H, D-H:M, D-H:M:S */
    long long secs = dash      ? (nf == 1   ? f[0] * 3600
                                  : nf == 2 ? f[0] * 3600 + f[1] * 60
                                            : f[0] * 3600 + f[1] * 60 + f[2])
                     : nf == 1 ? f[0] * 60
                     : nf == 2 ? f[0] * 60 + f[1]
                               : f[0] * 3600 + f[1] * 60 + f[2];
    return d * 86400 + secs;
}

/* The host names of a Slurm host list ("gpu[01-04],cpu1") into a JSON array. */
static json_t *hosts(const char *list)
{
    json_t *a = json_array();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return a;
    int rc = slurm_expand_hostlist(list, f);
    fclose(f);
    for (char *save = NULL, *h = rc == 0 ? strtok_r(buf, "\n", &save) : NULL;
         h && json_array_size(a) < HOSTS_MAX; h = strtok_r(NULL, "\n", &save))
        json_array_append_new(a, json_string(h));
    free(buf);
    return a;
}

/* A comma list into a JSON array of its items. */
static json_t *list(const char *s)
{
    json_t *a = json_array();
    char *copy = strdup(s ? s : "");
    for (char *save = NULL, *t = copy ? strtok_r(copy, ",", &save) : NULL; t;
         t = strtok_r(NULL, ",", &save))
        json_array_append_new(a, json_string(t));
    free(copy);
    return a;
}

/* ------------------------------------------------------------------------------------ */
/* slurm.conf                                                                            */

static json_t *node_of(json_t *site, const char *name)
{
    json_t *nodes = json_object_get(site, "nodes");
    json_t *n = json_object_get(nodes, name);
    if (!n) {
        n = json_pack("{s:{},s:[]}", "gpus", "features");
        json_object_set_new(nodes, name, n);
    }
    return n;
}

/* Gres=gpu:a100:8,gpu:v100:2(S:0) -> {"a100": 8, ...}; an untyped gpu count is "". */
static void gres_gpus(const char *gres, json_t *gpus, json_t *unmapped, int line)
{
    json_t *items = list(gres);
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        char item[256];
        str_copy(item, sizeof(item), json_string_value(it));
        item[strcspn(item, "(")] = '\0';
        char *f[3] = {item, NULL, NULL};
        int nf = 1;
        for (char *c = strchr(item, ':'); c && nf < 3; c = strchr(c + 1, ':')) {
            *c = '\0';
            f[nf++] = c + 1;
        }
        if (strcmp(f[0], "gpu") != 0) {
            say(unmapped, "slurm.conf:%d: gres '%s' is not a GPU: not mapped", line, f[0]);
            continue;
        }
        const char *type = nf == 3 ? f[1] : "";
        long long count = num(nf == 3 ? f[2] : nf == 2 ? f[1] : "1", 0);
        if (nf == 2 && !isdigit((unsigned char)f[1][0])) { /* gpu:a100: one */
            type = f[1];
            count = 1;
        }
        if (count < 0 || count > 1024) {
            say(unmapped, "slurm.conf:%d: gres gpu count %lld is not 0 to 1024: not mapped", line,
                count);
            continue;
        }
        json_object_set_new(gpus, type, json_integer(count));
    }
    json_decref(items);
}

static void conf_node(json_t *site, char **w, int n, json_t *unmapped, int line)
{
    const char *names = kv(w, n, "NodeName");
    if (!strcasecmp(names, "DEFAULT")) {
        say(unmapped, "slurm.conf:%d: NodeName=DEFAULT: its values are not carried to nodes", line);
        return;
    }
    json_t *hs = hosts(names);
    if (json_array_size(hs) == 0)
        say(unmapped, "slurm.conf:%d: NodeName=%s does not read as a host list", line, names);
    size_t i;
    json_t *h, *once = json_array(); /* a gres note once per line, not once per host */
    json_array_foreach(hs, i, h) {
        json_t *node = node_of(site, json_string_value(h));
        if (kv(w, n, "Gres"))
            gres_gpus(kv(w, n, "Gres"), json_object_get(node, "gpus"), i ? once : unmapped, line);
        if (kv(w, n, "Feature") || kv(w, n, "Features"))
            json_object_set_new(
                node, "features",
                list(kv(w, n, "Feature") ? kv(w, n, "Feature") : kv(w, n, "Features")));
        json_object_set_new(node, "line", json_integer(line));
    }
    json_decref(once);
    json_decref(hs);
}

static void conf_partition(json_t *site, char **w, int n, json_t *unmapped, int line)
{
    const char *name = kv(w, n, "PartitionName");
    if (!strcasecmp(name, "DEFAULT")) {
        say(unmapped, "slurm.conf:%d: PartitionName=DEFAULT: its values are not carried", line);
        return;
    }
    json_t *p = json_pack("{s:s,s:i}", "name", name, "line", line);
    const char *nodes = kv(w, n, "Nodes");
    json_object_set_new(p, "nodes",
                        !nodes || !strcasecmp(nodes, "ALL") ? json_null() : hosts(nodes));
    json_object_set_new(
        p, "default", json_boolean(kv(w, n, "Default") && !strcasecmp(kv(w, n, "Default"), "YES")));
    json_object_set_new(p, "max_time", json_integer(slurm_time_secs(kv(w, n, "MaxTime"))));
    json_object_set_new(p, "default_time", json_integer(slurm_time_secs(kv(w, n, "DefaultTime"))));
    const char *allow = kv(w, n, "AllowAccounts");
    json_object_set_new(p, "accounts",
                        allow && strcasecmp(allow, "ALL") ? list(allow) : json_null());
    if (kv(w, n, "QOS"))
        json_object_set_new(p, "qos", json_string(kv(w, n, "QOS")));
    static const char *const unsupported[] = {"DenyAccounts",   "AllowGroups",  "AllowQos",
                                              "DenyQos",        "PriorityTier", "OverSubscribe",
                                              "PreemptMode",    "MaxNodes",     "MinNodes",
                                              "MaxCPUsPerNode", "MaxMemPerNode"};
    for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
        if (kv(w, n, unsupported[i]))
            say(unmapped, "slurm.conf:%d: partition %s: %s=%s has no equivalent: not mapped", line,
                name, unsupported[i], kv(w, n, unsupported[i]));
    json_array_append_new(json_object_get(site, "partitions"), p);
}

void slurm_conf_read(json_t *site, const char *text, json_t *unmapped)
{
    if (!readable(text, "slurm.conf", unmapped))
        return;
    static char line[LINE_MAX_BYTES];
    const char *p = text;
    int lineno = 0, at = 0;
    while (next_line(&p, line, sizeof(line), &lineno, &at)) {
        char *w[WORDS_MAX];
        int n = words(line, w, WORDS_MAX);
        if (n == 0)
            continue;
        if (strncasecmp(w[0], "NodeName=", 9) == 0)
            conf_node(site, w, n, unmapped, lineno);
        else if (strncasecmp(w[0], "PartitionName=", 14) == 0)
            conf_partition(site, w, n, unmapped, lineno);
        else if (strncasecmp(w[0], "NodeSet=", 8) == 0 ||
                 strncasecmp(w[0], "DownNodes=", 10) == 0 ||
                 strncasecmp(w[0], "FrontendName=", 13) == 0 || !strcasecmp(w[0], "Include") ||
                 strncasecmp(w[0], "Include", 7) == 0)
            say(unmapped, "slurm.conf:%d: %.60s: not read", lineno, w[0]);
        else
            for (int i = 0; i < n; i++) {
                char *eq = strchr(w[i], '=');
                if (eq) {
                    *eq = '\0';
                    json_object_set_new(json_object_get(site, "globals"), w[i],
                                        json_string(eq + 1));
                }
            }
    }
}

/* ------------------------------------------------------------------------------------ */
/* gres.conf                                                                             */

static json_t *keys(const json_t *o)
{
    json_t *a = json_array();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        json_array_append_new(a, json_string(k));
    }
    return a;
}

void slurm_gres_read(json_t *site, const char *text, json_t *unmapped)
{
    if (!readable(text, "gres.conf", unmapped))
        return;
    static char line[LINE_MAX_BYTES];
    const char *p = text;
    int lineno = 0, at = 0;
    while (next_line(&p, line, sizeof(line), &lineno, &at)) {
        char *w[WORDS_MAX];
        int n = words(line, w, WORDS_MAX);
        if (n == 0)
            continue;
        const char *name = kv(w, n, "Name"), *type = kv(w, n, "Type");
        const char *nodes = kv(w, n, "NodeName");
        if (kv(w, n, "AutoDetect") && !name)
            continue; /* the nodes find their GPUs themselves, as docket-node does */
        if (!name || strcmp(name, "gpu") != 0) {
            say(unmapped, "gres.conf:%d: %s is not a GPU: not mapped", lineno,
                name ? name : "a line without Name=");
            continue;
        }
        if (!type) /* an untyped GPU: the nodes' own type names it */
            continue;
        json_t *hs = nodes ? hosts(nodes) : keys(json_object_get(site, "nodes"));
        size_t i;
        json_t *h;
        json_array_foreach(hs, i, h) {
            json_t *gpus = json_object_get(node_of(site, json_string_value(h)), "gpus");
            long long count = json_integer_value(json_object_get(gpus, type));
            if (!count) /* File=/dev/nvidia[0-3]: a count slurm.conf may not give */
                count = json_integer_value(json_object_get(gpus, ""));
            json_object_del(gpus, "");
            json_object_set_new(gpus, type, json_integer(count ? count : 1));
        }
        json_decref(hs);
    }
}

/* ------------------------------------------------------------------------------------ */
/* sacctmgr dump                                                                         */

/* "Kind - 'name':K=V:K='v,w'" -> kind, name and the K=V pairs as an object. */
static json_t *dump_entity(char *line, char *kind, size_t klen)
{
    char *dash = strstr(line, " - ");
    if (!dash)
        return NULL;
    *dash = '\0';
    str_copy(kind, klen, str_trim(line));
    json_t *o = json_object();
    char *p = dash + 3, field[1024];
    bool first = true;
    while (*p) {
        size_t o2 = 0;
        char q = 0;
        while (*p && (q || *p != ':')) {
            if (*p == '\'')
                q = q ? 0 : '\'';
            else if (o2 + 1 < sizeof(field))
                field[o2++] = *p;
            p++;
        }
        field[o2] = '\0';
        if (*p == ':')
            p++;
        char *f = str_trim(field);
        if (first) {
            json_object_set_new(o, "name", json_string(f));
            first = false;
            continue;
        }
        char *eq = strchr(f, '=');
        if (eq) {
            *eq = '\0';
            json_object_set_new(o, f, json_string(eq + 1));
        }
    }
    return o;
}

/* "gres/gpu=16,cpu=64" -> the GPU count, or -1. */
static long long tres_gpus(const char *tres)
{
    const char *g = tres ? strstr(tres, "gres/gpu=") : NULL;
    return g ? num(g + 9, -1) : -1;
}

void slurm_sacctmgr_read(json_t *site, const char *text, json_t *unmapped)
{
    if (!readable(text, "sacctmgr", unmapped))
        return;
    static char line[LINE_MAX_BYTES];
    const char *p = text;
    int lineno = 0, at = 0;
    char parent[128] = "root";
    while (next_line(&p, line, sizeof(line), &lineno, &at)) {
        char kind[32];
        if (!*str_trim(line))
            continue;
        json_t *e = dump_entity(line, kind, sizeof(kind));
        if (!e) {
            say(unmapped, "sacctmgr:%d: not an entity line: not read", lineno);
            continue;
        }
        const char *name = json_string_value(json_object_get(e, "name"));
        json_object_set_new(e, "line", json_integer(lineno));
        if (!strcmp(kind, "Parent")) {
            str_copy(parent, sizeof(parent), name);
        } else if (!strcmp(kind, "Account")) {
            json_object_set_new(e, "parent", json_string(parent));
            json_object_set(json_object_get(site, "accounts"), name, e);
        } else if (!strcmp(kind, "User")) {
            json_object_set_new(e, "account", json_string(parent));
            json_array_append(json_object_get(site, "users"), e);
        } else if (strcmp(kind, "Cluster") != 0) {
            say(unmapped, "sacctmgr:%d: %s entries are not read", lineno, kind);
        }
        json_decref(e);
    }
}

/* ------------------------------------------------------------------------------------ */
/* sacctmgr show qos -P                                                                  */

void slurm_qos_read(json_t *site, const char *text, json_t *unmapped)
{
    if (!readable(text, "qos", unmapped))
        return;
    static char line[LINE_MAX_BYTES];
    const char *p = text;
    int lineno = 0, at = 0;
    json_t *header = NULL;
    while (next_line(&p, line, sizeof(line), &lineno, &at)) {
        char *l = str_trim(line);
        if (!*l)
            continue;
        json_t *cells = json_array();
        for (char *c = l;;) {
            char *bar = strchr(c, '|');
            if (bar)
                *bar = '\0';
            json_array_append_new(cells, json_string(str_trim(c)));
            if (!bar)
                break;
            c = bar + 1;
        }
        if (!header) {
            header = cells;
            continue;
        }
        json_t *q = json_pack("{s:i}", "line", lineno);
        for (size_t i = 0; i < json_array_size(cells) && i < json_array_size(header); i++)
            json_object_set(q, json_string_value(json_array_get(header, i)),
                            json_array_get(cells, i));
        json_decref(cells);
        if (!*sget(q, "Name")) {
            say(unmapped, "qos:%d: a row without a Name: not read", lineno);
            json_decref(q);
            continue;
        }
        json_array_append_new(json_object_get(site, "qos"), q);
    }
    json_decref(header);
}

/* ------------------------------------------------------------------------------------ */
/* The policy                                                                            */

/* A name Docket takes: Slurm's, when it is one; else refused with a note. */
static bool name_ok(const char *name, const char *what, json_t *unmapped)
{
    if (str_is_name(name))
        return true;
    say(unmapped, "%s '%.60s' is not a name Docket takes (A-Z a-z 0-9 . _ -): left out", what,
        name);
    return false;
}

static int cmp_priority(const void *a, const void *b)
{
    long long x = num(sget(*(json_t *const *)a, "Priority"), 0);
    long long y = num(sget(*(json_t *const *)b, "Priority"), 0);
    return x < y ? 1 : x > y ? -1 : 0;
}

/* QOS -> tiers, highest priority first; what tiers cannot say is reported. */
static json_t *policy_tiers(const json_t *site, json_t *unmapped)
{
    const json_t *qos = json_object_get(site, "qos");
    size_t n = json_array_size(qos);
    if (n == 0)
        return NULL;
    json_t **sorted = calloc(n, sizeof(*sorted));
    for (size_t i = 0; i < n; i++)
        sorted[i] = json_array_get(qos, i);
    qsort(sorted, n, sizeof(*sorted), cmp_priority);
    json_t *tiers = json_array();
    for (size_t i = 0; i < n; i++) {
        const json_t *q = sorted[i];
        const char *name = sget(q, "Name");
        if (!name_ok(name, "QOS", unmapped))
            continue;
        json_array_append_new(tiers, json_pack("{s:s,s:s}", "name", name, "starve_after", "24h"));
        /* Preempt: Docket's tiers preempt every lower tier's preemptible classes */
        json_t *pre = list(sget(q, "Preempt"));
        size_t k;
        json_t *v;
        for (size_t j = i + 1; j < n; j++) { /* lower tiers its list leaves out */
            bool named = false;
            json_array_foreach(pre, k, v) {
                named = named || !strcmp(sget(sorted[j], "Name"), json_string_value(v));
            }
            if (!named && *sget(q, "Preempt"))
                say(unmapped,
                    "qos %s: Preempt=%s leaves out %s, a lower tier: Docket lets %s preempt its "
                    "preemptible classes",
                    name, sget(q, "Preempt"), sget(sorted[j], "Name"), name);
        }
        json_array_foreach(pre, k, v) {
            for (size_t j = 0; j <= i; j++)
                if (!strcmp(sget(sorted[j], "Name"), json_string_value(v)))
                    say(unmapped,
                        "qos:%lld: %s preempts %s, which is not below it in priority: tiers "
                        "preempt only lower tiers",
                        (long long)json_integer_value(json_object_get(q, "line")), name,
                        json_string_value(v));
        }
        json_decref(pre);
        if (!strcasecmp(sget(q, "PreemptMode"), "suspend") ||
            strstr(sget(q, "PreemptMode"), "SUSPEND"))
            say(unmapped, "qos %s: PreemptMode=SUSPEND: Docket preempts by signal and requeue",
                name);
        /* MaxWall, MaxTRESPU, MaxJobsPU, GrpTRES, GrpJobs and MaxSubmitPU are mapped by
           qos_limits(); these have no home in Docket, each for its reason */
        static const struct {
            const char *key, *why;
        } limits[] = {
            {"MaxTRES", "a cap on each job's size: Docket has none of its own (a job is refused "
                        "only when no node could hold it)"},
            {"UsageFactor", "Docket's fair share charges a job by its GPU type "
                            "(settings.gpu_weights), the same at every tier"},
            {"GraceTime", "a preempted job's grace is its class's (max_grace)"},
            {"Flags", "a QOS limit; Docket's limits are per project and class"},
        };
        for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
            const char *lv = sget(q, limits[l].key);
            if (*lv && strcmp(lv, "1.000000") && strcmp(lv, "00:00:00") && strcmp(lv, "0"))
                say(unmapped, "qos %s: %s=%s: %s: not mapped", name, limits[l].key, lv,
                    limits[l].why);
        }
    }
    free(sorted);
    return tiers;
}

/* The site's GPUs in all (fair-share guarantees are shares of them). */
static double total_gpus(const json_t *site)
{
    double total = 0; /* a double: a site file's counts can be anything, no sum overflows */
    const char *name;
    json_t *node;
    json_object_foreach((json_t *)json_object_get(site, "nodes"), name, node) {
        const char *t;
        json_t *c;
        json_object_foreach(json_object_get(node, "gpus"), t, c) {
            total += (double)json_integer_value(c);
        }
    }
    return total;
}

/* node_labels: features, and one label per partition a node is in; GPU types noted. */
static json_t *policy_node_labels(const json_t *site, json_t *unmapped)
{
    json_t *out = json_object();
    const char *name;
    json_t *node;
    json_object_foreach((json_t *)json_object_get(site, "nodes"), name, node) {
        if (!name_ok(name, "node", unmapped))
            continue;
        json_t *labels = json_object();
        struct dbuf f;
        dbuf_init(&f, 63);
        size_t i;
        json_t *ft;
        json_array_foreach(json_object_get(node, "features"), i, ft) {
            if (str_is_name(json_string_value(ft)))
                dbuf_printf(&f, "%s%s", f.len ? "," : "", json_string_value(ft));
            else
                say(unmapped, "node %s: feature '%s' is not a name: left out", name,
                    json_string_value(ft));
        }
        if (f.failed)
            say(unmapped, "node %s: its features pass 63 bytes: left out", name);
        else if (f.len)
            json_object_set_new(labels, "features", json_string(f.data));
        dbuf_release(&f);
        json_object_set_new(out, name, labels); /* partitions may add to it; empty ones go */
    }
    return out;
}

/* A partition: its nodes as the label partition.NAME=yes (set on them in node_labels),
 * every node for Nodes=ALL; times, accounts, QOS as tier. */
static bool qos_known(const json_t *site, const char *name)
{
    size_t i;
    json_t *q;
    json_array_foreach(json_object_get(site, "qos"), i, q) {
        if (!strcmp(sget(q, "Name"), name))
            return true;
    }
    return false;
}

static json_t *policy_partition(const json_t *site, const json_t *p, json_t *node_labels,
                                json_t *unmapped)
{
    const char *name = sget(p, "name");
    if (!name_ok(name, "partition", unmapped))
        return NULL;
    json_t *out = json_pack("{s:s}", "name", name);
    const json_t *hs = json_object_get(p, "nodes");
    if (json_is_array(hs)) {
        char key[80];
        snprintf(key, sizeof(key), "partition.%s", name);
        json_object_set_new(out, "nodes", json_pack("{s:s}", key, "yes"));
        size_t i;
        json_t *h;
        json_array_foreach(hs, i, h) {
            json_t *labels = json_object_get(node_labels, json_string_value(h));
            if (!labels) {
                say(unmapped, "partition %s: node %s has no NodeName line: left out", name,
                    json_string_value(h));
                continue;
            }
            if (json_object_size(labels) >= 16) {
                say(unmapped, "partition %s: node %s is in too many partitions (16 labels)", name,
                    json_string_value(h));
                continue;
            }
            json_object_set_new(labels, key, json_string("yes"));
        }
    }
    long long def = json_integer_value(json_object_get(p, "default_time"));
    long long max = json_integer_value(json_object_get(p, "max_time"));
    if (def > 0)
        json_object_set_new(out, "default_time", json_integer(def));
    if (max > 0)
        json_object_set_new(out, "max_time", json_integer(max));
    if (def > 0 && max > 0 && def > max)
        json_object_del(out, "default_time"); /* Slurm refuses it too */
    if (json_is_array(json_object_get(p, "accounts")))
        json_object_set(out, "projects", json_object_get(p, "accounts"));
    if (json_object_get(p, "qos") && qos_known(site, sget(p, "qos")))
        json_object_set(out, "tier", json_object_get(p, "qos"));
    else if (json_object_get(p, "qos"))
        say(unmapped, "partition %s: QOS=%s is not among the QOS read (--qos): not mapped", name,
            sget(p, "qos"));
    if (json_is_true(json_object_get(p, "default")))
        json_object_set_new(out, "default", json_true());
    return out;
}

/* The account's QOS of highest priority (the highest tier its users may submit at). */
static const char *account_tier(const json_t *site, const json_t *acct)
{
    json_t *qs = list(sget(acct, "QOS"));
    const char *best = NULL;
    long long bp = -1;
    size_t i;
    json_t *q;
    json_array_foreach(qs, i, q) {
        size_t k;
        json_t *def;
        json_array_foreach(json_object_get(site, "qos"), k, def) {
            if (!strcmp(sget(def, "Name"), json_string_value(q)) &&
                num(sget(def, "Priority"), 0) > bp) {
                bp = num(sget(def, "Priority"), 0);
                best = sget(def, "Name");
            }
        }
    }
    json_decref(qs);
    return best;
}

/* An account's Fairshare as a weight: a number of at least zero (Slurm's "parent" or a
 * missing value counts one; a site file can say anything, so no sum may overflow). */
static double fairshare(const json_t *account)
{
    long long v = num(sget(account, "Fairshare"), 1);
    return v < 0 ? 0.0 : (double)v;
}

/* The share of all GPUs an account's Fairshare gives, down from root through its parents
 * (shares divide among siblings, as Slurm's do). */
static double account_fraction(const json_t *accounts, const char *name, int depth)
{
    const json_t *a = json_object_get(accounts, name);
    if (!a || depth > 32)
        return 1.0;
    const char *parent = sget(a, "parent");
    double mine = fairshare(a), sum = 0;
    const char *k;
    json_t *o;
    json_object_foreach((json_t *)accounts, k, o) {
        if (!strcmp(sget(o, "parent"), parent))
            sum += fairshare(o);
    }
    double f = sum > 0 ? mine / sum : 0;
    return f * (strcmp(parent, "root") ? account_fraction(accounts, parent, depth + 1) : 1.0);
}

static bool has_children(const json_t *accounts, const char *name)
{
    const char *k;
    json_t *o;
    json_object_foreach((json_t *)accounts, k, o) {
        if (!strcmp(sget(o, "parent"), name))
            return true;
    }
    return false;
}

/* The group of an account: its parent's top ancestor below root (one level of groups). */
static const char *account_group(const json_t *accounts, const char *name, json_t *unmapped)
{
    const char *parent = sget(json_object_get(accounts, name), "parent");
    if (!strcmp(parent, "root") || !*parent)
        return NULL;
    const char *up = parent;
    int depth = 0;
    while (depth++ < 32) {
        const char *pp = sget(json_object_get(accounts, up), "parent");
        if (!strcmp(pp, "root") || !*pp)
            break;
        up = pp;
    }
    if (strcmp(up, parent))
        say(unmapped,
            "account %s: nested below %s under %s: grouped under %s (groups are one "
            "level)",
            name, parent, up, up);
    return up;
}

/* An account's guaranteed GPUs: its share of all of them, to two decimals. */
static double guarantee_gpus(const json_t *accounts, const char *name, double gpus)
{
    return floor(gpus * account_fraction(accounts, name, 0) * 100 + 0.5) / 100;
}

static json_t *policy_project(const json_t *site, const char *name, const json_t *a, double gpus,
                              json_t *unmapped)
{
    const json_t *accounts = json_object_get(site, "accounts");
    json_t *p = json_pack("{s:s}", "name", name);
    const char *group = account_group(accounts, name, unmapped);
    if (group)
        json_object_set_new(p, "group", json_string(group));
    const char *tier = account_tier(site, a);
    if (tier)
        json_object_set_new(p, "tier", json_string(tier));
    json_object_set_new(p, "guarantee_gpus", json_real(guarantee_gpus(accounts, name, gpus)));
    long long v;
    if ((v = tres_gpus(sget(a, "GrpTRES"))) >= 0)
        json_object_set_new(p, "gpu_limit", json_integer(v));
    if ((v = num(sget(a, "GrpJobs"), -1)) >= 0)
        json_object_set_new(p, "max_running", json_integer(v));
    if ((v = num(sget(a, "GrpSubmitJobs"), -1)) >= 0)
        json_object_set_new(p, "max_queued", json_integer(v));
    if ((v = num(sget(a, "MaxJobs"), -1)) >= 0)
        json_object_set_new(p, "user_max_running", json_integer(v));
    if ((v = tres_gpus(sget(a, "MaxTRESPerUser"))) >= 0)
        json_object_set_new(p, "user_gpu_limit", json_integer(v));
    static const char *const other[] = {"MaxTRES",       "MaxWall",     "GrpWall",   "GrpTRESMins",
                                        "MaxSubmitJobs", "MaxTRESMins", "DefaultQOS"};
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        if (*sget(a, other[i]))
            say(unmapped, "account %s: %s=%s has no equivalent: not mapped", name, other[i],
                sget(a, other[i]));
    json_object_set_new(p, "members", json_array());
    json_object_set_new(p, "default_for", json_array());
    return p;
}

/* Users -> members of the projects they are under, and their default accounts. */
static void policy_members(const json_t *site, json_t *projects, json_t *unmapped)
{
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(site, "users"), i, u) {
        const char *user = sget(u, "name"), *acct = sget(u, "account");
        if (!strcmp(acct, "root") && !strcmp(user, "root"))
            continue; /* Slurm's own administrator: docketd's admin is root already */
        if (!name_ok(user, "user", unmapped))
            continue;
        json_t *p = NULL;
        size_t k;
        json_t *x;
        json_array_foreach(projects, k, x) {
            if (!strcmp(sget(x, "name"), acct))
                p = x;
        }
        if (!p) {
            say(unmapped, "sacctmgr:%lld: user %s under account %s, which is no project",
                (long long)json_integer_value(json_object_get(u, "line")), user, acct);
            continue;
        }
        json_array_append_new(json_object_get(p, "members"), json_string(user));
        if (!strcmp(sget(u, "DefaultAccount"), acct))
            json_array_append_new(json_object_get(p, "default_for"), json_string(user));
        if (*sget(u, "AdminLevel") && strcasecmp(sget(u, "AdminLevel"), "None"))
            say(unmapped, "user %s: AdminLevel=%s: make an admin token (docket token create)", user,
                sget(u, "AdminLevel"));
        static const char *const limits[] = {"MaxJobs", "GrpTRES", "MaxTRES", "MaxSubmitJobs"};
        for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++)
            if (*sget(u, limits[l]))
                say(unmapped,
                    "user %s in %s: %s=%s: per-user limits are the project's "
                    "(user_max_running, user_gpu_limit): not mapped",
                    user, acct, limits[l], sget(u, limits[l]));
    }
}

json_t *slurm_site_aliases(const json_t *site, const json_t *nodes, json_t *unmapped)
{
    json_t *aliases = json_object();
    const char *name;
    json_t *node;
    json_object_foreach((json_t *)json_object_get(site, "nodes"), name, node) {
        const char *mine = NULL;
        size_t i;
        json_t *dn;
        json_array_foreach((json_t *)nodes, i, dn) {
            if (!strcmp(sget(dn, "name"), name))
                mine = sget(dn, "gpu_type");
        }
        const char *t;
        json_t *c;
        json_object_foreach(json_object_get(node, "gpus"), t, c) {
            if (!*t || !mine || !*mine || !strcasecmp(t, mine) || !str_is_name(t))
                continue;
            const char *had = json_string_value(json_object_get(aliases, t));
            if (had && strcmp(had, mine))
                say(unmapped, "GPU type %s: nodes report both %s and %s: the alias keeps %s", t,
                    had, mine, had);
            else
                json_object_set_new(aliases, t, json_string(mine));
        }
    }
    return aliases;
}

/* A QOS limit's value, or "" when it sets none (sacctmgr prints 0 or nothing). */
static const char *qos_limit(const json_t *q, const char *key)
{
    const char *v = sget(q, key);
    return strcmp(v, "0") && strcmp(v, "00:00:00") ? v : "";
}

/* The projects of `list` whose tier is `qos` (their account's QOS of highest priority). */
static size_t projects_at(json_t *list, const char *qos, json_t **out, size_t max)
{
    size_t n = 0, i;
    json_t *p;
    json_array_foreach(list, i, p) {
        if (!strcmp(sget(p, "tier"), qos) && n < max)
            out[n++] = p;
    }
    return n;
}

/* Set `key` of each of `ps` to `v` unless it holds a lower value already (the account's
 * own limit, stricter, wins). */
static void limit_each(json_t **ps, size_t n, const char *key, long long v)
{
    for (size_t i = 0; i < n; i++) {
        json_t *have = json_object_get(ps[i], key);
        if (!have || json_integer_value(have) > v)
            json_object_set_new(ps[i], key, json_integer(v));
    }
}

/* MaxWall onto the partitions that run at the QOS (QOS=): their max_time, the lower. */
static void qos_max_wall(const json_t *q, json_t *parts, json_t *unmapped)
{
    const char *name = sget(q, "Name"), *wall = qos_limit(q, "MaxWall");
    long long secs = *wall ? slurm_time_secs(wall) : -1;
    size_t i, hit = 0;
    json_t *p;
    if (secs <= 0)
        return;
    json_array_foreach(parts, i, p) {
        if (strcmp(sget(p, "tier"), name))
            continue;
        json_t *max = json_object_get(p, "max_time");
        if (!max || json_integer_value(max) > secs)
            json_object_set_new(p, "max_time", json_integer(secs));
        hit++;
    }
    if (!hit)
        say(unmapped,
            "qos %s: MaxWall=%s: no partition runs at this QOS (QOS=), and Docket bounds time "
            "per partition and class: not mapped",
            name, wall);
}

/* A QOS's per-user and group limits onto the projects at its tier (docs/slurm.md "A site
 * imports itself"): MaxTRESPU gres/gpu -> user_gpu_limit, MaxJobsPU -> user_max_running,
 * GrpTRES gres/gpu -> gpu_limit when one project alone is at the tier (Slurm's group limit
 * is shared by every job of the QOS; Docket's are each project's). The lower of the
 * account's and the QOS's wins. What finds no project is said. */
/* The group whose projects are exactly `ps` (n of them, every one of its projects), so
 * that its gpu_limit bounds them together; NULL when there is none. */
static json_t *group_of_all(json_t *groups, const json_t *projects, json_t **ps, size_t n)
{
    const char *g = sget(ps[0], "group");
    size_t in = 0, i;
    json_t *p;
    for (i = 0; i < n; i++)
        if (!*g || strcmp(sget(ps[i], "group"), g))
            return NULL;
    json_array_foreach((json_t *)projects, i, p) {
        in += !strcmp(sget(p, "group"), g);
    }
    json_array_foreach(groups, i, p) {
        if (in == n && !strcmp(sget(p, "name"), g))
            return p;
    }
    return NULL;
}

static void qos_project_limits(const json_t *q, json_t *projects, json_t *groups, json_t *unmapped)
{
    const char *name = sget(q, "Name");
    json_t *at[64];
    size_t n = projects_at(projects, name, at, 64);
    static const struct {
        const char *qkey, *pkey;
        bool gpus;
    } per_user[] = {{"MaxTRESPU", "user_gpu_limit", true},
                    {"MaxJobsPU", "user_max_running", false}};
    for (size_t l = 0; l < sizeof(per_user) / sizeof(per_user[0]); l++) {
        const char *v = qos_limit(q, per_user[l].qkey);
        long long x = !*v ? -1 : per_user[l].gpus ? tres_gpus(v) : num(v, -1);
        if (*v && (x < 0 || n == 0))
            say(unmapped, "qos %s: %s=%s: %s: not mapped", name, per_user[l].qkey, v,
                x < 0 ? "only GPU counts map (gres/gpu=N)" : "no project is at this tier");
        else if (*v)
            limit_each(at, n, per_user[l].pkey, x);
    }
    const char *grp = qos_limit(q, "GrpTRES");
    long long g = *grp ? tres_gpus(grp) : -1;
    json_t *group = n > 1 ? group_of_all(groups, projects, at, n) : NULL;
    if (*grp && (g < 0 || n == 0 || (n > 1 && !group)))
        say(unmapped, "qos %s: GrpTRES=%s: %s: not mapped", name, grp,
            g < 0   ? "only GPU counts map (gres/gpu=N)"
            : n > 1 ? "shared by several projects at this tier that are not one group's "
                      "(Docket's limits are each project's, or a group's gpu_limit)"
                    : "no project is at this tier");
    else if (*grp)
        limit_each(group ? &group : at, 1, "gpu_limit", g); /* its projects together */
    const char *jobs = qos_limit(q, "GrpJobs");
    long long gj = *jobs ? num(jobs, -1) : -1;
    if (*jobs && (gj < 0 || n != 1))
        say(unmapped, "qos %s: GrpJobs=%s: %s: not mapped", name, jobs,
            gj < 0  ? "not a number of jobs"
            : n > 1 ? "shared by several projects at this tier (Docket's max_running is each "
                      "project's; groups have none)"
                    : "no project is at this tier");
    else if (*jobs)
        limit_each(at, 1, "max_running", gj);
}

/* MaxSubmitPU, each user's jobs submitted at the QOS: Docket's one cap of the kind is the
 * site's settings.user_max_queued (a user's pending and held jobs over every project), so
 * it maps when every QOS with projects at its tier gives the same; else each is said. */
static void qos_max_submit(const json_t *site, const json_t *projects, json_t *settings,
                           json_t *unmapped)
{
    long long common = -1;
    bool same = true;
    size_t i;
    json_t *q;
    json_array_foreach(json_object_get(site, "qos"), i, q) {
        json_t *at[1];
        if (!str_is_name(sget(q, "Name")) ||
            projects_at((json_t *)projects, sget(q, "Name"), at, 1) == 0)
            continue; /* no project runs at it: its limit binds nobody */
        const char *v = qos_limit(q, "MaxSubmitPU");
        long long x = *v ? num(v, -1) : -1;
        same = same && x >= 0 && (common < 0 || common == x);
        common = x >= 0 ? x : common;
    }
    if (same && common >= 0) {
        json_object_set_new(settings, "user_max_queued", json_integer(common));
        return;
    }
    json_array_foreach(json_object_get(site, "qos"), i, q) {
        const char *v = qos_limit(q, "MaxSubmitPU");
        if (*v && str_is_name(sget(q, "Name")))
            say(unmapped,
                "qos %s: MaxSubmitPU=%s: Docket's cap on a user's queued jobs is one for the "
                "site (settings.user_max_queued), and the QOSes with projects do not all give "
                "the same: not mapped",
                sget(q, "Name"), v);
    }
}

/* --qos: the QOS limits that have a home in the policy (qos_max_wall,
 * qos_project_limits, qos_max_submit); the rest policy_tiers says. */
static void qos_limits(const json_t *site, json_t *parts, json_t *projects, json_t *groups,
                       json_t *settings, json_t *unmapped)
{
    size_t i;
    json_t *q;
    json_array_foreach(json_object_get(site, "qos"), i, q) {
        if (!str_is_name(sget(q, "Name")))
            continue; /* policy_tiers said so */
        qos_max_wall(q, parts, unmapped);
        qos_project_limits(q, projects, groups, unmapped);
    }
    qos_max_submit(site, projects, settings, unmapped);
}

json_t *slurm_site_policy(const json_t *site, json_t *unmapped)
{
    json_t *doc = json_object();
    json_t *tiers = policy_tiers(site, unmapped);
    if (tiers)
        json_object_set_new(doc, "tiers", tiers);
    json_t *node_labels = policy_node_labels(site, unmapped);
    json_t *parts = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(site, "partitions"), i, p) {
        json_t *out = policy_partition(site, p, node_labels, unmapped);
        if (out)
            json_array_append_new(parts, out);
    }
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(site, "nodes"), k, v) {
        const char *t;
        json_t *c;
        json_object_foreach(json_object_get(v, "gpus"), t, c) {
            if (*t && !str_is_name(t))
                say(unmapped, "node %s: GPU type '%s' is not a name", k, t);
        }
    }
    double gpus = total_gpus(site);
    const json_t *accounts = json_object_get(site, "accounts");
    json_t *groups = json_array(), *projects = json_array();
    json_object_foreach((json_t *)accounts, k, v) {
        if (!strcmp(k, "root") || !name_ok(k, "account", unmapped))
            continue;
        bool top = !strcmp(sget(v, "parent"), "root");
        if (top && has_children(accounts, k)) {
            json_t *g = json_pack("{s:s,s:f}", "name", k, "guarantee_gpus",
                                  guarantee_gpus(accounts, k, gpus));
            long long lim = tres_gpus(sget(v, "GrpTRES"));
            if (lim >= 0)
                json_object_set_new(g, "gpu_limit", json_integer(lim));
            json_array_append_new(groups, g);
            continue;
        }
        json_array_append_new(projects, policy_project(site, k, v, gpus, unmapped));
    }
    policy_members(site, projects, unmapped);
    json_t *settings = json_object();
    qos_limits(site, parts, projects, groups, settings, unmapped);
    const char *pt =
        json_string_value(json_object_get(json_object_get(site, "globals"), "PreemptType"));
    if (pt && strstr(pt, "none"))
        json_object_set_new(settings, "preemption", json_false());
    if (json_object_size(settings))
        json_object_set(doc, "settings", settings);
    json_decref(settings);
    static const char *const globals[] = {
        "PriorityType",  "PriorityWeightAge", "PriorityWeightFairshare",
        "SchedulerType", "SelectType",        "PreemptMode"};
    for (size_t g = 0; g < sizeof(globals) / sizeof(globals[0]); g++) {
        const char *gv =
            json_string_value(json_object_get(json_object_get(site, "globals"), globals[g]));
        if (gv)
            say(unmapped,
                "slurm.conf: %s=%s: Docket's tiers, fair share and backfill decide: "
                "not mapped",
                globals[g], gv);
    }
    if (json_array_size(parts))
        json_object_set_new(doc, "partitions", parts);
    else
        json_decref(parts);
    json_t *bare = keys(node_labels);
    json_array_foreach(bare, i, p) {
        if (!json_object_size(json_object_get(node_labels, json_string_value(p))))
            json_object_del(node_labels, json_string_value(p));
    }
    json_decref(bare);
    if (json_object_size(node_labels))
        json_object_set_new(doc, "node_labels", node_labels);
    else
        json_decref(node_labels);
    if (json_array_size(groups))
        json_object_set_new(doc, "groups", groups);
    else
        json_decref(groups);
    if (json_array_size(projects))
        json_object_set_new(doc, "projects", projects);
    else
        json_decref(projects);
    return doc;
}
