/*
 * storage.c - `docket storage`: the site's storage pools and the projects' areas on them,
 * with usage (GET /v1/storage); `create`/`set` gives a project an area with a quota (PUT
 * /v1/projects/P/storage/POOL), `delete` forgets one (DELETE, the data stays);
 * `lifecycle` runs the lifecycle rules now, dry or real, and waits for their results
 * (POST /v1/storage/lifecycle, GET .../runs/ID), or lists the rules and the last runs
 * (--history). See docs/storage.md.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "util/str.h"

const char cmd_storage_usage[] =
    "usage: docket storage [--json]\n"
    "       docket storage create PROJECT POOL --quota SIZE [--json]\n"
    "       docket storage set PROJECT POOL --quota SIZE [--json]\n"
    "       docket storage delete PROJECT POOL [--json]\n"
    "       docket storage lifecycle [--dry-run] [--rule NAME] [--no-wait] [POOL|PROJECT] "
    "[--json]\n"
    "       docket storage lifecycle --history [--json]\n"
    "\n"
    "The storage pools of the policy (hot, cold, archive, scratch), each with the nodes\n"
    "whose check of it passes or fails and how full it is, and the projects' areas\n"
    "(POOL/projects/PROJECT, the project's Unix group, mode 2770) with usage and quota.\n"
    "A project at its quota has its pending jobs held with reason StorageQuota.\n"
    "create and set (admins) give a project an area on a pool or change its quota\n"
    "(\"10G\", \"2T\", 0 for none); delete forgets the area (its files stay on the pool).\n"
    "lifecycle (admins) runs the policy's lifecycle rules now on every area they cover (or\n"
    "those of one pool or project, or one --rule): files not used for the rule's time are\n"
    "moved to another pool or deleted, by an agent on a node with both pools; each run is\n"
    "audited. --dry-run lists what would move or go and how much, and touches nothing.\n"
    "--history lists the rules (when each is next due) and the last runs.\n";

enum { ST_QUOTA = 1, ST_DRY, ST_HISTORY, ST_RULE, ST_NOWAIT };

static const struct opt_def storage_opts[] = {
    {ST_QUOTA, 0, "quota", OPT_VALUE},
    {ST_DRY, 0, "dry-run", OPT_NONE},
    {ST_HISTORY, 0, "history", OPT_NONE},
    {ST_RULE, 0, "rule", OPT_VALUE},
    {ST_NOWAIT, 0, "no-wait", OPT_NONE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

static void bytes(int64_t b, char *out, size_t len)
{
    static const char *const units[] = {"B", "K", "M", "G", "T", "P"};
    double v = (double)b;
    int u = 0;
    if (b < 0) {
        str_copy(out, len, "-");
        return;
    }
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, len, "%lldB", (long long)b);
    else
        snprintf(out, len, v < 10 ? "%.1f%s" : "%.0f%s", v, units[u]);
}

static void percent(const json_t *o, char *out, size_t len)
{
    json_t *p = json_object_get(o, "percent");
    if (json_is_number(p))
        snprintf(out, len, "%.0f%%", json_number_value(p));
    else
        str_copy(out, len, "-");
}

static enum fmt_color level(const json_t *o)
{
    double p = json_number_value(json_object_get(o, "percent"));
    return p >= 95 ? FMT_RED : p >= 80 ? FMT_YELLOW : FMT_PLAIN;
}

static void pools_table(struct cli *c, const json_t *pools)
{
    static const char *const h[] = {"POOL",  "CLASS", "PATH", "QUOTA",
                                    "NODES", "USED",  "SIZE", "USE%"};
    struct table *t = table_create(h, 8);
    size_t i;
    json_t *p;
    json_array_foreach(pools, i, p) {
        char used[16], size[16], pc[16];
        bytes(jint(p, "used_bytes", -1), used, sizeof(used));
        bytes(jint(p, "size_bytes", -1), size, sizeof(size));
        percent(p, pc, sizeof(pc));
        size_t failing = json_array_size(json_object_get(p, "nodes_failing"));
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(p, "name"));
        table_cell(t, FMT_PLAIN, "%s", jstr(p, "class"));
        table_cell(t, FMT_PLAIN, "%s", jstr(p, "path"));
        table_cell(t, FMT_PLAIN, "%s", jstr(p, "quota"));
        table_cell(t, failing ? FMT_RED : FMT_PLAIN, "%lld ok%s%zu failing",
                   (long long)jint(p, "nodes_ok", 0), failing ? ", " : "", failing);
        table_cell(t, FMT_PLAIN, "%s", used);
        table_cell(t, FMT_PLAIN, "%s", size);
        table_cell(t, level(p), "%s", pc);
    }
    table_print(t, c->out, c->width, c->color);
    table_destroy(t);
    json_array_foreach(pools, i, p) {
        size_t k;
        json_t *f;
        json_array_foreach(json_object_get(p, "nodes_failing"), k, f)
            fprintf(c->out, "  %s on %s: %s\n", jstr(p, "name"), jstr(f, "node"),
                    jstr(f, "message"));
    }
}

static void areas_table(struct cli *c, const json_t *areas)
{
    static const char *const h[] = {"PROJECT", "POOL",  "PATH", "GROUP",
                                    "USED",    "QUOTA", "USE%", "STATE"};
    struct table *t = table_create(h, 8);
    size_t i;
    json_t *a;
    json_array_foreach(areas, i, a) {
        char used[16], quota[16], pc[16];
        bytes(jint(a, "used_bytes", -1), used, sizeof(used));
        if (jint(a, "quota_bytes", 0) > 0)
            bytes(jint(a, "quota_bytes", 0), quota, sizeof(quota));
        else
            str_copy(quota, sizeof(quota), "none");
        percent(a, pc, sizeof(pc));
        bool held = json_is_true(json_object_get(a, "held"));
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "project"));
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "pool"));
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "path"));
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "group"));
        table_cell(t, FMT_PLAIN, "%s", used);
        table_cell(t, FMT_PLAIN, "%s", quota);
        table_cell(t, level(a), "%s", pc);
        table_cell(t, held ? FMT_RED : FMT_GREEN, "%s", held ? "over quota: jobs held" : "ok");
    }
    table_print(t, c->out, c->width, c->color);
    table_destroy(t);
}

static int show(struct cli *c)
{
    json_t *reply = NULL;
    int rc = cli_call(c, "GET", "/v1/storage", NULL, &reply);
    if (rc)
        return rc;
    const json_t *pools = json_object_get(reply, "pools"), *areas = json_object_get(reply, "areas");
    if (c->json) {
        cli_print_json(c, reply);
    } else if (json_array_size(pools) == 0) {
        fprintf(c->out, "no storage pools: the policy's storage section names none "
                        "(docs/storage.md)\n");
    } else {
        pools_table(c, pools);
        fputc('\n', c->out);
        if (json_array_size(areas) == 0)
            fprintf(c->out, "no project areas (docket storage create PROJECT POOL --quota "
                            "SIZE)\n");
        else
            areas_table(c, areas);
    }
    json_decref(reply);
    return EXIT_OK;
}

static int change(struct cli *c, const char *sub, const char *project, const char *pool,
                  const char *quota)
{
    bool del = !strcmp(sub, "delete");
    if (!del && !quota)
        return cli_usage_error(c, "%s needs --quota SIZE (\"10G\"; 0 for none)", sub);
    if (del && quota)
        return cli_usage_error(c, "delete takes no --quota");
    char path[512], pe[200], po[200];
    if (client_escape(project, pe, sizeof(pe)) < 0 || client_escape(pool, po, sizeof(po)) < 0)
        return cli_usage_error(c, "name too long");
    snprintf(path, sizeof(path), "/v1/projects/%s/storage/%s", pe, po);
    json_t *body = del ? NULL : json_pack("{s:s}", "quota", quota), *reply = NULL;
    int rc = cli_call(c, del ? "DELETE" : "PUT", path, body, &reply);
    json_decref(body);
    if (rc == 0) {
        if (c->json)
            cli_print_json(c, reply);
        else if (del)
            fprintf(c->out, "forgot the area of project %s on pool %s (its files stay)\n", project,
                    pool);
        else
            fprintf(c->out, "project %s has an area on pool %s: %s, quota %s\n", project, pool,
                    jstr(json_object_get(reply, "area"), "path"), quota);
    }
    json_decref(reply);
    return rc;
}

/* ---- lifecycle ------------------------------------------------------------------------- */

