/*
 * main.c - the docket-sim command: parse flags, load the cluster, policies and mapping,
 * run the trace through the core once per policy, write the reports. docs/sim.md.
 *
 * Exit status: 0 done, 1 a run or an output failed, 2 bad usage or bad input files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim/config.h"
#include "sim/engine.h"
#include "sim/history.h"
#include "sim/site.h"
#include "sim/report.h"
#include "sim/stats.h"
#include "sim/sweep.h"
#include "sim/table.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/clock.h"

enum { MAX_RUNS = 8 };

static const char usage_text[] =
    "usage: docket-sim --trace FILE --cluster FILE [options]\n"
    "       docket-sim compare A.json B.json\n"
    "\n"
    "Replay a workload trace through Docket's scheduling core with a virtual clock and\n"
    "report waits, slowdown, utilisation, preemptions and fairness per tier and project.\n"
    "\n"
    "inputs:\n"
    "  --trace FILE            workload: normalised CSV (job_id,submit_s,runtime_s,gpus,cpus,\n"
    "                          mem_mb,nodes,project,user,status) or SWF\n"
    "  --format csv|swf        trace format (default: .swf files are SWF, others CSV)\n"
    "  --cluster FILE          cluster description YAML (node_groups)\n"
    "  --policy FILE           policy.yaml as `docket apply` takes it; repeat to compare\n"
    "                          several (default: the core's built-in policy)\n"
    "  --baseline NAME         also run the first policy as a baseline, one queue per\n"
    "                          partition, no preemption: fifo (strict), easy (FIFO + EASY\n"
    "                          backfill), sjf (shortest time limit first + EASY),\n"
    "                          multifactor (Slurm-like), or tiered; repeatable\n"
    "  --compare               run the policy and the fifo, easy, sjf and multifactor\n"
    "                          baselines side by side\n"
    "  --mapping FILE          mapping rules YAML (trace project/user -> project, tier, class)\n"
    "  --from-db FILE          replay the site's own history instead of a trace: docketd's\n"
    "                          STATE_DIR/docket.db or its postgresql:// URI (read-only),\n"
    "                          with its nodes as the\n"
    "                          cluster and its policy and projects (--policy: a candidate)\n"
    "  --since T, --until T    --from-db: jobs submitted from / before T (2026-11-01,\n"
    "                          2026-11-01T08:00Z, or a duration back from now: 30d)\n"
    "\n"
    "mapping (override the mapping file):\n"
    "  --time-factor F         time limit = runtime x F, capped by the class (default 2)\n"
    "  --time-limit SRC        runtime (x factor), requested (SWF field 9) or class default\n"
    "  --default-tier NAME     tier of jobs no rule maps\n"
    "  --default-class NAME    class of jobs no rule maps\n"
    "  --cpu-unit N            CPU-only rows as GPU units of N cores (default: CPU jobs)\n"
    "  --fractional MODE       fractional GPU/CPU requests: round-up (default),\n"
    "                          round-down (at least 1) or skip; counted in the report\n"
    "  --over-cap MODE         a runtime past its class's max_limit: run (default: the job\n"
    "                          runs its recorded runtime), kill (at the cap) or skip\n"
    "  --partition-label KEY   per-project clusters: jobs run only on nodes labelled\n"
    "                          KEY=<trace project>\n"
    "  --pool                  pool the per-project clusters into one shared pool\n"
    "  --checkpoint DURATION   jobs declare a checkpoint every DURATION (work lost to a\n"
    "                          preemption counts from the last one)\n"
    "  --on-signal auto|exit|grace  on a time limit or preemption signal, jobs that declare\n"
    "                          a checkpoint save and exit at once, others are killed when\n"
    "                          the grace ends (auto, default); or all exit at once; or all\n"
    "                          use the grace\n"
    "\n"
    "load and size:\n"
    "  --arrival-scale F       multiply submission times by F (0.5 doubles the load)\n"
    "  --cluster-scale F       multiply every node group's count by F\n"
    "  --limit N               only the first N rows of the trace (from --start-at)\n"
    "  --start-at DURATION     replay only rows submitted this long after the trace's first\n"
    "                          (trace time, before --arrival-scale): a window past its\n"
    "                          ramp-up; the rows before are counted, not replayed\n"
    "  --node-failures RATE    random node failures, RATE per node per day\n"
    "  --repair-time DURATION  a failed node comes back after DURATION (default 4h)\n"
    "  --seed N                seed for every random choice (default 1)\n"
    "  --sample DURATION       bucket of the time series (default 1h)\n"
    "  --sweep NAME=V1,V2,...  run every policy at each value and tabulate the grid:\n"
    "                          arrival-scale=0.5,0.7,1, cluster-scale=0.5,1 or\n"
    "                          checkpoint=none,1h; several --sweep multiply into a grid\n"
    "  --cycle-interval DURATION  at most one scheduling cycle per DURATION of simulated\n"
    "                          time (default 0: a cycle at every event)\n"
    "\n"
    "topology (a 2-level tree: leaf switches under one spine):\n"
    "  --switch-nodes N        label the nodes switch=sw-0001 ... N nodes a switch, in order\n"
    "  --topology FILE         the switches from a file: one `NAME NODES` a line\n"
    "  --topology-mode MODE    every class places gangs by switch: required, best_effort\n"
    "                          or none (default: the policy's); the report counts the\n"
    "                          gangs that spanned more switches than needed\n"
    "\n"
    "rows and output:\n"
    "  --skip-bad-rows         report bad trace rows and go on (default: stop at the first)\n"
    "  --check                 only validate the trace: list every bad row, exit 1 if any\n"
    "  --json FILE             JSON report ('-' for stdout: no terminal summary then)\n"
    "  --jobs-csv FILE         one CSV row per job and policy\n"
    "  --html FILE             self-contained HTML comparison page with charts\n"
    "  --csv FILE              the comparison table as CSV (one column per policy)\n"
    "  --save DIR              also save the JSON report as DIR/<UTC time>-<label>.json\n"
    "  --label NAME            name of the saved run (default: the first policy)\n"
    "  --quiet                 no terminal summary\n"
    "  --no-progress           no progress line (shown on stderr when it is a terminal)\n"
    "  -h, --help              this text\n"
    "\n"
    "compare A B: put two saved runs (--save, --json) side by side with the change B - A.\n"
    "\n"
    "Colour only on a terminal and never when NO_COLOR is set. Reports are deterministic:\n"
    "the same inputs and seed give the same bytes. Formats: docs/sim.md.\n";

struct cli {
    struct sim_options opt;
    const char *cluster_path, *mapping_path;
    const char *policy_paths[MAX_RUNS];
    int npolicies;
    const char *baselines[MAX_RUNS];
    int nbaselines;
    bool compare, check, quiet, no_progress;
    double cluster_scale;
    const char *json_path, *csv_path, *html_path, *table_csv_path, *save_dir, *label;
    const char *fractional, *over_cap;
    /* mapping overrides: set flags */
    double time_factor;
    const char *time_limit_src, *default_tier, *default_class, *partition_label, *on_signal;
    int cpu_unit;
    bool pool;
    int64_t checkpoint_ms;
    struct sim_sweep sweep;
    const char *from_db;
    int64_t since_ms, until_ms;
    struct sim_site site;
    bool site_cluster; /* --from-db without --cluster: the site's nodes */
    /* topology: switches of N nodes, or from a file; the mode given to every class */
    int64_t switch_nodes;
    const char *topology_path, *topology_mode;
};

