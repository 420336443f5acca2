/*
 * slurmcmd.c - Slurm's everyday commands as thin clients of the API (docs/slurm.md):
 * `scontrol show hostnames|job`, `scontrol hold|release|requeue`, `scancel`, `squeue`
 * with Slurm's default columns and its -o/--format fields. Installed as links named
 * after them (make install-slurm-compat), and put on the PATH of Slurm-style jobs by the
 * agent. sbatch is slurm.c, srun srun.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/jobs.h"
#include "cli/slurm.h"
#include "util/dbuf.h"
#include "util/parse.h"
#include "util/str.h"

/* ------------------------------------------------------------------------------------ */
/* Host lists: "gpu[01-03,7],cpu1"                                                       */

/* One item of a host list: PREFIX[RANGES]SUFFIX or a plain name. */
static int expand_item(const char *item, FILE *out)
{
    const char *lb = strchr(item, '['), *rb = lb ? strchr(lb, ']') : NULL;
    char ranges[1024];
    char *save = NULL;

    if (!lb) {
        fprintf(out, "%s\n", item);
        return 0;
    }
    if (!rb || (size_t)(rb - lb - 1) >= sizeof(ranges))
        return -EINVAL;
    memcpy(ranges, lb + 1, (size_t)(rb - lb - 1));
    ranges[rb - lb - 1] = '\0';
    for (char *r = strtok_r(ranges, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(r, '-');
        int64_t a, b;
        int width = (int)(dash ? (size_t)(dash - r) : strlen(r));
        if (dash)
            *dash = '\0';
        if (parse_int64(r, 0, INT64_MAX / 2, &a) < 0 ||
            parse_int64(dash ? dash + 1 : r, a, a + 100000, &b) < 0)
            return -EINVAL;
        for (int64_t i = a; i <= b; i++)
            fprintf(out, "%.*s%0*lld%s\n", (int)(lb - item), item, width, (long long)i, rb + 1);
    }
    return 0;
}

int slurm_expand_hostlist(const char *list, FILE *out)
{
    char buf[8192];
    size_t start = 0;
    int depth = 0;

    if (str_copy(buf, sizeof(buf), list) < 0)
        return -EINVAL;
    for (size_t i = 0;; i++) {
        char ch = buf[i];
        if (ch == '[')
            depth++;
        else if (ch == ']')
            depth--;
        if ((ch == ',' && depth == 0) || ch == '\0') {
            buf[i] = '\0';
            if (i > start && expand_item(buf + start, out) < 0)
                return -EINVAL;
            start = i + 1;
        }
        if (ch == '\0')
            return 0;
    }
}

/* ------------------------------------------------------------------------------------ */
/* scontrol                                                                              */

const char cmd_scontrol_usage[] =
    "usage: scontrol show hostnames [LIST]     one host per line (default $SLURM_JOB_NODELIST)\n"
    "       scontrol show job ID               the job (docket show)\n"
    "       scontrol show node NAME            the node (docket nodes NAME)\n"
    "       scontrol hold|release|requeue ID...\n"
    "       scontrol update JobId=ID[,ID...] SPEC=VALUE...\n"
    "                 TimeLimit, JobName, Dependency, Partition, NumNodes, Features,\n"
    "                 Comment (a pending job; a running one only lowers TimeLimit)\n";

/* A job's partition as Slurm shows it: the site's partition it ran in (or the name -p
 * gave on a site without partitions), else "docket", sinfo's partition of every node;
 * the job's SLURM_JOB_PARTITION says the same (docs/slurm.md). */
static const char *job_partition(const json_t *j)
{
    const char *p = jstr(j, "partition");
    return p[0] ? p : "docket";
}

static int scontrol_show_job(struct cli *c, const char *id_s)
{
    int64_t id;
    json_t *reply = NULL;
    char path[64], nodes[1024];
    int rc = cli_job_id(c, id_s, &id);

    if (rc)
        return rc;
    snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)id);
    if ((rc = cli_call(c, "GET", path, NULL, &reply)))
        return rc;
    const json_t *j = json_object_get(reply, "job");
    jobs_nodelist(j, nodes, sizeof(nodes));
    fprintf(c->out,
            "JobId=%lld JobName=%s\n   UserId=%s Account=%s Partition=%s QOS=%s\n"
            "   JobState=%s Reason=%s\n   NumNodes=%lld NumCPUs=%lld TRES=gres/gpu=%lld\n"
            "   TimeLimit=%lld NodeList=%s\n   WorkDir=%s\n   StdOut=%s\n",
            (long long)jint(j, "id", 0), jstr(j, "name"), jstr(j, "user"), jstr(j, "project"),
            job_partition(j), jstr(j, "class"), jstr(j, "state"),
            jstr(j, "reason")[0] ? jstr(j, "reason") : "None", (long long)jint(j, "nodes", 1),
            (long long)(jint(j, "cpus", 1) * jint(j, "nodes", 1)),
            (long long)(jint(j, "gpus", 0) * jint(j, "nodes", 1)),
            (long long)(jint(j, "time_limit_ms", 0) / 60000), nodes[0] ? nodes : "(null)",
            jstr(j, "workdir"), jstr(j, "output"));
    json_decref(reply);
    return EXIT_OK;
}

static const char *node_state(const json_t *n);

