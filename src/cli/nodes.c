/*
 * nodes.c - `docket nodes`: list nodes or show one (GET /v1/nodes[/NAME]); `nodes drain`,
 * `nodes resume`, `nodes down` and `nodes label` change them, `nodes replace` revokes a node's
 * credential so a new machine may register under its name (admin).
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli/cli.h"
#include "util/dbuf.h"
#include "util/str.h"

const char cmd_nodes_usage[] =
    "usage: docket nodes [NAME] [--json]\n"
    "       docket nodes drain NAME... [--reason TEXT]\n"
    "       docket nodes resume NAME...\n"
    "       docket nodes down NAME... [--reason TEXT]   (admin)\n"
    "       docket nodes label NAME KEY=VALUE... KEY-...\n"
    "       docket nodes replace NAME [--reason TEXT]\n"
    "\n"
    "List nodes with their GPUs in use, or show one node and its jobs. drain: no new\n"
    "work, running jobs finish (DRAINING, then DRAINED); resume: back to UP; label:\n"
    "set labels (KEY- removes one), which jobs select with --select KEY=VALUE.\n"
    "down: an UNREACHABLE node whose machine you know is off: its jobs are requeued\n"
    "now instead of when their leases run out (a live node is refused: drain it).\n"
    "replace: revoke the node's credential, so that the next agent registering under\n"
    "NAME with a join token takes the name (a join token alone never takes a live\n"
    "node's name); the old agent is refused from then on.\n";

enum { N_REASON = 1 };

static const struct opt_def nodes_opts[] = {
    {N_REASON, 'r', "reason", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

static void labels_text(const json_t *labels, struct dbuf *b)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)labels, k, v)
        dbuf_printf(b, "%s%s=%s", b->len ? "," : "", k,
                    json_string_value(v) ? json_string_value(v) : "");
}

static void print_nodes(struct cli *c, const json_t *nodes)
{
    static const char *const h[] = {"NAME", "STATE", "GPUS",      "TYPE",  "CPUS",
                                    "MEM",  "JOBS",  "HEARTBEAT", "LABELS"};
    struct table *t = table_create(h, 9);
    size_t i;
    json_t *n;

    if (!t)
        return;
    table_set_flags(t, 8, TABLE_FLEX);
    json_array_foreach(nodes, i, n) {
        char mem[32], mem2[32], hb[32];
        struct dbuf b;
        const char *st = jstr(n, "state");

        dbuf_init(&b, 4096);
        labels_text(json_object_get(n, "labels"), &b);
        if (jint(n, "mem_used_mb", 0) > 0)
            fmt_size(jint(n, "mem_used_mb", 0), mem, sizeof(mem));
        else
            snprintf(mem, sizeof(mem), "0");
        fmt_size(jint(n, "mem_mb", 0), mem2, sizeof(mem2));
        fmt_when(jint(n, "last_heartbeat_ms", 0), c->now_ms, hb, sizeof(hb));
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s%s", jstr(n, "name"), jbool(n, "reserved") ? "*" : "");
        if (jint(n, "leases_end_ms", 0) > 0) { /* silent, its jobs under their leases */
            char left[32];
            fmt_duration(jint(n, "leases_end_ms", 0) - c->now_ms, left, sizeof left);
            table_cell(t, fmt_state_color(st), "%s (leases %s)", st, left);
        } else {
            table_cell(t, fmt_state_color(st), "%s", st);
        }
        table_cell(t, FMT_PLAIN, "%lld/%lld", (long long)jint(n, "gpus_used", 0),
                   (long long)jint(n, "gpus", 0));
        table_cell(t, FMT_PLAIN, "%s", jstr(n, "gpu_type")[0] ? jstr(n, "gpu_type") : "-");
        table_cell(t, FMT_PLAIN, "%lld/%lld", (long long)jint(n, "cpus_used", 0),
                   (long long)jint(n, "cpus", 0));
        table_cell(t, FMT_PLAIN, "%s/%s", mem, mem2);
        table_cell(t, FMT_PLAIN, "%zu", json_array_size(json_object_get(n, "jobs")));
        table_cell(t, FMT_PLAIN, "%s", hb);
        table_cell(t, FMT_PLAIN, "%s", b.data);
        dbuf_release(&b);
    }
    if (table_rows(t))
        table_print(t, c->out, c->width, c->color);
    else
        fprintf(c->out, "no nodes yet: start `docket-node` on each machine\n");
    table_destroy(t);
}