enum {
    O_TRACE = 256,
    O_FORMAT,
    O_CLUSTER,
    O_POLICY,
    O_BASELINE,
    O_COMPARE,
    O_MAPPING,
    O_TFACTOR,
    O_TLIMIT,
    O_DTIER,
    O_DCLASS,
    O_CPUUNIT,
    O_PLABEL,
    O_POOL,
    O_CKPT,
    O_ONSIG,
    O_ASCALE,
    O_CSCALE,
    O_LIMIT,
    O_START,
    O_NFAIL,
    O_REPAIR,
    O_SEED,
    O_SAMPLE,
    O_CYCLE,
    O_SKIP,
    O_CHECK,
    O_JSON,
    O_CSV,
    O_HTML,
    O_QUIET,
    O_NOPROG,
    O_FRAC,
    O_OVERCAP,
    O_TCSV,
    O_SAVE,
    O_LABEL,
    O_SWEEP,
    O_FROMDB,
    O_SINCE,
    O_UNTIL,
    O_SWNODES,
    O_TOPOFILE,
    O_TOPOMODE,
};

static const struct option longopts[] = {
    {"trace", required_argument, NULL, O_TRACE},
    {"format", required_argument, NULL, O_FORMAT},
    {"cluster", required_argument, NULL, O_CLUSTER},
    {"policy", required_argument, NULL, O_POLICY},
    {"baseline", required_argument, NULL, O_BASELINE},
    {"compare", no_argument, NULL, O_COMPARE},
    {"mapping", required_argument, NULL, O_MAPPING},
    {"time-factor", required_argument, NULL, O_TFACTOR},
    {"time-limit", required_argument, NULL, O_TLIMIT},
    {"default-tier", required_argument, NULL, O_DTIER},
    {"default-class", required_argument, NULL, O_DCLASS},
    {"cpu-unit", required_argument, NULL, O_CPUUNIT},
    {"partition-label", required_argument, NULL, O_PLABEL},
    {"pool", no_argument, NULL, O_POOL},
    {"checkpoint", required_argument, NULL, O_CKPT},
    {"on-signal", required_argument, NULL, O_ONSIG},
    {"arrival-scale", required_argument, NULL, O_ASCALE},
    {"cluster-scale", required_argument, NULL, O_CSCALE},
    {"limit", required_argument, NULL, O_LIMIT},
    {"start-at", required_argument, NULL, O_START},
    {"node-failures", required_argument, NULL, O_NFAIL},
    {"repair-time", required_argument, NULL, O_REPAIR},
    {"seed", required_argument, NULL, O_SEED},
    {"sample", required_argument, NULL, O_SAMPLE},
    {"cycle-interval", required_argument, NULL, O_CYCLE},
    {"skip-bad-rows", no_argument, NULL, O_SKIP},
    {"check", no_argument, NULL, O_CHECK},
    {"json", required_argument, NULL, O_JSON},
    {"jobs-csv", required_argument, NULL, O_CSV},
    {"html", required_argument, NULL, O_HTML},
    {"quiet", no_argument, NULL, O_QUIET},
    {"no-progress", no_argument, NULL, O_NOPROG},
    {"fractional", required_argument, NULL, O_FRAC},
    {"over-cap", required_argument, NULL, O_OVERCAP},
    {"csv", required_argument, NULL, O_TCSV},
    {"save", required_argument, NULL, O_SAVE},
    {"label", required_argument, NULL, O_LABEL},
    {"sweep", required_argument, NULL, O_SWEEP},
    {"from-db", required_argument, NULL, O_FROMDB},
    {"since", required_argument, NULL, O_SINCE},
    {"until", required_argument, NULL, O_UNTIL},
    {"switch-nodes", required_argument, NULL, O_SWNODES},
    {"topology", required_argument, NULL, O_TOPOFILE},
    {"topology-mode", required_argument, NULL, O_TOPOMODE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int bad_flag(const char *flag, const char *value, const char *what)
{
    fprintf(stderr, "docket-sim: --%s: '%s' is not %s\n", flag, value, what);
    return -EINVAL;
}

static int parse_pos_double(const char *flag, const char *s, double min, double max, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || errno != 0 || !isfinite(v) || v < min || v > max) {
        char what[96];

        snprintf(what, sizeof(what), "a number in %g..%g", min, max);
        return bad_flag(flag, s, what);
    }
    *out = v;
    return 0;
}

static int parse_dur(const char *flag, const char *s, int64_t *out)
{
    if (parse_duration_ms(s, out) < 0)
        return bad_flag(flag, s, "a duration (90s, 15m, 4h, 7d)");
    return 0;
}

static int add_item(const char **arr, int *n, const char *v, const char *flag)
{
    if (*n == MAX_RUNS) {
        fprintf(stderr, "docket-sim: --%s: at most %d\n", flag, MAX_RUNS);
        return -EINVAL;
    }
    arr[(*n)++] = v;
    return 0;
}

/* A point in time: a UTC date or date and time (2026-11-01, 2026-11-01T08:00[:SS][Z]), or a
 * duration back from now (30d). Unix ms. */
static int parse_when(const char *flag, const char *s, int64_t *out)
{
    static const char *const fmts[] = {"%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%MZ",
                                       "%Y-%m-%dT%H:%M", "%Y-%m-%d"};
    int64_t ms;

    if (parse_duration_ms(s, &ms) == 0) {
        *out = clock_now_ms() - ms;
        return 0;
    }
    for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
        struct tm tm;
        const char *end;

        memset(&tm, 0, sizeof(tm));
        end = strptime(s, fmts[i], &tm);
        if (end && *end == '\0') {
            *out = (int64_t)timegm(&tm) * 1000;
            return 0;
        }
    }
    return bad_flag(flag, s, "a UTC date (2026-11-01, 2026-11-01T08:00Z) or a duration (30d)");
}

