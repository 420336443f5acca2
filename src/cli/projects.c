/*
 * projects.c - `docket projects`: list projects (and their groups) or show one with its
 * usage and limits (GET /v1/projects[/NAME]); `set` (PATCH), `create` (POST), `boost`, `pause` and
 * `resume` change them (admin; a project's lead may set its per-user caps, and its
 * gpu_limit within its group's); `members`
 * lists, adds and removes the project's members and leads (its leads, admins); `default`
 * shows or sets a user's default project (/v1/users/USER/default_project). Every
 * change is audited by docketd.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/parse.h"
#include "util/str.h"

const char cmd_projects_usage[] =
    "usage: docket projects [NAME] [--json]\n"
    "       docket projects set NAME KEY=VALUE...\n"
    "       docket projects create NAME KEY=VALUE...\n"
    "       docket projects boost NAME [--levels N] [--for DURATION] --reason TEXT\n"
    "       docket projects boost NAME --remove\n"
    "       docket projects pause NAME        (admit no new jobs; running ones go on)\n"
    "       docket projects resume NAME\n"
    "       docket projects members list NAME\n"
    "       docket projects members add NAME USER [--role member|lead]\n"
    "       docket projects members rm NAME USER\n"
    "       docket projects default [[USER] PROJECT|none]\n"
    "                                   (a user's default project, used when a job names\n"
    "                                   none: Slurm's default account; no arguments: yours;\n"
    "                                   USER defaults to $USER; set by the user, to a\n"
    "                                   project of its own, or by an admin)\n"
    "\n"
    "Members submit into the project and manage their own jobs; leads also manage its\n"
    "members, its jobs, its per-user caps (user_max_running, user_gpu_limit), and\n"
    "its gpu_limit within its group's. A lead adds only users who belong to no other\n"
    "project; an admin adds anyone.\n"
    "KEYs: group, tier, guarantee_gpus, gpu_limit, max_running, max_queued,\n"
    "user_max_running, user_gpu_limit (a number, or none for no limit), paused.\n";

enum { P_LEVELS = 1, P_FOR, P_REASON, P_REMOVE, P_ROLE };

static const struct opt_def projects_opts[] = {
    {P_LEVELS, 0, "levels", OPT_VALUE},
    {P_FOR, 0, "for", OPT_VALUE},
    {P_REASON, 'r', "reason", OPT_VALUE},
    {P_REMOVE, 0, "remove", OPT_NONE},
    {P_ROLE, 0, "role", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

static void limit_text(int64_t v, char *buf, size_t len)
{
    if (v < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%lld", (long long)v);
}

static void print_projects(struct cli *c, const json_t *projects)
{
    static const char *const h[] = {"NAME",      "GROUP",   "TIER",   "GUARANTEE", "LIMIT",
                                    "GPUS USED", "RUNNING", "QUEUED", "SHARE",     "STATUS"};
    struct table *t = table_create(h, 10);
    size_t i;
    json_t *p;

    if (!t)
        return;
    for (int k = 3; k <= 8; k++)
        table_set_flags(t, k, TABLE_RIGHT);
    table_set_flags(t, 9, TABLE_FLEX);
    json_array_foreach(projects, i, p) {
        const json_t *u = json_object_get(p, "usage");
        const json_t *b = json_object_get(p, "boost");
        char lim[32], until[32], status[200];

        limit_text(jint(p, "gpu_limit", -1), lim, sizeof(lim));
        if (json_is_object(b)) {
            fmt_when(jint(b, "until_ms", 0), c->now_ms, until, sizeof(until));
            snprintf(status, sizeof(status), "%sboosted +%lld until %s (%s)",
                     jbool(p, "paused") ? "paused, " : "", (long long)jint(b, "levels", 0), until,
                     jstr(b, "reason"));
        } else {
            snprintf(status, sizeof(status), "%s", jbool(p, "paused") ? "paused" : "");
        }
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(p, "name"));
        table_cell(t, FMT_PLAIN, "%s", jstr(p, "group"));
        if (strcmp(jstr(p, "tier"), jstr(p, "eff_tier")) && jstr(p, "eff_tier")[0])
            table_cell(t, FMT_CYAN, "%s→%s", jstr(p, "tier"), jstr(p, "eff_tier"));
        else
            table_cell(t, FMT_PLAIN, "%s", jstr(p, "tier"));
        table_cell(t, FMT_PLAIN, "%g", json_number_value(json_object_get(p, "guarantee_gpus")));
        table_cell(t, FMT_PLAIN, "%s", lim);
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(u, "gpus_in_use", 0));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(u, "running", 0));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(u, "queued", 0));
        table_cell(t, FMT_PLAIN, "%.2f", json_number_value(json_object_get(u, "share")));
        table_cell(t, jbool(p, "paused") ? FMT_YELLOW : FMT_PLAIN, "%s", status);
    }
    if (table_rows(t))
        table_print(t, c->out, c->width, c->color);
    else
        fprintf(c->out, "no projects yet: docket apply -f policy.yaml creates them\n");
    table_destroy(t);
}

/* Groups (from the policy's `groups`, or named by projects): bounds over their projects. */
static void print_groups(struct cli *c, const json_t *groups)
{
    static const char *const h[] = {"GROUP",   "GUARANTEE", "LIMIT", "GPUS USED",
                                    "RUNNING", "PROJECTS",  "SHARE"};
    if (!json_is_array(groups) || json_array_size(groups) == 0)
        return;
    struct table *t = table_create(h, 7);
    if (!t)
        return;
    for (int k = 1; k <= 6; k++)
        table_set_flags(t, k, TABLE_RIGHT);
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g) {
        const json_t *u = json_object_get(g, "usage");
        double gu = json_number_value(json_object_get(g, "guarantee_gpus"));
        char lim[32], guar[32];
        limit_text(jint(g, "gpu_limit", -1), lim, sizeof(lim));
        if (gu < 0)
            snprintf(guar, sizeof(guar), "-");
        else
            snprintf(guar, sizeof(guar), "%g", gu);
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(g, "name"));
        table_cell(t, FMT_PLAIN, "%s", guar);
        table_cell(t, FMT_PLAIN, "%s", lim);
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(u, "gpus_in_use", 0));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(u, "running", 0));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(u, "projects", 0));
        table_cell(t, FMT_PLAIN, "%.2f", json_number_value(json_object_get(u, "share")));
    }
    fputc('\n', c->out);
    table_print(t, c->out, c->width, c->color);
    table_destroy(t);
}

