/* test_spec.c - unit tests of `docket submit`'s flags turned into the POST /v1/jobs body
 * (src/cli/spec.c): each flag's value checks and JSON, Slurm times, the partition map,
 * and how command-line flags override a script's. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli/spec.h"

static json_t *spec;
static char err[512];

static int setup(void **state)
{
    spec = json_object();
    err[0] = '\0';
    return 0;
}

static int teardown(void **state)
{
    json_decref(spec);
    return 0;
}

static int apply(int id, const char *v)
{
    return spec_apply(spec, id, v, err, sizeof(err));
}

static void int_is(const char *key, long long want)
{
    json_t *v = json_object_get(spec, key);

    if (!json_is_integer(v) || json_integer_value(v) != want)
        fail_msg("%s = %lld; want %lld", key, v ? (long long)json_integer_value(v) : -999LL, want);
}

static void str_is(const char *key, const char *want)
{
    const char *s = json_string_value(json_object_get(spec, key));

    if (!s || strcmp(s, want))
        fail_msg("%s = '%s'; want '%s'", key, s ? s : "(absent)", want);
}

static void gpus_count_and_type(void **state)
{
    assert_int_equal(apply(SO_GPUS, "8"), 0);
    int_is("gpus", 8);
    assert_null(json_object_get(spec, "gpu_type"));
    assert_int_equal(apply(SO_GPUS, "4xH100-80GB"), 0);
    int_is("gpus", 4);
    str_is("gpu_type", "H100-80GB");
}

static void gpus_bad_names_the_flag(void **state)
{
    assert_int_equal(apply(SO_GPUS, "lots"), -EINVAL);
    assert_string_equal(err, "--gpus: bad GPU count 'lots' (e.g. 8 or 8xH100-80GB)");
    assert_int_equal(apply(SO_GPUS, "65"), -EINVAL);
    assert_null(json_object_get(spec, "gpus"));
}

static void sizes_and_counts(void **state)
{
    assert_int_equal(apply(SO_MEM, "32G"), 0);
    int_is("mem", 32768);
    assert_int_equal(apply(SO_CPUS, "16"), 0);
    int_is("cpus", 16);
    assert_int_equal(apply(SO_NODES, "2"), 0);
    int_is("nodes", 2);
    assert_int_equal(apply(SO_MEM, "lots"), -EINVAL);
    assert_int_equal(apply(SO_CPUS, "0"), -EINVAL);
    assert_string_equal(err, "--cpus: want an integer from 1 to 100000, not '0'");
    assert_int_equal(apply(SO_NODES, "513"), -EINVAL);
    assert_int_equal(apply(SO_RETRIES, "101"), -EINVAL);
}

static void time_formats(void **state)
{
    assert_int_equal(apply(SO_TIME, "4h"), 0);
    int_is("time_limit", 4 * 3600);
    assert_int_equal(apply(SO_TIME, "1h30m"), 0);
    int_is("time_limit", 5400);
    assert_int_equal(apply(SO_TIME, "90"), 0); /* docket: bare = seconds */
    int_is("time_limit", 90);
    assert_int_equal(apply(SO_TIME, "1-12:00:00"), 0); /* Slurm's form also accepted */
    int_is("time_limit", 36 * 3600);
    assert_int_equal(apply(SO_TIME, "2:30:00"), 0);
    int_is("time_limit", 9000);
    assert_int_equal(apply(SO_TIME, "soon"), -EINVAL);
    assert_int_equal(apply(SO_TIME, "0"), -EINVAL);
    assert_int_equal(apply(SO_TIME, "UNLIMITED"), -EINVAL);
}

static void names_are_checked(void **state)
{
    assert_int_equal(apply(SO_PROJECT, "vision"), 0);
    str_is("project", "vision");
    assert_int_equal(apply(SO_TIER, "bad tier"), -EINVAL);
    assert_string_equal(err, "--tier: bad name 'bad tier' (1-63 of A-Z a-z 0-9 . _ -)");
    assert_int_equal(apply(SO_NAME, "a job name with spaces"), 0);
    assert_int_equal(apply(SO_NAME, "tab\there"), -EINVAL);
}

static void env_pairs_and_passthrough(void **state)
{
    json_t *env;

    setenv("DOCKET_TEST_VAR", "from-shell", 1);
    unsetenv("DOCKET_TEST_UNSET");
    assert_int_equal(apply(SO_ENV, "EPOCHS=90"), 0);
    assert_int_equal(apply(SO_ENV, "URL=a=b"), 0);
    assert_int_equal(apply(SO_ENV, "DOCKET_TEST_VAR"), 0);
    env = json_object_get(spec, "env");
    assert_string_equal(json_string_value(json_object_get(env, "EPOCHS")), "90");
    assert_string_equal(json_string_value(json_object_get(env, "URL")), "a=b");
    assert_string_equal(json_string_value(json_object_get(env, "DOCKET_TEST_VAR")), "from-shell");
    assert_int_equal(apply(SO_ENV, "DOCKET_TEST_UNSET"), -EINVAL);
    assert_string_equal(err, "--env: 'DOCKET_TEST_UNSET' is not set here; write --env "
                             "DOCKET_TEST_UNSET=VALUE");
    assert_int_equal(apply(SO_ENV, "1BAD=x"), -EINVAL);
    assert_int_equal(apply(SO_ENV, "=x"), -EINVAL);
}