static int parse_opt3(struct cli *c, int o, const char *a)
{
    switch (o) {
    case O_FROMDB:
        c->from_db = a;
        return 0;
    case O_SINCE:
        return parse_when("since", a, &c->since_ms);
    case O_UNTIL:
        return parse_when("until", a, &c->until_ms);
    case O_SWNODES:
        if (parse_int64(a, 1, 1000000, &c->switch_nodes) < 0)
            return bad_flag("switch-nodes", a, "a positive integer");
        return 0;
    case O_TOPOFILE:
        c->topology_path = a;
        return 0;
    case O_TOPOMODE:
        if (strcmp(a, "required") && strcmp(a, "best_effort") && strcmp(a, "none"))
            return bad_flag("topology-mode", a, "required, best_effort or none");
        c->topology_mode = a;
        return 0;
    default:
        return -EINVAL;
    }
}

static int parse_opt2(struct cli *c, int o, const char *a)
{
    int64_t v;

    switch (o) {
    case O_ASCALE:
        return parse_pos_double("arrival-scale", a, 1e-6, 1e6, &c->opt.arrival_scale);
    case O_CSCALE:
        return parse_pos_double("cluster-scale", a, 1e-6, 1e6, &c->cluster_scale);
    case O_LIMIT:
        if (parse_int64(a, 1, INT32_MAX, &v) < 0)
            return bad_flag("limit", a, "a positive integer");
        c->opt.limit = (long)v;
        return 0;
    case O_START:
        return parse_dur("start-at", a, &c->opt.start_at_ms);
    case O_NFAIL:
        return parse_pos_double("node-failures", a, 0, 1000, &c->opt.node_failure_rate);
    case O_REPAIR:
        return parse_dur("repair-time", a, &c->opt.repair_ms);
    case O_SEED:
        if (parse_int64(a, 0, INT64_MAX, &v) < 0)
            return bad_flag("seed", a, "a non-negative integer");
        c->opt.seed = (uint64_t)v;
        return 0;
    case O_SAMPLE:
        if (parse_dur("sample", a, &c->opt.sample_ms) < 0)
            return -EINVAL;
        return c->opt.sample_ms < 1000 ? bad_flag("sample", a, "at least 1s") : 0;
    case O_CYCLE:
        return parse_dur("cycle-interval", a, &c->opt.cycle_interval_ms);
    case O_SKIP:
        c->opt.skip_bad_rows = true;
        return 0;
    case O_CHECK:
        c->check = true;
        return 0;
    case O_JSON:
        c->json_path = a;
        return 0;
    case O_CSV:
        c->csv_path = a;
        return 0;
    case O_HTML:
        c->html_path = a;
        return 0;
    case O_QUIET:
        c->quiet = true;
        return 0;
    case O_NOPROG:
        c->no_progress = true;
        return 0;
    case O_FRAC:
        c->fractional = a;
        return 0;
    case O_OVERCAP:
        c->over_cap = a;
        return 0;
    case O_TCSV:
        c->table_csv_path = a;
        return 0;
    case O_SAVE:
        c->save_dir = a;
        return 0;
    case O_LABEL:
        c->label = a;
        return 0;
    case O_SWEEP: {
        char err[256];

        if (sim_sweep_parse(&c->sweep, a, err, sizeof(err)) < 0) {
            fprintf(stderr, "docket-sim: %s\n", err);
            return -EINVAL;
        }
        return 0;
    }
    default:
        return parse_opt3(c, o, a);
    }
}