static int list(struct cli *c, const struct cli_args *a)
{
    json_t *reply = NULL, *arr;
    char path[200];
    int rc;

    if (a->npos > 1)
        return cli_usage_error(c, "unexpected argument '%.60s'", a->pos[1]);
    if (a->npos == 1 && !str_is_name(a->pos[0]))
        return cli_usage_error(c, "bad project name '%.60s'", a->pos[0]);
    snprintf(path, sizeof(path), "/v1/projects%s%s", a->npos ? "/" : "", a->npos ? a->pos[0] : "");
    if ((rc = cli_call(c, "GET", path, NULL, &reply)))
        return rc;
    if (c->json) {
        cli_print_json(c, reply);
    } else if (a->npos) {
        arr = json_array();
        json_array_append(arr, json_object_get(reply, "project") ? json_object_get(reply, "project")
                                                                 : reply);
        print_projects(c, arr);
        json_decref(arr);
    } else {
        print_projects(c, json_object_get(reply, "projects"));
        print_groups(c, json_object_get(reply, "groups"));
    }
    json_decref(reply);
    return EXIT_OK;
}

/* KEY=VALUE for a project: numbers for limits ("none"/"-1" = no limit). */
static int project_field(struct cli *c, json_t *body, const char *kv)
{
    static const char *const ints[] = {"gpu_limit", "max_running", "max_queued", "user_max_running",
                                       "user_gpu_limit"};
    const char *eq = strchr(kv, '=');
    char key[64];
    size_t n = eq ? (size_t)(eq - kv) : 0;
    const char *v = eq ? eq + 1 : NULL;

    if (!eq || n == 0 || n >= sizeof(key))
        return cli_usage_error(c, "want KEY=VALUE, not '%.60s'", kv);
    memcpy(key, kv, n);
    key[n] = '\0';
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        int x;
        if (strcmp(key, ints[i]))
            continue;
        if (!strcmp(v, "none") || !strcmp(v, "unlimited"))
            x = -1;
        else if (parse_int(v, -1, 10000000, &x) < 0)
            return cli_usage_error(c, "%s: want a number or none, not '%.40s'", key, v);
        json_object_set_new(body, key, json_integer(x));
        return 0;
    }
    if (!strcmp(key, "guarantee_gpus")) {
        char *end;
        double d = strtod(v, &end);
        if (end == v || *end || !isfinite(d) || d < 0 || d > 1e7)
            return cli_usage_error(c, "guarantee_gpus: want a number, not '%.40s'", v);
        json_object_set_new(body, key, json_real(d));
    } else if (!strcmp(key, "paused")) {
        bool b;
        if (parse_bool(v, &b) < 0)
            return cli_usage_error(c, "paused: want true or false, not '%.40s'", v);
        json_object_set_new(body, key, json_boolean(b));
    } else if (!strcmp(key, "group") || !strcmp(key, "tier")) {
        if (!str_is_name(v))
            return cli_usage_error(c, "%s: bad name '%.60s'", key, v);
        json_object_set_new(body, key, json_string(v));
    } else {
        return cli_usage_error(c,
                               "unknown key '%s' (group, tier, guarantee_gpus, gpu_limit, "
                               "max_running, max_queued, user_max_running, user_gpu_limit, "
                               "paused)",
                               key);
    }
    return 0;
}