static int scontrol_show_node(struct cli *c, const char *name)
{
    json_t *reply = NULL;
    char path[160];
    int rc;

    if (!str_is_name(name))
        return cli_usage_error(c, "bad node name '%.64s'", name);
    snprintf(path, sizeof(path), "/v1/nodes/%s", name);
    if ((rc = cli_call(c, "GET", path, NULL, &reply)))
        return rc;
    const json_t *n = json_object_get(reply, "node");
    char state[32];
    str_copy(state, sizeof(state), node_state(n));
    for (char *p = state; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    fprintf(c->out,
            "NodeName=%s State=%s\n   CPUAlloc=%lld CPUTot=%lld\n   RealMemory=%lld "
            "AllocMem=%lld\n   Gres=gpu%s%s:%lld\n   Reason=%s\n",
            jstr(n, "name"), state, (long long)jint(n, "cpus_used", 0),
            (long long)jint(n, "cpus", 0), (long long)jint(n, "mem_mb", 0),
            (long long)jint(n, "mem_used_mb", 0), jstr(n, "gpu_type")[0] ? ":" : "",
            jstr(n, "gpu_type"), (long long)jint(n, "gpus", 0),
            jstr(n, "reason")[0] ? jstr(n, "reason") : "(null)");
    json_decref(reply);
    return EXIT_OK;
}

/* POST /v1/jobs/ID/VERB for every docket id in `ids`, 64 at a time, silently on success
 * as scancel and scontrol hold/release/requeue are (errors still go to stderr). Exit
 * status. */
static int act_on_ids(struct cli *c, const json_t *ids, const char *verb, const char *done)
{
    static char numbers[64][24];
    char *argv[65];
    int rc = EXIT_OK;
    FILE *saved = c->out, *null = fopen("/dev/null", "w");
    c->out = null ? null : saved;
    for (size_t i = 0; i < json_array_size(ids);) {
        int n = 1;
        argv[0] = (char *)verb;
        for (; i < json_array_size(ids) && n < 65; i++, n++) {
            snprintf(numbers[n - 1], sizeof(numbers[0]), "%lld",
                     (long long)json_integer_value(json_array_get(ids, i)));
            argv[n] = numbers[n - 1];
        }
        int r = jobs_action_main(c, n, argv, verb, done);
        if (r != EXIT_OK)
            rc = r;
    }
    c->out = saved;
    if (null)
        fclose(null);
    return rc;
}

/* Slurm job ids (ARRAY_ID means every task) into docket's, then VERB on each. */
static int act_on_words(struct cli *c, char **words, int n, const char *verb, const char *done)
{
    json_t *ids = json_array();
    int rc = EXIT_OK;
    for (int i = 0; i < n && rc == EXIT_OK; i++)
        rc = slurm_jobids_resolve(c, words[i], true, ids);
    if (rc == EXIT_OK)
        rc = act_on_ids(c, ids, verb, done);
    json_decref(ids);
    return rc;
}

/* One SPEC=VALUE of `scontrol update` into the PATCH body (man scontrol, "JOBS -
 * SPECIFICATIONS FOR UPDATE COMMAND"): 0, or an exit status after a message. */
static int update_word(struct cli *c, json_t *body, const char *key, const char *v,
                       const char **dep)
{
    int64_t n;
    if (!strcasecmp(key, "TimeLimit")) {
        if (v[0] == '+' || v[0] == '-')
            return cli_fail(c, "TimeLimit=%s: give the new limit itself, not a change of it", v);
        int rc = update_time_limit(body, v, true);
        if (rc == -ERANGE)
            return cli_fail(c, "TimeLimit=%s: docket has no unlimited jobs", v);
        return rc < 0 ? cli_fail(c, "Invalid TimeLimit value: %s", v) : 0;
    }
    if (!strcasecmp(key, "JobName") || !strcasecmp(key, "Name")) {
        json_object_set_new(body, "name", json_string(v));
    } else if (!strcasecmp(key, "Dependency")) {
        *dep = v;
    } else if (!strcasecmp(key, "Partition")) {
        json_object_set_new(body, "partition", json_string(v));
    } else if (!strcasecmp(key, "NumNodes") || !strcasecmp(key, "ReqNodes")) {
        /* MIN[-MAX]: the minimum, as sbatch -N N-M is read */
        char min[32];
        str_copy(min, sizeof(min), v);
        min[strcspn(min, "-")] = '\0';
        if (parse_int64(min, 1, 100000, &n) < 0)
            return cli_fail(c, "Invalid NumNodes value: %s", v);
        json_object_set_new(body, "nodes", json_integer(n));
    } else if (!strcasecmp(key, "Features") || !strcasecmp(key, "Constraint") ||
               !strcasecmp(key, "Constraints")) {
        json_object_set_new(body, "constraint", json_string(v));
    } else if (!strcasecmp(key, "Comment")) {
        json_object_set_new(body, "comment", json_string(v));
    } else if (!strcasecmp(key, "Nice")) {
        cli_warn(c, "Nice=%s: ignored; priority is docket's (tiers, fair share)", v);
    } else if (!strcasecmp(key, "NumTasks") || !strcasecmp(key, "ReqTasks")) {
        return cli_fail(c, "NumTasks: a job's tasks are laid out at submission in docket: "
                           "cancel it and submit it again with -n");
    } else if (!strcasecmp(key, "Priority")) {
        return cli_fail(c, "Priority: docket orders jobs by tier and fair share (docket "
                           "projects boost, or submit with another tier)");
    } else {
        return cli_fail(c, "Update of this parameter is not supported: %s=%s", key, v);
    }
    return 0;
}

/* scontrol update JobId=ID[,ID...] SPEC=VALUE...: PATCH /v1/jobs/ID for each job (an
 * array's id is every live task, ID_IDX one); silent on success, as scontrol is. */
static int scontrol_update(struct cli *c, int argc, char **argv)
{
    json_t *body = json_object(), *ids = json_array();
    const char *dep = NULL, *jobs = NULL;
    int rc = EXIT_OK;
    for (int i = 0; i < argc && rc == EXIT_OK; i++) {
        char key[32];
        const char *eq = strchr(argv[i], '=');
        if (!eq || (size_t)(eq - argv[i]) >= sizeof(key)) {
            rc = cli_fail(c, "Invalid input: %s (want SPEC=VALUE)", argv[i]);
            break;
        }
        memcpy(key, argv[i], (size_t)(eq - argv[i]));
        key[eq - argv[i]] = '\0';
        if (!strcasecmp(key, "NodeName"))
            rc = cli_fail(c, "update NodeName=...: use `docket nodes drain|resume NODE "
                             "--reason R` (docs/slurm.md)");
        else if (!strcasecmp(key, "JobId") || !strcasecmp(key, "Job"))
            jobs = eq + 1;
        else
            rc = update_word(c, body, key, eq + 1, &dep);
    }
    if (rc == EXIT_OK && !jobs)
        rc = cli_fail(c, "update: which job? (scontrol update JobId=ID TimeLimit=30 ...)");
    char list[1024], *save = NULL;
    if (rc == EXIT_OK && str_copy(list, sizeof(list), jobs) < 0)
        rc = cli_fail(c, "JobId: too long");
    for (char *w = rc == EXIT_OK ? strtok_r(list, ",", &save) : NULL; w && rc == EXIT_OK;
         w = strtok_r(NULL, ",", &save))
        rc = slurm_jobids_resolve(c, w, true, ids);
    int64_t self = json_array_size(ids) == 1 ? json_integer_value(json_array_get(ids, 0)) : 0;
    if (rc == EXIT_OK && dep)
        rc = update_dependency(c, body, dep, self);
    if (rc == EXIT_OK && json_object_size(body) > 0)
        rc = update_jobs(c, ids, body, true);
    json_decref(body);
    json_decref(ids);
    return rc;
}

int cmd_scontrol(struct cli *c, int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "show") && !strncmp(argv[2], "hostname", 8)) {
        const char *list = argc > 3 ? argv[3] : getenv("SLURM_JOB_NODELIST");
        if (!list)
            return cli_usage_error(c, "no host list given and SLURM_JOB_NODELIST is not set");
        if (slurm_expand_hostlist(list, c->out) < 0)
            return cli_usage_error(c, "bad host list '%.100s'", list);
        return EXIT_OK;
    }
    if (argc == 4 && !strcmp(argv[1], "show") && !strcmp(argv[2], "job"))
        return scontrol_show_job(c, argv[3]);
    if (argc == 4 && !strcmp(argv[1], "show") && !strcmp(argv[2], "node"))
        return scontrol_show_node(c, argv[3]);
    if (argc >= 3 &&
        (!strcmp(argv[1], "hold") || !strcmp(argv[1], "release") || !strcmp(argv[1], "requeue"))) {
        const char *done = !strcmp(argv[1], "hold")      ? "held"
                           : !strcmp(argv[1], "release") ? "released"
                                                         : "requeued";
        return act_on_words(c, argv + 2, argc - 2, argv[1], done);
    }
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(c->usage, c->out);
        return EXIT_OK;
    }
    if (argc >= 2 && !strcmp(argv[1], "update"))
        return scontrol_update(c, argc - 2, argv + 2);
    /* Slurm's scontrol exits 1 on a command it does not know */
    return cli_fail(c,
                    "invalid command: docket's scontrol knows show hostnames, show job ID, update, "
                    "show node NAME, hold, release, requeue (see docs/slurm.md)");
}

