/*
 * test_sim_engine.c - hand-made traces through the real core with exactly known outcomes:
 * FIFO ordering, one EASY backfill, one preemption (with and without checkpoints), bad
 * rows, node failures, and byte-identical reports for identical inputs.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/config.h"
#include "sim/engine.h"
#include "sim/report.h"
#include "sim/stats.h"
#include "util/yamljson.h"

#define HEADER "job_id,submit_s,runtime_s,gpus,cpus,mem_mb,nodes,project,user,status\n"

struct fx {
    char path[64];
    struct sim_options opt;
    struct sim_cluster cl;
    struct sim_policy pol;
    struct sim_mapping map;
    char err[512];
};

static void write_trace(struct fx *f, const char *text)
{
    int fd;

    snprintf(f->path, sizeof(f->path), "/tmp/test_sim_XXXXXX");
    fd = mkstemp(f->path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void yaml_into(const char *yaml, json_t **out)
{
    char err[256];

    *out = yaml_to_json(yaml, strlen(yaml), err, sizeof(err));
    if (!*out)
        fail_msg("yaml: %s", err);
}

/* One node of `gpus` GPUs, the given policy YAML and mapping YAML (NULL: defaults). */
static void fx_init(struct fx *f, const char *trace, int gpus, const char *policy,
                    const char *mapping)
{
    char yaml[256];
    json_t *doc;

    memset(f, 0, sizeof(*f));
    write_trace(f, trace);
    sim_options_defaults(&f->opt);
    f->opt.trace_path = f->path;
    f->opt.max_errors_shown = 0;
    snprintf(yaml, sizeof(yaml),
             "node_groups: [{name: n, count: 1, gpus: %d, gpu_type: A100, cpus: 64}]", gpus);
    yaml_into(yaml, &doc);
    assert_int_equal(sim_cluster_from_json(doc, "cluster", &f->cl, f->err, sizeof(f->err)), 0);
    json_decref(doc);
    yaml_into(policy, &doc);
    if (sim_policy_from_json(doc, "policy", &f->pol, f->err, sizeof(f->err)) < 0)
        fail_msg("policy: %s", f->err);
    json_decref(doc);
    sim_mapping_defaults(&f->map);
    f->map.time_limit_factor = 1.0;
    if (mapping) {
        yaml_into(mapping, &doc);
        if (sim_mapping_from_json(doc, "mapping", &f->map, f->err, sizeof(f->err)) < 0)
            fail_msg("mapping: %s", f->err);
        json_decref(doc);
    }
}

static void fx_release(struct fx *f)
{
    unlink(f->path);
    sim_cluster_release(&f->cl);
    sim_policy_release(&f->pol);
    sim_mapping_release(&f->map);
}

static struct sim_result *fx_run(struct fx *f)
{
    struct sim_result *r = sim_run(&f->opt, &f->cl, &f->pol, &f->map, f->err, sizeof(f->err));

    if (!r)
        fail_msg("sim_run: %s", f->err);
    return r;
}

static const struct sim_job_rec *job(const struct sim_result *r, const char *id)
{
    for (size_t i = 0; i < r->njobs; i++)
        if (strcmp(sim_job_id(r, &r->jobs[i]), id) == 0)
            return &r->jobs[i];
    fail_msg("no job '%s'", id);
    return NULL;
}

static const char fifo[] = "settings: {ordering: fifo, backfill: false, preemption: false}";
static const char easy[] =
    "settings: {ordering: fifo, backfill: true, backfill_depth: 1, preemption: false}";

/* A (2 GPUs, 600 s), B (4 GPUs) waits for A, C (2 GPUs, 300 s) fits in the hole. */
static const char backfill_trace[] = HEADER "A,0,600,2,,,,p,,completed\n"
                                            "B,10,600,4,,,,p,,completed\n"
                                            "C,20,300,2,,,,p,,completed\n";

