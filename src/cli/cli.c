/*
 * cli.c - `docket`'s dispatch table and the helpers every verb shares (cli.h), in the
 * manner of git.c: global flags first, then the verb looked up in cli_verbs[].
 */
#define _POSIX_C_SOURCE 200809L
#include "cli/cli.h"
#include "cli/jtext.h"
#include "cli/slurm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/parse.h"
#include "util/str.h"

const struct cli_verb cli_verbs[] = {
    {"submit", cmd_submit, "submit a job (flags and a command, or a batch script)",
     cmd_submit_usage},
    {"queue", cmd_queue, "list pending and running jobs", cmd_queue_usage},
    {"q", cmd_queue, "alias of queue", cmd_queue_usage},
    {"show", cmd_show, "a job's details and its events", cmd_show_usage},
    {"cancel", cmd_cancel, "cancel jobs", cmd_cancel_usage},
    {"hold", cmd_hold, "hold pending jobs", cmd_hold_usage},
    {"release", cmd_release, "release held jobs", cmd_release_usage},
    {"requeue", cmd_requeue, "put jobs back in the queue", cmd_requeue_usage},
    {"update", cmd_update, "change a submitted job: time limit, name, dependencies ...",
     cmd_update_usage},
    {"logs", cmd_logs, "a job's output (-f to follow)", cmd_logs_usage},
    {"explain", cmd_explain, "why a job waits, or when it may be preempted", cmd_explain_usage},
    {"forecast", cmd_forecast, "the next releases of resources and where they go",
     cmd_forecast_usage},
    {"nodes", cmd_nodes, "list nodes; drain, resume, label", cmd_nodes_usage},
    {"projects", cmd_projects, "list projects; set, boost, pause, resume", cmd_projects_usage},
    {"tiers", cmd_tiers, "the priority tiers", cmd_tiers_usage},
    {"classes", cmd_classes, "the job classes and their rules; set", cmd_classes_usage},
    {"templates", cmd_templates, "the job environment templates; show", cmd_templates_usage},
    {"history", cmd_history, "finished jobs, newest first", cmd_history_usage},
    {"apply", cmd_apply, "apply a policy file (tiers, classes, projects)", cmd_apply_usage},
    {"import", cmd_import, "write a policy file from a Slurm site's configuration",
     cmd_import_usage},
    {"top", cmd_top, "a live view of nodes, queue and utilisation", cmd_top_usage},
    {"console", cmd_console, "open the web console (a one-time login link)", cmd_console_usage},
    {"token", cmd_token, "API tokens: create, list, revoke, rotate-admin", cmd_token_usage},
    {"secret", cmd_secret, "a project's secrets: set, list, rm", cmd_secret_usage},
    {"services", cmd_services, "services that stay up: list, show, create, scale, rm",
     cmd_services_usage},
    {"storage", cmd_storage, "storage pools and project areas; create, set, delete",
     cmd_storage_usage},
    {"audit", cmd_audit, "the audit trail of changes", cmd_audit_usage},
    {"alerts", cmd_alerts, "alerts firing; history, silence, silences, unsilence",
     cmd_alerts_usage},
    {"report", cmd_report, "usage and capacity reports (csv, json, html)", cmd_report_usage},
    {"admin", cmd_admin, "operator tasks: backup of docketd's database", cmd_admin_usage},
    {"sbatch", cmd_sbatch, "submit a batch script with Slurm's sbatch options (docs/slurm.md)",
     cmd_sbatch_usage},
    {"shell", cmd_shell, "an interactive session: a terminal on allocated resources",
     cmd_shell_usage},
    {"attach", cmd_attach, "attach this terminal to a running interactive session again",
     cmd_attach_usage},
    {"salloc", cmd_salloc, "Slurm's salloc: an interactive session with sbatch's options",
     cmd_salloc_usage},
    {"help", cmd_help, "help on docket or on one verb", cmd_help_usage},
    {NULL, NULL, NULL, NULL},
};

