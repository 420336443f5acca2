/*
 * submit.c - `docket submit`: flags and `-- COMMAND...`, or a batch script whose #DOCKET
 * (and #SBATCH) lines carry the same flags; the flags on the command line win.
 * POST /v1/jobs (docs/api.md); the flag mapping is in spec.c, the #SBATCH one in sbatch.c
 * (both in docs/cli.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/slurm.h"
#include "cli/spec.h"
#include "util/dbuf.h"
#include "util/str.h"

enum { MAX_SCRIPT = 1 << 20, HELP_SHOWN = -1 };

const char cmd_submit_usage[] =
    "usage: docket submit [FLAGS] -- COMMAND [ARGS...]\n"
    "       docket submit [FLAGS] SCRIPT      (SCRIPT may be - for stdin)\n"
    "\n"
    "Submit a job. A script's #DOCKET lines take the flags below; #SBATCH lines are\n"
    "understood too (see docs/cli.md). Flags given here override the script's.\n"
    "\n"
    "  -p, -A, --project NAME project to charge (default: your default project)\n"
    "      --tier NAME        priority tier (at most the project's)\n"
    "  -t TIME|TIER           sbatch's -t: a time limit when it reads as one (1:00:00),\n"
    "                         else a tier\n"
    "      --class NAME       training, experiment, exploration, interactive, service\n"
    "      --template NAME[@VERSION]  run in this environment template (docket templates;\n"
    "                         default: your project's or class's, if it has one)\n"
    "      --image REF        run in a container of this image: oci-layout:/PATH[:TAG]\n"
    "                         or docker://NAME[:TAG] (also --container-image)\n"
    "      --mount SRC:DST[:ro]  more of the node in the container, comma-separated, from\n"
    "                         the workdir or a storage area (also --container-mounts)\n"
    "      --container-workdir DIR  the working directory in the container\n"
    "      --registry-auth SECRET  the project secret holding the registry's credentials\n"
    "                         for a docker:// image (skopeo's auth.json format)\n"
    "      --container-env NAME[,NAME]  pass these variables of this shell\n"
    "  -g, --gpus N|NxTYPE    GPUs per node (e.g. 8 or 8xH100-80GB)\n"
    "      --gpu-type TYPE    only nodes with this GPU type\n"
    "  -c, --cpus N           CPUs per node\n"
    "  -m, --mem SIZE         memory per node (512M, 32G)\n"
    "  -N, --nodes N          nodes (more than 1: all at once, a gang)\n"
    "      --time DURATION    time limit (4h, 90m, 2d, or Slurm's 1-12:00:00)\n"
    "  -J, --name NAME        job name (default: the script's or command's name)\n"
    "      --env K=V          environment variable (repeat; --env K passes yours)\n"
    "      --secret NAME      the project's secret NAME as the variable NAME (repeat;\n"
    "                         docket secret set PROJECT NAME stores it)\n"
    "      --storage POOLS    storage pools the job needs (hot,cold): it runs only on\n"
    "                         nodes that have them; DOCKET_PROJECT_DIR and\n"
    "                         DOCKET_STORAGE_<POOL> name the project's areas\n"
    "      --after JOB        start after JOB completed successfully (afterok)\n"
    "      --dependency SPEC  afterok:1:2,afterany:3,afternotok:4,after:5 (all of them)\n"
    "                         or afterok:1?afterok:2 (any one of them)\n"
    "      --array SPEC       one job per index: 0-99%8 (at most 8 at once)\n"
    "      --signal SIG@T     checkpoint signal and grace before the kill (USR1@120s)\n"
    "      --retries N        automatic retries (idempotent experiment/exploration)\n"
    "      --switches N[@T]   a gang on at most N switches (1: one switch, waiting for\n"
    "                         it; docs/scheduling.md, Topology)\n"
    "      --idempotent       safe to run twice\n"
    "      --no-requeue       end the job instead of requeueing it after preemption\n"
    "      --label K=V        label the job (repeat)\n"
    "      --select K=V       only nodes labelled K=V; K!=V: not V (repeat)\n"
    "  -C, --constraint EXPR  node features, Slurm's grammar: a100&ib, a100|h100\n"
    "      --workdir DIR      working directory (default: the current one)\n"
    "  -o, --output PATH      stdout file on the node (%j id, %A array, %a index, %x name,\n"
    "                         %u user, %N node: docs/slurm.md)\n"
    "  -e, --error PATH       stderr file on the node\n"
    "      --wrap CMD         run CMD under /bin/sh (sbatch --wrap)\n"
    "      --begin DELAY      not before DELAY from now (10m)\n"
    "      --hold             submit held (docket release JOB to let it run)\n"
    "      --parsable         print only the job id\n"
    "      --dry-run          print the request instead of sending it\n"
    "      --json             print the reply as JSON\n";

struct submit_flags {
    bool parsable, dry_run;
    const char *wrap;
};

static void warn_cb(void *arg, const char *msg)
{
    cli_warn(arg, "%s", msg);
}

static int read_script(struct cli *c, const char *path, struct dbuf *b)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    char chunk[8192];
    size_t n;

    if (!f)
        return cli_fail(c, "cannot read script '%s': %s", path, strerror(errno));
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        dbuf_append(b, chunk, n);
    if (f != stdin)
        fclose(f);
    if (b->failed)
        return cli_fail(c, "script '%s' is larger than 1 MiB", path);
    if (strlen(b->data) != b->len)
        return cli_fail(c, "script '%s' is not text (it contains a NUL byte)", path);
    if (b->len == 0)
        return cli_fail(c, "script '%s' is empty", path);
    return 0;
}

/* Defaults the user expects from sbatch: name from the program, workdir = here. */
static void defaults(json_t *spec, const char *prog)
{
    char cwd[4096];
    const char *slash;
    const char *wd = json_string_value(json_object_get(spec, "workdir"));

    if (!json_object_get(spec, "name") && prog) {
        slash = strrchr(prog, '/');
        if (strcmp(prog, "-") && str_is_name(slash ? slash + 1 : prog))
            json_object_set_new(spec, "name", json_string(slash ? slash + 1 : prog));
    }
    if (!getcwd(cwd, sizeof(cwd)))
        return;
    if (!wd) {
        json_object_set_new(spec, "workdir", json_string(cwd));
    } else if (wd[0] != '/') {
        char abs[8192];
        snprintf(abs, sizeof(abs), "%s/%s", cwd, wd);
        json_object_set_new(spec, "workdir", json_string(abs));
    }
}