struct lc_opts {
    bool dry, history, nowait;
    const char *rule, *target;
};

static void run_line(struct cli *c, const json_t *r)
{
    char b[16], f[16];
    bool dry = json_is_true(json_object_get(r, "dry_run"));
    bool move = !strcmp(jstr(r, "action"), "move");
    bytes(jint(r, "bytes", 0), b, sizeof(b));
    bytes(jint(r, "freed_bytes", 0), f, sizeof(f));
    fprintf(c->out, "run %lld: rule %s, project %s, %s%s%s on node %s: %s\n",
            (long long)jint(r, "id", 0), jstr(r, "rule"), jstr(r, "project"), jstr(r, "pool"),
            move ? " -> " : "", move ? jstr(r, "to") : "", jstr(r, "node"), jstr(r, "state"));
    fprintf(c->out, "  %lld files, %s %s%s (%s freed), %lld failed, %lld in use",
            (long long)jint(r, "files", 0), b, dry ? "would be " : "", move ? "moved" : "deleted",
            f, (long long)jint(r, "failed", 0), (long long)jint(r, "in_use", 0));
    if (jint(r, "dirs_removed", 0) > 0)
        fprintf(c->out, ", %lld empty directories removed", (long long)jint(r, "dirs_removed", 0));
    if (*jstr(r, "age_basis"))
        fprintf(c->out, "; ages from %s%s", jstr(r, "age_basis"),
                !strcmp(jstr(r, "age_basis"), "mtime") ? " (the file system keeps no atime)" : "");
    fputc('\n', c->out);
    if (*jstr(r, "message"))
        fprintf(c->out, "  %s\n", jstr(r, "message"));
}