const struct cli_verb *cli_find_verb(const char *name)
{
    for (const struct cli_verb *v = cli_verbs; v->name; v++)
        if (!strcmp(v->name, name))
            return v;
    return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* Messages                                                                             */

int cli_usage_error(struct cli *c, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "docket %s: ", c->verb ? c->verb : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nsee `docket help %s`\n", c->verb ? c->verb : "");
    return EXIT_USAGE;
}

int cli_fail(struct cli *c, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "docket %s: ", c->verb ? c->verb : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return EXIT_FAIL;
}

void cli_warn(struct cli *c, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "docket %s: warning: ", c->verb ? c->verb : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_common(struct cli *c, int id, const char *err)
{
    switch (id) {
    case CO_JSON:
        c->json = true;
        return CLI_CONTINUE;
    case CO_HELP:
        fputs(c->usage, c->out);
        return EXIT_OK;
    case OPT_ERROR:
        return cli_usage_error(c, "%s", err);
    default:
        return cli_usage_error(c, "unexpected option");
    }
}

static const struct opt_def common_only[] = {CLI_COMMON_OPTS, {0, 0, NULL, OPT_NONE}};

int cli_parse_args(struct cli *c, int argc, char **argv, const struct opt_def *opts, int max_pos,
                   struct cli_args *a)
{
    struct opt_iter it;
    const char *v;
    char err[256];
    int id, rc;

    memset(a, 0, sizeof(*a));
    if (max_pos > 64)
        max_pos = 64;
    opt_iter_init(&it, argc, argv, 1);
    for (;;) {
        id = opt_next(&it, opts ? opts : common_only, &v, err, sizeof(err));
        if (id == OPT_DONE && it.dashdash && it.index < argc) {
            v = argv[it.index++];
            id = OPT_POSITIONAL;
        }
        if (id == OPT_DONE)
            return CLI_CONTINUE;
        if (id == OPT_POSITIONAL) {
            if (a->npos >= max_pos)
                return cli_usage_error(c, "unexpected argument '%.60s'", v);
            a->pos[a->npos++] = v;
        } else if (id == CO_JSON || id == CO_HELP || id == OPT_ERROR) {
            if ((rc = cli_common(c, id, err)) != CLI_CONTINUE)
                return rc;
        } else if (a->nopts < 16) {
            a->ids[a->nopts] = id;
            a->vals[a->nopts++] = v;
        } else {
            return cli_usage_error(c, "too many options");
        }
    }
}

int cli_get_json(struct cli *c, int argc, char **argv, const char *path, json_t **reply)
{
    struct cli_args a;
    int rc = cli_parse_args(c, argc, argv, NULL, 0, &a);

    if (rc != CLI_CONTINUE)
        return rc;
    if ((rc = cli_call(c, "GET", path, NULL, reply)))
        return rc;
    if (c->json) {
        cli_print_json(c, *reply);
        json_decref(*reply);
        *reply = NULL;
    }
    return EXIT_OK;
}

void cli_print_json(struct cli *c, const json_t *v)
{
    /* into memory first, then one write: jansson writes a FILE a token at a time, which
     * for a list of 10,000 jobs was most of `docket queue --json` */
    char *text = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text) {
        fputs(text, c->out);
        free(text);
    } else {
        json_dumpf(v, c->out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    }
    fputc('\n', c->out);
}

int cli_job_id(struct cli *c, const char *s, int64_t *id)
{
    if (parse_int64(s, 1, INT64_MAX, id) < 0)
        return cli_usage_error(c, "bad job id '%.60s' (want a number such as 915)", s);
    return 0;
}

const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

int64_t jint(const json_t *o, const char *key, int64_t dflt)
{
    json_t *v = json_object_get(o, key);

    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v))
        return (int64_t)json_real_value(v);
    return dflt;
}

bool jbool(const json_t *o, const char *key)
{
    return json_is_true(json_object_get(o, key));
}

int cli_send_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Calling the API                                                                      */

static const char *hint_for(const char *code)
{
    if (!strcmp(code, "unauthenticated"))
        return "over TCP set DOCKET_TOKEN (docketd wrote an admin token to "
               "STATE_DIR/admin.token); on the controller's host the Unix socket needs none";
    if (!strcmp(code, "forbidden"))
        return "ask a lead of the project (docket projects members list PROJECT) or an admin "
               "for a role that allows it";
    if (!strcmp(code, "quota_exceeded"))
        return "a queue cap or the submission rate (the message says which) is reached: "
               "wait for queued jobs to start or end, or ask an admin to raise it (docket "
               "projects set NAME max_queued=N; the policy's settings.max_queued and "
               "user_max_queued)";
    if (!strcmp(code, "unavailable"))
        return "docketd is shutting down; try again in a moment";
    if (!strcmp(code, "internal"))
        return "nothing was changed; docketd's log has the details";
    return NULL;
}

