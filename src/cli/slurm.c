/*
 * slurm.c - `docket sbatch` and the submitter's side of a Slurm-style job (slurm.h).
 * The options themselves are read by sbatch.c (spec_sbatch_args), as on #SBATCH lines.
 */
#define _GNU_SOURCE
#include "cli/slurm.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli/spec.h"
#include "protocol/proto.h"
#include "util/dbuf.h"
#include "util/str.h"

extern char **environ;

enum { MAX_ENV = 1000, MAX_SCRIPT = 1 << 20 };

/* Variables that belong to the submitting shell or to another scheduler's job. Of
 * docket's own, the job keeps only where the API is (so that sbatch, squeue ... work in
 * it): never the token, which would be stored with the job. */
static bool env_skipped(const char *name, size_t n)
{
    if ((n == 10 && !strncmp(name, "DOCKET_URL", n)) ||
        (n == 20 && !strncmp(name, "DOCKET_PARTITION_MAP", n)))
        return false;
    static const char *const exact[] = {"PWD",
                                        "OLDPWD",
                                        "SHLVL",
                                        "_",
                                        "TMPDIR",
                                        "HOSTNAME",
                                        "CUDA_VISIBLE_DEVICES",
                                        "NVIDIA_VISIBLE_DEVICES",
                                        "ROCR_VISIBLE_DEVICES",
                                        "DOCKET_TOKEN"};
    static const char *const prefix[] = {"SLURM_", "DOCKET_", "PMI_", "PMIX_"};

    for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
        if (strlen(exact[i]) == n && !strncmp(name, exact[i], n))
            return true;
    for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
        if (n >= strlen(prefix[i]) && !strncmp(name, prefix[i], strlen(prefix[i])))
            return true;
    return false;
}

static bool env_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 255 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= '0' && s[i] <= '9')))
            return false;
    return true;
}

void slurm_export_env(json_t *spec, char **envp)
{
    json_t *env = json_object_get(spec, "env");

    if (!json_is_object(env)) {
        env = json_object();
        json_object_set_new(spec, "env", env);
    }
    for (char **e = envp; e && *e && json_object_size(env) < MAX_ENV; e++) {
        const char *eq = strchr(*e, '=');
        size_t n = eq ? (size_t)(eq - *e) : 0;
        char name[256];

        if (!eq || n >= sizeof(name) || env_skipped(*e, n) || strlen(eq + 1) > 65536)
            continue;
        memcpy(name, *e, n);
        name[n] = '\0';
        /* bash's exported functions (BASH_FUNC_module%%) go too, as --export=ALL carries
         * them in Slurm: the site's `module` reaches the job */
        if (!env_name_ok(*e, n) && !proto_exported_function_name(name))
            continue;
        if (!json_object_get(env, name))
            json_object_set_new(env, name, json_string(eq + 1));
    }
}

/* The GPU type a site's alias names (the policy's gpu_aliases, any case), else the name. */
static const char *type_through_aliases(struct cli *c, const char *type, json_t **policy)
{
    const char *k;
    json_t *v;
    if (!type || cli_call(c, "GET", "/v1/policy", NULL, policy) != 0)
        return type;
    json_object_foreach(json_object_get(*policy, "gpu_aliases"), k, v) {
        if (strcasecmp(k, type) == 0)
            return json_string_value(v);
    }
    return type;
}

/* The names of the nodes the job's partition holds now (the one it names, else the
 * site's default, where Slurm-style jobs go), from GET /v1/partitions; NULL when the
 * site has none, or the partition is unknown (docketd refuses it later). */
static json_t *partition_node_names(struct cli *c, const json_t *spec)
{
    const char *want = json_string_value(json_object_get(spec, "partition"));
    json_t *reply = NULL, *names = NULL;
    if (cli_call(c, "GET", "/v1/partitions", NULL, &reply) != 0) {
        json_decref(reply);
        return NULL;
    }
    const json_t *parts = json_object_get(reply, "partitions");
    for (size_t i = 0; i < json_array_size(parts) && !names; i++) {
        const json_t *p = json_array_get(parts, i);
        if (want ? !strcmp(jstr(p, "name"), want) : json_is_true(json_object_get(p, "default")))
            names = json_incref(json_object_get(p, "node_names"));
    }
    json_decref(reply);
    return names;
}