static int parse_opt(struct cli *c, int o, const char *a)
{
    switch (o) {
    case O_TRACE:
        c->opt.trace_path = a;
        return 0;
    case O_FORMAT:
        return trace_format_parse(a, &c->opt.format) < 0 ? bad_flag("format", a, "csv or swf") : 0;
    case O_CLUSTER:
        c->cluster_path = a;
        return 0;
    case O_POLICY:
        return add_item(c->policy_paths, &c->npolicies, a, "policy");
    case O_BASELINE:
        return add_item(c->baselines, &c->nbaselines, a, "baseline");
    case O_COMPARE:
        c->compare = true;
        return 0;
    case O_MAPPING:
        c->mapping_path = a;
        return 0;
    case O_TFACTOR:
        return parse_pos_double("time-factor", a, 0.01, 1000, &c->time_factor);
    case O_TLIMIT:
        c->time_limit_src = a;
        return 0;
    case O_DTIER:
        c->default_tier = a;
        return 0;
    case O_DCLASS:
        c->default_class = a;
        return 0;
    case O_CPUUNIT:
        return parse_int(a, 1, 100000, &c->cpu_unit) < 0
                   ? bad_flag("cpu-unit", a, "an integer in 1..100000")
                   : 0;
    case O_PLABEL:
        c->partition_label = a;
        return 0;
    case O_POOL:
        c->pool = true;
        return 0;
    case O_CKPT:
        return parse_dur("checkpoint", a, &c->checkpoint_ms);
    case O_ONSIG:
        c->on_signal = a;
        return 0;
    default:
        return parse_opt2(c, o, a);
    }
}

