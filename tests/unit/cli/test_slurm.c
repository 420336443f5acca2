/* test_slurm.c - unit tests of the Slurm commands' pure parts (src/cli/slurm.h, srun.h):
 * host lists expanded as scontrol show hostnames does, a step's tasks shared over its
 * nodes as Slurm's block distribution, and the environment sbatch exports. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "cli/slurm.h"
#include "cli/srun.h"

static char *expand(const char *list, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    *rc = slurm_expand_hostlist(list, f);
    fclose(f);
    return buf;
}

static void hostlists(void **state)
{
    int rc;
    char *out = expand("gpu[01-03,7],cpu1,n[8-10]x", &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "gpu01\ngpu02\ngpu03\ngpu7\ncpu1\nn8x\nn9x\nn10x\n");
    free(out);
    out = expand("a,b", &rc);
    assert_string_equal(out, "a\nb\n");
    free(out);
    static const char *const bad[] = {"gpu[1-", "gpu[a-b]", "gpu[3-1]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        out = expand(bad[i], &rc);
        if (rc != -EINVAL)
            fail_msg("'%s' accepted", bad[i]);
        free(out);
    }
}

static void block_distribution(void **state)
{
    int first, count;
    srun_share(8, 2, 1, &first, &count);
    assert_int_equal(first, 4);
    assert_int_equal(count, 4);
    srun_share(5, 2, 0, &first, &count); /* 3 + 2 */
    assert_int_equal(first, 0);
    assert_int_equal(count, 3);
    srun_share(5, 2, 1, &first, &count);
    assert_int_equal(first, 3);
    assert_int_equal(count, 2);
    srun_share(7, 3, 2, &first, &count); /* 3 + 2 + 2 */
    assert_int_equal(first, 5);
    assert_int_equal(count, 2);
}

static void exported_environment(void **state)
{
    char *envp[] = {"HOME=/home/a",
                    "SLURM_JOB_ID=3",
                    "DOCKET_TOKEN=dkt_secret",
                    "PWD=/x",
                    "CONDA_PREFIX=/opt/c",
                    "FOO=from-shell",
                    "bad name=1",
                    "NOEQUALS",
                    "DOCKET_URL=http://ctl:8420",
                    "DOCKET_JOB_ID=9",
                    "BASH_FUNC_module%%=() {  eval $(/usr/bin/modulecmd bash \"$@\")\n}",
                    "BASH_FUNC_bad name%%=() { :; }",
                    NULL};
    json_t *spec = json_pack("{s:{s:s}}", "env", "FOO", "from-flag");
    slurm_export_env(spec, envp);
    json_t *env = json_object_get(spec, "env");
    assert_string_equal(json_string_value(json_object_get(env, "HOME")), "/home/a");
    assert_string_equal(json_string_value(json_object_get(env, "CONDA_PREFIX")), "/opt/c");
    assert_string_equal(json_string_value(json_object_get(env, "FOO")), "from-flag");
    assert_null(json_object_get(env, "SLURM_JOB_ID"));
    assert_null(json_object_get(env, "DOCKET_TOKEN"));
    assert_null(json_object_get(env, "PWD"));
    assert_null(json_object_get(env, "DOCKET_JOB_ID"));
    assert_string_equal(json_string_value(json_object_get(env, "DOCKET_URL")), "http://ctl:8420");
    /* man sbatch --export=ALL: bash's exported functions go with the rest */
    assert_non_null(json_object_get(env, "BASH_FUNC_module%%"));
    assert_int_equal(json_object_size(env), 5);
    json_decref(spec);
}

/* sacct -S times, in local time (UTC here). */
static void slurm_times(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    const int64_t now = 1764579600000LL; /* 2025-12-01T09:00:00Z */
    const struct {
        const char *in;
        int64_t want;
    } ok[] = {
        {"now", now},
        {"now-2days", now - 2 * 86400000LL},
        {"now+90", now + 90000},
        {"now-3hours", now - 3 * 3600000LL},
        {"today", 1764547200000LL},
        {"midnight", 1764547200000LL},
        {"noon", 1764590400000LL},
        {"08:30", 1764577800000LL},
        {"08:30:15", 1764577815000LL},
        {"2025-11-30", 1764460800000LL},
        {"2025-11-30T08:00", 1764489600000LL},
        {"2025-11-30T08:00:30", 1764489630000LL},
        {"11/30", 1764460800000LL},
        {"11/30/25", 1764460800000LL},
        {"1130", 1764460800000LL},
        {"113025", 1764460800000LL},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t got = 0;
        if (slurm_time_parse(ok[i].in, now, &got) < 0 || got != ok[i].want)
            fail_msg("%s: got %lld, want %lld", ok[i].in, (long long)got, (long long)ok[i].want);
    }
    const char *bad[] = {"",      "yesterday",  "now-",          "now+2fortnights",
                         "25:00", "2025-13-01", "2025-11-30T08", "13/40",
                         "11300", "12ab",       "now-1e3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t got;
        if (slurm_time_parse(bad[i], now, &got) == 0)
            fail_msg("accepted '%s'", bad[i]);
    }
}