/* ------------------------------------------------------------------------------------ */
/* squeue and scancel                                                                    */

static const char *me(void)
{
    struct passwd *pw = getpwuid(getuid());
    return pw ? pw->pw_name : getenv("USER");
}

/* Slurm's compact state codes. */
static const char *state_code(const char *st)
{
    static const char *const map[][2] = {
        {"PENDING", "PD"},   {"HELD", "PD"},      {"STARTING", "CF"},  {"RUNNING", "R"},
        {"STOPPING", "CG"},  {"COMPLETED", "CD"}, {"FAILED", "F"},     {"TIMEOUT", "TO"},
        {"CANCELLED", "CA"}, {"NODE_FAIL", "NF"}, {"PREEMPTED", "PR"}, {"OOM", "OOM"}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(st, map[i][0]))
            return map[i][1];
    return st;
}

/* Slurm's state names: docket's HELD is a pending job held. */
static const char *state_long(const char *st)
{
    if (!strcmp(st, "HELD"))
        return "PENDING";
    if (!strcmp(st, "STARTING"))
        return "CONFIGURING";
    if (!strcmp(st, "STOPPING"))
        return "COMPLETING";
    return st;
}

/* Slurm's elapsed form: M:SS, H:MM:SS, D-HH:MM:SS. */
static void slurm_duration(int64_t secs, char *out, size_t len)
{
    if (secs < 0)
        secs = 0;
    int64_t d = secs / 86400, h = secs / 3600 % 24, m = secs / 60 % 60, s = secs % 60;
    if (d)
        snprintf(out, len, "%lld-%02lld:%02lld:%02lld", (long long)d, (long long)h, (long long)m,
                 (long long)s);
    else if (h)
        snprintf(out, len, "%lld:%02lld:%02lld", (long long)h, (long long)m, (long long)s);
    else
        snprintf(out, len, "%lld:%02lld", (long long)m, (long long)s);
}

