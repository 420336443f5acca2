/*
 * alerts.c - `docket alerts` (docs/alerts.md): what fires now (GET /v1/alerts), the
 * history (GET /v1/alerts/history), and silences (POST/GET/DELETE /v1/alerts/silences).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/parse.h"

const char cmd_alerts_usage[] =
    "usage: docket alerts [--json]\n"
    "       docket alerts history [-n N] [--json]\n"
    "       docket alerts silence RULE[:KEY] --for 2h --reason TEXT [--json]\n"
    "       docket alerts silences [--json]\n"
    "       docket alerts unsilence ID [--json]\n"
    "\n"
    "Alerts come from the rules of the policy's `alerts:` section (docs/alerts.md): each\n"
    "fires once per rule and key (a node, a tier, a job), resolves when its condition\n"
    "clears, and goes to the routes of its severity (webhooks, the log). A silence\n"
    "(operators and admins; audited) stops delivery for a rule, or one key of it, for a\n"
    "time; what fires meanwhile is still kept in the history.\n";

enum { AL_FOR = 1, AL_REASON, AL_LIMIT };

static const struct opt_def alerts_opts[] = {
    {AL_FOR, 0, "for", OPT_VALUE},
    {AL_REASON, 0, "reason", OPT_VALUE},
    {AL_LIMIT, 'n', "limit", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

static enum fmt_color sev_color(const char *sev)
{
    return !strcmp(sev, "critical") ? FMT_RED : !strcmp(sev, "major") ? FMT_YELLOW : FMT_BLUE;
}

static void print_table(struct cli *c, struct table *t, const char *none)
{
    if (table_rows(t))
        table_print(t, c->out, c->width, c->color);
    else
        fprintf(c->out, "%s\n", none);
    table_destroy(t);
}

/* GET path: with --json the reply is printed and *reply is NULL. Exit status. */
static int fetch(struct cli *c, const char *path, json_t **reply)
{
    int rc = cli_call(c, "GET", path, NULL, reply);
    if (rc == 0 && c->json) {
        cli_print_json(c, *reply);
        json_decref(*reply);
        *reply = NULL;
    }
    return rc;
}

static int list(struct cli *c)
{
    static const char *const h[] = {"SEVERITY", "STATE", "RULE", "KEY", "SINCE", "SUMMARY"};
    json_t *reply = NULL, *a;
    size_t i;
    int rc = fetch(c, "/v1/alerts", &reply);
    if (rc || !reply)
        return rc;
    struct table *t = table_create(h, 6);
    table_set_flags(t, 5, TABLE_FLEX);
    json_array_foreach(json_object_get(reply, "alerts"), i, a) {
        char when[32];
        const char *state = jstr(a, "state");
        fmt_when(jint(a, "fired_ms", 0) ? jint(a, "fired_ms", 0) : jint(a, "since_ms", 0),
                 c->now_ms, when, sizeof when);
        table_row(t);
        table_cell(t, sev_color(jstr(a, "severity")), "%s", jstr(a, "severity"));
        table_cell(t, jbool(a, "silenced") ? FMT_DIM : FMT_PLAIN, "%s%s", state,
                   jbool(a, "silenced") ? " (silenced)" : "");
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "rule"));
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "key"));
        table_cell(t, FMT_PLAIN, "%s", when);
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "summary"));
    }
    print_table(c, t, "no alerts firing");
    json_decref(reply);
    return EXIT_OK;
}

static int history(struct cli *c, const char *limit)
{
    static const char *const h[] = {"ID",    "SEVERITY", "RULE",   "KEY",
                                    "FIRED", "RESOLVED", "SUMMARY"};
    int n = 50;
    char path[64];
    json_t *reply = NULL, *a;
    size_t i;
    if (limit && parse_int(limit, 1, 1000, &n) < 0)
        return cli_usage_error(c, "--limit: want 1 to 1000, not '%.40s'", limit);
    snprintf(path, sizeof path, "/v1/alerts/history?limit=%d", n);
    int rc = fetch(c, path, &reply);
    if (rc || !reply)
        return rc;
    struct table *t = table_create(h, 7);
    table_set_flags(t, 0, TABLE_RIGHT);
    table_set_flags(t, 6, TABLE_FLEX);
    json_array_foreach(json_object_get(reply, "alerts"), i, a) {
        char fired[32], resolved[32];
        fmt_when(jint(a, "fired_ms", 0), c->now_ms, fired, sizeof fired);
        fmt_when(jint(a, "resolved_ms", 0), c->now_ms, resolved, sizeof resolved);
        table_row(t);
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(a, "id", 0));
        table_cell(t, sev_color(jstr(a, "severity")), "%s", jstr(a, "severity"));
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "rule"));
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "key"));
        table_cell(t, FMT_PLAIN, "%s", fired);
        table_cell(t, jint(a, "resolved_ms", 0) ? FMT_GREEN : FMT_RED, "%s%s",
                   jint(a, "resolved_ms", 0) ? resolved : "firing",
                   jbool(a, "silenced") ? " (silenced)" : "");
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "summary"));
    }
    print_table(c, t, "no alerts in the history");
    json_decref(reply);
    return EXIT_OK;
}