/* The step host's request: every field checked for type and range before anything runs. */
static void step_requests(void **state)
{
    (void)state;
    struct step st;
    const char *good = "{\"argv\": [\"python\", \"t.py\"], \"node\": 1, \"nodes\": 2, "
                       "\"ntasks\": 4, \"count\": 2, \"first\": 2, \"cpus\": 4, "
                       "\"gpus_per_task\": 1, \"export\": \"ALL\", "
                       "\"image\": \"oci-layout:/i:t\", \"mounts\": \"/w:/w\"}";
    json_t *req = json_loads(good, 0, NULL);
    assert_int_equal(srun_request_read(req, &st), 0);
    assert_string_equal(st.argv[1], "t.py");
    assert_null(st.argv[2]);
    assert_int_equal(st.first, 2);
    assert_int_equal(st.local_n, 2);
    assert_string_equal(st.export_list, "ALL");
    assert_string_equal(st.image, "oci-layout:/i:t"); /* the step host's tasks: in it too */
    assert_string_equal(st.mounts, "/w:/w");
    assert_null(st.container_workdir);
    free(st.argv);
    json_decref(req);
    const char *bad[] = {
        "{\"node\": 0, \"nodes\": 1, \"ntasks\": 1, \"count\": 1}",   /* no argv */
        "{\"argv\": [1], \"nodes\": 1, \"ntasks\": 1, \"count\": 1}", /* not a string */
        "{\"argv\": [\"x\"], \"node\": 2, \"nodes\": 2, \"ntasks\": 2, \"count\": 1}",  /* node */
        "{\"argv\": [\"x\"], \"nodes\": 1, \"ntasks\": 2, \"count\": 2, \"first\": 1}", /* past */
        "{\"argv\": [\"x\"], \"nodes\": 1, \"ntasks\": 1, \"count\": 0}",     /* no task */
        "{\"argv\": [\"x\"], \"nodes\": 1, \"ntasks\": 1, \"count\": \"1\"}", /* type */
        "{\"argv\": [\"x\"], \"nodes\": 1, \"ntasks\": 1, \"count\": 1, \"env\": []}",
        "{\"argv\": [\"x\"], \"nodes\": 1, \"ntasks\": 1, \"count\": 1, \"image\": 1}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        req = json_loads(bad[i], 0, NULL);
        assert_non_null(req);
        if (srun_request_read(req, &st) == 0)
            fail_msg("accepted %s", bad[i]);
        json_decref(req);
    }
}

/* srun's command line inside a job of `nodes` nodes named n0.. with `ntasks` tasks. */
static int parse(const char *line, int nodes, int ntasks, struct step *st, struct srun_parse *p,
                 char *err)
{
    static char buf[1024];
    static char *argv[64];
    static char list[256];
    int argc = 0;
    snprintf(buf, sizeof(buf), "srun %s", line);
    for (char *w = strtok(buf, " "); w && argc < 63; w = strtok(NULL, " "))
        argv[argc++] = w;
    argv[argc] = NULL;
    size_t o = 0;
    for (int i = 0; i < nodes; i++)
        o += (size_t)snprintf(list + o, sizeof(list) - o, "%sn%d", i ? "," : "", i);
    struct srun_env env = {nodes, ntasks, (ntasks + nodes - 1) / nodes, 1, 0, list, "42"};
    memset(st, 0, sizeof(*st));
    memset(p, 0, sizeof(*p));
    p->st = st;
    return srun_parse_args(argc, argv, &env, p, err, 512);
}