static int parse_args(struct cli *c, int argc, char **argv)
{
    bool fmt_given = false;
    int o;

    memset(c, 0, sizeof(*c));
    sim_options_defaults(&c->opt);
    c->cluster_scale = 1.0;
    c->checkpoint_ms = -1;
    c->cpu_unit = 0;
    while ((o = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (o == 'h') {
            fputs(usage_text, stdout);
            exit(0);
        }
        if (o == '?')
            return -EINVAL;
        fmt_given = fmt_given || o == O_FORMAT;
        if (parse_opt(c, o, optarg) < 0)
            return -EINVAL;
    }
    if (optind < argc) {
        fprintf(stderr, "docket-sim: unexpected argument '%s'\n", argv[optind]);
        return -EINVAL;
    }
    if (c->from_db && (c->opt.trace_path || c->check)) {
        fprintf(stderr, "docket-sim: --from-db replays the site's history: no --trace or "
                        "--check with it\n");
        return -EINVAL;
    }
    if (c->from_db && c->opt.start_at_ms) {
        fprintf(stderr, "docket-sim: --start-at is for a trace; --from-db takes --since\n");
        return -EINVAL;
    }
    if ((c->since_ms || c->until_ms) && !c->from_db) {
        fprintf(stderr, "docket-sim: --since and --until select jobs of --from-db\n");
        return -EINVAL;
    }
    if (c->sweep.naxes && (c->csv_path || c->save_dir)) {
        fprintf(stderr, "docket-sim: --sweep writes one table (terminal, --json, --csv, --html): "
                        "no --jobs-csv or --save with it\n");
        return -EINVAL;
    }
    if (c->from_db)
        return 0;
    if (!c->opt.trace_path) {
        fprintf(stderr, "docket-sim: --trace (or --from-db) is required\n");
        return -EINVAL;
    }
    if (!fmt_given)
        c->opt.format = trace_format_guess(c->opt.trace_path);
    if (!c->check && !c->cluster_path) {
        fprintf(stderr, "docket-sim: --cluster is required\n");
        return -EINVAL;
    }
    return 0;
}

/* --check: read every row, list every bad one. */
static int check_trace(const struct cli *c)
{
    struct trace_error te;
    struct trace_row row;
    struct trace_reader *r = trace_open(c->opt.trace_path, c->opt.format, &te);
    char msg[512];
    long good = 0, bad = 0;
    int rc;

    if (!r) {
        trace_error_format(&te, msg, sizeof(msg));
        fprintf(stderr, "docket-sim: %s\n", msg);
        return 1;
    }
    while ((rc = trace_next(r, &row, &te)) != 0) {
        if (rc == 1) {
            good++;
            continue;
        }
        trace_error_format(&te, msg, sizeof(msg));
        printf("%s\n", msg);
        bad++;
        if (rc == -EIO)
            break;
    }
    trace_close(r);
    printf("%s: %ld rows, %ld bad\n", c->opt.trace_path, good + bad, bad);
    return bad ? 1 : 0;
}

static int apply_flag_mapping(const struct cli *c, struct sim_mapping *m)
{
    if (c->time_factor > 0)
        m->time_limit_factor = c->time_factor;
    if (c->time_limit_src) {
        if (strcmp(c->time_limit_src, "runtime") == 0)
            m->limit_source = SIM_LIMIT_RUNTIME;
        else if (strcmp(c->time_limit_src, "requested") == 0)
            m->limit_source = SIM_LIMIT_REQUESTED;
        else if (strcmp(c->time_limit_src, "class") == 0)
            m->limit_source = SIM_LIMIT_CLASS;
        else
            return bad_flag("time-limit", c->time_limit_src, "runtime, requested or class");
    }
    if (c->on_signal) {
        if (strcmp(c->on_signal, "auto") == 0)
            m->on_signal = SIM_SIGNAL_AUTO;
        else if (strcmp(c->on_signal, "exit") == 0)
            m->on_signal = SIM_SIGNAL_EXIT;
        else if (strcmp(c->on_signal, "grace") == 0)
            m->on_signal = SIM_SIGNAL_GRACE;
        else
            return bad_flag("on-signal", c->on_signal, "auto, exit or grace");
    }
    if ((c->default_tier && !str_is_name(c->default_tier)) ||
        (c->default_class && !str_is_name(c->default_class)) ||
        (c->partition_label && !str_is_name(c->partition_label)))
        return bad_flag("default-tier/--default-class/--partition-label",
                        c->default_tier    ? c->default_tier
                        : c->default_class ? c->default_class
                                           : c->partition_label,
                        "a name");
    if (c->default_tier)
        (void)str_copy(m->dflt.tier, sizeof(m->dflt.tier), c->default_tier);
    if (c->default_class)
        (void)str_copy(m->dflt.class_name, sizeof(m->dflt.class_name), c->default_class);
    if (c->partition_label)
        (void)str_copy(m->partition_label, sizeof(m->partition_label), c->partition_label);
    if (c->cpu_unit > 0)
        m->cpu_unit_cores = c->cpu_unit;
    if (c->pool)
        m->pool = true;
    if (c->checkpoint_ms >= 0)
        m->checkpoint_ms = c->checkpoint_ms;
    if (c->fractional && sim_fractional_parse(c->fractional, &m->fractional) < 0)
        return bad_flag("fractional", c->fractional, "round-up, round-down or skip");
    if (c->over_cap && sim_over_cap_parse(c->over_cap, &m->over_cap) < 0)
        return bad_flag("over-cap", c->over_cap, "run, kill or skip");
    return 0;
}

static bool tier_known(const struct sched_policy *p, const char *t)
{
    if (!t[0])
        return true;
    for (int i = 0; i < p->ntiers; i++)
        if (strcmp(p->tiers[i].name, t) == 0)
            return true;
    return false;
}

static bool class_known(const struct sched_policy *p, const char *n)
{
    if (!n[0])
        return true;
    for (int i = 0; i < p->nclasses; i++)
        if (strcmp(p->classes[i].name, n) == 0)
            return true;
    return false;
}

/* Tiers and classes named by the mapping must exist in every policy that runs. */
static int check_mapping(const struct sim_mapping *m, const struct sim_policy *p)
{
    for (int i = -1; i < m->nrules; i++) {
        const struct sim_rule *r = i < 0 ? &m->dflt : &m->rules[i];

        if (!tier_known(&p->policy, r->tier)) {
            fprintf(stderr, "docket-sim: mapping: rule '%s': tier '%s' is not in policy '%s'\n",
                    r->match, r->tier, p->name);
            return -EINVAL;
        }
        if (!class_known(&p->policy, r->class_name)) {
            fprintf(stderr, "docket-sim: mapping: rule '%s': class '%s' is not in policy '%s'\n",
                    r->match, r->class_name, p->name);
            return -EINVAL;
        }
    }
    return 0;
}

struct plan {
    struct sim_policy pols[MAX_RUNS];
    int n;
};

/* A candidate policy replayed on the site's history keeps the site's projects it does
 * not list itself. */
static int add_site_projects(const struct cli *c, struct plan *pl)
{
    struct sim_policy site;
    char err[512];
    int rc = 0;

    if (sim_policy_from_json(c->site.policy, "site", &site, err, sizeof(err)) < 0) {
        fprintf(stderr, "docket-sim: %s: the stored policy: %s\n", c->from_db, err);
        return -EINVAL;
    }
    for (int i = 0; i < pl->n && rc == 0; i++)
        rc = sim_policy_add_projects(&pl->pols[i], &site, stderr);
    sim_policy_release(&site);
    return rc;
}

static int plan_runs(const struct cli *c, struct plan *pl)
{
    char err[512];
    const char *compare_set[] = {"fifo", "easy", "sjf", "multifactor"};
    const char *const *bl = c->baselines;
    int nbl = c->nbaselines;

    if (c->npolicies == 0 && c->from_db) {
        if (sim_policy_from_json(c->site.policy, "site", &pl->pols[0], err, sizeof(err)) < 0) {
            fprintf(stderr, "docket-sim: %s: the stored policy: %s\n", c->from_db, err);
            return -EINVAL;
        }
        pl->n = 1;
    } else if (c->npolicies == 0) {
        sim_policy_defaults(&pl->pols[0], "docket");
        pl->n = 1;
    }
    for (int i = 0; i < c->npolicies; i++) {
        if (sim_policy_load(c->policy_paths[i], &pl->pols[pl->n], err, sizeof(err)) < 0) {
            fprintf(stderr, "docket-sim: %s\n", err);
            return -EINVAL;
        }
        pl->n++;
    }
    if (c->from_db && c->npolicies > 0 && add_site_projects(c, pl) < 0)
        return -EINVAL;
    if (c->compare && nbl == 0) {
        bl = compare_set;
        nbl = 4;
    }
    for (int i = 0; i < nbl; i++) {
        if (pl->n == MAX_RUNS) {
            fprintf(stderr, "docket-sim: at most %d runs\n", MAX_RUNS);
            return -EINVAL;
        }
        if (sim_policy_copy(&pl->pols[pl->n], &pl->pols[0]) < 0)
            return -ENOMEM;
        pl->n++;
        if (sim_policy_baseline(&pl->pols[pl->n - 1], bl[i]) < 0) {
            fprintf(stderr,
                    "docket-sim: --baseline: '%s' is not fifo, easy, sjf, multifactor or "
                    "tiered\n",
                    bl[i]);
            return -EINVAL;
        }
    }
    return 0;
}

/* --switch-nodes / --topology: label the nodes by switch (docs/sim.md "Topology"). */
static int apply_topology(const struct cli *c, struct sim_cluster *cl)
{
    struct sim_switch *sw = NULL;
    int n = 0, rc = 0;
    char err[512];

    if (!c->switch_nodes && !c->topology_path)
        return 0;
    if (c->switch_nodes && c->topology_path) {
        fprintf(stderr, "docket-sim: --switch-nodes and --topology: give one of them\n");
        return -EINVAL;
    }
    if (c->sweep.naxes) {
        fprintf(stderr, "docket-sim: a topology is not swept: drop --sweep or the topology\n");
        return -EINVAL;
    }
    if (c->topology_path) {
        rc = sim_topology_load(c->topology_path, &sw, &n, err, sizeof(err));
    } else if (sim_topology_uniform(cl, (long)c->switch_nodes, &sw, &n) < 0) {
        snprintf(err, sizeof(err), "out of memory");
        rc = -1;
    }
    if (rc == 0)
        rc = sim_cluster_set_switches(cl, sw, n, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "docket-sim: %s\n", err);
    free(sw);
    return rc < 0 ? -EINVAL : 0;
}

/* --topology-mode: every class of every run places its gangs by `switch` so. */
static void topology_mode_set(const char *mode, struct plan *pl)
{
    enum sched_topo_mode m = !strcmp(mode, "required")      ? SCHED_TOPO_REQUIRED
                             : !strcmp(mode, "best_effort") ? SCHED_TOPO_BEST_EFFORT
                                                            : SCHED_TOPO_NONE;
    for (int i = 0; i < pl->n; i++)
        for (int k = 0; k < pl->pols[i].policy.nclasses; k++) {
            pl->pols[i].policy.classes[k].topo_mode = m;
            snprintf(pl->pols[i].policy.classes[k].topo_level, SCHED_NAME_MAX, "%s",
                     m == SCHED_TOPO_NONE ? "" : "switch");
        }
}

static int load_inputs(const struct cli *c, struct sim_cluster *cl, struct sim_mapping *m,
                       struct plan *pl)
{
    char err[512];

    if (c->site_cluster) {
        if (sim_cluster_copy(cl, &c->site.cluster) < 0)
            return -ENOMEM;
    } else if (sim_cluster_load(c->cluster_path, cl, err, sizeof(err)) < 0) {
        fprintf(stderr, "docket-sim: %s\n", err);
        return -EINVAL;
    }
    if (!c->sweep.naxes)
        sim_cluster_scale(cl, c->cluster_scale); /* a sweep scales each point's copy */
    if (apply_topology(c, cl) < 0 || plan_runs(c, pl) < 0)
        return -EINVAL;
    if (c->topology_mode)
        topology_mode_set(c->topology_mode, pl);
    sim_mapping_defaults(m);
    if (c->from_db)
        m->limit_source = SIM_LIMIT_REQUESTED; /* each job's own time limit */
    if (pl->pols[0].mapping &&
        sim_mapping_from_json(pl->pols[0].mapping, c->npolicies ? c->policy_paths[0] : "policy", m,
                              err, sizeof(err)) < 0) {
        fprintf(stderr, "docket-sim: %s\n", err);
        return -EINVAL;
    }
    if (c->mapping_path && sim_mapping_load(c->mapping_path, m, err, sizeof(err)) < 0) {
        fprintf(stderr, "docket-sim: %s\n", err);
        return -EINVAL;
    }
    if (apply_flag_mapping(c, m) < 0)
        return -EINVAL;
    for (int i = 0; i < pl->n; i++)
        if (check_mapping(m, &pl->pols[i]) < 0)
            return -EINVAL;
    return 0;
}

static FILE *open_out(const char *path)
{
    FILE *f;

    if (strcmp(path, "-") == 0)
        return stdout;
    f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "docket-sim: cannot write '%s': %s\n", path, strerror(errno));
    return f;
}