static int print_reply(struct cli *c, const json_t *reply, const struct submit_flags *f)
{
    const json_t *job = json_object_get(reply, "job");
    const json_t *jobs = json_object_get(reply, "jobs");

    if (c->json) {
        cli_print_json(c, reply);
    } else if (job) {
        if (f->parsable)
            fprintf(c->out, "%lld\n", (long long)jint(job, "id", 0));
        else
            fprintf(c->out, "submitted job %lld (project %s, tier %s, %s)\n",
                    (long long)jint(job, "id", 0), jstr(job, "project"), jstr(job, "tier"),
                    jstr(job, "state"));
    } else if (json_is_array(jobs)) {
        size_t n = json_array_size(jobs);
        int64_t first = jint(json_array_get(jobs, 0), "id", 0);
        int64_t last = jint(json_array_get(jobs, n ? n - 1 : 0), "id", 0);
        if (f->parsable)
            for (size_t i = 0; i < n; i++)
                fprintf(c->out, "%lld\n", (long long)jint(json_array_get(jobs, i), "id", 0));
        else
            fprintf(c->out, "submitted array %lld: %zu jobs (%lld-%lld)\n",
                    (long long)jint(reply, "array_id", 0), n, (long long)first, (long long)last);
    }
    return EXIT_OK;
}

/* Parse the flags into `flags_spec`; leaves it at the first positional or after "--". */
static int parse_flags(struct cli *c, struct opt_iter *it, json_t *flags_spec,
                       struct submit_flags *f, const char **script)
{
    const char *v;
    char err[512];
    int id, rc;