/* man srun: -n, -N; "-N2 -n3 = 3 tasks"; the job's counts by default; -w, -x, -r. */
static void srun_counts(void **state)
{
    struct step st;
    struct srun_parse p;
    char err[512];
    assert_int_equal(parse("hostname", 2, 3, &st, &p, err), 0); /* a -N2 -n3 job */
    assert_int_equal(st.ntasks, 3);
    assert_int_equal(st.nodes, 2);
    assert_string_equal(st.argv[0], "hostname");
    assert_int_equal(parse("-n 1 hostname", 2, 4, &st, &p, err), 0); /* as -n needs */
    assert_int_equal(st.nodes, 1);
    assert_int_equal(parse("-N2 -n1 true", 2, 4, &st, &p, err), 0);
    assert_int_equal(st.nodes, 1); /* srun: "can't run 1 processes on 2 nodes" */
    assert_non_null(strstr(p.warning, "setting nnodes to 1"));
    assert_int_equal(parse("--ntasks-per-node=3 true", 2, 2, &st, &p, err), 0);
    assert_int_equal(st.ntasks, 6);
    assert_int_equal(parse("-w n1 true", 2, 2, &st, &p, err), 0);
    assert_int_equal(st.nodes, 1);
    assert_int_equal(st.job_node[0], 1);
    assert_int_equal(st.node, -1); /* the batch node is not in it */
    assert_int_equal(parse("-x n0 -n2 true", 3, 3, &st, &p, err), 0);
    assert_int_equal(st.nodes, 2);
    assert_int_equal(st.job_node[0], 1);
    assert_int_equal(st.job_node[1], 2);
    assert_int_equal(parse("-r 1 -N1 true", 2, 2, &st, &p, err), 0);
    assert_int_equal(st.job_node[0], 1);
    assert_int_equal(parse("-w n[0-1] -l true", 2, 2, &st, &p, err), 0);
    assert_int_equal(st.nodes, 2);
    assert_true(st.label);
    assert_int_equal(parse("-w n7 true", 2, 2, &st, &p, err), -1);
    assert_non_null(strstr(err, "not a node of this job"));
    assert_int_equal(parse("-N 3 true", 2, 2, &st, &p, err), -1);
}

/* Pyxis's options: the image and its companions read and checked, the others refused or
 * accepted as docket does them anyway. */
static void srun_container_options(void **state)
{
    struct step st;
    struct srun_parse p;
    char err[512];
    assert_int_equal(
        parse("--container-image=oci-layout:/img:bb --container-mounts=/w/a:/a:ro,/w/b "
              "--container-workdir=/a --container-env=PATH,HF_HOME "
              "--no-container-mount-home python x.py",
              1, 1, &st, &p, err),
        0);
    assert_string_equal(st.image, "oci-layout:/img:bb");
    assert_string_equal(st.mounts, "/w/a:/a:ro,/w/b");
    assert_string_equal(st.container_workdir, "/a");
    assert_string_equal(st.container_env, "PATH,HF_HOME");
    assert_string_equal(st.argv[0], "python");
    assert_int_equal(parse("--container-image /img true", 1, 1, &st, &p, err), -1);
    assert_non_null(strstr(err, "--container-image"));
    assert_int_equal(parse("--container-image=docker://x --container-mounts=/a:/proc/x true", 1, 1,
                           &st, &p, err),
                     -1);
    assert_int_equal(
        parse("--container-image=docker://x --container-workdir=rel true", 1, 1, &st, &p, err), -1);
    assert_int_equal(parse("--container-mounts=/w:/w true", 1, 1, &st, &p, err), -1);
    assert_non_null(strstr(err, "need --container-image"));
    assert_int_equal(
        parse("--container-image=docker://x --container-name=c true", 1, 1, &st, &p, err), -1);
    assert_non_null(strstr(err, "fresh container"));
    assert_int_equal(
        parse("--container-writable --container-image=docker://x true", 1, 1, &st, &p, err), -1);
    assert_int_equal(parse("--container=/bundle true", 1, 1, &st, &p, err), -1);
    assert_non_null(strstr(err, "--container-image"));
    assert_int_equal(parse("--container-i=docker://x true", 1, 1, &st, &p, err), -1);
    assert_non_null(strstr(err, "ambiguous")); /* container-id, container-image */
}

