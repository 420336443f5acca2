/*
 * apply.c - `docket apply -f FILE`: send a policy document (tiers, classes, settings,
 * projects; YAML or JSON) to POST /v1/policy, validated whole and applied in one
 * transaction by docketd; --dry-run only validates.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/dbuf.h"
#include "util/str.h"

const char cmd_apply_usage[] =
    "usage: docket apply -f FILE [--dry-run] [--json]\n"
    "\n"
    "Apply a policy file (YAML or JSON; - reads stdin): tiers, classes, settings and\n"
    "projects with their quotas. docketd checks the whole document and applies it in\n"
    "one audited transaction, or changes nothing. See examples/policy.yaml.\n";

enum { A_FILE = 1, A_DRY_RUN };

static const struct opt_def apply_opts[] = {
    {A_FILE, 'f', "file", OPT_VALUE},
    {A_DRY_RUN, 0, "dry-run", OPT_NONE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

static int read_all(struct cli *c, const char *path, struct dbuf *b)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    char chunk[8192];
    size_t n;

    if (!f)
        return cli_fail(c, "cannot read '%s': %s", path, strerror(errno));
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        dbuf_append(b, chunk, n);
    if (f != stdin)
        fclose(f);
    if (b->failed)
        return cli_fail(c, "'%s' is larger than 1 MiB", path);
    if (b->len == 0)
        return cli_fail(c, "'%s' is empty", path);
    return 0;
}

/* ", N templates" when the file has the section (docs/environments.md); ", N members, N
 * defaults" when its projects list users (docs/slurm.md "A site imports itself"). */
static const char *templates_text(const json_t *applied)
{
    static char b[128];
    const json_t *n = json_object_get(applied, "templates");
    const json_t *m = json_object_get(applied, "members");
    int len = 0;

    b[0] = '\0';
    if (json_is_integer(n))
        len = snprintf(b, sizeof(b), ", %lld templates", (long long)json_integer_value(n));
    if (json_is_integer(m))
        snprintf(b + len, sizeof(b) - (size_t)len, ", %lld members, %lld defaults",
                 (long long)json_integer_value(m),
                 (long long)json_integer_value(json_object_get(applied, "defaults")));
    return b;
}

int cmd_apply(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    const char *file = NULL;
    bool dry = false;
    struct client_reply r;
    struct dbuf b;
    json_t *reply, *applied;
    json_error_t jerr;
    const char *ctype;
    int rc = cli_parse_args(c, argc, argv, apply_opts, 1, &a);

    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 0; i < a.nopts; i++) {
        if (a.ids[i] == A_FILE)
            file = a.vals[i];
        else if (a.ids[i] == A_DRY_RUN)
            dry = true;
    }
    if (!file && a.npos == 1)
        file = a.pos[0];
    else if (a.npos)
        return cli_usage_error(c, "unexpected argument '%.60s'", a.pos[0]);
    if (!file)
        return cli_usage_error(c, "which file? (docket apply -f policy.yaml)");
    dbuf_init(&b, 1 << 20);
    if ((rc = read_all(c, file, &b))) {
        dbuf_release(&b);
        return rc;
    }
    ctype =
        str_has_suffix(file, ".json") || b.data[0] == '{' ? "application/json" : "application/yaml";
    rc = cli_call_raw(c, "POST", dry ? "/v1/policy?dry_run=1" : "/v1/policy", ctype, b.data, b.len,
                      0, &r);
    dbuf_release(&b);
    if (rc)
        return rc;
    reply = json_loadb(r.body, r.len, 0, &jerr);
    client_reply_release(&r);
    if (!reply)
        return cli_fail(c, "docketd sent a reply that is not JSON (%s)", jerr.text);
    applied = json_object_get(reply, "applied");
    if (c->json)
        cli_print_json(c, reply);
    else
        fprintf(c->out, "%s %s: %lld tiers, %lld classes, %lld projects%s\n",
                dry ? "valid, would apply" : "applied", file, (long long)jint(applied, "tiers", 0),
                (long long)jint(applied, "classes", 0), (long long)jint(applied, "projects", 0),
                templates_text(applied));
    json_decref(reply);
    return EXIT_OK;
}