/* Every string of a reply (and every key) made terminal-safe in place (fmt_safe, lines
 * kept): the human views print names, commands, scripts, reasons and messages that users
 * and jobs chose, and none of them may reach the terminal with its escapes raw (issue 33
 * #11). --json prints the reply as it came (JSON escapes C0 controls itself). */
static void safe_tree(json_t *v)
{
    if (json_is_string(v)) {
        if (fmt_is_plain(json_string_value(v), true))
            return; /* nearly every string: no copy made */
        char *safe = fmt_safe(json_string_value(v), true);
        if (safe && strcmp(safe, json_string_value(v)) != 0)
            json_string_set(v, safe);
        free(safe);
        return;
    }
    size_t i;
    json_t *x;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x) {
            safe_tree(x);
        }
        return;
    }
    if (!json_is_object(v))
        return;
    const char *key;
    void *tmp;
    json_object_foreach_safe(v, tmp, key, x) {
        safe_tree(x);
        if (fmt_is_plain(key, false))
            continue;
        char *safe = fmt_safe(key, false);
        if (safe && strcmp(safe, key) != 0) {
            json_object_set(v, safe, x);
            json_object_del(v, key);
        }
        free(safe);
    }
}

int cli_report_error(struct cli *c, const struct client_reply *r)
{
    json_error_t jerr;
    json_t *j = r->len ? json_loadb(r->body, r->len, 0, &jerr) : NULL;
    json_t *e = json_object_get(j, "error");
    const char *code = jstr(e, "code"), *msg = jstr(e, "message"), *field = jstr(e, "field");
    const char *hint;

    if (!json_is_object(e)) {
        char head[201];
        snprintf(head, sizeof(head), "%.*s", r->len > 200 ? 200 : (int)r->len,
                 r->len ? r->body : "");
        char *safe = fmt_safe(head, false);
        cli_fail(c, "docketd answered %ld with no error object%s%s", r->status, r->len ? ": " : "",
                 safe ? safe : "");
        free(safe);
        json_decref(j);
        return EXIT_FAIL;
    }
    if (c->json)
        cli_print_json(c, j);
    safe_tree(j); /* the message goes to the terminal whatever the output mode */
    fprintf(stderr, "docket %s: %s%s%s%s\n", c->verb, msg[0] ? msg : code,
            field[0] ? " (field " : "", field, field[0] ? ")" : "");
    if ((hint = hint_for(code)))
        fprintf(stderr, "hint: %s\n", hint);
    json_decref(j);
    return EXIT_FAIL;
}

int cli_call_raw(struct cli *c, const char *method, const char *path, const char *ctype,
                 const char *body, size_t len, long timeout_ms, struct client_reply *r)
{
    char err[1024];

    if (!c->client && !(c->client = client_create(&c->cfg, err, sizeof(err))))
        return cli_fail(c, "%s", err);
    if (client_request(c->client, method, path, ctype, body, len, timeout_ms, r, err, sizeof(err)) <
        0)
        return cli_fail(c, "%s", err);
    if (r->status < 200 || r->status > 299) {
        int rc = cli_report_error(c, r);
        client_reply_release(r);
        return rc;
    }
    return 0;
}

int cli_call_quiet(struct cli *c, const char *method, const char *path, json_t **reply)
{
    struct client_reply r;
    json_error_t jerr;
    char err[1024];

    *reply = NULL;
    if (!c->client && !(c->client = client_create(&c->cfg, err, sizeof(err))))
        return EXIT_FAIL;
    if (client_request(c->client, method, path, NULL, NULL, 0, 0, &r, err, sizeof(err)) < 0)
        return EXIT_FAIL;
    if (r.status >= 200 && r.status <= 299)
        *reply = json_loadb(r.body, r.len, 0, &jerr);
    client_reply_release(&r);
    if (*reply && !c->json)
        safe_tree(*reply);
    return *reply ? 0 : EXIT_FAIL;
}

/* A 2xx reply's body as JSON (terminal-safe for a human view); the reply is released. */
static int reply_json(struct cli *c, struct client_reply *r, json_t **reply)
{
    json_error_t jerr;
    *reply = json_loadb(r->body, r->len, 0, &jerr);
    client_reply_release(r);
    if (!*reply)
        return cli_fail(c, "docketd sent a reply that is not JSON (%s)", jerr.text);
    if (!c->json)
        safe_tree(*reply);
    return 0;
}

