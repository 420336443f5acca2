/*
 * jobctl.c - the action shared by `docket cancel`, `hold`, `release` and `requeue`
 * (cancel.c, hold.c, release.c, requeue.c): POST /v1/jobs/ID/ACTION for each job, with
 * an optional reason. Exit 1 when any job was refused (the others are done).
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli/jobs.h"

enum { J_REASON = 1 };

static const struct opt_def jobctl_opts[] = {
    {J_REASON, 'r', "reason", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

int jobs_action_main(struct cli *c, int argc, char **argv, const char *action, const char *done)
{
    struct cli_args a;
    json_t *body = json_object(), *all = json_array();
    int rc = cli_parse_args(c, argc, argv, jobctl_opts, 64, &a), status = EXIT_OK;

    if (rc != CLI_CONTINUE)
        goto out;
    for (int i = 0; i < a.nopts; i++)
        if (a.ids[i] == J_REASON)
            json_object_set_new(body, "reason", json_string(a.vals[i]));
    if (a.npos == 0) {
        rc = cli_usage_error(c, "which job? (docket %s JOB...)", c->verb);
        goto out;
    }
    for (int i = 0; i < a.npos; i++) {
        int64_t id;
        if ((rc = cli_job_id(c, a.pos[i], &id)))
            goto out;
    }
    for (int i = 0; i < a.npos; i++) {
        char path[128];
        json_t *reply = NULL, *job;
        int64_t id;

        cli_job_id(c, a.pos[i], &id);
        snprintf(path, sizeof(path), "/v1/jobs/%lld/%s", (long long)id, action);
        if (cli_call(c, "POST", path, body, &reply)) {
            status = EXIT_FAIL;
            continue;
        }
        job = json_object_get(reply, "job");
        if (c->json)
            json_array_append(all, job);
        else
            fprintf(c->out, "%s job %lld (now %s)\n", done, (long long)id, jstr(job, "state"));
        json_decref(reply);
    }
    if (c->json) {
        json_t *o = json_pack("{s:O}", "jobs", all);
        cli_print_json(c, o);
        json_decref(o);
    }
    rc = status;
out:
    json_decref(body);
    json_decref(all);
    return rc;
}