/* Honoured, tuning (one warning), refused (with the reason), prefixes as getopt_long. */
static void srun_options(void **state)
{
    struct step st;
    struct srun_parse p;
    char err[512];
    assert_int_equal(
        parse("--mpi=pmix --hint nomultithread -u --overlap python x.py", 1, 1, &st, &p, err), 0);
    assert_string_equal(p.ignored, "--mpi=pmix, --hint=nomultithread");
    assert_string_equal(st.argv[0], "python");
    assert_int_equal(parse("--wait=30 -K --exclusive -o out-%t.txt --cpu_bind=cores,verbose "
                           "--export=ALL,A=1 -m cyclic --jobid=42 true",
                           2, 2, &st, &p, err),
                     0);
    assert_int_equal(st.wait_s, 30);
    assert_true(st.kill_bad && st.exclusive && st.cyclic);
    assert_false(st.export_none);
    assert_string_equal(st.output, "out-%t.txt");
    assert_int_equal(parse("--kill-on-bad-exit=0 --export=NONE true", 1, 1, &st, &p, err), 0);
    assert_false(st.kill_bad);
    assert_true(st.export_none);
    assert_int_equal(parse("--export=A=1 true", 1, 1, &st, &p, err), 0);
    assert_true(st.export_none); /* a list without ALL: NONE and the list */
    assert_int_equal(parse("--het-group=0 true", 1, 1, &st, &p, err), -1);
    assert_non_null(strstr(err, "heterogeneous"));
    assert_int_equal(parse("--jobid=7 true", 1, 1, &st, &p, err), -1);
    assert_int_equal(parse("--cpu-bind=sideways true", 1, 1, &st, &p, err), -1);
    assert_int_equal(parse("--gress=gpu:1 true", 1, 1, &st, &p, err), -1);
    assert_int_equal(parse("--ntasks-per-n 2 true", 1, 1, &st, &p, err), 0); /* a unique prefix */
    assert_int_equal(parse("--mem 4G true", 1, 1, &st, &p, err), 0);
    assert_int_equal(parse("--me 4G true", 1, 1, &st, &p, err), -1);
    assert_non_null(strstr(err, "ambiguous"));
    assert_int_equal(parse("-n", 1, 1, &st, &p, err), -1);
    assert_int_equal(parse("-l", 1, 1, &st, &p, err), -1); /* no command */
    assert_int_equal(parse("--help", 1, 1, &st, &p, err), 1);
    assert_int_equal(parse("-- -n", 1, 1, &st, &p, err), 0);
    assert_string_equal(st.argv[0], "-n");
}

/* man srun, "filename pattern". */
static void srun_patterns(void **state)
{
    struct srun_names n = {"42", "0", NULL, NULL, "gpu1", "ann", "train"};
    char out[256];
    assert_int_equal(srun_pattern("log-%j.%s-%t-%n-%N-%u-%x-%%.txt", &n, 3, 1, out, sizeof(out)),
                     0);
    assert_string_equal(out, "log-42.0-3-1-gpu1-ann-train-%.txt");
    assert_int_equal(srun_pattern("%3t_%J", &n, 7, 0, out, sizeof(out)), 0);
    assert_string_equal(out, "007_42.0");
    assert_int_equal(srun_pattern("out\\%t", &n, 7, 0, out, sizeof(out)), 0);
    assert_string_equal(out, "out%t");
    assert_int_equal(srun_pattern("bad%q", &n, 0, 0, out, sizeof(out)), -1);
    assert_int_equal(srun_pattern("x%", &n, 0, 0, out, sizeof(out)), -1);
    assert_int_equal(srun_pattern("%j%j%j", &n, 0, 0, out, 4), -1);
    assert_true(srun_pattern_per_node("o-%2t"));
    assert_true(srun_pattern_per_node("o-%N"));
    assert_false(srun_pattern_per_node("o-%j-%%t"));
}

/* man scancel / squeue: job ids ID, ARRAY_ID_IDX, ARRAY_ID_[LIST]; folded indices. */
static void slurm_job_ids(void **state)
{
    int64_t id;
    char idx[64];
    assert_int_equal(slurm_jobid_parse("123", &id, idx, sizeof(idx)), 0);
    assert_int_equal(id, 123);
    assert_string_equal(idx, "");
    assert_int_equal(slurm_jobid_parse("123_4", &id, idx, sizeof(idx)), 0);
    assert_string_equal(idx, "4");
    assert_int_equal(slurm_jobid_parse("123_[1-3,7%2]", &id, idx, sizeof(idx)), 0);
    assert_string_equal(idx, "1-3,7");
    assert_true(slurm_index_in(idx, 2));
    assert_true(slurm_index_in(idx, 7));
    assert_false(slurm_index_in(idx, 5));
    static const char *const bad[] = {"", "_3", "x", "12_", "12_[]", "12_a", "12_[3-1]", "0"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (slurm_jobid_parse(bad[i], &id, idx, sizeof(idx)) == 0)
            fail_msg("'%s' accepted", bad[i]);
    int64_t v[] = {9, 4, 5, 6, 99, 7, 101, 100};
    char out[64];
    slurm_index_ranges(v, 8, out, sizeof(out));
    assert_string_equal(out, "4-7,9,99-101");
    slurm_index_ranges(v, 8, out, 8);
    assert_string_equal(out, "4-7,...");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hostlists),
        cmocka_unit_test(block_distribution),
        cmocka_unit_test(srun_counts),
        cmocka_unit_test(srun_options),
        cmocka_unit_test(srun_container_options),
        cmocka_unit_test(srun_patterns),
        cmocka_unit_test(slurm_job_ids),
        cmocka_unit_test(exported_environment),
        cmocka_unit_test(step_requests),
        cmocka_unit_test(slurm_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