static void fifo_order(void **state)
{
    struct fx f;
    struct sim_result *r;

    (void)state;
    fx_init(&f, HEADER "A,0,100,4,,,,p,,\nB,10,50,4,,,,p,,\nC,20,70,4,,,,p,,\n", 4, fifo, NULL);
    r = fx_run(&f);
    assert_int_equal(r->njobs, 3);
    assert_int_equal(job(r, "A")->first_start_ms, 0);
    assert_int_equal(job(r, "A")->end_ms, 100000);
    assert_int_equal(job(r, "B")->first_start_ms, 100000);
    assert_int_equal(job(r, "B")->end_ms, 150000);
    assert_int_equal(job(r, "C")->first_start_ms, 150000);
    assert_int_equal(job(r, "C")->end_ms, 220000);
    assert_int_equal(job(r, "C")->end, SIM_END_COMPLETED);
    assert_int_equal(r->busy_gpu_ms_total, 4 * 220000);
    assert_int_equal(r->end_ms, 220000);
    sim_result_destroy(r);
    fx_release(&f);
}

static void fifo_blocks_without_backfill(void **state)
{
    struct fx f;
    struct sim_result *r;

    (void)state;
    fx_init(&f, backfill_trace, 4, fifo, NULL);
    r = fx_run(&f);
    assert_int_equal(job(r, "B")->first_start_ms, 600000);
    assert_int_equal(job(r, "C")->first_start_ms, 1200000); /* strictly after B */
    sim_result_destroy(r);
    fx_release(&f);
}

static void easy_backfills_one_job(void **state)
{
    struct fx f;
    struct sim_result *r;

    (void)state;
    fx_init(&f, backfill_trace, 4, easy, NULL);
    r = fx_run(&f);
    assert_int_equal(job(r, "A")->first_start_ms, 0);
    assert_int_equal(job(r, "C")->first_start_ms, 20000); /* backfilled at submission */
    assert_int_equal(job(r, "C")->end_ms, 320000);
    assert_int_equal(job(r, "B")->first_start_ms, 600000); /* its reservation held */
    assert_int_equal(r->preemptions, 0);
    sim_result_destroy(r);
    fx_release(&f);
}

static const char tiered[] =
    "settings: {ordering: tiered, backfill: true, preemption: true, min_runtime: 10m}";
static const char tiers_map[] =
    "rules: [{match: lo, tier: low, class: training}, {match: hi, tier: high, class: training}]";
/* L (low tier) holds the node; H (high) arrives after L's min_runtime. */
static const char preempt_trace[] = HEADER "L,0,10000,4,,,,lo,,completed\n"
                                           "H,1000,100,4,,,,hi,,completed\n";

static void one_preemption(void **state)
{
    struct fx f;
    struct sim_result *r;
    struct sim_summary s;

    (void)state;
    fx_init(&f, preempt_trace, 4, tiered, tiers_map);
    f.map.time_limit_factor = 2.0;
    f.map.on_signal = SIM_SIGNAL_EXIT; /* L dies of the signal at once */
    r = fx_run(&f);
    assert_int_equal(job(r, "H")->first_start_ms, 1000000);
    assert_int_equal(job(r, "H")->end_ms, 1100000);
    assert_int_equal(job(r, "L")->first_start_ms, 0);
    assert_int_equal(job(r, "L")->preempts, 1);
    assert_int_equal(job(r, "L")->lost_ms, 1000000);           /* no checkpoint: all of it */
    assert_int_equal(job(r, "L")->end_ms, 1100000 + 10000000); /* restarts from scratch */
    assert_int_equal(job(r, "L")->end, SIM_END_COMPLETED);
    assert_int_equal(r->preemptions, 1);
    assert_int_equal(r->requeues, 1);
    assert_int_equal(sim_summary_compute(r, &s), 0);
    assert_true(s.lost_gpu_hours > 1.1110 && s.lost_gpu_hours < 1.1112); /* 4 x 1000 s */
    sim_summary_release(&s);
    sim_result_destroy(r);
    fx_release(&f);
}