/* The text of field `f` of a job (squeue's -o letters). */
static void squeue_field(struct cli *c, const json_t *j, char f, char *out, size_t len)
{
    const char *st = jstr(j, "state");
    switch (f) {
    case 'i': /* an array's task: ARRAY_ID_INDEX, as squeue prints it */
        if (jint(j, "array_id", 0) > 0)
            snprintf(out, len, "%lld_%lld", (long long)jint(j, "array_id", 0),
                     (long long)jint(j, "array_index", 0));
        else
            snprintf(out, len, "%lld", (long long)jint(j, "id", 0));
        break;
    case 'A':
        snprintf(out, len, "%lld", (long long)jint(j, "id", 0));
        break;
    case 'F':
        snprintf(out, len, "%lld", (long long)jint(j, "array_id", 0));
        break;
    case 'K':
        snprintf(out, len, "%lld", (long long)jint(j, "array_index", 0));
        break;
    case 'j':
        str_copy(out, len, jstr(j, "name"));
        break;
    case 'u':
        str_copy(out, len, jstr(j, "user"));
        break;
    case 'a':
        str_copy(out, len, jstr(j, "project"));
        break;
    case 'P':
        str_copy(out, len, job_partition(j));
        break;
    case 'q':
        str_copy(out, len, jstr(j, "class"));
        break;
    case 'T':
        str_copy(out, len, state_long(st));
        break;
    case 't':
        str_copy(out, len, state_code(st));
        break;
    case 'M':
        if (jint(j, "start_ms", 0) > 0)
            slurm_duration((c->now_ms - jint(j, "start_ms", 0)) / 1000, out, len);
        else
            str_copy(out, len, "0:00");
        break;
    case 'l':
        if (jint(j, "time_limit_ms", 0) > 0)
            slurm_duration(jint(j, "time_limit_ms", 0) / 1000, out, len);
        else
            str_copy(out, len, "UNLIMITED");
        break;
    case 'D':
        snprintf(out, len, "%lld", (long long)jint(j, "nodes", 1));
        break;
    case 'C':
        snprintf(out, len, "%lld", (long long)(jint(j, "cpus", 1) * jint(j, "nodes", 1)));
        break;
    case 'm':
        snprintf(out, len, "%lldM", (long long)jint(j, "mem_mb", 0));
        break;
    case 'b':
        if (jint(j, "gpus", 0))
            snprintf(out, len, "gres/gpu:%s%s%lld", jstr(j, "gpu_type"),
                     jstr(j, "gpu_type")[0] ? ":" : "", (long long)jint(j, "gpus", 0));
        else
            str_copy(out, len, "N/A");
        break;
    case 'N':
        jobs_nodelist(j, out, len);
        break;
    case 'R':
    case 'r':
        if (!strcmp(st, "PENDING") || !strcmp(st, "HELD") || f == 'r') {
            const char *r = jstr(j, "reason");
            snprintf(out, len, f == 'R' ? "(%s)" : "%s",
                     !strcmp(st, "HELD") ? "JobHeldUser"
                     : r[0]              ? r
                                         : "None");
        } else {
            jobs_nodelist(j, out, len);
        }
        break;
    case '%':
        str_copy(out, len, "%");
        break;
    default:
        snprintf(out, len, "%%%c", f);
    }
}

static const char *field_title(char f)
{
    switch (f) {
    case 'i':
    case 'A':
        return "JOBID";
    case 'F':
        return "ARRAY_JOB_ID";
    case 'K':
        return "ARRAY_TASK_ID";
    case 'j':
        return "NAME";
    case 'u':
        return "USER";
    case 'a':
        return "ACCOUNT";
    case 'P':
        return "PARTITION";
    case 'q':
        return "QOS";
    case 'T':
    case 't':
        return f == 'T' ? "STATE" : "ST";
    case 'M':
        return "TIME";
    case 'l':
        return "TIME_LIMIT";
    case 'D':
        return "NODES";
    case 'C':
        return "CPUS";
    case 'm':
        return "MIN_MEMORY";
    case 'b':
        return "TRES_PER_NODE";
    case 'N':
        return "NODELIST";
    case 'R':
        return "NODELIST(REASON)";
    case 'r':
        return "REASON";
    default:
        return "";
    }
}

/* One line in squeue's -o format: "%.18i %.9P %-8j": '.' right-aligns, '-' left (the
 * default), a width pads and cuts. `folded`: the %i of an array's pending tasks. */
static void squeue_line(struct cli *c, const json_t *j, const char *folded, const char *fmt,
                        FILE *out)
{
    for (const char *p = fmt; *p; p++) {
        if (*p != '%' || !p[1]) {
            fputc(*p, out);
            continue;
        }
        bool right = false;
        int width = 0;
        p++;
        if (*p == '.') {
            right = true;
            p++;
        } else if (*p == '-') {
            p++;
        }
        while (*p >= '0' && *p <= '9')
            width = width * 10 + (*p++ - '0');
        if (!*p)
            break;
        char text[1024];
        if (j && *p == 'i' && folded)
            str_copy(text, sizeof(text), folded);
        else if (j)
            squeue_field(c, j, *p, text, sizeof(text));
        else
            str_copy(text, sizeof(text), field_title(*p));
        int n = (int)strlen(text);
        if (width && n > width)
            n = width;
        fprintf(out, right ? "%*.*s" : "%-*.*s", width, n, text);
    }
    fputc('\n', out);
}

enum {
    SQ_USER = 1,
    SQ_ME,
    SQ_JOBS,
    SQ_PART,
    SQ_STATES,
    SQ_FORMAT,
    SQ_NOHEADER,
    SQ_NAME,
    SQ_HELP,
    SQ_ACCOUNT
};

static const struct opt_def squeue_opts[] = {
    {SQ_USER, 'u', "user", OPT_VALUE},
    {SQ_ME, 0, "me", OPT_NONE},
    {SQ_JOBS, 'j', "jobs", OPT_VALUE},
    {SQ_PART, 'p', "partition", OPT_VALUE},
    {SQ_STATES, 't', "states", OPT_VALUE},
    {SQ_FORMAT, 'o', "format", OPT_VALUE},
    {SQ_NOHEADER, 'h', "noheader", OPT_NONE},
    {SQ_NAME, 'n', "name", OPT_VALUE},
    {SQ_ACCOUNT, 'A', "account", OPT_VALUE},
    {SQ_HELP, 0, "help", OPT_NONE},
    {0, 0, NULL, OPT_NONE},
};

const char cmd_squeue_usage[] =
    "usage: squeue [-u USER|--me] [-j IDS] [-p PARTITION] [-A ACCOUNT] [-n NAME] [-t STATES]\n"
    "              [-h] [-o FORMAT]\n"
    "Pending and running jobs in Slurm's columns; -o takes %i %j %u %a %P %q %T %t %M %l\n"
    "%D %C %m %b %N %R %r %F %K with widths (%.18i, %-8j).\n";

/* Whether squeue -j's list names job j: ID, ARRAY_ID (every task), ARRAY_ID_IDX,
 * ARRAY_ID_[LIST]; commas inside brackets belong to the list. */
static bool id_listed(const char *ids, const json_t *j)
{
    char buf[1024], idx[256];
    int64_t v;
    size_t start = 0;
    int depth = 0;

    if (!ids)
        return true;
    str_copy(buf, sizeof(buf), ids);
    for (size_t i = 0;; i++) {
        char ch = buf[i];
        depth += ch == '[' ? 1 : ch == ']' ? -1 : 0;
        if ((ch != ',' || depth > 0) && ch != '\0')
            continue;
        buf[i] = '\0';
        if (slurm_jobid_parse(buf + start, &v, idx, sizeof(idx)) == 0) {
            bool task_of = jint(j, "array_id", 0) == v;
            if (idx[0] ? task_of && slurm_index_in(idx, jint(j, "array_index", -1))
                       : task_of || jint(j, "id", 0) == v)
                return true;
        }
        if (ch == '\0')
            return false;
        start = i + 1;
    }
}