int cli_call(struct cli *c, const char *method, const char *path, json_t *body, json_t **reply)
{
    struct client_reply r;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    int rc;

    *reply = NULL;
    if (body && !text)
        return cli_fail(c, "out of memory");
    rc = cli_call_raw(c, method, path, "application/json", text, text ? strlen(text) : 0, 0, &r);
    free(text);
    if (rc)
        return rc;
    return reply_json(c, &r, reply);
}

/* 32 hex characters from the kernel's random source: two submissions never share one. */
static int fresh_key(char out[33])
{
    unsigned char b[16];
    if (getentropy(b, sizeof(b)) < 0)
        return -errno;
    for (size_t i = 0; i < sizeof(b); i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return 0;
}

int cli_submit_call(struct cli *c, json_t *spec, json_t **reply)
{
    struct client_reply r;
    char err[1024], key[33];

    *reply = NULL;
    char *text = json_dumps(spec, JSON_COMPACT);
    if (!text)
        return cli_fail(c, "out of memory");
    if (fresh_key(key) < 0) {
        free(text);
        return cli_fail(c, "cannot draw an idempotency key: %s", strerror(errno));
    }
    if (!c->client && !(c->client = client_create(&c->cfg, err, sizeof(err)))) {
        free(text);
        return cli_fail(c, "%s", err);
    }
    int rc = client_submit(c->client, "/v1/jobs", text, strlen(text), key, &r, err, sizeof(err));
    free(text);
    if (rc < 0)
        return cli_fail(c, "%s", err);
    if (r.status < 200 || r.status > 299) {
        rc = cli_report_error(c, &r);
        client_reply_release(&r);
        return rc;
    }
    return reply_json(c, &r, reply);
}

/* The URL of a list's next page: path, then limit (what is left of max, at most the
 * API's 10,000) and the cursor. 0 or -ENAMETOOLONG. */
static int page_url(char *url, size_t len, const char *path, long want, const char *after)
{
    size_t pl = strlen(path);
    const char *sep = pl && strchr("?&", path[pl - 1]) ? "" : strchr(path, '?') ? "&" : "?";
    int n = snprintf(url, len, "%s%slimit=%ld%s%s", path, sep, want > 10000 ? 10000 : want,
                     after[0] ? "&after=" : "", after);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A page's "next" into after: true when there is one to follow (a number). */
static bool next_cursor(const char *next, size_t got, char *after, size_t len)
{
    return next && next[0] && got > 0 && strspn(next, "0123456789") == strlen(next) &&
           snprintf(after, len, "%s", next) < (int)len;
}

int cli_get_pages(struct cli *c, const char *path, const char *key, long max, json_t **list)
{
    char after[64] = "";
    int rc = 0;
    json_t *items = json_array();

    *list = NULL;
    while (max < 1 || (long)json_array_size(items) < max) {
        char url[8192];
        long want = max < 1 ? 10000 : max - (long)json_array_size(items);
        json_t *reply = NULL, *page;
        if (page_url(url, sizeof(url), path, want, after) < 0) {
            rc = cli_usage_error(c, "filters too long");
            break;
        }
        if ((rc = cli_call(c, "GET", url, NULL, &reply)))
            break;
        page = json_object_get(reply, key);
        if (json_is_array(page))
            json_array_extend(items, page);
        bool more = next_cursor(json_string_value(json_object_get(reply, "next")),
                                json_array_size(page), after, sizeof(after));
        json_decref(reply);
        if (!more)
            break;
    }
    if (rc == 0)
        *list = json_pack("{s:o}", key, items);
    else
        json_decref(items);
    return rc;
}

/* One page {"KEY": [items], "next": "CURSOR", ...}: each item to fn until it returns
 * non-zero (that status in *fn_rc), the items counted in *got, the cursor into next
 * (NUL-terminated; "" when none or not a string, as json_string_value reads the last
 * "next" given). 0, or -EPROTO when the page is not JSON. */
static int each_in_page(const char *body, size_t len, const char *key, cli_item_fn fn, void *arg,
                        struct dbuf *next, long *got, int *fn_rc)
{
    struct jscan s;
    struct dbuf k;
    bool first = true;
    int rc;

    dbuf_init(&k, 0);
    dbuf_reset(next);
    dbuf_append(next, "", 1);
    jscan_init(&s, body, len);
    if (!jscan_take(&s, '{')) {
        dbuf_release(&k);
        return -EPROTO;
    }
    while ((rc = jscan_member(&s, &first, &k)) == 1) {
        if (!strcmp(k.data, key) && jscan_peek(&s) == '[') {
            bool any = false;
            jscan_take(&s, '[');
            while (!jscan_take(&s, ']')) {
                if (any && !jscan_take(&s, ',')) {
                    rc = -EPROTO;
                    break;
                }
                any = true;
                jscan_peek(&s); /* (past white space) */
                const char *at = s.p;
                if ((rc = jscan_skip(&s)) < 0)
                    break;
                (*got)++;
                if (*fn_rc == 0)
                    *fn_rc = fn(arg, at, (size_t)(s.p - at));
            }
            if (rc < 0)
                break;
        } else if (!strcmp(k.data, "next") && jscan_peek(&s) == '"') {
            dbuf_reset(next);
            if ((rc = jscan_string(&s, next)) < 0)
                break;
        } else {
            if (!strcmp(k.data, "next")) {
                dbuf_reset(next);
                dbuf_append(next, "", 1);
            }
            if ((rc = jscan_skip(&s)) < 0)
                break;
        }
    }
    dbuf_release(&k);
    if (rc == 0 && jscan_peek(&s) != -1)
        rc = -EPROTO; /* something after the object */
    return rc < 0 ? -EPROTO : 0;
}

int cli_each_item(struct cli *c, const char *path, const char *key, long max, cli_item_fn fn,
                  void *arg)
{
    char after[64] = "";
    long total = 0;
    int rc = 0, fn_rc = 0;
    struct dbuf next;

    dbuf_init(&next, 0);
    while (max < 1 || total < max) {
        char url[8192];
        struct client_reply r;
        long got = 0;
        if (page_url(url, sizeof(url), path, max < 1 ? 10000 : max - total, after) < 0) {
            rc = cli_usage_error(c, "filters too long");
            break;
        }
        if ((rc = cli_call_raw(c, "GET", url, NULL, NULL, 0, 0, &r)))
            break;
        int prc = each_in_page(r.body, r.len, key, fn, arg, &next, &got, &fn_rc);
        client_reply_release(&r);
        if (prc < 0) {
            rc = cli_fail(c, "docketd sent a reply that is not JSON");
            break;
        }
        if ((rc = fn_rc))
            break;
        total += got;
        if (!next_cursor(next.data, (size_t)got, after, sizeof(after)))
            break;
    }
    dbuf_release(&next);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* main                                                                                 */

static const char main_usage[] =
    "usage: docket [--url URL] [--token TOKEN] [--ca FILE | --fingerprint PIN] VERB [ARGS...]\n"
    "\n"
    "Docket schedules jobs on a shared GPU/CPU cluster. Every verb takes --json and\n"
    "--help; exit status 0 = done, 1 = refused or failed, 2 = bad usage.\n"
    "\n"
    "The controller is found through DOCKET_URL (http://host:port or unix:/path) with\n"
    "DOCKET_TOKEN, else ~/.config/docket/config (url=..., token=...), else the socket\n"
    "unix:/run/docket/docketd.sock. An https:// URL checks docketd's certificate against\n"
    "the pinned key of --fingerprint (DOCKET_FINGERPRINT), else the CA file of --ca\n"
    "(DOCKET_CA), else the system's CAs. A list (URL1,URL2: an active/standby pair) is\n"
    "tried in turn where one cannot be reached or is a standby. See docket(1), docs/cli.md.\n"
    "\n"
    "verbs:\n";

static void print_main_usage(FILE *out)
{
    fputs(main_usage, out);
    for (const struct cli_verb *v = cli_verbs; v->name; v++)
        if (strcmp(v->name, "q"))
            fprintf(out, "  %-10s %s\n", v->name, v->summary);
}

enum { GO_URL = 1, GO_TOKEN, GO_HELP, GO_VERSION, GO_NO_COLOR, GO_CA, GO_FPR };

static const struct opt_def global_opts[] = {
    {GO_URL, 0, "url", OPT_VALUE},          {GO_TOKEN, 0, "token", OPT_VALUE},
    {GO_HELP, 'h', "help", OPT_NONE},       {GO_VERSION, 0, "version", OPT_NONE},
    {GO_NO_COLOR, 0, "no-color", OPT_NONE}, {GO_CA, 0, "ca", OPT_VALUE},
    {GO_FPR, 0, "fingerprint", OPT_VALUE},  {0, 0, NULL, OPT_NONE},
};

/* The verb of a link named as a Slurm command (make install-slurm-compat, or the agent's
 * links in a Slurm-style job), or NULL. srun, squeue, scancel, scontrol, sinfo and sacct
 * exist only under those names; sbatch is also `docket sbatch`. */
static const struct cli_verb *slurm_command(const char *argv0)
{
    static const struct cli_verb cmds[] = {
        {"srun", cmd_srun, "", cmd_srun_usage},
        {"squeue", cmd_squeue, "", cmd_squeue_usage},
        {"scancel", cmd_scancel, "", cmd_scancel_usage},
        {"scontrol", cmd_scontrol, "", cmd_scontrol_usage},
        {"sinfo", cmd_sinfo, "", cmd_sinfo_usage},
        {"sacct", cmd_sacct, "", cmd_sacct_usage},
        {NULL, NULL, NULL, NULL},
    };
    const char *base = strrchr(argv0, '/');

    base = base ? base + 1 : argv0;
    if (!strcmp(base, "sbatch") || !strcmp(base, "salloc"))
        return cli_find_verb(base);
    for (const struct cli_verb *v = cmds; v->name; v++)
        if (!strcmp(base, v->name))
            return v;
    return NULL;
}

int cli_main(int argc, char **argv)
{
    struct cli c = {.out = stdout};
    struct opt_iter it;
    const struct cli_verb *v;
    const char *val, *url = NULL, *token = NULL, *ca = NULL, *fpr = NULL;
    char err[1024];
    bool no_color = false;
    int id, rc;

    opt_iter_init(&it, argc, argv, 1);
    if ((v = slurm_command(argc > 0 ? argv[0] : "")))
        goto run; /* run as `sbatch`: Slurm's command line, no docket flags before it */
    while ((id = opt_next(&it, global_opts, &val, err, sizeof(err))) != OPT_POSITIONAL) {
        switch (id) {
        case GO_URL:
            url = val;
            break;
        case GO_TOKEN:
            token = val;
            break;
        case GO_NO_COLOR:
            no_color = true;
            break;
        case GO_CA:
            ca = val;
            break;
        case GO_FPR:
            fpr = val;
            break;
        case GO_HELP:
            print_main_usage(stdout);
            return EXIT_OK;
        case GO_VERSION:
            puts("docket " DOCKET_VERSION);
            return EXIT_OK;
        case OPT_DONE:
            print_main_usage(stderr);
            return EXIT_USAGE;
        default:
            fprintf(stderr, "docket: %s\nsee `docket help`\n", err);
            return EXIT_USAGE;
        }
    }
    v = cli_find_verb(val);
    if (!v) {
        fprintf(stderr, "docket: unknown verb '%.60s'\nsee `docket help`\n", val);
        return EXIT_USAGE;
    }
run:
    /* srun needs no server: a broken configuration file must not end a job's step host */
    if (client_config_load(&c.cfg, err, sizeof(err)) < 0 && v->fn != cmd_srun) {
        fprintf(stderr, "docket: %s\n", err);
        return EXIT_FAIL;
    }
    if (url && str_copy(c.cfg.url, sizeof(c.cfg.url), url) == 0)
        snprintf(c.cfg.source, sizeof(c.cfg.source), "--url");
    if (token)
        str_copy(c.cfg.token, sizeof(c.cfg.token), token);
    if (ca)
        str_copy(c.cfg.ca, sizeof(c.cfg.ca), ca);
    if (fpr)
        str_copy(c.cfg.fingerprint, sizeof(c.cfg.fingerprint), fpr);
    c.verb = v->fn == cmd_queue ? "queue" : v->name;
    c.usage = v->usage;
    c.color = !no_color && fmt_use_color(STDOUT_FILENO);
    c.width = fmt_term_width(STDOUT_FILENO);
    c.now_ms = clock_now_ms();
    rc = v->fn(&c, argc - (it.index - 1), argv + (it.index - 1));
    client_destroy(c.client);
    if (fflush(stdout) != 0 && rc == EXIT_OK)
        rc = EXIT_FAIL;
    return rc;
}