static int send(struct cli *c, const char *method, const char *path, json_t *body, const char *done,
                const char *name)
{
    json_t *reply = NULL;
    int rc = cli_call(c, method, path, body, &reply);

    if (rc == 0 && c->json)
        cli_print_json(c, reply ? reply : json_object());
    else if (rc == 0)
        fprintf(c->out, "%s %s\n", done, name);
    json_decref(reply);
    return rc;
}

static int set(struct cli *c, const struct cli_args *a, bool create)
{
    json_t *body = json_object();
    char path[200];
    int rc = 0;

    if (a->npos < 3 && !(create && a->npos == 2))
        rc = cli_usage_error(c, "usage: docket projects %s NAME KEY=VALUE...",
                             create ? "create" : "set");
    else if (!str_is_name(a->pos[1]))
        rc = cli_usage_error(c, "bad project name '%.60s'", a->pos[1]);
    for (int i = 2; rc == 0 && i < a->npos; i++)
        rc = project_field(c, body, a->pos[i]);
    if (rc == 0 && create) {
        json_object_set_new(body, "name", json_string(a->pos[1]));
        rc = send(c, "POST", "/v1/projects", body, "created project", a->pos[1]);
    } else if (rc == 0) {
        snprintf(path, sizeof(path), "/v1/projects/%s", a->pos[1]);
        rc = send(c, "PATCH", path, body, "updated project", a->pos[1]);
    }
    json_decref(body);
    return rc;
}

static int boost(struct cli *c, const struct cli_args *a)
{
    json_t *body = json_object();
    char path[200];
    bool remove = false, reason = false;
    int levels = 1, rc = 0;
    int64_t ms;

    if (a->npos != 2 || !str_is_name(a->pos[1]))
        rc = cli_usage_error(c, "which project? (docket projects boost NAME ...)");
    for (int i = 0; rc == 0 && i < a->nopts; i++) {
        const char *v = a->vals[i];
        if (a->ids[i] == P_REMOVE) {
            remove = true;
        } else if (a->ids[i] == P_LEVELS && parse_int(v, 1, 4, &levels) < 0) {
            rc = cli_usage_error(c, "--levels: want 1 to 4, not '%.40s'", v);
        } else if (a->ids[i] == P_FOR) {
            if (parse_duration_ms(v, &ms) < 0 || ms <= 0)
                rc = cli_usage_error(c, "--for: bad duration '%.40s' (e.g. 48h)", v);
            else
                json_object_set_new(body, "duration", json_string(v));
        } else if (a->ids[i] == P_REASON) {
            reason = true;
            json_object_set_new(body, "reason", json_string(v));
        }
    }
    if (rc == 0 && !remove && !reason)
        rc = cli_usage_error(c, "a boost needs --reason (it is audited)");
    if (rc == 0) {
        snprintf(path, sizeof(path), "/v1/projects/%s/boost", a->pos[1]);
        json_object_set_new(body, "levels", json_integer(levels));
        if (!json_object_get(body, "duration"))
            json_object_set_new(body, "duration", json_string("48h"));
        rc = remove ? send(c, "DELETE", path, NULL, "removed the boost of", a->pos[1])
                    : send(c, "POST", path, body, "boosted project", a->pos[1]);
    }
    json_decref(body);
    return rc;
}

static int admission(struct cli *c, const struct cli_args *a, const char *action)
{
    char path[200];

    if (a->npos != 2 || !str_is_name(a->pos[1]))
        return cli_usage_error(c, "which project? (docket projects %s NAME)", action);
    snprintf(path, sizeof(path), "/v1/projects/%s/%s", a->pos[1], action);
    return send(c, "POST", path, NULL,
                !strcmp(action, "pause") ? "paused project" : "resumed project", a->pos[1]);
}

static void print_members(struct cli *c, const json_t *members)
{
    static const char *const h[] = {"USER", "ROLE"};
    struct table *t = table_create(h, 2);
    size_t i;
    json_t *m;

    if (!t)
        return;
    json_array_foreach(members, i, m) {
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(m, "user"));
        table_cell(t, !strcmp(jstr(m, "role"), "lead") ? FMT_CYAN : FMT_PLAIN, "%s",
                   jstr(m, "role"));
    }
    if (table_rows(t))
        table_print(t, c->out, c->width, c->color);
    else
        fprintf(c->out, "no members yet: docket projects members add PROJECT USER\n");
    table_destroy(t);
}

