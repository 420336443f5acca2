/*
 * logs.c - `docket logs JOB [-f] [--stderr]`: a job's output as the controller holds it
 * (GET /v1/jobs/ID/logs, long-polled with follow=1 until X-Docket-Eof).
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli/cli.h"
#include "util/parse.h"

const char cmd_logs_usage[] =
    "usage: docket logs JOB [-f] [--stderr] [--offset N] [--json]\n"
    "\n"
    "A job's output (stdout, or stderr with --stderr), all of it: the controller answers\n"
    "in pages of 1 MiB, read one after the other. With -f, keep printing what the job\n"
    "writes until it ends.\n";

enum { L_FOLLOW = 1, L_STDERR, L_OFFSET };

static const struct opt_def logs_opts[] = {
    {L_FOLLOW, 'f', "follow", OPT_NONE},
    {L_STDERR, 0, "stderr", OPT_NONE},
    {L_OFFSET, 0, "offset", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

enum { FOLLOW_TIMEOUT_MS = 40000 };

static int fetch(struct cli *c, int64_t id, const char *stream, int64_t *offset, bool follow,
                 bool *eof)
{
    struct client_reply r;
    char path[200];
    int rc;

    snprintf(path, sizeof(path), "/v1/jobs/%lld/logs?stream=%s&offset=%lld%s", (long long)id,
             stream, (long long)*offset, follow ? "&follow=1" : "");
    rc = cli_call_raw(c, "GET", path, NULL, NULL, 0, follow ? FOLLOW_TIMEOUT_MS : 0, &r);
    if (rc)
        return rc;
    if (c->json) {
        json_t *o = json_pack("{s:I,s:s,s:I,s:I,s:b,s:s%}", "job", (json_int_t)id, "stream", stream,
                              "from", (json_int_t)*offset, "offset",
                              (json_int_t)(r.offset >= 0 ? r.offset : *offset + (int64_t)r.len),
                              "eof", r.eof, "data", r.body ? r.body : "", r.len);
        if (!o) {
            client_reply_release(&r);
            return cli_fail(c, "the output is not UTF-8 text: read it without --json");
        }
        cli_print_json(c, o);
        json_decref(o);
    } else {
        fwrite(r.body, 1, r.len, c->out);
        fflush(c->out);
    }
    *offset = r.offset >= 0 ? r.offset : *offset + (int64_t)r.len;
    *eof = r.eof;
    client_reply_release(&r);
    return 0;
}

int cmd_logs(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    const char *stream = "stdout";
    bool follow = false, eof = false;
    int64_t id, offset = 0;
    int rc = cli_parse_args(c, argc, argv, logs_opts, 1, &a);

    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 0; i < a.nopts; i++) {
        if (a.ids[i] == L_FOLLOW)
            follow = true;
        else if (a.ids[i] == L_STDERR)
            stream = "stderr";
        else if (a.ids[i] == L_OFFSET && parse_int64(a.vals[i], 0, INT64_MAX, &offset) < 0)
            return cli_usage_error(c, "--offset: want a byte offset, not '%.40s'", a.vals[i]);
    }
    if (a.npos != 1)
        return cli_usage_error(c, "which job? (docket logs JOB)");
    if ((rc = cli_job_id(c, a.pos[0], &id)))
        return rc;
    /* without -f: every page there is now (until the end of the log, or a page that adds
     * nothing); with -f: until the job has ended and its log is read to the end */
    for (;;) {
        int64_t before = offset;
        if ((rc = fetch(c, id, stream, &offset, follow, &eof)))
            return rc;
        if (eof || (!follow && offset == before))
            break;
    }
    return EXIT_OK;
}
