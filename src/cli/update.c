/*
 * update.c - `docket update JOB... [--time T] [--name N] ...`: a submitted job's request
 * changed (PATCH /v1/jobs/ID, docs/api.md "Jobs"), and the same request for scontrol's
 * `update JobId=N Key=Value...` (slurmcmd.c reads Slurm's words into the body). A
 * pending or held job changes its name, time limit, dependencies, partition, node count,
 * constraint or comment; a running one only lowers its time limit.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/jobs.h"
#include "cli/slurm.h"
#include "cli/spec.h"
#include "util/parse.h"

const char cmd_update_usage[] =
    "usage: docket update JOB... [--time T] [--name NAME] [--dependency SPEC]\n"
    "                     [--partition P] [--nodes N] [--constraint EXPR] [--comment TEXT]\n"
    "                     [--reason TEXT] [--json]\n"
    "\n"
    "Change a submitted job's request, as Slurm's `scontrol update JobId=N ...` does.\n"
    "A pending or held job takes any of the changes below, checked as a submission is;\n"
    "it keeps its place in the queue. A running job only lowers its time limit.\n"
    "Raising a time limit is an admin's (as in Slurm). Nothing changes when any part is\n"
    "refused.\n"
    "\n"
    "  -t, --time T          the time limit: 4h, 90m, 1-12:00:00 (Slurm's forms)\n"
    "  -J, --name NAME       the job's name\n"
    "  -d, --dependency SPEC afterok:1:2,afterany:3,afternotok:4,after:5 (all of them),\n"
    "                        afterok:1?afterok:2 (any one); replaces the old ones, \"\"\n"
    "                        drops them\n"
    "  -p, --partition P     another of the site's partitions (its nodes, its limits)\n"
    "  -N, --nodes N         the number of nodes\n"
    "  -C, --constraint EXPR Slurm's node features (a100&ib); \"\" drops it\n"
    "      --comment TEXT    a note on the job\n"
    "  -r, --reason TEXT     why, for the audit trail\n";

enum { U_TIME = 1, U_NAME, U_DEP, U_PART, U_NODES, U_CONSTRAINT, U_COMMENT, U_REASON };

static const struct opt_def update_opts[] = {
    {U_TIME, 't', "time", OPT_VALUE},
    {U_NAME, 'J', "name", OPT_VALUE},
    {U_DEP, 'd', "dependency", OPT_VALUE},
    {U_PART, 'p', "partition", OPT_VALUE},
    {U_NODES, 'N', "nodes", OPT_VALUE},
    {U_CONSTRAINT, 'C', "constraint", OPT_VALUE},
    {U_COMMENT, 0, "comment", OPT_VALUE},
    {U_REASON, 'r', "reason", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

int update_time_limit(json_t *body, const char *v, bool slurm)
{
    int64_t ms;
    int rc = slurm || strchr(v, ':') || strchr(v, '-') ? spec_slurm_time_ms(v, &ms) : -EINVAL;
    if (rc == -EINVAL && !slurm)
        rc = parse_duration_ms(v, &ms);
    if (rc < 0 || ms <= 0)
        return rc == -ERANGE ? -ERANGE : -EINVAL;
    /* Slurm's limits are whole minutes (time_str2mins rounds up) */
    json_object_set_new(body, "time_limit",
                        json_integer(slurm ? (ms / 1000 + 59) / 60 * 60 : (ms + 999) / 1000));
    return 0;
}

int update_dependency(struct cli *c, json_t *body, const char *v, int64_t self)
{
    char err[256];
    json_t *spec = json_object();
    int rc = EXIT_OK;
    if (!v[0]) {
        json_object_set_new(body, "deps", json_array());
        json_object_set_new(body, "deps_any", json_false());
    } else if (spec_apply(spec, SO_DEPENDENCY, v, err, sizeof(err)) < 0) {
        rc = cli_usage_error(c, "%s", err);
    } else if ((rc = slurm_resolve_deps(c, spec, self)) == EXIT_OK) {
        json_object_set(body, "deps", json_object_get(spec, "deps"));
        json_object_set_new(body, "deps_any",
                            json_boolean(json_is_true(json_object_get(spec, "deps_any"))));
    }
    json_decref(spec);
    return rc;
}