static void print_node(struct cli *c, const json_t *n)
{
    json_t *one = json_array();
    size_t i;
    json_t *j;

    json_array_append(one, (json_t *)n);
    print_nodes(c, one);
    json_decref(one);
    if (jstr(n, "reason")[0])
        fprintf(c->out, "reason: %s\n", jstr(n, "reason"));
    if (jint(n, "leases_end_ms", 0) > 0) {
        char left[32];
        fmt_duration(jint(n, "leases_end_ms", 0) - c->now_ms, left, sizeof left);
        fprintf(c->out,
                "leases: its jobs run on under their leases; the first runs out in %s, then "
                "that job is stopped there and requeued (or failed) unless the node is back\n",
                left);
    }
    if (json_array_size(json_object_get(n, "jobs"))) {
        fprintf(c->out, "jobs:");
        json_array_foreach(json_object_get(n, "jobs"), i, j)
            fprintf(c->out, " %lld", (long long)json_integer_value(j));
        fputc('\n', c->out);
    }
}

static int list(struct cli *c, const struct cli_args *a)
{
    json_t *reply = NULL;
    char path[200];
    int rc;

    if (a->npos > 1)
        return cli_usage_error(c, "unexpected argument '%.60s'", a->pos[1]);
    if (a->npos == 1 && !str_is_name(a->pos[0]))
        return cli_usage_error(c, "bad node name '%.60s'", a->pos[0]);
    if (a->npos == 1)
        snprintf(path, sizeof(path), "/v1/nodes/%s", a->pos[0]);
    rc = a->npos == 1 ? cli_call(c, "GET", path, NULL, &reply)
                      : cli_get_pages(c, "/v1/nodes", "nodes", 0, &reply);
    if (rc)
        return rc;
    if (c->json)
        cli_print_json(c, reply);
    else if (a->npos == 1)
        print_node(c, json_object_get(reply, "node"));
    else
        print_nodes(c, json_object_get(reply, "nodes"));
    json_decref(reply);
    return EXIT_OK;
}

/* drain / resume / down: one POST per node. */
static int change_state(struct cli *c, const struct cli_args *a, const char *action)
{
    json_t *body = json_object(), *all = json_array();
    int status = EXIT_OK;

    if (a->npos < 2) {
        json_decref(body);
        json_decref(all);
        return cli_usage_error(c, "which node? (docket nodes %s NAME)", action);
    }
    for (int i = 0; i < a->nopts; i++)
        if (a->ids[i] == N_REASON)
            json_object_set_new(body, "reason", json_string(a->vals[i]));
    for (int i = 1; i < a->npos; i++) {
        char path[200];
        json_t *reply = NULL;
        if (!str_is_name(a->pos[i])) {
            status = cli_usage_error(c, "bad node name '%.60s'", a->pos[i]);
            break;
        }
        snprintf(path, sizeof(path), "/v1/nodes/%s/%s", a->pos[i], action);
        if (cli_call(c, "POST", path, body, &reply)) {
            status = EXIT_FAIL;
            continue;
        }
        if (c->json)
            json_array_append(all, json_object_get(reply, "node") ? json_object_get(reply, "node")
                                                                  : reply);
        else
            fprintf(c->out, "%s %s%s%s\n",
                    !strcmp(action, "drain")  ? "draining"
                    : !strcmp(action, "down") ? "down"
                                              : "resumed",
                    a->pos[i], json_object_get(reply, "node") ? ": now " : "",
                    jstr(json_object_get(reply, "node"), "state"));
        json_decref(reply);
    }
    if (c->json && status != EXIT_USAGE) {
        json_t *o = json_pack("{s:O}", "nodes", all);
        cli_print_json(c, o);
        json_decref(o);
    }
    json_decref(body);
    json_decref(all);
    return status;
}

