/*
 * templates.c - `docket templates`: the job environment templates (GET /v1/templates) and
 * one of them whole (GET /v1/templates/NAME[@VERSION]): owner, versions, variables,
 * modules, setup, the classes allowed, whom it serves by default, and the nodes where it
 * is warm; `docket templates warm` asks nodes to make it warm before its jobs start
 * (POST /v1/templates/NAME/warm). They change with the policy file (`docket apply -f`,
 * docs/environments.md).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/dbuf.h"
#include "util/str.h"

const char cmd_templates_usage[] =
    "usage: docket templates [list] [--json]\n"
    "       docket templates show NAME[@VERSION] [--json]\n"
    "       docket templates warm NAME[@VERSION] [--nodes SELECTOR] [--json]\n"
    "\n"
    "The environment templates a job can run with (--template NAME[@VERSION], or its\n"
    "project's or class's default): variables, module lines, a setup script, a\n"
    "prepare script built once per node and version, an image to run in and its\n"
    "mounts, owned by the site, a group or a\n"
    "project. `show` prints one (its latest version unless @VERSION). Admins change\n"
    "them in the policy file: docket apply -f policy.yaml (docs/environments.md).\n"
    "\n"
    "`warm` asks the nodes to unpack the template's image and build its prepare script\n"
    "now, in the background, so its jobs start without it; `show` lists each node's\n"
    "state (requested, warming, ready, failed or evicted, with the reason). SELECTOR:\n"
    "NODE,... (shell patterns) and KEY=VALUE,... labels; every node without it. Admins,\n"
    "and the leads of the project that owns the template.\n";

enum { T_NODES = 1 };

static const struct opt_def templates_opts[] = {
    {T_NODES, 0, "nodes", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

/* The strings of a list joined by ", ", or `none`. */
static void joined(const json_t *list, const char *none, struct dbuf *b)
{
    size_t i;
    json_t *x;

    json_array_foreach(list, i, x) {
        dbuf_printf(b, "%s%s", i ? ", " : "", json_string_value(x));
    }
    if (json_array_size(list) == 0)
        dbuf_puts(b, none);
}

static void list_print(struct cli *c, const json_t *reply)
{
    static const char *const h[] = {"TEMPLATE", "VERSION",     "OWNER",
                                    "CLASSES",  "DEFAULT FOR", "DESCRIPTION"};
    struct table *t = table_create(h, 6);
    size_t i;
    json_t *k;

    if (!t)
        return;
    json_array_foreach(json_object_get(reply, "templates"), i, k) {
        struct dbuf cl, df;
        dbuf_init(&cl, 4096);
        dbuf_init(&df, 4096);
        joined(json_object_get(k, "classes"), "any", &cl);
        joined(json_object_get(k, "default_for"), "-", &df);
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(k, "name"));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(k, "version", 0));
        table_cell(t, FMT_PLAIN, "%s", jstr(k, "owner"));
        table_cell(t, FMT_PLAIN, "%s", cl.data);
        table_cell(t, FMT_PLAIN, "%s", df.data);
        table_cell(t, FMT_PLAIN, "%s", jstr(k, "description")[0] ? jstr(k, "description") : "-");
        dbuf_release(&cl);
        dbuf_release(&df);
    }
    table_print(t, c->out, c->width, c->color);
    table_destroy(t);
}

static void field(struct cli *c, const char *key, const char *value)
{
    char *safe = fmt_safe(value, false);
    fprintf(c->out, "  %-12s %s\n", key, safe ? safe : "?");
    free(safe);
}

/* A script field under its heading, as written (control characters escaped). */
static void script(struct cli *c, const char *heading, const char *text)
{
    if (!text[0])
        return;
    char *safe = fmt_safe(text, true);
    fprintf(c->out, "  %s:\n%s%s", heading, safe ? safe : "?",
            safe && safe[0] && safe[strlen(safe) - 1] != '\n' ? "\n" : "");
    free(safe);
}

/* Each node's warm state of the template's versions. */
static void warm_print(struct cli *c, const json_t *warm)
{
    size_t i;
    json_t *w;

    if (json_array_size(warm) == 0)
        return;
    fprintf(c->out, "  warm:\n");
    json_array_foreach(warm, i, w) {
        char *why = fmt_safe(jstr(w, "reason"), false);
        fprintf(c->out, "    %-16s %-12s %-9s %s\n", jstr(w, "node"), jstr(w, "template"),
                jstr(w, "state"), why ? why : "");
        free(why);
    }
}

