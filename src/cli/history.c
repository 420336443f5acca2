/*
 * history.c - `docket history`: finished jobs (GET /v1/jobs?state=terminal&order=desc),
 * newest first, with how each ended. The options and the query are queue.c's.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli/jobs.h"
#include "util/parse.h"

const char cmd_history_usage[] =
    "usage: docket history [FILTERS] [--json]\n"
    "\n"
    "Finished jobs (completed, failed, cancelled, timed out, preempted), newest first.\n"
    "\n"
    "  -p, --project NAME   -u, --user NAME   -t, --tier NAME   --class NAME\n"
    "      --state LIST     e.g. FAILED,TIMEOUT\n"
    "      --node NAME      --name NAME   --template NAME[@VERSION]\n"
    "  -n, --limit N        at most N jobs (default 50)\n";

static void exit_text(const json_t *job, char *buf, size_t len)
{
    const json_t *e = json_object_get(job, "exit");
    const char *kind = jstr(e, "kind");

    if (!json_is_object(e) || !kind[0])
        snprintf(buf, len, "-");
    else if (!strcmp(kind, "code"))
        snprintf(buf, len, "%lld", (long long)jint(e, "code", 0));
    else if (!strcmp(kind, "signal"))
        snprintf(buf, len, "%s", signal_name((int)jint(e, "code", 0)));
    else
        snprintf(buf, len, "%s", kind);
}

void jobs_print_history(struct cli *c, const json_t *jobs)
{
    static const char *const h[] = {"ID",   "NAME", "PROJECT", "USER",  "TIER", "STATE",
                                    "EXIT", "GPUS", "RAN",     "ENDED", "CAUSE"};
    struct table *t = table_create(h, 11);
    size_t i;
    json_t *j;

    if (!t)
        return;
    table_set_flags(t, 0, TABLE_RIGHT);
    table_set_flags(t, 1, TABLE_FLEX);
    json_array_foreach(jobs, i, j) {
        const char *st = jstr(j, "state");
        int64_t s = jint(j, "start_ms", 0), e = jint(j, "end_ms", 0);
        char ex[64], gpus[100], ran[32], ended[32];

        exit_text(j, ex, sizeof(ex));
        jobs_gpus(j, gpus, sizeof(gpus));
        fmt_duration(s > 0 && e >= s ? e - s : -1, ran, sizeof(ran));
        fmt_when(e, c->now_ms, ended, sizeof(ended));
        table_row(t);
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(j, "id", 0));
        table_cell(t, FMT_PLAIN, "%s", jstr(j, "name"));
        table_cell(t, FMT_PLAIN, "%s", jstr(j, "project"));
        table_cell(t, FMT_PLAIN, "%s", jstr(j, "user"));
        table_cell(t, FMT_PLAIN, "%s", jstr(j, "tier"));
        table_cell(t, fmt_state_color(st), "%s", st);
        table_cell(t, FMT_PLAIN, "%s", ex);
        table_cell(t, FMT_PLAIN, "%s", gpus);
        table_cell(t, FMT_PLAIN, "%s", ran);
        table_cell(t, FMT_PLAIN, "%s", ended);
        table_cell(t, FMT_PLAIN, "%s", jstr(j, "stop_cause"));
    }
    if (table_rows(t))
        table_print(t, c->out, c->width, c->color);
    else
        fprintf(c->out, "no finished jobs\n");
    table_destroy(t);
}

int cmd_history(struct cli *c, int argc, char **argv)
{
    return jobs_list_main(c, argc, argv, true);
}