/* Node N may hold the job: in its partition's node set (NAMES, NULL: any) and with the
 * labels its selectors ask for ("!v": any value but v). */
static bool node_may_hold(const json_t *n, const json_t *names, const json_t *selectors)
{
    const char *k;
    const json_t *v;
    bool listed = names == NULL;
    for (size_t i = 0; names && i < json_array_size(names) && !listed; i++) {
        const char *name = json_string_value(json_array_get(names, i));
        listed = name && !strcmp(name, jstr(n, "name"));
    }
    if (!listed)
        return false;
    json_object_foreach((json_t *)selectors, k, v) {
        const char *want = json_string_value(v), *have = jstr(json_object_get(n, "labels"), k);
        if (!want || (want[0] == '!' ? !strcmp(have, want + 1) : strcmp(have, want)))
            return false;
    }
    return true;
}

/* The largest node (of the requested GPU type, in any case or through a site's alias) of
 * the job's partition, among those its selectors allow, gives what "all of a node" means
 * (`-p cpu --exclusive`: the CPU node's, not the largest GPU node's). */
static int whole_node(struct cli *c, json_t *spec, bool all)
{
    json_t *policy = NULL;
    const char *type =
        type_through_aliases(c, json_string_value(json_object_get(spec, "gpu_type")), &policy);
    json_t *reply = NULL, *nodes, *names = partition_node_names(c, spec);
    int64_t gpus = 0, cpus = 0, mem = 0;
    int rc = cli_get_pages(c, "/v1/nodes", "nodes", 0, &reply);

    if (rc) {
        json_decref(policy);
        json_decref(names);
        return rc;
    }
    nodes = json_object_get(reply, "nodes");
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        const json_t *n = json_array_get(nodes, i);
        if (type && strcasecmp(jstr(n, "gpu_type"), type))
            continue;
        if (!node_may_hold(n, names, json_object_get(spec, "selectors")))
            continue;
        if (jint(n, "mem_mb", 0) > mem)
            mem = jint(n, "mem_mb", 0);
        if (jint(n, "cpus", 0) > cpus)
            cpus = jint(n, "cpus", 0);
        if (jint(n, "gpus", 0) > gpus)
            gpus = jint(n, "gpus", 0);
    }
    json_decref(reply);
    if (mem <= 0) {
        rc = cli_fail(c, "--exclusive/--mem=0: no node%s%s%s to take whole; see %s",
                      type ? " of GPU type " : "", type ? type : "",
                      names ? " in the job's partition" : "", names ? "`sinfo`" : "`docket nodes`");
        json_decref(policy);
        json_decref(names);
        return rc;
    }
    json_decref(names);
    json_decref(policy);
    json_object_set_new(spec, "mem", json_integer(mem));
    if (all) {
        json_object_set_new(spec, "cpus", json_integer(cpus > 0 ? cpus : 1));
        json_object_set_new(spec, "gpus", json_integer(gpus));
    }
    return 0;
}

/* Slurm's defaults for what the job did not say: output slurm-%j.out (slurm-%A_%a.out
 * for an array) in the working directory, stderr with stdout. */
static void slurm_output_defaults(json_t *spec)
{
    if (!json_object_get(spec, "output"))
        json_object_set_new(
            spec, "output",
            json_string(json_object_get(spec, "array") ? "slurm-%A_%a.out" : "slurm-%j.out"));
    if (!json_object_get(spec, "error"))
        json_object_set(spec, "error", json_object_get(spec, "output"));
}