static void preemption_waits_for_the_grace(void **state)
{
    struct fx f;
    struct sim_result *r;

    (void)state;
    /* auto: L declared no checkpoint, so it runs out its 30 s grace and is killed */
    fx_init(&f, preempt_trace, 4,
            "settings: {ordering: tiered, backfill: true, preemption: true, min_runtime: 10m,"
            " default_grace: 30s}",
            tiers_map);
    f.map.time_limit_factor = 2.0;
    r = fx_run(&f);
    assert_int_equal(job(r, "H")->first_start_ms, 1030000);
    assert_int_equal(job(r, "L")->preempts, 1);
    assert_int_equal(job(r, "L")->lost_ms, 1030000);
    assert_int_equal(job(r, "L")->end_ms, 1130000 + 10000000);
    sim_result_destroy(r);
    fx_release(&f);
}

static void preemption_keeps_checkpointed_work(void **state)
{
    struct fx f;
    struct sim_result *r;

    (void)state;
    fx_init(&f, preempt_trace, 4, tiered, tiers_map);
    f.map.time_limit_factor = 2.0;
    f.map.checkpoint_ms = 300000; /* every 5 min: checkpoints at 300, 600, 900 s */
    r = fx_run(&f);
    assert_int_equal(job(r, "H")->first_start_ms, 1000000);
    assert_int_equal(job(r, "L")->preempts, 1);
    assert_int_equal(job(r, "L")->lost_ms, 100000); /* since 900 s */
    assert_int_equal(job(r, "L")->end_ms, 1100000 + 10000000 - 900000);
    sim_result_destroy(r);
    fx_release(&f);
}

static void fifo_never_preempts(void **state)
{
    struct fx f;
    struct sim_result *r;

    (void)state;
    fx_init(&f, preempt_trace, 4, fifo, tiers_map);
    f.map.time_limit_factor = 2.0;
    r = fx_run(&f);
    assert_int_equal(job(r, "H")->first_start_ms, 10000000);
    assert_int_equal(r->preemptions, 0);
    sim_result_destroy(r);
    fx_release(&f);
}

static const char capped_class[] =
    "classes: [{name: exploration, default_limit: 30m, max_limit: 30m}]\n"
    "settings: {ordering: fifo, default_class: exploration}";

/* over_cap: run (default): a 1 h trace job in a class capped at 30 min runs its recorded
 * runtime, and the report counts it; nothing is cut silently. */
static void over_cap_runs_to_the_end(void **state)
{
    struct fx f;
    struct sim_result *r;

    (void)state;
    fx_init(&f, HEADER "T,0,3600,1,,,,p,,\nU,0,600,1,,,,p,,\n", 4, capped_class,
            "default: {class: exploration}");
    r = fx_run(&f);
    assert_int_equal(job(r, "T")->end, SIM_END_COMPLETED);
    assert_int_equal(job(r, "T")->end_ms, 3600000);
    assert_true(job(r, "T")->limit_ms > 3600000);
    assert_int_equal(job(r, "U")->end, SIM_END_COMPLETED);
    assert_int_equal(r->rows.over_cap, 1);
    assert_int_equal(r->rows.limit_raised, 1); /* U: factor 1 gives a limit = its runtime */
    assert_int_equal(r->timeouts, 0);
    sim_result_destroy(r);
    fx_release(&f);

    fx_init(&f, HEADER "T,0,3600,1,,,,p,,\nU,0,600,1,,,,p,,\n", 4, capped_class,
            "{default: {class: exploration}, over_cap: skip}");
    r = fx_run(&f);
    assert_int_equal(r->njobs, 1);
    assert_int_equal(r->rows.over_cap, 1);
    assert_int_equal(r->rows.over_cap_skipped, 1);
    sim_result_destroy(r);
    fx_release(&f);
}

