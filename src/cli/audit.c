/*
 * audit.c - `docket audit`: the append-only trail of changes (GET /v1/audit), newest
 * entries as docketd returns them, filtered by actor, action, target and age; --verify
 * asks docketd to recompute the trail's hash chain (GET /v1/audit/verify) and reports
 * the first row that was changed, removed or inserted by hand; --anchor FILE (or docketd's
 * own --audit-anchor file) also catches a trail cut short, blanked or re-chained.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/anchor.h"
#include "util/dbuf.h"
#include "util/parse.h"

const char cmd_audit_usage[] =
    "usage: docket audit [--actor USER] [--action NAME] [--target NAME] [--since 24h]\n"
    "                    [-n N] [--json]\n"
    "       docket audit --verify [--head HASH | --anchor FILE] [--json]\n"
    "\n"
    "Who changed what and when: policy applies, project changes and boosts, members,\n"
    "node drains, job actions, tokens. Each entry keeps the value before and after.\n"
    "Entries are hash-chained: --verify exits 1 naming the first broken entry; with\n"
    "--head, a head printed by an earlier --verify must still be in the chain (else\n"
    "entries were cut off its end). With --anchor, a copy of the file docketd writes\n"
    "with --audit-anchor: the anchored entry must be there with its hash, and none\n"
    "after the chain began may have lost its hash (a trail cut short, blanked or\n"
    "re-chained fails). Without either, docketd checks its own anchor file if it has\n"
    "one.\n";

enum { AU_ACTOR = 1, AU_ACTION, AU_TARGET, AU_SINCE, AU_LIMIT, AU_VERIFY, AU_HEAD, AU_ANCHOR };

static const struct opt_def audit_opts[] = {
    {AU_ACTOR, 0, "actor", OPT_VALUE},
    {AU_ACTION, 0, "action", OPT_VALUE},
    {AU_TARGET, 0, "target", OPT_VALUE},
    {AU_SINCE, 0, "since", OPT_VALUE},
    {AU_LIMIT, 'n', "limit", OPT_VALUE},
    {AU_VERIFY, 0, "verify", OPT_NONE},
    {AU_HEAD, 0, "head", OPT_VALUE},
    {AU_ANCHOR, 0, "anchor", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

/* "tier: normal -> high, gpu_limit: 8 -> 16" from the members that differ. */
static void change_text(const json_t *before, const json_t *after, struct dbuf *b)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)after, k, v) {
        json_t *old = json_object_get(before, k);
        char *o, *n;
        if (old && json_equal(old, v))
            continue;
        o = old ? json_dumps(old, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        n = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        dbuf_printf(b, "%s%s: %s%s%s", b->len ? ", " : "", k, o ? o : "", o ? " -> " : "",
                    n ? n : "");
        free(o);
        free(n);
    }
}

static void print_entries(struct cli *c, const json_t *entries)
{
    static const char *const h[] = {"WHEN", "ACTOR", "ACTION", "TARGET", "CHANGE", "REASON"};
    struct table *t = table_create(h, 6);
    size_t i;
    json_t *e;

    if (!t)
        return;
    table_set_flags(t, 4, TABLE_FLEX);
    table_set_flags(t, 5, TABLE_FLEX);
    json_array_foreach(entries, i, e) {
        char when[32];
        struct dbuf b;
        dbuf_init(&b, 4096);
        change_text(json_object_get(e, "before"), json_object_get(e, "after"), &b);
        fmt_when(jint(e, "time_ms", 0), c->now_ms, when, sizeof(when));
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", when);
        table_cell(t, FMT_PLAIN, "%s", jstr(e, "actor"));
        table_cell(t, FMT_PLAIN, "%s", jstr(e, "action"));
        table_cell(t, FMT_PLAIN, "%s", jstr(e, "target"));
        table_cell(t, FMT_PLAIN, "%s", b.data);
        table_cell(t, FMT_PLAIN, "%s", jstr(e, "reason"));
        dbuf_release(&b);
    }
    if (table_rows(t))
        table_print(t, c->out, c->width, c->color);
    else
        fprintf(c->out, "no audit entries\n");
    table_destroy(t);
}

/* Read the anchor file (protocol/anchor.h, its one reader). 0, or a usage error. */
static int read_anchor(struct cli *c, const char *file, struct audit_anchor *a)
{
    char buf[4096];
    char why[160];
    FILE *f = fopen(file, "re");
    if (!f)
        return cli_usage_error(c, "--anchor: cannot read '%.200s'", file);
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    if (audit_anchor_parse(buf, n, a, why, sizeof(why)) < 0)
        return cli_usage_error(c, "--anchor: '%.200s': %s", file, why);
    return 0;
}