int update_jobs(struct cli *c, const json_t *ids, const json_t *body, bool quiet)
{
    json_t *all = json_array();
    int status = EXIT_OK;
    for (size_t i = 0; i < json_array_size(ids); i++) {
        long long id = (long long)json_integer_value(json_array_get(ids, i));
        char path[64];
        json_t *reply = NULL;
        snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
        if (cli_call(c, "PATCH", path, (json_t *)body, &reply)) {
            status = EXIT_FAIL;
            continue;
        }
        const json_t *job = json_object_get(reply, "job");
        if (c->json)
            json_array_append(all, (json_t *)job);
        else if (!quiet)
            fprintf(c->out, "updated job %lld (%s)\n", id, jstr(job, "state"));
        json_decref(reply);
    }
    if (c->json) {
        json_t *o = json_pack("{s:O}", "jobs", all);
        cli_print_json(c, o);
        json_decref(o);
    }
    json_decref(all);
    return status;
}

/* One flag into the body: 0, or an exit status after a message. */
static int take_flag(struct cli *c, json_t *body, int id, const char *v, int64_t self,
                     const char **dep)
{
    int64_t n;
    switch (id) {
    case U_TIME:
        if (update_time_limit(body, v, false) < 0)
            return cli_usage_error(c, "--time: bad time limit '%.40s' (e.g. 4h, 90m, 1-12:00:00)",
                                   v);
        return 0;
    case U_NAME:
        json_object_set_new(body, "name", json_string(v));
        return 0;
    case U_DEP:
        *dep = v;
        return 0;
    case U_PART:
        json_object_set_new(body, "partition", json_string(v));
        return 0;
    case U_NODES:
        if (parse_int64(v, 1, 100000, &n) < 0)
            return cli_usage_error(c, "--nodes: want a number of nodes, not '%.40s'", v);
        json_object_set_new(body, "nodes", json_integer(n));
        return 0;
    case U_CONSTRAINT:
        json_object_set_new(body, "constraint", json_string(v));
        return 0;
    case U_COMMENT:
        json_object_set_new(body, "comment", json_string(v));
        return 0;
    default:
        json_object_set_new(body, "reason", json_string(v));
        (void)self;
        return 0;
    }
}

int cmd_update(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    json_t *body = json_object(), *ids = json_array();
    const char *dep = NULL;
    int rc = cli_parse_args(c, argc, argv, update_opts, 64, &a);
    int64_t id = 0;

    if (rc != CLI_CONTINUE)
        goto out;
    if (a.npos == 0) {
        rc = cli_usage_error(c, "which job? (docket update JOB... --time 2h)");
        goto out;
    }
    for (int i = 0; i < a.npos; i++) {
        if ((rc = cli_job_id(c, a.pos[i], &id)))
            goto out;
        json_array_append_new(ids, json_integer(id));
    }
    for (int i = 0; i < a.nopts; i++)
        if ((rc = take_flag(c, body, a.ids[i], a.vals[i], id, &dep)))
            goto out;
    /* the dependency is resolved once, against the jobs as they are now; a job is never
       made to wait on itself */
    if (dep && (rc = update_dependency(c, body, dep, a.npos == 1 ? id : 0)))
        goto out;
    if (json_object_size(body) == 0 ||
        (json_object_size(body) == 1 && json_object_get(body, "reason"))) {
        rc = cli_usage_error(c, "nothing to change: give --time, --name, --dependency, "
                                "--partition, --nodes, --constraint or --comment");
        goto out;
    }
    rc = update_jobs(c, ids, body, false);
out:
    json_decref(body);
    json_decref(ids);
    return rc;
}