static void time_limit_ends_job(void **state)
{
    struct fx f;
    struct sim_result *r;

    (void)state;
    /* over_cap: kill. 1 h runtime, class exploration capped at 30 min: signalled at 30 min;
     * with no checkpoint it runs out the default 30 s grace and is killed: TIMEOUT */
    fx_init(&f, HEADER "T,0,3600,1,,,,p,,\n", 4, capped_class,
            "{default: {class: exploration}, over_cap: kill}");
    r = fx_run(&f);
    assert_int_equal(r->rows.over_cap, 1);
    assert_int_equal(job(r, "T")->limit_ms, 1800000);
    assert_int_equal(job(r, "T")->end, SIM_END_TIMEOUT);
    assert_int_equal(job(r, "T")->end_ms, 1800000 + 30000); /* signalled, killed after grace */
    assert_int_equal(r->timeouts, 1);
    sim_result_destroy(r);
    fx_release(&f);
}

static void bad_row_stops_or_is_counted(void **state)
{
    struct fx f;
    struct sim_result *r;

    (void)state;
    fx_init(&f, HEADER "A,0,100,4,,,,p,,\nB,5,x,4,,,,p,,\nC,20,70,4,,,,p,,\n", 4, fifo, NULL);
    r = sim_run(&f.opt, &f.cl, &f.pol, &f.map, f.err, sizeof(f.err));
    assert_null(r);
    assert_non_null(strstr(f.err, ":3: column 'runtime_s'"));
    f.opt.skip_bad_rows = true;
    r = fx_run(&f);
    assert_int_equal(r->bad_rows, 1);
    assert_int_equal(r->njobs, 2);
    assert_int_equal(job(r, "C")->first_start_ms, 100000);
    sim_result_destroy(r);
    fx_release(&f);
}

static void gang_shapes(void **state)
{
    struct fx f;
    struct sim_result *r;
    json_t *doc;

    (void)state;
    fx_init(&f,
            HEADER "a,0,60,12,,,,p,,\nb,0,60,13,,,,p,,\nc,0,60,0,20,,,p,,\n"
                   "d,0,60,8,,,2,p,,\n",
            8, fifo, NULL);
    sim_cluster_release(&f.cl);
    yaml_into("node_groups: [{name: n, count: 4, gpus: 8, gpu_type: A100, cpus: 64}]", &doc);
    assert_int_equal(sim_cluster_from_json(doc, "cluster", &f.cl, f.err, sizeof(f.err)), 0);
    json_decref(doc);
    r = fx_run(&f);
    assert_int_equal(job(r, "a")->gpus, 12); /* 2 nodes x 6 */
    assert_int_equal(job(r, "b")->gpus, 14); /* 13 is prime: 2 nodes x 7, rounded up */
    assert_int_equal(job(r, "c")->gpus, 0);  /* CPU-only: a CPU job, never GPU units */
    assert_int_equal(job(r, "c")->cpus, 20);
    assert_int_equal(job(r, "d")->gpus, 8); /* the trace's 2 nodes: 2 x 4 */
    assert_int_equal(r->rows.cpu_jobs, 1);
    assert_int_equal(r->rows.cpu_as_units, 0);
    for (size_t i = 0; i < r->njobs; i++)
        assert_int_equal(r->jobs[i].end, SIM_END_COMPLETED);
    sim_result_destroy(r);
    /* only when asked (cpu_unit_cores), and counted: 20 cores / 8 per unit, rounded up */
    f.map.cpu_unit_cores = 8;
    r = fx_run(&f);
    assert_int_equal(job(r, "c")->gpus, 3);
    assert_int_equal(r->rows.cpu_as_units, 1);
    sim_result_destroy(r);
    fx_release(&f);
}

/* Two partitions (vc=pa, vc=pb), one 4-GPU node each. A1 fills pa, A2 waits behind it; B1
 * arrives later in pb. Per-partition FIFO starts B1 at once; one queue for the whole
 * cluster (the old baseline) held it behind A2. */
static const char two_parts[] =
    "node_groups: [{name: a, count: 1, gpus: 4, gpu_type: A100, cpus: 64, labels: {vc: pa}},"
    " {name: b, count: 1, gpus: 4, gpu_type: A100, cpus: 64, labels: {vc: pb}}]";
static const char two_parts_trace[] = HEADER "A1,0,100,4,,,,pa,,\nA2,10,100,4,,,,pa,,\n"
                                             "B1,20,50,2,,,,pb,,\n";

