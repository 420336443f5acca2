/*
 * templates.c - `docket templates`: the job environment templates (GET /v1/templates) and
 * one of them whole (GET /v1/templates/NAME[@VERSION]): owner, versions, variables,
 * modules, setup, the classes allowed, whom it serves by default. They change with the
 * policy file (`docket apply -f`, docs/environments.md).
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
    "\n"
    "The environment templates a job can run with (--template NAME[@VERSION], or its\n"
    "project's or class's default): variables, module lines, a setup script, a\n"
    "prepare script built once per node and version, an image to run in and its\n"
    "mounts, owned by the site, a group or a\n"
    "project. `show` prints one (its latest version unless @VERSION). Admins change\n"
    "them in the policy file: docket apply -f policy.yaml (docs/environments.md).\n";

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
    }
    json_object_foreach(json_object_get(t, "env"), k, v) {
        dbuf_reset(&b);
        dbuf_printf(&b, "%s=%s", k, json_string_value(v));
        field(c, "env", b.data);
    }
    script(c, "setup", jstr(t, "setup"));
    script(c, "prepare (once per node and version)", jstr(t, "prepare"));
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

    if ((rc = cli_parse_args(c, argc, argv, NULL, 4, &a)) != CLI_CONTINUE)
        return rc;
    bool is_show = a.npos >= 1 && !strcmp(a.pos[0], "show");
    if (is_show && a.npos != 2)
        return cli_usage_error(c, "usage: docket templates show NAME[@VERSION]");
    if (!is_show && (a.npos > 1 || (a.npos == 1 && strcmp(a.pos[0], "list"))))
        return cli_usage_error(c, "unknown subcommand '%.40s' (list or show)", a.pos[0]);
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