static int close_out(FILE *f, const char *path, int rc)
{
    if (f != stdout) {
        if (fclose(f) != 0)
            rc = -EIO;
    } else if (fflush(f) != 0) {
        rc = -EIO;
    }
    if (rc < 0)
        fprintf(stderr, "docket-sim: writing '%s' failed\n", path);
    return rc;
}

/* What the report writers take; each writer uses its part. */
struct out_ctx {
    const struct sim_report_meta *meta;
    const struct sim_run_report *runs;
    int n;
    const struct sim_table *sweep;
    const char *const *labels;
    int npoints;
};
typedef int (*out_fn)(FILE *f, const struct out_ctx *x);

/* Write one output file with fn when its path was given: 0, or -EIO (said on stderr). */
static int write_to(const char *path, out_fn fn, const struct out_ctx *x)
{
    FILE *f;

    if (!path)
        return 0;
    f = open_out(path);
    return f ? close_out(f, path, fn(f, x)) : -EIO;
}

static int out_json(FILE *f, const struct out_ctx *x)
{
    return sim_report_json(f, x->meta, x->runs, x->n);
}

static int out_jobs_csv(FILE *f, const struct out_ctx *x)
{
    return sim_report_jobs_csv(f, x->runs, x->n);
}

static int out_html(FILE *f, const struct out_ctx *x)
{
    return sim_report_html(f, x->meta, x->runs, x->n);
}

static int out_table_csv(FILE *f, const struct out_ctx *x)
{
    return sim_report_table_csv(f, x->runs, x->n);
}

static int out_sweep_json(FILE *f, const struct out_ctx *x)
{
    return sim_report_sweep_json(f, x->meta, x->labels, x->npoints, x->sweep);
}

static int out_sweep_html(FILE *f, const struct out_ctx *x)
{
    return sim_report_sweep_html(f, x->meta, x->sweep, x->npoints);
}