/* docket projects members list|add|rm PROJECT [USER] [--role lead|member] */
static int members(struct cli *c, const struct cli_args *a)
{
    const char *op = a->npos > 1 ? a->pos[1] : "", *role = NULL;
    char path[300];
    json_t *reply = NULL, *body = NULL;
    int rc;
    bool list = !strcmp(op, "list"), add = !strcmp(op, "add"), rm = !strcmp(op, "rm");

    for (int i = 0; i < a->nopts; i++) {
        if (a->ids[i] != P_ROLE)
            return cli_usage_error(c, "members takes only --role");
        role = a->vals[i];
    }
    if (!list && !add && !rm)
        return cli_usage_error(c, "members list, add or rm?");
    if (a->npos != (list ? 3 : 4))
        return cli_usage_error(c, "usage: docket projects members %s PROJECT%s", op,
                               list ? "" : " USER");
    if (!str_is_name(a->pos[2]) || (!list && !str_is_name(a->pos[3])))
        return cli_usage_error(c, "bad %s name '%.60s'",
                               !str_is_name(a->pos[2]) ? "project" : "user",
                               !str_is_name(a->pos[2]) ? a->pos[2] : a->pos[3]);
    if (role && (!add || (strcmp(role, "lead") && strcmp(role, "member"))))
        return cli_usage_error(c, "--role lead or member, with add");
    if (list) {
        snprintf(path, sizeof(path), "/v1/projects/%s/members", a->pos[2]);
        if ((rc = cli_call(c, "GET", path, NULL, &reply)))
            return rc;
        if (c->json)
            cli_print_json(c, reply);
        else
            print_members(c, json_object_get(reply, "members"));
        json_decref(reply);
        return EXIT_OK;
    }
    if (rm) {
        snprintf(path, sizeof(path), "/v1/projects/%s/members/%s", a->pos[2], a->pos[3]);
        return send(c, "DELETE", path, NULL, "removed from project", a->pos[2]);
    }
    snprintf(path, sizeof(path), "/v1/projects/%s/members", a->pos[2]);
    body = json_pack("{s:s,s:s}", "user", a->pos[3], "role", role ? role : "member");
    rc = cli_call(c, "POST", path, body, &reply);
    if (rc == 0 && c->json)
        cli_print_json(c, reply);
    else if (rc == 0)
        fprintf(c->out, "%s is now a %s of project %s\n", a->pos[3], jstr(reply, "role"),
                a->pos[2]);
    json_decref(body);
    json_decref(reply);
    return rc;
}

/* `docket projects default [[USER] PROJECT|none]`: GET or POST
 * /v1/users/USER/default_project. */
static int default_project(struct cli *c, const struct cli_args *a)
{
    struct passwd *pw = getenv("USER") ? NULL : getpwuid(getuid());
    const char *user = a->npos == 3 ? a->pos[1] : pw ? pw->pw_name : getenv("USER");
    const char *project = a->npos == 3 ? a->pos[2] : a->npos == 2 ? a->pos[1] : NULL;
    json_t *reply = NULL, *body = NULL;
    char path[160];
    int rc;

    if (a->npos > 3)
        return cli_usage_error(c, "docket projects default [[USER] PROJECT|none]");
    if (!user || !str_is_name(user))
        return cli_usage_error(c, "who? write docket projects default USER PROJECT");
    snprintf(path, sizeof(path), "/v1/users/%s/default_project", user);
    if (project)
        body = json_pack("{s:o}", "project",
                         strcmp(project, "none") ? json_string(project) : json_null());
    rc = cli_call(c, project ? "POST" : "GET", path, body, &reply);
    json_decref(body);
    if (rc == 0 && c->json) {
        cli_print_json(c, reply);
    } else if (rc == 0) {
        const char *p = jstr(reply, "default_project");
        fprintf(c->out, p[0] ? "%s: default project %s\n" : "%s: no default project%s\n", user,
                p[0] ? p : "");
    }
    json_decref(reply);
    return rc;
}

int cmd_projects(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse_args(c, argc, argv, projects_opts, 64, &a);
    const char *sub = a.npos ? a.pos[0] : "";

    if (rc != CLI_CONTINUE)
        return rc;
    if (!strcmp(sub, "boost"))
        return boost(c, &a);
    if (!strcmp(sub, "members"))
        return members(c, &a);
    if (a.nopts)
        return cli_usage_error(c, "--levels, --for, --reason and --remove go with boost");
    if (!strcmp(sub, "set"))
        return set(c, &a, false);
    if (!strcmp(sub, "create"))
        return set(c, &a, true);
    if (!strcmp(sub, "pause") || !strcmp(sub, "resume"))
        return admission(c, &a, sub);
    if (!strcmp(sub, "default"))
        return default_project(c, &a);
    return list(c, &a);
}