static void run_files(struct cli *c, const json_t *r)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(r, "list"), i, e) {
        char b[16];
        bytes(jint(e, "bytes", 0), b, sizeof(b));
        const char *err = jstr(e, "error");
        fprintf(c->out, "  %-7s %6s  unused %4lldd  %s%s%s\n", *err ? "left" : "  ", b,
                (long long)(jint(e, "age_s", 0) / 86400), jstr(e, "path"), *err ? ": " : "", err);
    }
    if (jint(r, "unlisted", 0) > 0)
        fprintf(c->out, "  ... and %lld more\n", (long long)jint(r, "unlisted", 0));
}

/* The run, once it has finished (polled every half second); NULL on an error. */
static json_t *run_wait(struct cli *c, long long id, int *rc)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/storage/lifecycle/runs/%lld", id);
    for (;;) {
        json_t *reply = NULL;
        if ((*rc = cli_call(c, "GET", path, NULL, &reply)) != 0)
            return NULL;
        json_t *run = json_incref(json_object_get(reply, "run"));
        json_decref(reply);
        if (jint(run, "finished_ms", 0) > 0)
            return run;
        json_decref(run);
        struct timespec ts = {0, 500000000};
        nanosleep(&ts, NULL);
    }
}

static int lc_history(struct cli *c)
{
    json_t *reply = NULL;
    int rc = cli_call(c, "GET", "/v1/storage/lifecycle", NULL, &reply);
    if (rc)
        return rc;
    if (c->json) {
        cli_print_json(c, reply);
        json_decref(reply);
        return EXIT_OK;
    }
    size_t i;
    json_t *x;
    if (json_array_size(json_object_get(reply, "rules")) == 0)
        fprintf(c->out, "no lifecycle rules: the policy's storage.lifecycle names none\n");
    json_array_foreach(json_object_get(reply, "rules"), i, x) {
        long long every = jint(x, "every", 0), after = jint(x, "after", 0);
        fprintf(c->out, "rule %s: %s %s%s%s, files unused %lldd%s%s%s", jstr(x, "name"),
                jstr(x, "action"), jstr(x, "pool"), *jstr(x, "to") ? " -> " : "", jstr(x, "to"),
                after / 86400, json_is_true(json_object_get(x, "marker")) ? ", marked" : "",
                *jstr(x, "glob") ? ", named " : "", jstr(x, "glob"));
        if (every)
            fprintf(c->out, ", every %llds\n", every);
        else
            fprintf(c->out, ", when asked\n");
    }
    if (json_array_size(json_object_get(reply, "runs")))
        fputc('\n', c->out);
    json_array_foreach(json_object_get(reply, "runs"), i, x)
        run_line(c, x);
    json_decref(reply);
    return EXIT_OK;
}