static void show_print(struct cli *c, const json_t *t)
{
    struct dbuf b;
    const char *k;
    json_t *v;

    fprintf(c->out, "template %s@%lld\n", jstr(t, "name"), (long long)jint(t, "version", 0));
    dbuf_init(&b, 1 << 20);
    size_t i;
    json_array_foreach(json_object_get(t, "versions"), i, v) {
        dbuf_printf(&b, "%s%lld", i ? ", " : "", (long long)json_integer_value(v));
    }
    field(c, "versions", b.data);
    field(c, "owner", jstr(t, "owner"));
    if (jstr(t, "description")[0])
        field(c, "description", jstr(t, "description"));
    dbuf_reset(&b);
    joined(json_object_get(t, "classes"), "any", &b);
    field(c, "classes", b.data);
    dbuf_reset(&b);
    joined(json_object_get(t, "default_for"), "-", &b);
    field(c, "default for", b.data);
    dbuf_reset(&b);
    joined(json_object_get(t, "modules"), "-", &b);
    field(c, "modules", b.data);
    if (jstr(t, "image")[0]) { /* its jobs' container (docs/environments.md) */
        field(c, "image", jstr(t, "image"));
        dbuf_reset(&b);
        joined(json_object_get(t, "mounts"), "-", &b);
        field(c, "mounts", b.data);
        if (jstr(t, "registry_auth")[0]) /* a secret's name, never its value */
            field(c, "registry auth", jstr(t, "registry_auth"));
    }
    json_object_foreach(json_object_get(t, "env"), k, v) {
        dbuf_reset(&b);
        dbuf_printf(&b, "%s=%s", k, json_string_value(v));
        field(c, "env", b.data);
    }
    script(c, "setup", jstr(t, "setup"));
    script(c, "prepare (once per node and version)", jstr(t, "prepare"));
    if (jstr(t, "warm_on")[0])
        field(c, "warm on", jstr(t, "warm_on"));
    dbuf_release(&b);
    warm_print(c, json_object_get(t, "warm"));
}

/* NAME or NAME@VERSION, checked before it goes into a path. */
static bool ref_ok(const char *ref)
{
    const char *at = strchr(ref, '@');
    char name[80];
    size_t n = at ? (size_t)(at - ref) : strlen(ref);
    if (n >= sizeof(name) || (at && (!at[1] || strspn(at + 1, "0123456789") != strlen(at + 1))))
        return false;
    memcpy(name, ref, n);
    name[n] = '\0';
    return str_is_name(name);
}

static int warm(struct cli *c, const char *ref, const char *nodes, json_t **reply)
{
    char path[200];
    if (!ref_ok(ref))
        return cli_usage_error(c, "want NAME or NAME@VERSION, not '%.80s'", ref);
    snprintf(path, sizeof(path), "/v1/templates/%s/warm", ref);
    json_t *body = nodes ? json_pack("{s:s}", "nodes", nodes) : json_object();
    int rc = cli_call(c, "POST", path, body, reply);
    json_decref(body);
    return rc;
}

static void warm_asked_print(struct cli *c, const json_t *reply)
{
    const json_t *nodes = json_object_get(reply, "nodes");
    struct dbuf b;
    dbuf_init(&b, 1 << 16);
    joined(nodes, "none", &b);
    fprintf(c->out, "warming %s on %zu node%s: %s\n", jstr(reply, "template"),
            json_array_size(nodes), json_array_size(nodes) == 1 ? "" : "s", b.data);
    fprintf(c->out, "(docket templates show %s lists their states)\n", jstr(reply, "template"));
    dbuf_release(&b);
}

static int show(struct cli *c, const char *ref, json_t **reply)
{
    char path[200];
    const char *at = strchr(ref, '@');
    char name[80];
    size_t n = at ? (size_t)(at - ref) : strlen(ref);

    if (n >= sizeof(name) || (at && strspn(at + 1, "0123456789") != strlen(at + 1)))
        return cli_usage_error(c, "want NAME or NAME@VERSION, not '%.80s'", ref);
    memcpy(name, ref, n);
    name[n] = '\0';
    if (!str_is_name(name) || (at && !at[1]))
        return cli_usage_error(c, "want NAME or NAME@VERSION, not '%.80s'", ref);
    snprintf(path, sizeof(path), "/v1/templates/%s", ref);
    return cli_call(c, "GET", path, NULL, reply);
}

int cmd_templates(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    json_t *reply = NULL;
    int rc;

    if ((rc = cli_parse_args(c, argc, argv, templates_opts, 4, &a)) != CLI_CONTINUE)
        return rc;
    const char *nodes = NULL;
    for (int i = 0; i < a.nopts; i++)
        if (a.ids[i] == T_NODES)
            nodes = a.vals[i];
    if (a.npos >= 1 && !strcmp(a.pos[0], "warm")) {
        if (a.npos != 2)
            return cli_usage_error(c, "usage: docket templates warm NAME[@VERSION] [--nodes SEL]");
        rc = warm(c, a.pos[1], nodes, &reply);
        if (rc == 0 && c->json)
            cli_print_json(c, reply);
        else if (rc == 0)
            warm_asked_print(c, reply);
        json_decref(reply);
        return rc;
    }
    if (nodes)
        return cli_usage_error(c, "--nodes is for `docket templates warm`");
    bool is_show = a.npos >= 1 && !strcmp(a.pos[0], "show");
    if (is_show && a.npos != 2)
        return cli_usage_error(c, "usage: docket templates show NAME[@VERSION]");
    if (!is_show && (a.npos > 1 || (a.npos == 1 && strcmp(a.pos[0], "list"))))
        return cli_usage_error(c, "unknown subcommand '%.40s' (list, show or warm)", a.pos[0]);
    rc = is_show ? show(c, a.pos[1], &reply) : cli_call(c, "GET", "/v1/templates", NULL, &reply);
    if (rc == 0 && c->json)
        cli_print_json(c, is_show ? json_object_get(reply, "template") : reply);
    else if (rc == 0 && is_show)
        show_print(c, json_object_get(reply, "template"));
    else if (rc == 0)
        list_print(c, reply);
    json_decref(reply);
    return rc;
}