static int out_sweep_csv(FILE *f, const struct out_ctx *x)
{
    return sim_table_csv(f, x->sweep);
}

static int write_outputs(const struct cli *c, const struct sim_report_meta *meta,
                         const struct sim_run_report *runs, int n)
{
    bool color = isatty(STDOUT_FILENO) && !(getenv("NO_COLOR") && getenv("NO_COLOR")[0]);
    bool json_stdout = c->json_path && strcmp(c->json_path, "-") == 0;
    struct out_ctx x = {.meta = meta, .runs = runs, .n = n};
    int rc = 0;

    if (!c->quiet && !json_stdout) {
        if (n == 1)
            rc = sim_report_text(stdout, meta, &runs[0], color);
        else
            rc = sim_report_compare(stdout, meta, runs, n, color);
        fflush(stdout);
    }
    rc |= write_to(c->json_path, out_json, &x);
    rc |= write_to(c->csv_path, out_jobs_csv, &x);
    rc |= write_to(c->html_path, out_html, &x);
    rc |= write_to(c->table_csv_path, out_table_csv, &x);
    if (c->save_dir) {
        char path[4096], err[512];

        if (sim_history_save(c->save_dir, c->label ? c->label : runs[0].r->policy_name, meta, runs,
                             n, path, sizeof(path), err, sizeof(err)) < 0) {
            fprintf(stderr, "docket-sim: %s\n", err);
            rc = -EIO;
        } else {
            fprintf(stderr,
                    "docket-sim: saved %s (compare it later: docket-sim compare %s OTHER)\n", path,
                    path);
        }
    }
    return rc;
}

/* The runs of one point: every policy of the plan on the same inputs. */
struct point {
    struct sim_result *res[MAX_RUNS];
    struct sim_summary sum[MAX_RUNS];
    struct sim_run_report runs[MAX_RUNS];
    int n;
};

static void point_release(struct point *p)
{
    for (int i = 0; i < p->n; i++) {
        sim_summary_release(&p->sum[i]);
        sim_result_destroy(p->res[i]);
    }
    p->n = 0;
}

static int run_point(const struct sim_options *opt, const struct sim_cluster *cl,
                     const struct sim_mapping *m, const struct plan *pl, struct point *p)
{
    char err[512];

    memset(p, 0, sizeof(*p));
    for (int i = 0; i < pl->n; i++) {
        p->res[i] = sim_run(opt, cl, &pl->pols[i], m, err, sizeof(err));
        if (!p->res[i]) {
            fprintf(stderr, "docket-sim: %s\n", err);
            return -EINVAL;
        }
        p->n++;
        if (sim_summary_compute(p->res[i], &p->sum[i]) < 0)
            return -ENOMEM;
        p->runs[i] = (struct sim_run_report){p->res[i], &p->sum[i]};
    }
    return 0;
}

static struct sim_report_meta report_meta(const struct cli *c, const struct sim_mapping *m)
{
    return (struct sim_report_meta){
        .trace = c->opt.trace_path,
        .cluster = c->cluster_path,
        .arrival_scale = c->opt.arrival_scale,
        .cluster_scale = c->cluster_scale,
        .limit = c->opt.limit,
        .start_at_ms = c->opt.start_at_ms,
        .pool = m->pool,
        .seed = (unsigned long long)c->opt.seed,
        .node_failure_rate = c->opt.node_failure_rate,
        .fractional = m->fractional == SIM_FRAC_ROUND_DOWN ? "round-down"
                      : m->fractional == SIM_FRAC_SKIP     ? "skip"
                                                           : "round-up",
        .over_cap = m->over_cap == SIM_CAP_KILL   ? "kill"
                    : m->over_cap == SIM_CAP_SKIP ? "skip"
                                                  : "run",
    };
}

