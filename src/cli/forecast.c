/*
 * forecast.c - `docket forecast`: the next releases of resources in time order and where
 * each will flow (GET /v1/forecast), one sentence per release.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli/cli.h"
#include "util/parse.h"

const char cmd_forecast_usage[] =
    "usage: docket forecast [-n N] [--json]\n"
    "\n"
    "When resources free up next and who gets them: \"in ~2h  job 812 ends: 8 GPUs on\n"
    "gpu03 -> job 915 (vision, high)\". Times come from the running jobs' limits.\n";

enum { F_LIMIT = 1 };

static const struct opt_def forecast_opts[] = {
    {F_LIMIT, 'n', "limit", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

static void print_release(struct cli *c, const json_t *r)
{
    char when[32];
    const char *type = jstr(r, "gpu_type");

    fmt_when(jint(r, "at_ms", 0), c->now_ms, when, sizeof(when));
    fprintf(c->out, "%-10s job %lld ends: %lld %s%sGPU(s) on %s", when,
            (long long)jint(r, "job", 0), (long long)jint(r, "gpus", 0), type, type[0] ? " " : "",
            jstr(r, "node"));
    if (jint(r, "next_job", 0) > 0)
        fprintf(c->out, " -> job %lld (%s, %s)%s\n", (long long)jint(r, "next_job", 0),
                jstr(r, "next_project"), jstr(r, "next_tier"),
                jbool(r, "by_reservation") ? ", reserved for it" : "");
    else
        fprintf(c->out, " -> free\n");
}

int cmd_forecast(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    json_t *reply = NULL, *rel;
    char path[64];
    int limit = 20;
    size_t i;
    json_t *r;
    int rc = cli_parse_args(c, argc, argv, forecast_opts, 0, &a);

    if (rc != CLI_CONTINUE)
        return rc;
    for (int k = 0; k < a.nopts; k++)
        if (a.ids[k] == F_LIMIT && parse_int(a.vals[k], 1, 10000, &limit) < 0)
            return cli_usage_error(c, "--limit: want 1 to 10000, not '%.40s'", a.vals[k]);
    snprintf(path, sizeof(path), "/v1/forecast?limit=%d", limit);
    if ((rc = cli_call(c, "GET", path, NULL, &reply)))
        return rc;
    rel = json_object_get(reply, "releases");
    if (c->json)
        cli_print_json(c, reply);
    else if (!json_array_size(rel))
        fprintf(c->out, "no running job has a time limit: nothing is forecast to free up\n");
    json_array_foreach(c->json ? NULL : rel, i, r)
        print_release(c, r);
    json_decref(reply);
    return EXIT_OK;
}