static void silence_row(struct cli *c, struct table *t, const json_t *s)
{
    char ends[32];
    fmt_when(jint(s, "until_ms", 0), c->now_ms, ends, sizeof ends);
    table_row(t);
    table_cell(t, FMT_PLAIN, "%lld", (long long)jint(s, "id", 0));
    table_cell(t, FMT_PLAIN, "%s", jstr(s, "rule"));
    table_cell(t, FMT_PLAIN, "%s", jstr(s, "key")[0] ? jstr(s, "key") : "(all)");
    table_cell(t, FMT_PLAIN, "%s", ends);
    table_cell(t, FMT_PLAIN, "%s", jstr(s, "created_by"));
    table_cell(t, FMT_PLAIN, "%s", jstr(s, "reason"));
}

static struct table *silence_table(void)
{
    static const char *const h[] = {"ID", "RULE", "KEY", "ENDS", "BY", "REASON"};
    struct table *t = table_create(h, 6);
    table_set_flags(t, 0, TABLE_RIGHT);
    table_set_flags(t, 5, TABLE_FLEX);
    return t;
}

static int silences(struct cli *c)
{
    json_t *reply = NULL, *s;
    size_t i;
    int rc = fetch(c, "/v1/alerts/silences", &reply);
    if (rc || !reply)
        return rc;
    struct table *t = silence_table();
    json_array_foreach(json_object_get(reply, "silences"), i, s)
        silence_row(c, t, s);
    print_table(c, t, "no silences");
    json_decref(reply);
    return EXIT_OK;
}

static int silence(struct cli *c, const char *target, const char *dur, const char *reason)
{
    int64_t ms;
    json_t *reply = NULL;
    if (!dur || parse_duration_ms(dur, &ms) < 0 || ms <= 0)
        return cli_usage_error(c, "--for: how long, e.g. --for 2h");
    if (!reason || !reason[0])
        return cli_usage_error(c, "--reason: say why (it goes to the audit trail)");
    const char *colon = strchr(target, ':');
    char rule[128];
    snprintf(rule, sizeof rule, "%.*s", colon ? (int)(colon - target) : (int)strlen(target),
             target);
    json_t *body = json_pack("{s:s,s:s,s:s,s:s}", "rule", rule, "key", colon ? colon + 1 : "",
                             "for", dur, "reason", reason);
    int rc = cli_call(c, "POST", "/v1/alerts/silences", body, &reply);
    json_decref(body);
    if (rc)
        return rc;
    if (c->json) {
        cli_print_json(c, reply);
    } else {
        json_t *s = json_object_get(reply, "silence");
        char ends[32];
        fmt_when(jint(s, "until_ms", 0), c->now_ms, ends, sizeof ends);
        fprintf(c->out, "silence %lld: %s%s%s silenced until %s (docket alerts unsilence %lld)\n",
                (long long)jint(s, "id", 0), jstr(s, "rule"), jstr(s, "key")[0] ? ":" : "",
                jstr(s, "key"), ends, (long long)jint(s, "id", 0));
    }
    json_decref(reply);
    return EXIT_OK;
}

static int unsilence(struct cli *c, const char *id)
{
    int64_t n;
    char path[64];
    json_t *reply = NULL;
    if (parse_int64(id, 1, INT64_MAX, &n) < 0)
        return cli_usage_error(c, "want a silence id (docket alerts silences), not '%.40s'", id);
    snprintf(path, sizeof path, "/v1/alerts/silences/%lld", (long long)n);
    int rc = cli_call(c, "DELETE", path, NULL, &reply);
    if (rc)
        return rc;
    if (c->json)
        cli_print_json(c, reply);
    else
        fprintf(c->out, "silence %lld removed\n", (long long)n);
    json_decref(reply);
    return EXIT_OK;
}

int cmd_alerts(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    const char *dur = NULL, *reason = NULL, *limit = NULL;
    int rc = cli_parse_args(c, argc, argv, alerts_opts, 2, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 0; i < a.nopts; i++) {
        if (a.ids[i] == AL_FOR)
            dur = a.vals[i];
        else if (a.ids[i] == AL_REASON)
            reason = a.vals[i];
        else if (a.ids[i] == AL_LIMIT)
            limit = a.vals[i];
    }
    const char *sub = a.npos ? a.pos[0] : "list";
    bool silencing = !strcmp(sub, "silence");
    if ((dur || reason) && !silencing)
        return cli_usage_error(c, "--for and --reason are for `docket alerts silence`");
    if (limit && strcmp(sub, "history") != 0)
        return cli_usage_error(c, "--limit is for `docket alerts history`");
    bool wants_arg = silencing || !strcmp(sub, "unsilence");
    if (wants_arg != (a.npos == 2))
        return cli_usage_error(
            c, wants_arg ? "%s what? (docket alerts %s %s)" : "%s takes no argument", sub, sub,
            silencing ? "RULE[:KEY] --for 2h --reason TEXT" : "ID");
    if (!strcmp(sub, "list"))
        return list(c);
    if (!strcmp(sub, "history"))
        return history(c, limit);
    if (!strcmp(sub, "silences"))
        return silences(c);
    if (silencing)
        return silence(c, a.pos[1], dur, reason);
    if (!strcmp(sub, "unsilence"))
        return unsilence(c, a.pos[1]);
    return cli_usage_error(c, "list, history, silence, silences or unsilence? (not '%.40s')", sub);
}