    *script = NULL;
    while ((id = opt_next(it, spec_submit_opts, &v, err, sizeof(err))) != OPT_DONE) {
        switch (id) {
        case SO_JSON:
            c->json = true;
            break;
        case SO_HELP:
            fputs(c->usage, c->out);
            return HELP_SHOWN;
        case SO_PARSABLE:
            f->parsable = true;
            break;
        case SO_DRY_RUN:
            f->dry_run = true;
            break;
        case SO_WRAP:
            f->wrap = v;
            break;
        case OPT_ERROR:
            return cli_usage_error(c, "%s", err);
        case OPT_POSITIONAL:
            *script = v;
            return 0;
        default:
            rc = spec_apply(flags_spec, id, v, err, sizeof(err));
            if (rc)
                return cli_usage_error(c, "%s", err);
        }
    }
    return 0;
}

static int build(struct cli *c, int argc, char **argv, json_t *spec, struct submit_flags *f)
{
    json_t *flags_spec = json_object();
    struct opt_iter it;
    const char *script, *prog = NULL;
    struct spec_env env = {c->cfg.partition_map, warn_cb, c, false};
    char err[512];
    struct dbuf b;
    int rc;

    opt_iter_init(&it, argc, argv, 1);
    dbuf_init(&b, MAX_SCRIPT);
    rc = parse_flags(c, &it, flags_spec, f, &script);
    if (rc)
        goto out;
    if (script) {
        if (it.index < argc) {
            rc = cli_usage_error(c,
                                 "arguments after the script '%s' are not passed to it; "
                                 "to run a command write `docket submit [FLAGS] -- %s ...`",
                                 script, script);
            goto out;
        }
        if ((rc = read_script(c, script, &b)))
            goto out;
        if (spec_parse_script(spec, b.data, b.len, &env, err, sizeof(err)) < 0) {
            rc = cli_usage_error(c, "%s: %s", script, err);
            goto out;
        }
        json_object_set_new(spec, "script", json_stringn(b.data, b.len));
        prog = script;
    } else if (f->wrap) {
        /* sbatch --wrap: the command under /bin/sh, as a script */
        char *text = NULL;
        if (asprintf(&text, "#!/bin/sh\n%s\n", f->wrap) < 0 || it.index < argc) {
            free(text);
            rc = cli_usage_error(c, "--wrap takes the whole command; nothing may follow it");
            goto out;
        }
        json_object_set_new(spec, "script", json_string(text));
        free(text);
        prog = "wrap";
    } else if (it.dashdash && it.index < argc) {
        json_t *cmd = json_array();
        for (int i = it.index; i < argc; i++)
            json_array_append_new(cmd, json_string(argv[i]));
        json_object_set_new(spec, "command", cmd);
        prog = argv[it.index];
    } else {
        rc = cli_usage_error(c, "nothing to run: give a script, or -- COMMAND [ARGS...]");
        goto out;
    }
    spec_merge(spec, flags_spec);
    if (spec_finish(spec, err, sizeof(err)) < 0) {
        rc = cli_usage_error(c, "%s", err);
        goto out;
    }
    defaults(spec, prog);
    json_t *cli = spec_take_cli(spec);
    rc = slurm_prepare(c, spec, cli, f->dry_run);
    json_decref(cli);
out:
    dbuf_release(&b);
    json_decref(flags_spec);
    return rc;
}

int cmd_submit(struct cli *c, int argc, char **argv)
{
    struct submit_flags f = {false, false, NULL};
    json_t *spec = json_object(), *reply = NULL;
    int rc = build(c, argc, argv, spec, &f);

    if (rc == HELP_SHOWN) {
        rc = EXIT_OK;
    } else if (rc == 0 && f.dry_run) {
        cli_print_json(c, spec);
    } else if (rc == 0) {
        rc = cli_submit_call(c, spec, &reply);
        if (rc == 0)
            rc = print_reply(c, reply, &f);
    }
    json_decref(reply);
    json_decref(spec);
    return rc;
}