static void dep_at(size_t i, const char *type, long long job)
{
    json_t *d = json_array_get(json_object_get(spec, "deps"), i);

    assert_non_null(d);
    assert_string_equal(json_string_value(json_object_get(d, "type")), type);
    assert_int_equal(json_integer_value(json_object_get(d, "job")), job);
}

static void after_and_dependency(void **state)
{
    assert_int_equal(apply(SO_AFTER, "12"), 0);
    assert_int_equal(apply(SO_AFTER, "13:14"), 0);
    assert_int_equal(json_array_size(json_object_get(spec, "deps")), 3);
    dep_at(0, "afterok", 12);
    dep_at(2, "afterok", 14);
    assert_int_equal(apply(SO_DEPENDENCY, "afterok:1:2,afterany:3,afternotok:4"), 0);
    assert_int_equal(json_array_size(json_object_get(spec, "deps")), 4); /* replaced */
    dep_at(0, "afterok", 1);
    dep_at(2, "afterany", 3);
    dep_at(3, "afternotok", 4);
    /* man sbatch -d: after, singleton, and ARRAY_ID_INDEX (kept for the verb to resolve) */
    assert_int_equal(apply(SO_DEPENDENCY, "after:7,singleton,afterok:40_3"), 0);
    dep_at(0, "after", 7);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(spec, "deps"), 1), "type")),
                        "singleton");
    dep_at(2, "afterok", 40);
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(spec, "deps"), 2), "array_index")),
                     3);
}

/* sbatch's '?': any one of them (man sbatch, -d) */
static void dependency_any_of(void **state)
{
    assert_int_equal(apply(SO_DEPENDENCY, "afterok:1?afterany:2:3"), 0);
    assert_int_equal(json_array_size(json_object_get(spec, "deps")), 3);
    dep_at(1, "afterany", 2);
    assert_true(json_is_true(json_object_get(spec, "deps_any")));
    assert_int_equal(apply(SO_DEPENDENCY, "afterok:1,afterok:2"), 0); /* all of them again */
    assert_null(json_object_get(spec, "deps_any"));
}

static void dependency_errors(void **state)
{
    assert_int_equal(apply(SO_DEPENDENCY, "aftercorr:5"), -EINVAL);
    assert_string_equal(err, "--dependency: dependency type 'aftercorr' is not supported "
                             "(after, afterok, afterany, afternotok, singleton)");
    assert_int_equal(apply(SO_DEPENDENCY, "afterok:12_x"), -EINVAL);
    assert_int_equal(apply(SO_DEPENDENCY, "afterok:_3"), -EINVAL);
    assert_int_equal(apply(SO_DEPENDENCY, "afterok:1?afterok:2,afterok:3"), -EINVAL);
    assert_non_null(strstr(err, "cannot be mixed"));
    assert_int_equal(apply(SO_DEPENDENCY, "afterok"), -EINVAL);
    assert_int_equal(apply(SO_AFTER, "x"), -EINVAL);
    assert_int_equal(apply(SO_AFTER, "0"), -EINVAL);
}

static void arrays(void **state)
{
    assert_int_equal(apply(SO_ARRAY, "0-99%8"), 0);
    str_is("array", "0-99%8");
    assert_int_equal(apply(SO_ARRAY, "1,3,5-9"), 0);
    assert_int_equal(apply(SO_ARRAY, "9-1"), -EINVAL);
    assert_int_equal(apply(SO_ARRAY, "many"), -EINVAL);
}

static void signal_and_grace(void **state)
{
    assert_int_equal(apply(SO_SIGNAL, "USR1@120s"), 0);
    str_is("signal", "USR1");
    str_is("grace", "120s");
    assert_true(json_is_true(json_object_get(spec, "checkpoint")));
    assert_int_equal(apply(SO_SIGNAL, "B:SIGTERM@60"), 0);
    str_is("signal", "SIGTERM");
    str_is("grace", "60");
    assert_int_equal(apply(SO_SIGNAL, "NOPE"), -EINVAL);
    assert_int_equal(apply(SO_SIGNAL, "USR1@later"), -EINVAL);
}