static int lc_start(struct cli *c, const struct lc_opts *o)
{
    json_t *body = json_pack("{s:b}", "dry_run", o->dry), *reply = NULL;
    if (o->target)
        json_object_set_new(body, "target", json_string(o->target));
    if (o->rule)
        json_object_set_new(body, "rule", json_string(o->rule));
    int rc = cli_call(c, "POST", "/v1/storage/lifecycle", body, &reply);
    json_decref(body);
    if (rc)
        return rc;
    json_t *ids = json_object_get(reply, "runs"), *runs = json_array();
    size_t i;
    json_t *id;
    json_array_foreach(ids, i, id) {
        if (o->nowait) {
            if (!c->json)
                fprintf(c->out, "run %lld started\n", (long long)json_integer_value(id));
            continue;
        }
        json_t *run = run_wait(c, (long long)json_integer_value(id), &rc);
        if (!run)
            break;
        if (!c->json) {
            run_line(c, run);
            run_files(c, run);
        }
        if (strcmp(jstr(run, "state"), "done") != 0)
            rc = EXIT_FAILURE;
        json_array_append_new(runs, run);
    }
    if (c->json && o->nowait) {
        cli_print_json(c, reply);
    } else if (c->json) {
        json_t *out = json_pack("{s:O}", "runs", runs);
        cli_print_json(c, out);
        json_decref(out);
    }
    json_decref(runs);
    json_decref(reply);
    return rc;
}

int cmd_storage(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    const char *quota = NULL;
    struct lc_opts lo = {0};
    int rc = cli_parse_args(c, argc, argv, storage_opts, 3, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 0; i < a.nopts; i++) {
        if (a.ids[i] == ST_QUOTA)
            quota = a.vals[i];
        lo.dry = lo.dry || a.ids[i] == ST_DRY;
        lo.history = lo.history || a.ids[i] == ST_HISTORY;
        lo.nowait = lo.nowait || a.ids[i] == ST_NOWAIT;
        if (a.ids[i] == ST_RULE)
            lo.rule = a.vals[i];
    }
    bool lc = a.npos > 0 && !strcmp(a.pos[0], "lifecycle");
    if (!lc && (lo.dry || lo.history || lo.nowait || lo.rule))
        return cli_usage_error(c, "--dry-run, --history, --rule and --no-wait go with lifecycle");
    if (lc) {
        if (quota || a.npos > 2 || (lo.history && (lo.dry || lo.rule || a.npos > 1)))
            return cli_usage_error(c, "docket storage lifecycle [--dry-run] [--rule NAME] "
                                      "[POOL|PROJECT], or --history alone");
        lo.target = a.npos > 1 ? a.pos[1] : NULL;
        return lo.history ? lc_history(c) : lc_start(c, &lo);
    }
    if (a.npos == 0) {
        if (quota)
            return cli_usage_error(c, "--quota goes with create or set");
        return show(c);
    }
    const char *sub = a.pos[0];
    if (strcmp(sub, "create") && strcmp(sub, "set") && strcmp(sub, "delete"))
        return cli_usage_error(c, "create, set, delete or lifecycle? (docket storage create "
                                  "PROJECT POOL --quota 10G)");
    if (a.npos != 3 || !str_is_name(a.pos[1]) || !str_is_name(a.pos[2]))
        return cli_usage_error(c, "which project and pool? (docket storage %s PROJECT POOL)", sub);
    return change(c, sub, a.pos[1], a.pos[2], quota);
}