/* squeue folds an array's pending tasks into one line, "123_[4-99%8]" (the throttle from
 * the array's spec), those of one state (pending, held) together: the %i text of that
 * line into out, for the first such task seen. */
static void fold_pending(const json_t *jobs, const json_t *first, const char *ids, char *out,
                         size_t len)
{
    int64_t aid = jint(first, "array_id", 0);
    size_t n = 0, cap = json_array_size(jobs);
    int64_t *idx = calloc(cap ? cap : 1, sizeof(*idx));
    char list[700];
    const char *spec = jstr(first, "array"), *pct = strchr(spec, '%');
    if (!idx) {
        snprintf(out, len, "%lld_%lld", (long long)aid, (long long)jint(first, "array_index", 0));
        return;
    }
    for (size_t i = 0; i < cap; i++) {
        const json_t *t = json_array_get(jobs, i);
        if (jint(t, "array_id", 0) == aid && !strcmp(jstr(t, "state"), jstr(first, "state")) &&
            id_listed(ids, t))
            idx[n++] = jint(t, "array_index", 0);
    }
    slurm_index_ranges(idx, n, list, sizeof(list));
    free(idx);
    if (n == 1 && !pct)
        snprintf(out, len, "%lld_%s", (long long)aid, list);
    else
        snprintf(out, len, "%lld_[%s%s%s]", (long long)aid, list, pct ? "%" : "",
                 pct ? pct + 1 : "");
}

/* Is the job in one of squeue -p's partitions ("gpu,debug")? */
static bool partition_listed(const char *parts, const json_t *j)
{
    const char *mine = job_partition(j);
    size_t n = strlen(mine);
    if (!parts)
        return true;
    for (const char *p = parts; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, mine, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* Slurm's state names (and codes) into docket's: PD -> PENDING,HELD. */
static void states_query(const char *in, char *out, size_t len)
{
    char buf[512];
    char *save = NULL;
    size_t o = 0;

    out[0] = '\0';
    str_copy(buf, sizeof(buf), in);
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        const char *s = !strcasecmp(p, "PD") || !strcasecmp(p, "PENDING")      ? "PENDING,HELD"
                        : !strcasecmp(p, "R")                                  ? "RUNNING"
                        : !strcasecmp(p, "CG") || !strcasecmp(p, "COMPLETING") ? "STOPPING"
                        : !strcasecmp(p, "all")                                ? "active"
                                                                               : p;
        o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s%s", o ? "," : "", s);
    }
}

int cmd_squeue(struct cli *c, int argc, char **argv)
{
    struct jobs_query q = {.limit = 10000, .state = "active"};
    const char *fmt = getenv("SQUEUE_FORMAT"), *ids = NULL, *parts = NULL, *v;
    bool header = true;
    char err[256], states[512];
    struct opt_iter it;
    json_t *jobs = NULL;
    int id, rc;

    if (!fmt)
        fmt = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
    opt_iter_init(&it, argc, argv, 1);
    while ((id = opt_next(&it, squeue_opts, &v, err, sizeof(err))) != OPT_DONE) {
        switch (id) {
        case SQ_USER:
            q.user = v;
            break;
        case SQ_ME:
            q.user = me();
            break;
        case SQ_JOBS:
            ids = v;
            break;
        case SQ_PART:
            parts = v;
            break;
        case SQ_ACCOUNT:
            q.project = v;
            break;
        case SQ_NAME:
            q.name = v;
            break;
        case SQ_STATES:
            states_query(v, states, sizeof(states));
            q.state = states;
            break;
        case SQ_FORMAT:
            fmt = v;
            break;
        case SQ_NOHEADER:
            header = false;
            break;
        case SQ_HELP:
            fputs(c->usage, c->out);
            return EXIT_OK;
        case OPT_POSITIONAL:
            return cli_usage_error(c, "unexpected '%s'", v);
        default:
            return cli_usage_error(c, "%s", err);
        }
    }
    if ((rc = jobs_fetch(c, &q, &jobs)))
        return rc;
    if (header)
        squeue_line(c, NULL, NULL, fmt, c->out);
    json_t *folded = json_object(); /* arrays whose pending tasks were printed */
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        const json_t *j = json_array_get(jobs, i);
        char key[48], text[800];
        if (!id_listed(ids, j) || !partition_listed(parts, j))
            continue;
        if (jint(j, "array_id", 0) <= 0 ||
            (strcmp(jstr(j, "state"), "PENDING") && strcmp(jstr(j, "state"), "HELD"))) {
            squeue_line(c, j, NULL, fmt, c->out);
            continue;
        }
        snprintf(key, sizeof(key), "%lld/%s", (long long)jint(j, "array_id", 0), jstr(j, "state"));
        if (json_object_get(folded, key))
            continue;
        json_object_set_new(folded, key, json_true());
        fold_pending(jobs, j, ids, text, sizeof(text));
        squeue_line(c, j, text, fmt, c->out);
    }
    json_decref(folded);
    json_decref(jobs);
    return EXIT_OK;
}

enum { SC_USER = 1, SC_NAME, SC_STATE, SC_SIGNAL, SC_QUIET, SC_ME, SC_HELP, SC_BATCH, SC_FULL };

static const struct opt_def scancel_opts[] = {
    {SC_USER, 'u', "user", OPT_VALUE},   {SC_NAME, 'n', "name", OPT_VALUE},
    {SC_STATE, 't', "state", OPT_VALUE}, {SC_SIGNAL, 's', "signal", OPT_VALUE},
    {SC_QUIET, 'Q', "quiet", OPT_NONE},  {SC_ME, 0, "me", OPT_NONE},
    {SC_BATCH, 'b', "batch", OPT_NONE},  {SC_FULL, 'f', "full", OPT_NONE},
    {SC_HELP, 0, "help", OPT_NONE},      {0, 0, NULL, OPT_NONE},
};