static void fx_cluster(struct fx *f, const char *yaml)
{
    json_t *doc;

    sim_cluster_release(&f->cl);
    yaml_into(yaml, &doc);
    assert_int_equal(sim_cluster_from_json(doc, "cluster", &f->cl, f->err, sizeof(f->err)), 0);
    json_decref(doc);
}

/* Six 8-GPU nodes in two switches of three (--switch-nodes 3). A 1-node job takes n-0006
 * (best fit, the last node first); a 3-node gang then takes n-0005, n-0004 and n-0003 on
 * two switches without a rule, and sw-0001 whole with one (required or best effort): the
 * report counts the gang that spanned more switches than it needed. Names stay as they
 * were when the groups are cut at a switch. */
static void topology_counts_spread_gangs(void **state)
{
    static const enum sched_topo_mode modes[] = {SCHED_TOPO_NONE, SCHED_TOPO_BEST_EFFORT,
                                                 SCHED_TOPO_REQUIRED};
    struct fx f;
    struct sched_node_spec ns;
    struct sim_switch *sw;
    int nsw;

    (void)state;
    fx_init(&f, HEADER "x,0,1000,8,,,,p,,\ng,10,60,24,,,3,p,,\n", 8, fifo, NULL);
    fx_cluster(&f, "node_groups: [{name: n, count: 6, gpus: 8, gpu_type: A100, cpus: 64}]");
    assert_int_equal(sim_topology_uniform(&f.cl, 3, &sw, &nsw), 0);
    assert_int_equal(nsw, 2);
    assert_int_equal(sim_cluster_set_switches(&f.cl, sw, nsw, f.err, sizeof(f.err)), 0);
    free(sw);
    sim_cluster_node(&f.cl, 4, &ns);
    assert_string_equal(ns.name, "n-0005");
    assert_string_equal(ns.labels[ns.nlabels - 1].value, "sw-0002");
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        for (int k = 0; k < f.pol.policy.nclasses; k++) {
            f.pol.policy.classes[k].topo_mode = modes[m];
            snprintf(f.pol.policy.classes[k].topo_level, SCHED_NAME_MAX, "switch");
        }
        struct sim_result *r = fx_run(&f);
        assert_true(r->topology);
        assert_int_equal(r->gang_starts, 1);
        assert_int_equal(r->gangs_spread, modes[m] == SCHED_TOPO_NONE ? 1 : 0);
        assert_int_equal(r->extra_switches, modes[m] == SCHED_TOPO_NONE ? 1 : 0);
        assert_int_equal(job(r, "g")->end, SIM_END_COMPLETED);
        sim_result_destroy(r);
    }
    fx_release(&f);
}