/* The live jobs of this user named `name` (singleton), as afterany dependencies. */
static int singleton_deps(struct cli *c, const json_t *spec, json_t *out)
{
    const struct passwd *pw = getpwuid(getuid());
    const char *name = json_string_value(json_object_get(spec, "name"));
    char *q = NULL;
    json_t *reply = NULL;
    if (!name || !pw)
        return cli_usage_error(c, "--dependency=singleton: the job needs a name (-J)");
    if (asprintf(&q, "/v1/jobs?state=active&fields=id&user=%s&name=%s", pw->pw_name, name) < 0)
        return cli_fail(c, "out of memory");
    int rc = cli_get_pages(c, q, "jobs", 0, &reply);
    free(q);
    json_t *jobs = json_object_get(reply, "jobs");
    for (size_t i = 0; rc == 0 && i < json_array_size(jobs); i++)
        json_array_append_new(out, json_pack("{s:s,s:I}", "type", "afterany", "job",
                                             jint(json_array_get(jobs, i), "id", 0)));
    json_decref(reply);
    return rc;
}

/* One dependency of Slurm's into docket's (man sbatch, -d): ARRAY_ID is the whole array,
 * one dependency that docketd meets when every task meets it ("array": true), and
 * ARRAY_ID_INDEX that task. after:ID goes as it is: docketd meets it once ID has started
 * (or ended without starting). */
static int resolve_dep(struct cli *c, const json_t *d, json_t *out)
{
    const char *type = jstr(d, "type");
    int64_t job = jint(d, "job", 0), idx = jint(d, "array_index", -1);
    char path[160];
    json_t *reply = NULL;
    int rc;
    if (idx < 0) { /* an array's first task names the array: one row says it is one */
        snprintf(path, sizeof(path), "/v1/jobs?array_id=%lld&state=all&fields=id&limit=1",
                 (long long)job);
        if ((rc = cli_call(c, "GET", path, NULL, &reply)))
            return rc;
        bool array = json_array_size(json_object_get(reply, "jobs")) > 0;
        json_decref(reply);
        json_t *dep = json_pack("{s:s,s:I}", "type", type, "job", (json_int_t)job);
        if (array)
            json_object_set_new(dep, "array", json_true());
        json_array_append_new(out, dep);
        return 0;
    }
    snprintf(path, sizeof(path), "/v1/jobs?array_id=%lld&state=all&fields=id,array_index",
             (long long)job);
    if ((rc = cli_get_pages(c, path, "jobs", 0, &reply)))
        return rc;
    json_t *tasks = json_object_get(reply, "jobs");
    size_t before = json_array_size(out);
    for (size_t i = 0; i < json_array_size(tasks); i++) {
        const json_t *t = json_array_get(tasks, i);
        if (jint(t, "array_index", -1) == idx) {
            json_array_append_new(out,
                                  json_pack("{s:s,s:I}", "type", type, "job", jint(t, "id", 0)));
            break;
        }
    }
    json_decref(reply);
    if (json_array_size(out) > before)
        return 0;
    return cli_usage_error(c, "--dependency: job %lld_%lld: no such array task", (long long)job,
                           (long long)idx);
}

/* Slurm's dependencies as the API takes them: whole arrays, singleton, after. */
static int slurm_deps(struct cli *c, json_t *spec, bool dry_run)
{
    json_t *deps = json_object_get(spec, "deps");
    bool slurmish = false;
    for (size_t i = 0; i < json_array_size(deps); i++) {
        const json_t *d = json_array_get(deps, i);
        slurmish = slurmish || json_object_get(d, "array_index") ||
                   !strcmp(jstr(d, "type"), "singleton") || !strcmp(jstr(d, "type"), "after");
    }
    if (!json_array_size(deps) || (dry_run && slurmish))
        return 0;
    json_t *out = json_array();
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < json_array_size(deps); i++) {
        const json_t *d = json_array_get(deps, i);
        rc = !strcmp(jstr(d, "type"), "singleton") ? singleton_deps(c, spec, out)
                                                   : resolve_dep(c, d, out);
    }
    if (rc == 0 && json_array_size(out) > SPEC_MAX_DEPS)
        rc = cli_usage_error(c,
                             "--dependency names %zu jobs (a whole array counts once): "
                             "docket takes at most %d",
                             json_array_size(out), SPEC_MAX_DEPS);
    if (rc == 0)
        json_object_set(spec, "deps", out);
    json_decref(out);
    return rc;
}