const char cmd_scancel_usage[] =
    "usage: scancel [JOBID...] [-u USER|--me] [-n NAME] [-t STATE]\n"
    "       scancel -s SIGNAL [-b|-f] [JOBID...] [filters]\n"
    "Cancel the jobs named (ARRAY_ID: every task; ARRAY_ID_INDEX: one), or every active job\n"
    "that matches the filters. -s sends SIGNAL (USR1, SIGUSR1, 10 ...) to running jobs\n"
    "instead: to their steps (every process but the batch shell); -b the batch shell alone,\n"
    "-f every process.\n";

/* scancel -s: POST /v1/jobs/ID/signal for each. Exit status: 1 when one was refused. */
static int signal_ids(struct cli *c, const json_t *ids, int sig, const char *to)
{
    int rc = EXIT_OK;
    json_t *body = json_pack("{s:i,s:s}", "signal", sig, "to", to);
    for (size_t i = 0; i < json_array_size(ids); i++) {
        char path[96];
        json_t *reply = NULL;
        snprintf(path, sizeof(path), "/v1/jobs/%lld/signal",
                 (long long)json_integer_value(json_array_get(ids, i)));
        if (cli_call(c, "POST", path, body, &reply))
            rc = EXIT_FAIL;
        json_decref(reply);
    }
    json_decref(body);
    return rc;
}

int cmd_scancel(struct cli *c, int argc, char **argv)
{
    struct jobs_query q = {.limit = 10000, .state = "active"};
    char err[256], states[512];
    char *words[64];
    int nwords = 0, id, rc = EXIT_OK, sig = 0;
    bool filter = false;
    const char *to = "steps";
    const char *v;
    struct opt_iter it;

    opt_iter_init(&it, argc, argv, 1);
    while ((id = opt_next(&it, scancel_opts, &v, err, sizeof(err))) != OPT_DONE) {
        switch (id) {
        case SC_USER:
            q.user = v;
            filter = true;
            break;
        case SC_ME:
            q.user = me();
            filter = true;
            break;
        case SC_NAME:
            q.name = v;
            filter = true;
            break;
        case SC_STATE:
            states_query(v, states, sizeof(states));
            q.state = states;
            filter = true;
            break;
        case SC_SIGNAL:
            if (parse_signal(v, &sig) < 0)
                return cli_usage_error(c, "Unknown job signal: %s", v);
            break;
        case SC_BATCH:
            to = "batch";
            break;
        case SC_FULL:
            to = "all";
            break;
        case SC_QUIET:
            break;
        case SC_HELP:
            fputs(c->usage, c->out);
            return EXIT_OK;
        case OPT_POSITIONAL:
            if (nwords == 64)
                return cli_usage_error(c, "at most 64 job ids at once");
            words[nwords++] = (char *)v;
            break;
        default:
            return cli_usage_error(c, "%s", err);
        }
    }
    if (nwords == 0 && !filter)
        return cli_usage_error(c, "no job identification provided");
    json_t *ids = json_array(), *jobs = NULL;
    if (sig == SIGKILL && !strcmp(to, "steps"))
        to = "all"; /* man scancel: SIGKILL reaches the batch step too */
    /* ARRAY_ID is every task of the array, ARRAY_ID_IDX one (man scancel) */
    for (int i = 0; i < nwords && rc == EXIT_OK; i++)
        rc = slurm_jobids_resolve(c, words[i], true, ids);
    if (rc == EXIT_OK && filter && (rc = jobs_fetch(c, &q, &jobs)) == 0) {
        for (size_t i = 0; i < json_array_size(jobs); i++)
            json_array_append_new(ids, json_integer(jint(json_array_get(jobs, i), "id", 0)));
        json_decref(jobs);
    }
    if (rc == EXIT_OK && sig > 0) {
        rc = signal_ids(c, ids, sig, to);
    } else if (rc == EXIT_OK && json_array_size(ids) > 0) {
        rc = act_on_ids(c, ids, "cancel", "cancelled");
    }
    json_decref(ids);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* sinfo and sacct                                                                       */

/* Slurm's node states from docket's and the node's use. */
static const char *node_state(const json_t *n)
{
    const char *st = jstr(n, "state");
    if (!strcmp(st, "DRAINING"))
        return "draining";
    if (!strcmp(st, "DRAINED"))
        return "drained";
    if (strcmp(st, "UP"))
        return "down";
    int64_t gu = jint(n, "gpus_used", 0), cu = jint(n, "cpus_used", 0);
    if (gu == 0 && cu == 0)
        return "idle";
    if ((jint(n, "gpus", 0) && gu >= jint(n, "gpus", 0)) || cu >= jint(n, "cpus", 1))
        return "allocated";
    return "mixed";
}

static const char *state_short(const char *s)
{
    return !strcmp(s, "allocated")  ? "alloc"
           : !strcmp(s, "draining") ? "drng"
           : !strcmp(s, "drained")  ? "drain"
           : !strcmp(s, "mixed")    ? "mix"
                                    : s;
}

const char cmd_sinfo_usage[] =
    "usage: sinfo [-N] [-h] [-p PARTITION[,...]]\n"
    "The nodes as Slurm's sinfo shows them: per partition of the site (its default marked\n"
    "'*'; one partition 'docket' when the site defines none), grouped by state; -N one line\n"
    "per node and partition.\n";

/* A node of the cluster by name, from GET /v1/nodes. */
static const json_t *node_named(const json_t *nodes, const char *name)
{
    for (size_t i = 0; i < json_array_size(nodes); i++)
        if (!strcmp(jstr(json_array_get(nodes, i), "name"), name))
            return json_array_get(nodes, i);
    return NULL;
}

/* The site's partitions, or one "docket*" holding every node when it defines none. */
static json_t *sinfo_partitions(struct cli *c, const json_t *nodes)
{
    json_t *reply = NULL, *parts;
    if (cli_call(c, "GET", "/v1/partitions", NULL, &reply) == 0 &&
        json_array_size(json_object_get(reply, "partitions")) > 0) {
        parts = json_incref(json_object_get(reply, "partitions"));
        json_decref(reply);
        return parts;
    }
    json_decref(reply);
    json_t *names = json_array();
    for (size_t i = 0; i < json_array_size(nodes); i++)
        json_array_append_new(names, json_string(jstr(json_array_get(nodes, i), "name")));
    parts = json_array();
    json_array_append_new(parts, json_pack("{s:s,s:b,s:i,s:o}", "name", "docket", "default", 1,
                                           "max_time", 0, "node_names", names));
    return parts;
}

static void sinfo_part(struct cli *c, const json_t *part, const json_t *nodes, bool per_node)
{
    static const char *const order[] = {"mixed",    "allocated", "idle",
                                        "draining", "drained",   "down"};
    const json_t *names = json_object_get(part, "node_names");
    char name[80], limit[32];
    snprintf(name, sizeof(name), "%s%s", jstr(part, "name"),
             json_is_true(json_object_get(part, "default")) ? "*" : "");
    if (jint(part, "max_time", 0) > 0)
        slurm_duration(jint(part, "max_time", 0), limit, sizeof(limit));
    else
        str_copy(limit, sizeof(limit), "infinite");
    for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
        struct dbuf list;
        int count = 0;
        dbuf_init(&list, 1 << 16);
        for (size_t i = 0; i < json_array_size(names); i++) {
            const json_t *n = node_named(nodes, json_string_value(json_array_get(names, i)));
            if (!n || strcmp(node_state(n), order[k]))
                continue;
            if (per_node)
                fprintf(c->out, "%-16s %5d %9s %5s\n", jstr(n, "name"), 1, name,
                        state_short(order[k]));
            dbuf_printf(&list, "%s%s", count++ ? "," : "", jstr(n, "name"));
        }
        if (count && !per_node)
            fprintf(c->out, "%-9s %5s %10s %5d %6s %s\n", name, "up", limit, count,
                    state_short(order[k]), list.data);
        dbuf_release(&list);
    }
}

