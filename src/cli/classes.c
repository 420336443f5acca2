/*
 * classes.c - `docket classes`: the job classes and their rules (GET /v1/classes):
 * default and maximum limits, preemptibility and order, protection, grace, retries.
 * Changed with `docket apply -f`.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli/cli.h"

const char cmd_classes_usage[] =
    "usage: docket classes [--json]\n"
    "\n"
    "The job classes and their rules: default and maximum time limit, whether and in\n"
    "which order they are preempted, protection after a run time, grace, retries.\n";

static const char *dur(int64_t ms, const char *zero, char *buf, size_t len)
{
    if (ms <= 0)
        return zero;
    fmt_duration(ms, buf, len);
    return buf;
}

int cmd_classes(struct cli *c, int argc, char **argv)
{
    static const char *const h[] = { "CLASS", "DEFAULT LIMIT", "MAX LIMIT", "PREEMPTIBLE",
                                     "PROTECTED AFTER", "MAX GRACE", "RETRIES", "REQUEUE" };
    json_t *reply = NULL, *k;
    struct table *t;
    size_t i;
    int rc = cli_get_json(c, argc, argv, "/v1/classes", &reply);

    if (rc || !reply)
        return rc;
    if ((t = table_create(h, 8))) {
        json_array_foreach(json_object_get(reply, "classes"), i, k) {
            char a[32], b[32], p[32], g[32];
            table_row(t);
            table_cell(t, FMT_PLAIN, "%s", jstr(k, "name"));
            table_cell(t, FMT_PLAIN, "%s", dur(jint(k, "default_limit_ms", 0), "none", a, 32));
            table_cell(t, FMT_PLAIN, "%s", dur(jint(k, "max_limit_ms", 0), "none", b, 32));
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
        }
        table_print(t, c->out, c->width, c->color);
        table_destroy(t);
    }
    json_decref(reply);
    return EXIT_OK;
}