int slurm_resolve_deps(struct cli *c, json_t *spec, int64_t self)
{
    json_t *deps = json_object_get(spec, "deps");
    bool singleton = false;
    for (size_t i = 0; i < json_array_size(deps); i++)
        singleton = singleton || !strcmp(jstr(json_array_get(deps, i), "type"), "singleton");
    if (singleton && self > 0 && !json_object_get(spec, "name")) { /* the job's own name */
        char path[64];
        json_t *reply = NULL;
        snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)self);
        int rc = cli_call(c, "GET", path, NULL, &reply);
        if (rc)
            return rc;
        json_object_set_new(spec, "name", json_string(jstr(json_object_get(reply, "job"), "name")));
        json_decref(reply);
    }
    int rc = slurm_deps(c, spec, false);
    deps = json_object_get(spec, "deps");
    for (size_t i = json_array_size(deps); rc == 0 && self > 0 && i-- > 0;)
        if (jint(json_array_get(deps, i), "job", 0) == self)
            json_array_remove(deps, i); /* singleton finds the job itself among its name's */
    return rc;
}

int slurm_prepare(struct cli *c, json_t *spec, const json_t *cli, bool dry_run)
{
    json_t *slurm = json_object_get(spec, "slurm");
    json_t *all = json_object_get(cli, "export_all");
    char cwd[4096];
    int rc = slurm_deps(c, spec, dry_run);

    if (rc || !json_is_object(slurm))
        return rc;
    if (!all || json_is_true(all))
        slurm_export_env(spec, environ);
    if (getcwd(cwd, sizeof(cwd)))
        json_object_set_new(slurm, "submit_dir", json_string(cwd));
    slurm_output_defaults(spec);
    if (jbool(cli, "whole_node") || jbool(cli, "whole_mem")) {
        if (dry_run) {
            cli_warn(c, "--dry-run: whole nodes (--exclusive, --mem=0) are sized at submission");
            return 0;
        }
        return whole_node(c, spec, jbool(cli, "whole_node"));
    }
    return 0;
}

const char cmd_sbatch_usage[] =
    "usage: docket sbatch [SBATCH OPTIONS] [SCRIPT [ARG...]]\n"
    "       sbatch [SBATCH OPTIONS] [SCRIPT [ARG...]] (through `make install-slurm-compat`)\n"
    "\n"
    "Submit a batch script as Slurm's sbatch does: its #SBATCH lines, then these options,\n"
    "which win. The script is read from stdin when none is given. Every sbatch option is\n"
    "known; docs/slurm.md says what each becomes, and which are refused and why.\n"
    "\n"
    "  --wrap CMD      run CMD under /bin/sh instead of a script\n"
    "  --parsable      print only the job id (an array's id for an array)\n"
    "  --test-only     check and print the request, submit nothing\n"
    "  -Q, --quiet     print nothing on success\n"
    "  -W, --wait      wait for the job (all of an array) to end; exit with its status\n"
    "SCRIPT ARG... passes the arguments to the script ($1 ...), as sbatch does.\n";

struct sbatch_run {
    const char *script; /* path, or NULL */
    struct dbuf text;
    json_t *spec, *cli;
};

/* The script: --wrap's command, a file, or stdin. */
static int sbatch_script(struct cli *c, struct sbatch_run *r)
{
    const char *wrap = json_string_value(json_object_get(r->cli, "wrap"));
    FILE *f;
    char chunk[8192];
    size_t n;

    if (wrap) {
        if (r->script)
            return cli_usage_error(c, "--wrap and a script '%s' cannot go together", r->script);
        dbuf_printf(&r->text, "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n%s\n",
                    wrap);
        return r->text.failed ? cli_fail(c, "--wrap: the command is too long") : 0;
    }
    f = r->script && strcmp(r->script, "-") ? fopen(r->script, "r") : stdin;
    if (!f)
        return cli_fail(c, "unable to open file %s: %s", r->script, strerror(errno));
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        dbuf_append(&r->text, chunk, n);
    if (f != stdin)
        fclose(f);
    if (r->text.failed || r->text.len == 0 || strlen(r->text.data) != r->text.len)
        return cli_fail(c, "%s: the script is empty, not text, or larger than 1 MiB",
                        r->script ? r->script : "stdin");
    return 0;
}