int cmd_sinfo(struct cli *c, int argc, char **argv)
{
    bool per_node = false, header = true;
    const char *only = NULL;
    json_t *reply = NULL;
    int rc;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-N") || !strcmp(argv[i], "--Node"))
            per_node = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--noheader"))
            header = false;
        else if ((!strcmp(argv[i], "-p") || !strcmp(argv[i], "--partition")) && i + 1 < argc)
            only = argv[++i];
        else if (!strncmp(argv[i], "--partition=", 12))
            only = argv[i] + 12;
        else if (!strcmp(argv[i], "--help"))
            return fputs(c->usage, c->out) < 0 ? EXIT_FAIL : EXIT_OK;
        else
            return cli_usage_error(c,
                                   "docket's sinfo takes -N, -h and -p, not '%s' (docket nodes "
                                   "shows more)",
                                   argv[i]);
    }
    if ((rc = cli_get_pages(c, "/v1/nodes", "nodes", 0, &reply)))
        return rc;
    const json_t *nodes = json_object_get(reply, "nodes");
    json_t *parts = sinfo_partitions(c, nodes);
    if (header && per_node)
        fprintf(c->out, "%-16s %5s %9s %5s\n", "NODELIST", "NODES", "PARTITION", "STATE");
    else if (header)
        fprintf(c->out, "%-9s %5s %10s %5s %6s %s\n", "PARTITION", "AVAIL", "TIMELIMIT", "NODES",
                "STATE", "NODELIST");
    for (size_t i = 0; i < json_array_size(parts); i++) {
        const json_t *part = json_array_get(parts, i);
        json_t *fake = json_pack("{s:s}", "partition", jstr(part, "name"));
        if (partition_listed(only, fake))
            sinfo_part(c, part, nodes, per_node);
        json_decref(fake);
    }
    json_decref(parts);
    json_decref(reply);
    return EXIT_OK;
}

/* "0:0": exit code and signal, as sacct's ExitCode. */
static void exit_code(const json_t *j, char *out, size_t len)
{
    const json_t *x = json_object_get(j, "exit");
    const char *kind = jstr(x, "kind");
    int64_t code = jint(x, "code", 0);
    if (!strcmp(kind, "signal"))
        snprintf(out, len, "0:%lld", (long long)code);
    else
        snprintf(out, len, "%lld:0", (long long)code);
}

/* One field of sacct's --format (case-insensitive names). */
static bool sacct_field(struct cli *c, const json_t *j, const char *f, char *out, size_t len)
{
    int64_t start = jint(j, "start_ms", 0), end = jint(j, "end_ms", 0);
    if (!strcasecmp(f, "JobID") || !strcasecmp(f, "JobIDRaw"))
        snprintf(out, len, "%lld", (long long)jint(j, "id", 0));
    else if (!strcasecmp(f, "JobName"))
        str_copy(out, len, jstr(j, "name"));
    else if (!strcasecmp(f, "Partition"))
        str_copy(out, len, job_partition(j));
    else if (!strcasecmp(f, "Account"))
        str_copy(out, len, jstr(j, "project"));
    else if (!strcasecmp(f, "User"))
        str_copy(out, len, jstr(j, "user"));
    else if (!strcasecmp(f, "QOS"))
        str_copy(out, len, jstr(j, "class"));
    else if (!strcasecmp(f, "State"))
        str_copy(out, len, state_long(jstr(j, "state")));
    else if (!strcasecmp(f, "ExitCode"))
        exit_code(j, out, len);
    else if (!strcasecmp(f, "AllocCPUS") || !strcasecmp(f, "NCPUS"))
        snprintf(out, len, "%lld", (long long)(jint(j, "cpus", 1) * jint(j, "nodes", 1)));
    else if (!strcasecmp(f, "NNodes"))
        snprintf(out, len, "%lld", (long long)jint(j, "nodes", 1));
    else if (!strcasecmp(f, "NodeList"))
        jobs_nodelist(j, out, len);
    else if (!strcasecmp(f, "Elapsed") || !strcasecmp(f, "ElapsedRaw"))
        slurm_duration(start ? ((end ? end : c->now_ms) - start) / 1000 : 0, out, len);
    else if (!strcasecmp(f, "Timelimit"))
        slurm_duration(jint(j, "time_limit_ms", 0) / 1000, out, len);
    else if (!strcasecmp(f, "AllocTRES") || !strcasecmp(f, "ReqTRES"))
        snprintf(out, len, "cpu=%lld,gres/gpu=%lld,mem=%lldM,node=%lld",
                 (long long)(jint(j, "cpus", 1) * jint(j, "nodes", 1)),
                 (long long)(jint(j, "gpus", 0) * jint(j, "nodes", 1)),
                 (long long)(jint(j, "mem_mb", 0) * jint(j, "nodes", 1)),
                 (long long)jint(j, "nodes", 1));
    else
        return false;
    return true;
}