static int verify(struct cli *c, const char *head, const char *anchor_file)
{
    json_t *reply = NULL;
    char path[256];
    int rc;
    const json_t *bad;
    struct audit_anchor a;

    if (head && !audit_hash_valid(head))
        return cli_usage_error(c, "--head: want the 64 hex digits --verify printed");
    if (anchor_file && (rc = read_anchor(c, anchor_file, &a)))
        return rc;
    if (anchor_file)
        snprintf(path, sizeof(path), "/v1/audit/verify?head=%s&head_id=%lld&chain_from=%lld",
                 a.hash, (long long)a.id, (long long)a.chain_from);
    else
        snprintf(path, sizeof(path), "/v1/audit/verify%s%s", head ? "?head=" : "",
                 head ? head : "");
    if ((rc = cli_call(c, "GET", path, NULL, &reply)))
        return rc;
    bad = json_object_get(reply, "first_bad");
    if (c->json) {
        cli_print_json(c, reply);
    } else if (json_is_object(bad)) {
        fprintf(c->out, "audit trail BROKEN at entry %lld: %s\n", (long long)jint(bad, "id", 0),
                jstr(bad, "why"));
        fprintf(c->out,
                "%lld entries before it are intact; restore the database from a backup "
                "and compare\n",
                (long long)jint(reply, "checked", 0));
    } else if (head && !jbool(reply, "head_found")) {
        fprintf(c->out,
                "audit trail CUT: head %.12s... is no longer in the chain (entries were "
                "removed from its end)\n",
                head);
    } else {
        fprintf(c->out, "audit trail intact: %lld entries checked",
                (long long)jint(reply, "checked", 0));
        if (jint(reply, "unchained", 0))
            fprintf(c->out, " (%lld older entries predate the chain)",
                    (long long)jint(reply, "unchained", 0));
        const json_t *an = json_object_get(reply, "anchor");
        if (json_is_object(an))
            fprintf(c->out, "; anchored entry %lld is there with its hash (anchor from the %s)",
                    (long long)jint(an, "id", 0), jstr(an, "from"));
        fprintf(c->out,
                "\nhead %s (keep it elsewhere; docket audit --verify --head HASH checks it is "
                "still there)\n",
                jstr(reply, "head"));
    }
    rc = jbool(reply, "ok") ? EXIT_OK : EXIT_FAIL;
    json_decref(reply);
    return rc;
}

int cmd_audit(struct cli *c, int argc, char **argv)
{
    static const char *const keys[] = {"", "actor", "action", "target"};
    struct cli_args a;
    struct dbuf path;
    int limit = 50;
    int rc = cli_parse_args(c, argc, argv, audit_opts, 0, &a);

    if (rc != CLI_CONTINUE)
        return rc;
    const char *head = NULL, *anchor = NULL;
    bool verifying = false;
    for (int i = 0; i < a.nopts; i++) {
        verifying = verifying || a.ids[i] == AU_VERIFY;
        if (a.ids[i] == AU_HEAD)
            head = a.vals[i];
        if (a.ids[i] == AU_ANCHOR)
            anchor = a.vals[i];
    }
    if (verifying || head || anchor) {
        if (!verifying || (head && anchor) || a.nopts != (head || anchor ? 2 : 1))
            return cli_usage_error(c, "--verify takes only --head or --anchor");
        return verify(c, head, anchor);
    }
    dbuf_init(&path, 4096);
    dbuf_puts(&path, "/v1/audit?");
    for (int i = 0; i < a.nopts && rc == CLI_CONTINUE; i++) {
        const char *v = a.vals[i];
        char esc[512];
        int64_t ms;
        if (a.ids[i] == AU_SINCE) {
            if (parse_duration_ms(v, &ms) < 0)
                rc = cli_usage_error(c, "--since: bad duration '%.40s' (e.g. 24h)", v);
            else
                dbuf_printf(&path, "since_ms=%lld&", (long long)(c->now_ms - ms));
        } else if (a.ids[i] == AU_LIMIT) {
            if (parse_int(v, 1, 10000, &limit) < 0)
                rc = cli_usage_error(c, "--limit: want 1 to 10000, not '%.40s'", v);
        } else if (client_escape(v, esc, sizeof(esc)) < 0) {
            rc = cli_usage_error(c, "--%s: too long", keys[a.ids[i]]);
        } else {
            dbuf_printf(&path, "%s=%s&", keys[a.ids[i]], esc);
        }
    }
    json_t *reply = NULL;
    if (rc == CLI_CONTINUE) /* (the path ends in '?' or '&': cli_get_pages adds to it) */
        rc = cli_get_pages(c, path.data, "entries", limit, &reply);
    dbuf_release(&path);
    if (rc)
        return rc;
    if (c->json)
        cli_print_json(c, reply);
    else
        print_entries(c, json_object_get(reply, "entries"));
    json_decref(reply);
    return EXIT_OK;
}