static int label(struct cli *c, const struct cli_args *a)
{
    json_t *labels = json_object(), *reply = NULL;
    char path[200];
    int rc = EXIT_OK;

    if (a->npos < 3) {
        json_decref(labels);
        return cli_usage_error(c, "usage: docket nodes label NAME KEY=VALUE... KEY-...");
    }
    if (!str_is_name(a->pos[1])) {
        json_decref(labels);
        return cli_usage_error(c, "bad node name '%.60s'", a->pos[1]);
    }
    for (int i = 2; i < a->npos && rc == EXIT_OK; i++) {
        char key[64];
        const char *s = a->pos[i], *eq = strchr(s, '=');
        size_t n = eq ? (size_t)(eq - s) : strlen(s);
        bool remove = !eq && n > 1 && s[n - 1] == '-';

        if (remove)
            n--;
        if ((!eq && !remove) || n == 0 || n >= sizeof(key)) {
            rc = cli_usage_error(c, "want KEY=VALUE or KEY-, not '%.60s'", s);
            break;
        }
        memcpy(key, s, n);
        key[n] = '\0';
        if (!str_is_name(key) || (eq && (!eq[1] || !str_is_label_value(key, eq + 1)))) {
            rc = cli_usage_error(c, "bad label '%.60s' (names of A-Z a-z 0-9 . _ -)", s);
            break;
        }
        json_object_set_new(labels, key, remove ? json_null() : json_string(eq + 1));
    }
    if (rc == EXIT_OK) {
        json_t *body = json_pack("{s:O}", "labels", labels);
        snprintf(path, sizeof(path), "/v1/nodes/%s/labels", a->pos[1]);
        rc = cli_call(c, "POST", path, body, &reply);
        json_decref(body);
    }
    if (rc == EXIT_OK) {
        if (c->json)
            cli_print_json(c, reply);
        else
            fprintf(c->out, "labelled %s\n", a->pos[1]);
    }
    json_decref(reply);
    json_decref(labels);
    return rc;
}

/* replace: POST /v1/nodes/NAME/replace */
static int replace(struct cli *c, const struct cli_args *a)
{
    json_t *body = json_object(), *reply = NULL;
    char path[200];

    if (a->npos != 2) {
        json_decref(body);
        return cli_usage_error(c, "which node? (docket nodes replace NAME)");
    }
    if (!str_is_name(a->pos[1])) {
        json_decref(body);
        return cli_usage_error(c, "bad node name '%.60s'", a->pos[1]);
    }
    for (int i = 0; i < a->nopts; i++)
        if (a->ids[i] == N_REASON)
            json_object_set_new(body, "reason", json_string(a->vals[i]));
    snprintf(path, sizeof(path), "/v1/nodes/%s/replace", a->pos[1]);
    int rc = cli_call(c, "POST", path, body, &reply);
    json_decref(body);
    if (rc == EXIT_OK) {
        if (c->json)
            cli_print_json(c, reply);
        else
            fprintf(c->out,
                    "%s: credential revoked; register the new machine with a join token "
                    "under this name\n",
                    a->pos[1]);
    }
    json_decref(reply);
    return rc;
}

int cmd_nodes(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse_args(c, argc, argv, nodes_opts, 64, &a);

    if (rc != CLI_CONTINUE)
        return rc;
    if (a.npos >= 1 && !strcmp(a.pos[0], "drain"))
        return change_state(c, &a, "drain");
    if (a.npos >= 1 && !strcmp(a.pos[0], "resume"))
        return change_state(c, &a, "resume");
    if (a.npos >= 1 && !strcmp(a.pos[0], "down"))
        return change_state(c, &a, "down");
    if (a.npos >= 1 && !strcmp(a.pos[0], "label"))
        return label(c, &a);
    if (a.npos >= 1 && !strcmp(a.pos[0], "replace"))
        return replace(c, &a);
    if (a.nopts)
        return cli_usage_error(c, "--reason goes with drain, down or replace");
    return list(c, &a);
}