static void sbatch_warn(void *arg, const char *msg)
{
    cli_warn(arg, "%s", msg);
}

/* The script's arguments, in spec.slurm.args (the agent passes them to the script). */
static int script_args(struct cli *c, json_t *spec, char **args, int n)
{
    json_t *slurm = json_object_get(spec, "slurm");
    if (!json_is_object(slurm))
        return cli_usage_error(c, "script arguments go with #SBATCH scripts only");
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, json_string(args[i]));
    json_object_set_new(slurm, "args", list);
    return 0;
}

static int sbatch_build(struct cli *c, int argc, char **argv, struct sbatch_run *r, bool *quiet)
{
    struct spec_env env = {c->cfg.partition_map, sbatch_warn, c, true};
    json_t *flags = json_object();
    char err[512];
    int stop = 0, rc = 0;

    if (spec_sbatch_args(flags, argv + 1, argc - 1, &env, &stop, err, sizeof(err)) < 0) {
        json_decref(flags);
        return cli_usage_error(c, "%s", err);
    }
    stop++; /* argv[0] is the verb */
    r->script = stop < argc ? argv[stop] : NULL;
    r->cli = json_incref(json_object_get(flags, "__cli"));
    if (!r->cli)
        r->cli = json_object();
    *quiet = json_object_get(r->cli, "quiet") != NULL;
    if (json_object_get(r->cli, "help") || json_object_get(r->cli, "usage") ||
        json_object_get(r->cli, "version")) {
        /* the version in the shape scripts parse ("slurm X.Y.Z"), saying what it is */
        fputs(json_object_get(r->cli, "version") ? "slurm 23.11.0 (docket " DOCKET_VERSION ")\n"
                                                 : c->usage,
              c->out);
        json_decref(flags);
        return -1;
    }
    if (stop + 1 < argc && json_object_get(r->cli, "wrap"))
        rc = cli_usage_error(c, "Script arguments not permitted with --wrap option");
    if (rc == 0)
        rc = sbatch_script(c, r);
    if (rc == 0 &&
        spec_parse_script(r->spec, r->text.data, r->text.len, &env, err, sizeof(err)) < 0)
        rc = cli_usage_error(c, "%s: %s", r->script ? r->script : "script", err);
    if (rc == 0 && strncmp(r->text.data, "#!", 2))
        rc = cli_usage_error(c, "This does not look like a batch script. The first line must "
                                "start with #! followed by the path to an interpreter "
                                "(e.g. #!/bin/sh)");
    if (rc == 0) {
        spec_merge(r->spec, flags);
        if (spec_slurm_finish(r->spec, err, sizeof(err)) < 0)
            rc = cli_usage_error(c, "%s", err);
    }
    if (rc == 0 && stop + 1 < argc) /* sbatch job.sh ARG...: the script's $1 ... */
        rc = script_args(c, r->spec, argv + stop + 1, argc - stop - 1);
    json_decref(flags);
    return rc;
}

static void sbatch_defaults(struct sbatch_run *r)
{
    char cwd[4096];
    const char *name = r->script ? strrchr(r->script, '/') : NULL;

    name = name ? name + 1 : r->script;
    if (!json_object_get(r->spec, "name"))
        json_object_set_new(r->spec, "name",
                            json_string(json_object_get(r->cli, "wrap") ? "wrap"
                                        : name && str_is_name(name)     ? name
                                                                        : "sbatch"));
    if (!json_object_get(r->spec, "workdir") && getcwd(cwd, sizeof(cwd)))
        json_object_set_new(r->spec, "workdir", json_string(cwd));
    json_object_set_new(r->spec, "script", json_stringn(r->text.data, r->text.len));
}

/* A job's exit status as sbatch -W gives it: the code, 128 + N for signal N, 1 for any other
 * end that is not COMPLETED. -1 while the job has not ended. */
