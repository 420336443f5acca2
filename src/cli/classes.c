/*
 * classes.c - `docket classes`: the job classes and their rules (GET /v1/classes):
 * default and maximum limits, preemptibility and order, protection, grace, retries.
 * `classes set` changes one class (PATCH /v1/classes/NAME); `docket apply -f` the whole
 * policy.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli/cli.h"
#include "util/parse.h"
#include "util/str.h"

const char cmd_classes_usage[] =
    "usage: docket classes [--json]\n"
    "       docket classes set NAME KEY=VALUE...   (admin)\n"
    "\n"
    "The job classes and their rules: default and maximum time limit, whether and in\n"
    "which order they are preempted, protection after a run time, grace, retries.\n"
    "KEYs: default_limit, max_limit, protect_after, max_grace (durations: 4h, 10m;\n"
    "0s = none), preemptible, restart_on_failure, requeueable (true/false),\n"
    "preempt_order, max_retries (numbers). LEASE: how long a running job outlives\n"
    "silence between its node and docketd (set with `docket apply`, docs/agent.md).\n";

static const char *dur(int64_t ms, const char *zero, char *buf, size_t len)
{
    if (ms <= 0)
        return zero;
    fmt_duration(ms, buf, len);
    return buf;
}

/* KEY=VALUE of a class, typed as the policy document wants it. */
static int class_field(struct cli *c, json_t *body, const char *kv)
{
    static const char *const durs[] = {"default_limit", "max_limit", "protect_after", "max_grace"};
    static const char *const bools[] = {"preemptible", "restart_on_failure", "requeueable"};
    static const char *const ints[] = {"preempt_order", "max_retries"};
    const char *eq = strchr(kv, '=');
    char key[64];
    size_t n = eq ? (size_t)(eq - kv) : 0;

    if (!eq || n == 0 || n >= sizeof(key))
        return cli_usage_error(c, "want KEY=VALUE, not '%.60s'", kv);
    memcpy(key, kv, n);
    key[n] = '\0';
    for (size_t i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
        int64_t ms;
        if (strcmp(key, durs[i]))
            continue;
        if (parse_duration_ms(eq + 1, &ms) < 0)
            return cli_usage_error(c, "%s: bad duration '%.40s' (e.g. 4h, 10m)", key, eq + 1);
        json_object_set_new(body, key, json_string(eq + 1));
        return 0;
    }
    for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
        bool b;
        if (strcmp(key, bools[i]))
            continue;
        if (parse_bool(eq + 1, &b) < 0)
            return cli_usage_error(c, "%s: want true or false, not '%.40s'", key, eq + 1);
        json_object_set_new(body, key, json_boolean(b));
        return 0;
    }
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        int x;
        if (strcmp(key, ints[i]))
            continue;
        if (parse_int(eq + 1, 0, 1000, &x) < 0)
            return cli_usage_error(c, "%s: want a number from 0 to 1000, not '%.40s'", key, eq + 1);
        json_object_set_new(body, key, json_integer(x));
        return 0;
    }
    return cli_usage_error(c, "unknown key '%s' (see docket help classes)", key);
}

static int set(struct cli *c, const struct cli_args *a)
{
    json_t *body = json_object(), *reply = NULL;
    char path[128];
    int rc = 0;

    if (a->npos < 3 || !str_is_name(a->pos[1]))
        rc = cli_usage_error(c, "usage: docket classes set NAME KEY=VALUE...");
    for (int i = 2; rc == 0 && i < a->npos; i++)
        rc = class_field(c, body, a->pos[i]);
    if (rc == 0) {
        snprintf(path, sizeof(path), "/v1/classes/%s", a->pos[1]);
        rc = cli_call(c, "PATCH", path, body, &reply);
    }
    if (rc == 0 && c->json)
        cli_print_json(c, reply);
    else if (rc == 0)
        fprintf(c->out, "updated class %s\n", a->pos[1]);
    json_decref(reply);
    json_decref(body);
    return rc;
}

int cmd_classes(struct cli *c, int argc, char **argv)
{
    static const char *const h[] = {"CLASS",       "DEFAULT LIMIT",   "MAX LIMIT",
                                    "PREEMPTIBLE", "PROTECTED AFTER", "MAX GRACE",
                                    "RETRIES",     "REQUEUE",         "LEASE"};
    json_t *reply = NULL, *k;
    struct table *t;
    struct cli_args a;
    size_t i;
    int rc;

    if (argc > 1 && !strcmp(argv[1], "set")) {
        if ((rc = cli_parse_args(c, argc, argv, NULL, 64, &a)) != CLI_CONTINUE)
            return rc;
        return set(c, &a);
    }
    rc = cli_get_json(c, argc, argv, "/v1/classes", &reply);

    if (rc || !reply)
        return rc;
    if ((t = table_create(h, 9))) {
        json_array_foreach(json_object_get(reply, "classes"), i, k) {
            char dl[32], ml[32], p[32], g[32];
            table_row(t);
            table_cell(t, FMT_PLAIN, "%s", jstr(k, "name"));
            table_cell(t, FMT_PLAIN, "%s", dur(jint(k, "default_limit_ms", 0), "none", dl, 32));
            table_cell(t, FMT_PLAIN, "%s", dur(jint(k, "max_limit_ms", 0), "none", ml, 32));
            if (jbool(k, "preemptible"))
                table_cell(t, FMT_PLAIN, "yes (order %lld)",
                           (long long)jint(k, "preempt_order", 0));
            else
                table_cell(t, FMT_PLAIN, "never");
            table_cell(t, FMT_PLAIN, "%s", dur(jint(k, "protect_after_ms", 0), "never", p, 32));
            table_cell(t, FMT_PLAIN, "%s", dur(jint(k, "max_grace_ms", 0), "-", g, 32));
            table_cell(t, FMT_PLAIN, "%s%lld", jbool(k, "restart_on_failure") ? "restart, " : "",
                       (long long)jint(k, "max_retries", 0));
            table_cell(t, FMT_PLAIN, "%s", jbool(k, "requeueable") ? "yes" : "no");
            int64_t lease = -1;
            if (parse_duration_ms(jstr(k, "lease"), &lease) < 0 || lease < 0)
                table_cell(t, FMT_PLAIN, "-");
            else
                table_cell(t, FMT_PLAIN, "%s", dur(lease, "node timeout", g, 32));
        }
        table_print(t, c->out, c->width, c->color);
        table_destroy(t);
    }
    json_decref(reply);
    return EXIT_OK;
}
