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
    snprintf(yaml, sizeof(yaml), "node_groups: [{name: n, count: 1, gpus: %d, gpu_type: A100, cpus: 64}]", gpus);
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
static const char backfill_trace[] = HEADER
    "A,0,600,2,,,,p,,completed\n"
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
    assert_int_equal(job(r, "C")->first_start_ms, 20000);  /* backfilled at submission */
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
static const char preempt_trace[] = HEADER
    "L,0,10000,4,,,,lo,,completed\n"
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
    assert_int_equal(job(r, "L")->lost_ms, 1000000);        /* no checkpoint: all of it */
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
            " default_grace: 30s}", tiers_map);
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
    assert_int_equal(job(r, "L")->lost_ms, 100000);             /* since 900 s */
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

static void time_limit_ends_job(void **state)
{
    struct fx f;
    struct sim_result *r;

    (void)state;
    /* 1 h runtime, class exploration capped at 30 min: signalled at 30 min; with no
     * checkpoint it runs out the default 30 s grace and is killed: TIMEOUT */
    fx_init(&f, HEADER "T,0,3600,1,,,,p,,\n", 4,
            "classes: [{name: exploration, default_limit: 30m, max_limit: 30m}]\n"
            "settings: {ordering: fifo, default_class: exploration}",
            "default: {class: exploration}");
    r = fx_run(&f);
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
    fx_init(&f, HEADER "a,0,60,12,,,,p,,\nb,0,60,13,,,,p,,\nc,0,60,0,20,,,p,,\n"
                "d,0,60,8,,,2,p,,\n", 8, fifo, NULL);
    sim_cluster_release(&f.cl);
    yaml_into("node_groups: [{name: n, count: 4, gpus: 8, gpu_type: A100, cpus: 64}]", &doc);
    assert_int_equal(sim_cluster_from_json(doc, "cluster", &f.cl, f.err, sizeof(f.err)), 0);
    json_decref(doc);
    r = fx_run(&f);
    assert_int_equal(job(r, "a")->gpus, 12); /* 2 nodes x 6 */
    assert_int_equal(job(r, "b")->gpus, 14); /* 13 is prime: 2 nodes x 7, rounded up */
    assert_int_equal(job(r, "c")->gpus, 3);  /* CPU-only: 20 cores / 8 per unit, rounded up */
    assert_int_equal(job(r, "d")->gpus, 8);  /* the trace's 2 nodes: 2 x 4 */
    for (size_t i = 0; i < r->njobs; i++)
        assert_int_equal(r->jobs[i].end, SIM_END_COMPLETED);
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
    struct sim_report_meta meta = { .trace = "t", .cluster = "c", .arrival_scale = 1,
                                    .cluster_scale = 1 };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_int_equal(sim_summary_compute(r, &s), 0);
    run = (struct sim_run_report){ r, &s };
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
        cmocka_unit_test(bad_row_stops_or_is_counted),
        cmocka_unit_test(gang_shapes),
        cmocka_unit_test(rejected_job_is_counted),
        cmocka_unit_test(deterministic_reports),
        cmocka_unit_test(node_failures_requeue_jobs),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