static int job_status(const json_t *j)
{
    static const char *const ends[] = {"COMPLETED", "FAILED",    "TIMEOUT",
                                       "CANCELLED", "NODE_FAIL", "OOM"};
    const char *state = jstr(j, "state");
    size_t k = 0;
    while (k < sizeof(ends) / sizeof(ends[0]) && strcmp(state, ends[k]))
        k++;
    if (k == sizeof(ends) / sizeof(ends[0]))
        return -1;
    const json_t *ex = json_object_get(j, "exit");
    int code = (int)jint(ex, "code", 0);
    if (!strcmp(jstr(ex, "kind"), "code") && (code || !strcmp(state, "COMPLETED")))
        return code & 255;
    if (!strcmp(jstr(ex, "kind"), "signal") && code > 0)
        return 128 + code;
    return strcmp(state, "COMPLETED") ? 1 : 0;
}

/* sbatch -W: wait for the job (every task of an array) to end; its exit status, the
 * highest of an array's (man sbatch, -W). Polled every second, then up to every 10. */
static int sbatch_wait(struct cli *c, int64_t id, bool array)
{
    char path[96];
    int delay = 1;
    if (array)
        snprintf(path, sizeof(path), "/v1/jobs?array_id=%lld&state=all", (long long)id);
    else
        snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)id);
    for (;;) {
        json_t *reply = NULL;
        int rc = array ? cli_get_pages(c, path, "jobs", 0, &reply)
                       : cli_call(c, "GET", path, NULL, &reply);
        if (rc) {
            json_decref(reply);
            return rc;
        }
        json_t *jobs = array ? json_object_get(reply, "jobs") : NULL;
        int worst = 0, n = array ? (int)json_array_size(jobs) : 1;
        for (int i = 0; i < n && worst >= 0; i++) {
            int st =
                job_status(array ? json_array_get(jobs, (size_t)i) : json_object_get(reply, "job"));
            worst = st < 0 ? -1 : st > worst ? st : worst;
        }
        json_decref(reply);
        if (worst >= 0 && n > 0)
            return worst;
        sleep((unsigned)delay);
        delay = delay < 10 ? delay + 1 : 10;
    }
}