/* The topology file: `NAME NODES` a line; a bad line is named with its number. */
static void topology_file(void **state)
{
    struct fx f;
    struct sim_switch *sw;
    int n;
    char err[256];

    (void)state;
    write_trace(&f, "# leaf switches\nleaf-a 2\n\nleaf-b 30  # the rest\n");
    assert_int_equal(sim_topology_load(f.path, &sw, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 2);
    assert_string_equal(sw[1].name, "leaf-b");
    assert_int_equal(sw[1].nodes, 30);
    free(sw);
    unlink(f.path);
    write_trace(&f, "leaf-a 2\nleaf-b many\n");
    assert_int_equal(sim_topology_load(f.path, &sw, &n, err, sizeof(err)), -1);
    assert_non_null(strstr(err, ":2: "));
    unlink(f.path);
}

static void fifo_baseline_is_per_partition(void **state)
{
    struct fx f;
    struct sim_result *r;

    (void)state;
    fx_init(&f, two_parts_trace, 4, fifo, "partition_label: vc");
    fx_cluster(&f, two_parts);
    r = fx_run(&f); /* a plain FIFO policy: one queue, as docketd runs one core */
    assert_int_equal(r->partitions, 1);
    assert_int_equal(job(r, "B1")->first_start_ms, 100000);
    sim_result_destroy(r);
    assert_int_equal(sim_policy_baseline(&f.pol, "fifo"), 0);
    r = fx_run(&f);
    assert_int_equal(r->partitions, 2);
    assert_int_equal(job(r, "A2")->first_start_ms, 100000);
    assert_int_equal(job(r, "B1")->first_start_ms, 20000); /* pa's blocked job holds only pa */
    sim_result_destroy(r);
    /* --pool: one shared pool, one queue again */
    f.map.pool = true;
    r = fx_run(&f);
    assert_int_equal(r->partitions, 1);
    sim_result_destroy(r);
    fx_release(&f);
}

/* X fills the node; L (long) then S (short) arrive. sjf starts S first, easy L. */
static void sjf_orders_by_time_limit(void **state)
{
    static const char trace[] = HEADER "X,0,100,4,,,,p,,\nL,1,1000,4,,,,p,,\nS,2,10,4,,,,p,,\n";
    struct fx f;
    struct sim_result *r;

    (void)state;
    fx_init(&f, trace, 4, tiered, NULL);
    assert_int_equal(sim_policy_baseline(&f.pol, "sjf"), 0);
    r = fx_run(&f);
    assert_int_equal(job(r, "S")->first_start_ms, 100000);
    assert_int_equal(job(r, "L")->first_start_ms, 110000);
    sim_result_destroy(r);
    sim_policy_release(&f.pol);
    sim_policy_defaults(&f.pol, "p");
    assert_int_equal(sim_policy_baseline(&f.pol, "easy"), 0);
    r = fx_run(&f);
    assert_int_equal(job(r, "L")->first_start_ms, 100000);
    assert_int_equal(job(r, "S")->first_start_ms, 1100000);
    sim_result_destroy(r);
    fx_release(&f);
}

/* Baselines keep FIFO strict (no starvation guard, no preemption, no reserved zone) but
 * starvation is still reported against the policy's bounds; multifactor uses the
 * documented weights unless the document set its own. */
static void baselines_are_what_they_say(void **state)
{
    struct sim_policy p;
    char err[256];
    json_t *doc;

    (void)state;
    yaml_into("tiers: [{name: top, starve_after: 1h}, {name: mid, starve_after: 4h},"
              " {name: bot}]\nsettings: {reserved_label: zone=fast, reserved_min_tier: mid}",
              &doc);
    if (sim_policy_from_json(doc, "p", &p, err, sizeof(err)) < 0)
        fail_msg("policy: %s", err);
    assert_int_equal(sim_policy_baseline(&p, "fifo"), 0);
    assert_false(p.policy.backfill);
    assert_false(p.policy.preemption);
    assert_true(p.per_partition);
    assert_string_equal(p.policy.reserved_label_key, "");
    for (int t = 0; t < p.policy.ntiers; t++)
        assert_int_equal(p.policy.tiers[t].starve_after_ms, 0);
    assert_true(p.report_bounds);
    assert_int_equal(p.report_starve_ms[0], 3600000);
    assert_int_equal(p.report_starve_ms[1], 4 * 3600000);
    assert_int_equal(sim_policy_baseline(&p, "multifactor"), 0); /* twice: bounds kept */
    assert_int_equal(p.report_starve_ms[0], 3600000);
    assert_true(p.policy.mf_age_weight == SIM_MF_AGE_WEIGHT);
    assert_true(p.policy.mf_fairshare_weight == SIM_MF_FAIRSHARE_WEIGHT);
    assert_true(p.policy.mf_tier_weight == SIM_MF_TIER_WEIGHT);
    assert_int_equal(p.policy.mf_age_max_ms, SIM_MF_AGE_MAX_MS);
    assert_int_equal(sim_policy_baseline(&p, "lottery"), -EINVAL);
    sim_policy_release(&p);
    json_decref(doc);

    yaml_into("settings: {mf_tier_weight: 5}", &doc);
    assert_int_equal(sim_policy_from_json(doc, "p", &p, err, sizeof(err)), 0);
    assert_int_equal(sim_policy_baseline(&p, "multifactor"), 0);
    assert_true(p.policy.mf_tier_weight == 5);
    sim_policy_release(&p);
    json_decref(doc);
}

/* Fractional requests, rows that never ran, CPU-only rows and rows without any request:
 * each handled by its documented rule and counted. */
static void row_rules_are_counted(void **state)
{
    static const char trace[] = HEADER "f,0,10,0.5,,,,p,,\nn1,1,,1,,,,p,,\n"
                                       "n2,2,0,1,,,,p,,cancelled\nn3,3,5,1,,,,p,,pending\n"
                                       "c,4,10,0,2.5,,,p,,\nz,5,10,,,,,p,,\n";
    struct fx f;
    struct sim_result *r;

    (void)state;
    fx_init(&f, trace, 4, fifo, NULL);
    r = fx_run(&f);
    assert_int_equal(r->rows.read, 6);
    assert_int_equal(r->rows.never_ran, 3);
    assert_int_equal(r->rows.frac_rounded, 2);
    assert_int_equal(r->rows.cpu_jobs, 1);
    assert_int_equal(r->rows.no_request, 1);
    assert_int_equal(r->njobs, 3);
    assert_int_equal(job(r, "f")->gpus, 1);
    assert_int_equal(job(r, "c")->gpus, 0);
    assert_int_equal(job(r, "c")->cpus, 3);
    assert_int_equal(job(r, "z")->cpus, 1);
    for (size_t i = 0; i < r->njobs; i++)
        assert_int_equal(r->jobs[i].end, SIM_END_COMPLETED);
    sim_result_destroy(r);
    f.map.fractional = SIM_FRAC_ROUND_DOWN;
    r = fx_run(&f);
    assert_int_equal(job(r, "f")->gpus, 1); /* at least 1 */
    assert_int_equal(job(r, "c")->cpus, 2);
    sim_result_destroy(r);
    f.map.fractional = SIM_FRAC_SKIP;
    r = fx_run(&f);
    assert_int_equal(r->rows.frac_skipped, 2);
    assert_int_equal(r->njobs, 1);
    sim_result_destroy(r);
    fx_release(&f);
}

/* A preempted job's wait to first start is 0, but its total delay shows what it lost. */
static void total_delay_counts_requeues(void **state)
{
    struct fx f;
    struct sim_result *r;
    struct sim_summary s;

    (void)state;
    fx_init(&f, preempt_trace, 4, tiered, tiers_map);
    f.map.time_limit_factor = 2.0;
    f.map.on_signal = SIM_SIGNAL_EXIT;
    r = fx_run(&f);
    assert_int_equal(sim_summary_compute(r, &s), 0);
    for (int t = 0; t < s.ntiers; t++) {
        if (strcmp(s.tiers[t].name, "low") != 0)
            continue;
        assert_true(s.tiers[t].wait_max_s == 0);
        assert_true(s.tiers[t].delay_max_s == 1100); /* ended at 11100 s after 10000 s work */
        assert_true(s.tiers[t].lost_preempt_gpu_h > 1.1110 &&
                    s.tiers[t].lost_preempt_gpu_h < 1.1112);
    }
    assert_true(isnan(s.jain_share)); /* no project has a guarantee */
    sim_summary_release(&s);
    sim_result_destroy(r);
    fx_release(&f);
}

static void rejected_job_is_counted(void **state)
{
    struct fx f;
    struct sim_result *r;

    (void)state;
    /* 9 GPUs on a single 4-GPU node can never fit */
    fx_init(&f, HEADER "A,0,100,9,,,,p,,\nB,1,100,1,,,,p,,\n", 4, fifo, NULL);
    r = fx_run(&f);
    assert_int_equal(r->rejected, 1);
    assert_int_equal(job(r, "A")->end, SIM_END_REJECTED);
    assert_int_equal(job(r, "B")->end, SIM_END_COMPLETED);
    sim_result_destroy(r);
    fx_release(&f);
}

static char *render(struct sim_result *r, int which)
{
    struct sim_summary s;
    struct sim_run_report run;
    struct sim_report_meta meta = {
        .trace = "t", .cluster = "c", .arrival_scale = 1, .cluster_scale = 1};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_int_equal(sim_summary_compute(r, &s), 0);
    run = (struct sim_run_report){r, &s};
    if (which == 0)
        assert_int_equal(sim_report_json(f, &meta, &run, 1), 0);
    else if (which == 1)
        assert_int_equal(sim_report_jobs_csv(f, &run, 1), 0);
    else if (which == 2)
        assert_int_equal(sim_report_html(f, &meta, &run, 1), 0);
    else
        assert_int_equal(sim_report_text(f, &meta, &run, false), 0);
    fclose(f);
    sim_summary_release(&s);
    return buf;
}

static void deterministic_reports(void **state)
{
    static const char trace[] = HEADER
        "a,0,500,2,,,,lo,,\nb,3,90,1,,,,hi,,\nc,3,700,4,,,,lo,,\nd,60,800,2,,,,hi,,\n"
        "e,61,100,1,,,,lo,,\nf,900,50,3,,,,hi,,\ng,901,4000,4,,,,lo,,\nh,1700,20,1,,,,hi,,\n";
    struct fx f;

    (void)state;
    fx_init(&f, trace, 4, tiered, tiers_map);
    f.opt.node_failure_rate = 20; /* per node per day: a few failures in the run */
    f.opt.repair_ms = 600000;
    f.opt.seed = 7;
    for (int which = 0; which < 4; which++) {
        struct sim_result *r1 = fx_run(&f), *r2 = fx_run(&f);
        char *a = render(r1, which), *b = render(r2, which);

        assert_true(strlen(a) > 100);
        assert_string_equal(a, b);
        if (which == 2)
            assert_non_null(strstr(a, "<svg"));
        free(a);
        free(b);
        sim_result_destroy(r1);
        sim_result_destroy(r2);
    }
    fx_release(&f);
}

static void node_failures_requeue_jobs(void **state)
{
    struct fx f;
    struct sim_result *r;
    long done = 0;

    (void)state;
    fx_init(&f, HEADER "a,0,36000,4,,,,p,,\nb,0,36000,4,,,,p,,\n", 4, fifo, NULL);
    f.opt.node_failure_rate = 24; /* about one failure an hour */
    f.opt.repair_ms = 60000;
    f.opt.seed = 3;
    r = fx_run(&f);
    assert_true(r->node_failures > 0);
    assert_true(r->lost_node_fail_gpu_ms > 0);
    for (size_t i = 0; i < r->njobs; i++)
        done += r->jobs[i].end == SIM_END_COMPLETED;
    assert_int_equal(done, 2); /* requeued, and finished in the end */
    sim_result_destroy(r);
    fx_release(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fifo_order),
        cmocka_unit_test(fifo_blocks_without_backfill),
        cmocka_unit_test(easy_backfills_one_job),
        cmocka_unit_test(one_preemption),
        cmocka_unit_test(preemption_waits_for_the_grace),
        cmocka_unit_test(preemption_keeps_checkpointed_work),
        cmocka_unit_test(fifo_never_preempts),
        cmocka_unit_test(time_limit_ends_job),
        cmocka_unit_test(over_cap_runs_to_the_end),
        cmocka_unit_test(fifo_baseline_is_per_partition),
        cmocka_unit_test(topology_counts_spread_gangs),
        cmocka_unit_test(topology_file),
        cmocka_unit_test(sjf_orders_by_time_limit),
        cmocka_unit_test(baselines_are_what_they_say),
        cmocka_unit_test(row_rules_are_counted),
        cmocka_unit_test(total_delay_counts_requeues),
        cmocka_unit_test(bad_row_stops_or_is_counted),
        cmocka_unit_test(gang_shapes),
        cmocka_unit_test(rejected_job_is_counted),
        cmocka_unit_test(deterministic_reports),
        cmocka_unit_test(node_failures_requeue_jobs),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
