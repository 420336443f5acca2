/*
 * logs.c - `docket logs JOB [-f] [--stderr] [--run N]`: a job's output as the controller
 * holds it, per run (GET /v1/jobs/ID/logs?run=N, long-polled with follow=1 until
 * X-Docket-Eof). Without --run, every run in turn, each after a separator line once the
 * job has more than one (a requeued job's runs are never spliced together).
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli/cli.h"
#include "util/parse.h"

const char cmd_logs_usage[] =
    "usage: docket logs JOB [-f] [--stderr] [--run N] [--offset N] [--json]\n"
    "\n"
    "A job's output (stdout, or stderr with --stderr), all of it: the controller answers\n"
    "in pages of 1 MiB, read one after the other. Each run of the job (a requeued or\n"
    "preempted job runs again) has its own output: by default every run in turn, each\n"
    "after a line '==> job ID, run N <==' when there is more than one; --run N shows\n"
    "that run alone (--offset is then a byte offset into it). With -f, keep printing what\n"
    "the job writes until it ends.\n";

enum { L_FOLLOW = 1, L_STDERR, L_OFFSET, L_RUN };

static const struct opt_def logs_opts[] = {
    {L_FOLLOW, 'f', "follow", OPT_NONE},
    {L_STDERR, 0, "stderr", OPT_NONE},
    {L_OFFSET, 0, "offset", OPT_VALUE},
    {L_RUN, 0, "run", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

enum { FOLLOW_TIMEOUT_MS = 40000 };

struct logs_read {
    int64_t id;
    const char *stream;
    bool follow, one_run; /* --run: that run alone, no separator */
    int run;
    int64_t offset;
    int64_t runs; /* the job's runs so far (X-Docket-Runs), -1 unknown */
    bool eof, header_done;
};

static int fetch(struct cli *c, struct logs_read *l)
{
    struct client_reply r;
    char path[220];
    int rc;

    snprintf(path, sizeof(path), "/v1/jobs/%lld/logs?stream=%s&run=%d&offset=%lld%s",
             (long long)l->id, l->stream, l->run, (long long)l->offset,
             l->follow ? "&follow=1" : "");
    rc = cli_call_raw(c, "GET", path, NULL, NULL, 0, l->follow ? FOLLOW_TIMEOUT_MS : 0, &r);
    if (rc)
        return rc;
    if (r.runs >= 0)
        l->runs = r.runs;
    int64_t next = r.offset >= 0 ? r.offset : l->offset + (int64_t)r.len;
    if (c->json) {
        json_t *o = json_pack("{s:I,s:i,s:s,s:I,s:I,s:b,s:s%}", "job", (json_int_t)l->id, "run",
                              l->run, "stream", l->stream, "from", (json_int_t)l->offset, "offset",
                              (json_int_t)next, "eof", r.eof, "data", r.body ? r.body : "", r.len);
        if (!o) {
            client_reply_release(&r);
            return cli_fail(c, "the output is not UTF-8 text: read it without --json");
        }
        cli_print_json(c, o);
        json_decref(o);
    } else {
        /* the separator goes before a run's first bytes once the job has had several */
        if (!l->one_run && !l->header_done && (l->run > 1 || l->runs > 1) &&
            (r.len > 0 || r.eof || !l->follow)) {
            fprintf(c->out, "==> job %lld, run %d <==\n", (long long)l->id, l->run);
            l->header_done = true;
        }
        fwrite(r.body, 1, r.len, c->out);
        fflush(c->out);
    }
    l->offset = next;
    l->eof = r.eof;
    client_reply_release(&r);
    return 0;
}

int cmd_logs(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    struct logs_read l = {.stream = "stdout", .run = 1, .runs = -1};
    int64_t run = 0;
    int rc = cli_parse_args(c, argc, argv, logs_opts, 1, &a);

    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 0; i < a.nopts; i++) {
        if (a.ids[i] == L_FOLLOW)
            l.follow = true;
        else if (a.ids[i] == L_STDERR)
            l.stream = "stderr";
        else if (a.ids[i] == L_OFFSET && parse_int64(a.vals[i], 0, INT64_MAX, &l.offset) < 0)
            return cli_usage_error(c, "--offset: want a byte offset, not '%.40s'", a.vals[i]);
        else if (a.ids[i] == L_RUN && parse_int64(a.vals[i], 1, INT32_MAX, &run) < 0)
            return cli_usage_error(c, "--run: want a run number (1, 2, ...), not '%.40s'",
                                   a.vals[i]);
    }
    if (a.npos != 1)
        return cli_usage_error(c, "which job? (docket logs JOB)");
    if ((rc = cli_job_id(c, a.pos[0], &l.id)))
        return rc;
    if (run > 0) {
        l.run = (int)run;
        l.one_run = true;
    }
    /* each run: without -f every page there is now (until a page adds nothing); with -f
     * until the run's output is complete (eof). Then the next run, if the job has one. */
    for (;;) {
        int64_t before = l.offset;
        if ((rc = fetch(c, &l)))
            return rc;
        if (!l.eof && (l.follow || l.offset != before))
            continue;
        if (l.one_run || l.runs <= l.run)
            break;
        l.run++;
        l.offset = 0;
        l.header_done = false;
    }
    return EXIT_OK;
}
