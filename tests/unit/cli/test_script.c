/* test_script.c - unit tests of batch script directives (src/cli/spec.c): #DOCKET lines
 * take docket's flags, #SBATCH lines Slurm's (the table in docs/cli.md), unknown Slurm
 * options warn, errors name the line and keep nothing. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "cli/spec.h"

static json_t *spec;
static char err[512];
static char warnings[4096];
static int nwarn;

static void on_warn(void *arg, const char *msg)
{
    size_t n = strlen(warnings);

    nwarn++;
    snprintf(warnings + n, sizeof(warnings) - n, "%s\n", msg);
}

static int setup(void **state)
{
    spec = json_object();
    err[0] = warnings[0] = '\0';
    nwarn = 0;
    return 0;
}

static int teardown(void **state)
{
    json_decref(spec);
    return 0;
}

static int parse_map(const char *text, const char *map)
{
    struct spec_env env = { map, on_warn, NULL };
    return spec_parse_script(spec, text, strlen(text), &env, err, sizeof(err));
}

static int parse(const char *text)
{
    return parse_map(text, NULL);
}

static long long geti(const char *key)
{
    json_t *v = json_object_get(spec, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -999;
}

static const char *gets_(const char *key)
{
    const char *s = json_string_value(json_object_get(spec, key));
    return s ? s : "(absent)";
}

static void docket_lines(void **state)
{
    const char *s = "#!/bin/bash\n"
                    "#DOCKET -p vision --tier high\n"
                    "#DOCKET -g 8xH100-80GB --time 2d   # trailing comment\n"
                    "#DOCKET --env EPOCHS=90 --signal USR1@120s\n"
                    "\n"
                    "python train.py\n";

    assert_int_equal(parse(s), 0);
    assert_string_equal(gets_("project"), "vision");
    assert_string_equal(gets_("tier"), "high");
    assert_int_equal(geti("gpus"), 8);
    assert_string_equal(gets_("gpu_type"), "H100-80GB");
    assert_int_equal(geti("time_limit"), 2 * 86400);
    assert_string_equal(gets_("signal"), "USR1");
    assert_int_equal(nwarn, 0);
}

static void directives_end_at_first_command(void **state)
{
    const char *s = "#DOCKET --gpus 2\n"
                    "echo hello\n"
                    "#DOCKET --gpus 4\n"
                    "#SBATCH --nodes=3\n";

    assert_int_equal(parse(s), 0);
    assert_int_equal(geti("gpus"), 2);
    assert_null(json_object_get(spec, "nodes"));
}

static void sbatch_common_options(void **state)
{
    const char *s = "#!/bin/bash\n"
                    "#SBATCH --job-name=resnet\n"
                    "#SBATCH -N 2 --time=1-12:00:00\n"
                    "#SBATCH --cpus-per-task=8 --mem=64000\n"
                    "#SBATCH --gres=gpu:a100:4\n"
                    "#SBATCH -o out-%j.txt -e err-%j.txt\n"
                    "#SBATCH --array=0-15%4\n"
                    "#SBATCH --dependency=afterok:5:6\n"
                    "#SBATCH -A nlp\n"
                    "#SBATCH --chdir=/scratch/run\n"
                    "#SBATCH --hold\n"
                    "#SBATCH --no-requeue\n"
                    "#SBATCH --signal=B:USR1@60\n"
                    "#SBATCH --export=ALL --ntasks=1\n"
                    "srun python train.py\n";

    assert_int_equal(parse(s), 0);
    assert_string_equal(gets_("name"), "resnet");
    assert_int_equal(geti("nodes"), 2);
    assert_int_equal(geti("time_limit"), 36 * 3600);
    assert_int_equal(geti("cpus"), 8);
    assert_int_equal(geti("mem"), 64000);
    assert_int_equal(geti("gpus"), 4);
    assert_string_equal(gets_("gpu_type"), "a100");
    assert_string_equal(gets_("output"), "out-%j.txt");
    assert_string_equal(gets_("error"), "err-%j.txt");
    assert_string_equal(gets_("array"), "0-15%4");
    assert_int_equal(json_array_size(json_object_get(spec, "deps")), 2);
    assert_string_equal(gets_("project"), "nlp");
    assert_string_equal(gets_("workdir"), "/scratch/run");
    assert_true(json_is_true(json_object_get(spec, "hold")));
    assert_true(json_is_false(json_object_get(spec, "requeue")));
    assert_string_equal(gets_("signal"), "USR1");
    assert_string_equal(gets_("grace"), "60");
    if (nwarn)
        fail_msg("unexpected warnings:\n%s", warnings);
}

static void sbatch_time_is_minutes(void **state)
{
    assert_int_equal(parse("#SBATCH --time=90\n"), 0);
    assert_int_equal(geti("time_limit"), 90 * 60);
    assert_int_equal(parse("#SBATCH -t 10:00\n"), 0);
    assert_int_equal(geti("time_limit"), 600);
}

static void sbatch_gres_forms(void **state)
{
    assert_int_equal(parse("#SBATCH --gres=gpu\n"), 0);
    assert_int_equal(geti("gpus"), 1);
    assert_int_equal(parse("#SBATCH --gres=gpu:2,tmpfs:10G\n"), 0);
    assert_int_equal(geti("gpus"), 2);
    assert_int_equal(nwarn, 1);
    assert_non_null(strstr(warnings, "only gpu resources"));
    assert_int_equal(parse("#SBATCH --gres=gpu:x\n"), -EINVAL);
    assert_string_equal(err, "line 1: --gres: want gpu:N or gpu:TYPE:N, not 'gpu:x'");
}

static void sbatch_gpus_total_spread_over_nodes(void **state)
{
    assert_int_equal(parse("#SBATCH --gpus=16\n#SBATCH --nodes=2\n"), 0);
    assert_int_equal(spec_finish(spec, err, sizeof(err)), 0);
    assert_int_equal(geti("gpus"), 8);
    assert_null(json_object_get(spec, "__gpus_total"));
}

static void sbatch_gpus_uneven_refused(void **state)
{
    assert_int_equal(parse("#SBATCH -G h100:6\n#SBATCH -N 4\n"), 0);
    assert_string_equal(gets_("gpu_type"), "h100");
    assert_int_equal(spec_finish(spec, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "--gpus=6 does not spread evenly over 4 nodes; use "
                             "--gpus-per-node");
}

static void sbatch_gpus_per_node_wins(void **state)
{
    assert_int_equal(parse("#SBATCH --gpus=16 --gpus-per-node=4 -N 2\n"), 0);
    assert_int_equal(spec_finish(spec, err, sizeof(err)), 0);
    assert_int_equal(geti("gpus"), 4);
}

static void unknown_sbatch_warns_with_line(void **state)
{
    const char *s = "#!/bin/sh\n"
                    "#SBATCH --mail-type=END\n"
                    "#SBATCH --exclusive\n"
                    "#SBATCH -w node01\n"
                    "#SBATCH --ntasks=4\n"
                    "#SBATCH --gpus-per-node 2\n";

    assert_int_equal(parse(s), 0);
    assert_int_equal(nwarn, 4);
    assert_non_null(strstr(warnings, "line 2: #SBATCH --mail-type is not understood"));
    assert_non_null(strstr(warnings, "line 3: #SBATCH --exclusive is not understood"));
    assert_non_null(strstr(warnings, "line 4: #SBATCH -w is not understood"));
    assert_non_null(strstr(warnings, "line 5: #SBATCH --ntasks=4: docket runs one task"));
    assert_int_equal(geti("gpus"), 2); /* the unknown options' values were skipped */
}