static void labels_selectors_and_switches(void **state)
{
    assert_int_equal(apply(SO_LABEL, "sweep=a"), 0);
    assert_int_equal(apply(SO_SELECT, "zone=b"), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(spec, "labels"), "sweep")), "a");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(spec, "selectors"), "zone")), "b");
    assert_int_equal(apply(SO_LABEL, "novalue"), -EINVAL);
    assert_int_equal(apply(SO_SELECT, "pool!=reserved"), 0);
    assert_int_equal(apply(SO_SELECT, "rack=!r1"), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(spec, "selectors"), "pool")),
        "!reserved");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(spec, "selectors"), "rack")), "!r1");
    assert_int_equal(apply(SO_LABEL, "pool!=x"), -EINVAL); /* labels are never negated */
    assert_int_equal(apply(SO_SELECT, "!=x"), -EINVAL);
    assert_int_equal(apply(SO_HOLD, NULL), 0);
    assert_int_equal(apply(SO_NO_REQUEUE, NULL), 0);
    assert_true(json_is_true(json_object_get(spec, "hold")));
    assert_true(json_is_false(json_object_get(spec, "requeue")));
    assert_int_equal(apply(SO_JSON, NULL), -EINVAL); /* not a job option */
    assert_int_equal(apply(SO_SWITCHES, "1"), 0);
    assert_int_equal(json_integer_value(json_object_get(spec, "switches")), 1);
    assert_int_equal(apply(SO_SWITCHES, "2@30m"), 0); /* the API checks the wait */
    assert_string_equal(json_string_value(json_object_get(spec, "switches")), "2@30m");
    assert_int_equal(apply(SO_SWITCHES, "0"), -EINVAL);
}

static void slurm_time(void **state)
{
    static const struct {
        const char *in;
        int64_t s;
    } ok[] = {
        {"30", 30 * 60},
        {"30:15", 30 * 60 + 15},
        {"2:00:00", 7200},
        {"1-0", 86400},
        {"1-2:30", 86400 + 2 * 3600 + 30 * 60},
        {"2-01:02:03", 2 * 86400 + 3723},
        {"0:45", 45},
    };
    static const char *const bad[] = {"", ":", "1-", "a", "1:2:3:4", "-5", "1-2-3", "5m"};
    int64_t ms;

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        if (spec_slurm_time_ms(ok[i].in, &ms) != 0 || ms != ok[i].s * 1000)
            fail_msg("spec_slurm_time_ms('%s') = %lld; want %lld", ok[i].in, (long long)ms,
                     (long long)ok[i].s * 1000);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (spec_slurm_time_ms(bad[i], &ms) != -EINVAL)
            fail_msg("spec_slurm_time_ms('%s') accepted", bad[i]);
    assert_int_equal(spec_slurm_time_ms("UNLIMITED", &ms), -ERANGE);
    assert_int_equal(spec_slurm_time_ms("infinite", &ms), -ERANGE);
}

static void partition_map(void **state)
{
    const char *map = "gpu=normal, debug=exploration,big=tier:high,odd=class:training2";
    const char *field = NULL;
    char name[64];

    assert_int_equal(spec_partition_lookup(map, "gpu", &field, name, sizeof(name)), 0);
    assert_string_equal(field, "tier");
    assert_string_equal(name, "normal");
    assert_int_equal(spec_partition_lookup(map, "debug", &field, name, sizeof(name)), 0);
    assert_string_equal(field, "class");
    assert_string_equal(name, "exploration");
    assert_int_equal(spec_partition_lookup(map, "big", &field, name, sizeof(name)), 0);
    assert_string_equal(field, "tier");
    assert_string_equal(name, "high");
    assert_int_equal(spec_partition_lookup(map, "odd", &field, name, sizeof(name)), 0);
    assert_string_equal(field, "class");
    assert_string_equal(name, "training2");
    assert_int_equal(spec_partition_lookup(map, "cpu", &field, name, sizeof(name)), -ENOENT);
    assert_int_equal(spec_partition_lookup(NULL, "cpu", &field, name, sizeof(name)), -ENOENT);
    assert_int_equal(spec_partition_lookup("gpu", "gpu", &field, name, sizeof(name)), -EINVAL);
    assert_int_equal(spec_partition_lookup("gpu=bad name", "gpu", &field, name, sizeof(name)),
                     -EINVAL);
}

static void flags_override_script(void **state)
{
    json_t *over = json_object();

    json_object_set_new(spec, "gpus", json_integer(8));
    json_object_set_new(spec, "tier", json_string("low"));
    json_object_set_new(spec, "env", json_pack("{s:s,s:s}", "A", "script", "B", "script"));
    json_object_set_new(over, "tier", json_string("high"));
    json_object_set_new(over, "env", json_pack("{s:s}", "A", "flag"));
    spec_merge(spec, over);
    json_decref(over);
    int_is("gpus", 8);
    str_is("tier", "high");
    assert_string_equal(json_string_value(json_object_get(json_object_get(spec, "env"), "A")),
                        "flag");
    assert_string_equal(json_string_value(json_object_get(json_object_get(spec, "env"), "B")),
                        "script");
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(gpus_count_and_type),
        T(gpus_bad_names_the_flag),
        T(sizes_and_counts),
        T(time_formats),
        T(names_are_checked),
        T(env_pairs_and_passthrough),
        T(after_and_dependency),
        T(dependency_any_of),
        T(dependency_errors),
        T(arrays),
        T(signal_and_grace),
        T(labels_selectors_and_switches),
        T(slurm_time),
        T(partition_map),
        T(flags_override_script),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
