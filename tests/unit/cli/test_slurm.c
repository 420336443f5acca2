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
    assert_int_equal(json_object_size(env), 4);
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
                       "\"gpus_per_task\": 1, \"export\": \"ALL\"}";
    json_t *req = json_loads(good, 0, NULL);
    assert_int_equal(srun_request_read(req, &st), 0);
    assert_string_equal(st.argv[1], "t.py");
    assert_null(st.argv[2]);
    assert_int_equal(st.first, 2);
    assert_int_equal(st.local_n, 2);
    assert_string_equal(st.export_list, "ALL");
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
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        req = json_loads(bad[i], 0, NULL);
        assert_non_null(req);
        if (srun_request_read(req, &st) == 0)
            fail_msg("accepted %s", bad[i]);
        json_decref(req);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hostlists),
        cmocka_unit_test(block_distribution),
        cmocka_unit_test(exported_environment),
        cmocka_unit_test(step_requests),
        cmocka_unit_test(slurm_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