static void partition_mapped_or_warned(void **state)
{
    assert_int_equal(parse_map("#SBATCH -p gpu\n", "gpu=normal,debug=exploration"), 0);
    assert_string_equal(gets_("tier"), "normal");
    assert_int_equal(parse_map("#SBATCH --partition=debug\n", "gpu=normal,debug=exploration"),
                     0);
    assert_string_equal(gets_("class"), "exploration");
    assert_int_equal(nwarn, 0);
    assert_int_equal(parse_map("#SBATCH --partition=cpu\n", "gpu=normal"), 0);
    assert_int_equal(nwarn, 1);
    assert_non_null(strstr(warnings, "#SBATCH --partition=cpu has no mapping"));
    assert_int_equal(parse_map("#SBATCH --partition=cpu\n", "broken"), -EINVAL);
}

static void nodes_range_takes_minimum(void **state)
{
    assert_int_equal(parse("#SBATCH --nodes=2-4\n"), 0);
    assert_int_equal(geti("nodes"), 2);
    assert_int_equal(nwarn, 1);
}

static void error_names_line_and_keeps_nothing(void **state)
{
    const char *s = "#DOCKET --gpus 2\n"
                    "#DOCKET --name ok\n"
                    "#DOCKET --cpus many\n";

    assert_int_equal(parse(s), -EINVAL);
    assert_string_equal(err, "line 3: --cpus: want an integer from 1 to 100000, not 'many'");
    assert_int_equal(json_object_size(spec), 0);
}

static void script_errors(void **state)
{
    assert_int_equal(parse("#DOCKET --name 'open\n"), -EINVAL);
    assert_string_equal(err, "line 1: unterminated quote");
    assert_int_equal(parse("#DOCKET --json\n"), -EINVAL);
    assert_string_equal(err, "line 1: --json is not a job option");
    assert_int_equal(parse("#DOCKET stray\n"), -EINVAL);
    assert_int_equal(parse("#DOCKET --bogus 1\n"), -EINVAL);
    assert_string_equal(err, "line 1: unknown option '--bogus'");
    assert_int_equal(spec_parse_script(spec, "#DOCKET -g 1\0x\n", 15, NULL, err, sizeof(err)),
                     -EINVAL);
    assert_string_equal(err, "line 1: contains a NUL byte");
}

static void look_alike_comments_ignored(void **state)
{
    assert_int_equal(parse("#SBATCHX --gpus=3\n#DOCKETS -g 3\n## #DOCKET -g 3\n"), 0);
    assert_int_equal(json_object_size(spec), 0);
}

static void no_warn_callback_is_fine(void **state)
{
    assert_int_equal(spec_parse_script(spec, "#SBATCH --mail-type=END\n", 24, NULL, err,
                                       sizeof(err)), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(docket_lines), T(directives_end_at_first_command), T(sbatch_common_options),
        T(sbatch_time_is_minutes), T(sbatch_gres_forms), T(sbatch_gpus_total_spread_over_nodes),
        T(sbatch_gpus_uneven_refused), T(sbatch_gpus_per_node_wins),
        T(unknown_sbatch_warns_with_line), T(partition_mapped_or_warned),
        T(nodes_range_takes_minimum), T(error_names_line_and_keeps_nothing), T(script_errors),
        T(look_alike_comments_ignored), T(no_warn_callback_is_fine),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