int cmd_sbatch(struct cli *c, int argc, char **argv)
{
    struct sbatch_run r = {NULL, {0}, json_object(), NULL};
    json_t *reply = NULL, *cli_flags;
    bool quiet = false, test_only;
    int rc;

    dbuf_init(&r.text, MAX_SCRIPT);
    rc = sbatch_build(c, argc, argv, &r, &quiet);
    if (rc == -1) {
        rc = EXIT_OK;
        goto out;
    }
    cli_flags = spec_take_cli(r.spec);
    json_object_update(r.cli, cli_flags);
    json_decref(cli_flags);
    test_only = json_object_get(r.cli, "test-only") != NULL;
    if (rc == 0) {
        sbatch_defaults(&r);
        slurm_output_defaults(r.spec);
        rc = slurm_prepare(c, r.spec, r.cli, test_only);
    }
    if (rc == 0 && test_only) {
        cli_print_json(c, r.spec);
    } else if (rc == 0 && (rc = cli_submit_call(c, r.spec, &reply)) == 0) {
        json_t *job = json_object_get(reply, "job");
        int64_t id = job ? jint(job, "id", 0) : jint(reply, "array_id", 0);
        if (c->json)
            cli_print_json(c, reply);
        else if (json_object_get(r.cli, "parsable"))
            fprintf(c->out, "%lld\n", (long long)id);
        else if (!quiet)
            fprintf(c->out, "Submitted batch job %lld\n", (long long)id);
        if (json_object_get(r.cli, "wait")) {
            fflush(c->out);
            rc = sbatch_wait(c, id, job == NULL);
        }
    }
out:
    json_decref(reply);
    json_decref(r.spec);
    json_decref(r.cli);
    dbuf_release(&r.text);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Slurm's time arguments (sacct -S)                                                    */

/* "now", "now+N[unit]", "now-N[unit]" */
static int relative_time(const char *s, int64_t now_ms, int64_t *out)
{
    static const struct {
        const char *name;
        int64_t ms;
    } units[] = {{"seconds", 1000},    {"minutes", 60000},  {"hours", 3600000}, {"days", 86400000},
                 {"weeks", 604800000}, {"second", 1000},    {"minute", 60000},  {"hour", 3600000},
                 {"day", 86400000},    {"week", 604800000}, {"s", 1000},        {"m", 60000},
                 {"h", 3600000},       {"d", 86400000},     {"w", 604800000}};
    if (strncmp(s, "now", 3) != 0)
        return -1;
    s += 3;
    if (!*s) {
        *out = now_ms;
        return 0;
    }
    if (*s != '+' && *s != '-')
        return -1;
    int sign = *s++ == '-' ? -1 : 1;
    if (!isdigit((unsigned char)*s))
        return -1;
    char *end;
    long long n = strtoll(s, &end, 10);
    if (n < 0 || n > 100000000LL)
        return -1;
    int64_t unit = 1000;
    if (*end) {
        size_t k = 0;
        while (k < sizeof(units) / sizeof(units[0]) && strcmp(end, units[k].name) != 0)
            k++;
        if (k == sizeof(units) / sizeof(units[0]))
            return -1;
        unit = units[k].ms;
    }
    *out = now_ms + sign * (int64_t)n * unit;
    return 0;
}

/* Every character of s matched by the format (digits only where it says %d). */
static bool whole(const char *s, int consumed)
{
    return consumed > 0 && s[consumed] == '\0';
}

int slurm_time_parse(const char *s, int64_t now_ms, int64_t *out_ms)
{
    if (!s || !*s || strlen(s) > 64)
        return -1;
    if (relative_time(s, now_ms, out_ms) == 0)
        return 0;
    time_t now = (time_t)(now_ms / 1000);
    struct tm tm;
    if (!localtime_r(&now, &tm))
        return -1;
    tm.tm_sec = tm.tm_min = tm.tm_hour = 0; /* dates alone mean their midnight */
    tm.tm_isdst = -1;
    int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;
    if (!strcmp(s, "today") || !strcmp(s, "midnight")) {
        /* today 00:00 */
    } else if (!strcmp(s, "noon")) {
        tm.tm_hour = 12;
    } else if ((sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) == 6 &&
                whole(s, n)) ||
               (n = 0,
                sscanf(s, "%4d-%2d-%2dT%2d:%2d%n", &y, &mo, &d, &h, &mi, &n) == 5 && whole(s, n)) ||
               (n = 0, h = mi = sec = 0,
                sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && whole(s, n))) {
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        tm.tm_hour = h;
        tm.tm_min = mi;
        tm.tm_sec = sec;
    } else if ((n = 0, sscanf(s, "%2d:%2d:%2d%n", &h, &mi, &sec, &n) == 3 && whole(s, n)) ||
               (n = 0, sec = 0, sscanf(s, "%2d:%2d%n", &h, &mi, &n) == 2 && whole(s, n))) {
        tm.tm_hour = h;
        tm.tm_min = mi;
        tm.tm_sec = sec;
    } else if ((n = 0, sscanf(s, "%2d/%2d/%2d%n", &mo, &d, &y, &n) == 3 && whole(s, n)) ||
               (n = 0, y = -1, sscanf(s, "%2d/%2d%n", &mo, &d, &n) == 2 && whole(s, n))) {
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        if (y >= 0)
            tm.tm_year = 100 + y;
    } else if (strlen(s) == 4 || strlen(s) == 6) {
        for (const char *p = s; *p; p++)
            if (!isdigit((unsigned char)*p))
                return -1;
        mo = (s[0] - '0') * 10 + (s[1] - '0');
        d = (s[2] - '0') * 10 + (s[3] - '0');
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        if (s[4])
            tm.tm_year = 100 + (s[4] - '0') * 10 + (s[5] - '0');
    } else {
        return -1;
    }
    if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour < 0 ||
        tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 || tm.tm_sec < 0 || tm.tm_sec > 60 ||
        tm.tm_year < 70 || tm.tm_year > 1100)
        return -1;
    time_t t = mktime(&tm);
    if (t == (time_t)-1)
        return -1;
    *out_ms = (int64_t)t * 1000;
    return 0;
}