enum { SA_JOBS = 1, SA_USER, SA_START, SA_FORMAT, SA_NOHEADER, SA_PARSABLE, SA_ALLOC, SA_HELP };

static const struct opt_def sacct_opts[] = {
    {SA_JOBS, 'j', "jobs", OPT_VALUE},
    {SA_USER, 'u', "user", OPT_VALUE},
    {SA_START, 'S', "starttime", OPT_VALUE},
    {SA_FORMAT, 'o', "format", OPT_VALUE},
    {SA_NOHEADER, 'n', "noheader", OPT_NONE},
    {SA_PARSABLE, 'P', "parsable2", OPT_NONE},
    {SA_ALLOC, 'X', "allocations", OPT_NONE},
    {SA_HELP, 0, "help", OPT_NONE},
    {0, 0, NULL, OPT_NONE},
};

const char cmd_sacct_usage[] =
    "usage: sacct [-j IDS] [-u USER] [-S START] [-X] [-n] [-P] [-o|--format FIELDS]\n"
    "Jobs (running and finished) in sacct's columns. FIELDS: JobID JobName Partition\n"
    "Account User QOS State ExitCode AllocCPUS NNodes NodeList Elapsed Timelimit AllocTRES,\n"
    "each with an optional %WIDTH. -S START lists the jobs still live or ended since START\n"
    "(2026-11-30, 2026-11-30T08:00, 08:00, today, now-2days...); without it, all jobs.\n";

int cmd_sacct(struct cli *c, int argc, char **argv)
{
    struct jobs_query q = {.limit = 10000, .state = "active", .desc = false};
    const char *fmt = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode", *ids = NULL, *v;
    bool header = true, parsable = false;
    int64_t since = INT64_MIN; /* -S: jobs still live or ended at or after it */
    char err[256];
    struct opt_iter it;
    json_t *active = NULL, *done = NULL;
    int id, rc;

    opt_iter_init(&it, argc, argv, 1);
    while ((id = opt_next(&it, sacct_opts, &v, err, sizeof(err))) != OPT_DONE) {
        switch (id) {
        case SA_JOBS:
            ids = v;
            break;
        case SA_USER:
            q.user = v;
            break;
        case SA_FORMAT:
            fmt = v;
            break;
        case SA_NOHEADER:
            header = false;
            break;
        case SA_PARSABLE:
            parsable = true;
            break;
        case SA_START:
            if (slurm_time_parse(v, c->now_ms, &since) < 0)
                return cli_usage_error(c,
                                       "sacct: bad -S time '%s' (for example 2026-11-30, "
                                       "2026-11-30T08:00, 08:00, today, now-2days)",
                                       v);
            break;
        case SA_ALLOC:
            break; /* steps are not listed: -X is always so */
        case SA_HELP:
            fputs(c->usage, c->out);
            return EXIT_OK;
        case OPT_POSITIONAL:
            return cli_usage_error(c, "unexpected '%s'", v);
        default:
            return cli_usage_error(c, "%s", err);
        }
    }
    if ((rc = jobs_fetch(c, &q, &active)))
        return rc;
    q.state = "terminal";
    if ((rc = jobs_fetch(c, &q, &done))) {
        json_decref(active);
        return rc;
    }
    json_array_extend(done, active);
    json_decref(active);
    char fields[32][64];
    int widths[32], nf = 0;
    char buf[1024];
    char *save = NULL;
    str_copy(buf, sizeof(buf), fmt);
    for (char *f = strtok_r(buf, ",", &save); f && nf < 32; f = strtok_r(NULL, ",", &save)) {
        char *pct = strchr(f, '%');
        widths[nf] = 10;
        if (pct) {
            *pct = '\0';
            if (parse_int(pct + 1, 1, 200, &widths[nf]) < 0)
                widths[nf] = 10;
        }
        str_copy(fields[nf], sizeof(fields[0]), f);
        char probe[8];
        if (!sacct_field(c, json_array_get(done, 0) ? json_array_get(done, 0) : json_object(),
                         fields[nf], probe, sizeof(probe))) {
            json_decref(done);
            return cli_usage_error(c, "sacct: unknown field '%s' (see sacct --help)", f);
        }
        nf++;
    }
    for (int row = header ? -1 : 0; row < (int)json_array_size(done); row++) {
        const json_t *j = row >= 0 ? json_array_get(done, (size_t)row) : NULL;
        if (j && !id_listed(ids, j))
            continue;
        if (j && jint(j, "end_ms", 0) > 0 && jint(j, "end_ms", 0) < since)
            continue; /* ended before -S */
        for (int k = 0; k < nf; k++) {
            char text[1024];
            if (j)
                sacct_field(c, j, fields[k], text, sizeof(text));
            else
                str_copy(text, sizeof(text), fields[k]);
            if (parsable)
                fprintf(c->out, "%s%s", k ? "|" : "", text);
            else
                fprintf(c->out, "%s%*.*s", k ? " " : "", widths[k], widths[k], text);
        }
        fputc('\n', c->out);
        if (!j && !parsable) {
            for (int k = 0; k < nf; k++)
                for (int w = 0; w <= widths[k]; w++)
                    fputc(w == widths[k] ? (k + 1 < nf ? ' ' : '\n') : '-', c->out);
        }
    }
    json_decref(done);
    return EXIT_OK;
}