static int simulate(const struct cli *c, const struct sim_cluster *cl, const struct sim_mapping *m,
                    const struct plan *pl)
{
    struct sim_report_meta meta = report_meta(c, m);
    struct sim_options opt = c->opt;
    struct point p;
    int rc;

    opt.progress = !c->no_progress && isatty(STDERR_FILENO);
    rc = run_point(&opt, cl, m, pl, &p);
    if (rc == 0)
        rc = write_outputs(c, &meta, p.runs, p.n);
    point_release(&p);
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* --sweep                                                                            */

static int write_sweep(const struct cli *c, const struct sim_report_meta *meta,
                       const struct sim_table *t, const char *const *labels, int npoints)
{
    bool color = isatty(STDOUT_FILENO) && !(getenv("NO_COLOR") && getenv("NO_COLOR")[0]);
    bool json_stdout = c->json_path && strcmp(c->json_path, "-") == 0;
    struct out_ctx x = {.meta = meta, .sweep = t, .labels = labels, .npoints = npoints};
    int rc = 0;

    if (!c->quiet && !json_stdout) {
        printf("docket-sim: sweep of %d points x %d policies\n", npoints, t->nruns);
        rc = sim_table_text(stdout, t, color);
        printf("wait: to first start; bold: the best policy of a row at that point\n");
        fflush(stdout);
    }
    rc |= write_to(c->json_path, out_sweep_json, &x);
    rc |= write_to(c->html_path, out_sweep_html, &x);
    rc |= write_to(c->table_csv_path, out_sweep_csv, &x);
    return rc;
}

/* One point of the grid: the run's own values where no axis sets them. */
static int sweep_point(const struct cli *c, const struct sim_cluster *cl,
                       const struct sim_mapping *m, const struct plan *pl,
                       const struct sim_sweep_point *sp, struct sim_table *acc)
{
    struct sim_options opt = c->opt;
    struct sim_cluster scaled = {0};
    struct sim_mapping mp = *m;
    struct point p;
    int rc;

    opt.progress = !c->no_progress && isatty(STDERR_FILENO);
    if (sp->arrival_scale > 0)
        opt.arrival_scale = sp->arrival_scale;
    if (sp->checkpoint_ms >= 0)
        mp.checkpoint_ms = sp->checkpoint_ms;
    if (sim_cluster_copy(&scaled, cl) < 0)
        return -ENOMEM;
    sim_cluster_scale(&scaled, c->cluster_scale * (sp->cluster_scale > 0 ? sp->cluster_scale : 1));
    rc = run_point(&opt, &scaled, &mp, pl, &p);
    if (rc == 0)
        rc = sim_sweep_add(acc, sp->label, p.runs, p.n);
    point_release(&p);
    sim_cluster_release(&scaled);
    return rc;
}

static int sweep(const struct cli *c, const struct sim_cluster *cl, const struct sim_mapping *m,
                 const struct plan *pl)
{
    struct sim_report_meta meta = report_meta(c, m);
    int n = sim_sweep_count(&c->sweep), rc = 0;
    static struct sim_sweep_point pts[SIM_SWEEP_MAX_POINTS];
    const char *labels[SIM_SWEEP_MAX_POINTS];
    struct sim_table acc;

    memset(&acc, 0, sizeof(acc));
    for (int i = 0; i < n && rc == 0; i++) {
        int64_t t0 = clock_mono_ms();

        sim_sweep_point(&c->sweep, i, &pts[i]);
        labels[i] = pts[i].label;
        rc = sweep_point(c, cl, m, pl, &pts[i], &acc);
        if (!c->no_progress)
            fprintf(stderr, "docket-sim: sweep point %d/%d (%s): %d policies in %.1f s%s\n", i + 1,
                    n, pts[i].label, pl->n, (double)(clock_mono_ms() - t0) / 1000.0,
                    rc < 0 ? ", failed" : "");
    }
    if (rc == 0)
        rc = write_sweep(c, &meta, &acc, labels, n);
    sim_table_release(&acc);
    return rc;
}

/* docket-sim compare A B */
static int compare_main(int argc, char **argv)
{
    bool color = isatty(STDOUT_FILENO) && !(getenv("NO_COLOR") && getenv("NO_COLOR")[0]);
    char err[1024];

    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        fputs("usage: docket-sim compare A.json B.json\n"
              "Put two saved runs (docket-sim --save DIR or --json FILE) side by side: every\n"
              "policy of each, and the change B - A per policy name present in both.\n",
              stdout);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "docket-sim: compare takes two saved runs: docket-sim compare A.json "
                        "B.json (see --save)\n");
        return 2;
    }
    if (sim_history_compare(stdout, argv[1], argv[2], color, err, sizeof(err)) < 0) {
        fprintf(stderr, "docket-sim: %s\n", err);
        return 2;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

/* --from-db: the site's history becomes the rows, its nodes the cluster (unless
 * --cluster), its policy and projects the policy (unless --policy). */
static int load_site(struct cli *c)
{
    static char cluster_name[4200];
    char err[512];

    if (sim_site_load(c->from_db, c->since_ms, c->until_ms, &c->site, err, sizeof(err)) < 0) {
        fprintf(stderr, "docket-sim: --from-db: %s\n", err);
        return -EINVAL;
    }
    if (c->site.nrows == 0) {
        fprintf(stderr, "docket-sim: --from-db: '%s' holds no finished job%s (%ld not finished)\n",
                c->from_db, c->since_ms || c->until_ms ? " in --since/--until" : "", c->site.live);
        return -EINVAL;
    }
    if (c->site.cluster.ngroups == 0 && !c->cluster_path) {
        fprintf(stderr, "docket-sim: --from-db: '%s' holds no node: give --cluster\n", c->from_db);
        return -EINVAL;
    }
    c->opt.trace_path = c->from_db;
    c->opt.rows = c->site.rows;
    c->opt.nrows = c->site.nrows;
    if (!c->cluster_path) {
        c->site_cluster = true;
        snprintf(cluster_name, sizeof(cluster_name), "the nodes of %s", c->from_db);
        c->cluster_path = cluster_name;
    }
    fprintf(stderr,
            "docket-sim: %s: %zu finished jobs (%ld not finished, left out; %ld ran more than "
            "once: their last run is replayed), %d nodes\n",
            c->from_db, c->site.nrows, c->site.live, c->site.reruns, c->site.cluster.ngroups);
    return 0;
}

int main(int argc, char **argv)
{
    struct cli c;
    struct sim_cluster cl = {0};
    struct sim_mapping m;
    struct plan pl;
    int rc;

    memset(&pl, 0, sizeof(pl));
    sim_mapping_defaults(&m);
    if (argc >= 2 && strcmp(argv[1], "compare") == 0)
        return compare_main(argc - 1, argv + 1);
    if (parse_args(&c, argc, argv) < 0) {
        fprintf(stderr, "docket-sim: see --help\n");
        return 2;
    }
    if (c.check)
        return check_trace(&c);
    if (c.from_db && load_site(&c) < 0) {
        rc = 2;
    } else if (load_inputs(&c, &cl, &m, &pl) < 0) {
        rc = 2;
    } else {
        rc = (c.sweep.naxes ? sweep(&c, &cl, &m, &pl) : simulate(&c, &cl, &m, &pl)) < 0 ? 1 : 0;
    }
    for (int i = 0; i < pl.n; i++)
        sim_policy_release(&pl.pols[i]);
    sim_mapping_release(&m);
    sim_cluster_release(&cl);
    sim_site_release(&c.site);
    return rc;
}
