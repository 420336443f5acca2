/* test_script.c - unit tests of batch script directives (src/cli/script.c): #DOCKET lines
 * take docket's flags, #SBATCH lines Slurm's (the table in docs/cli.md), unknown Slurm
 * options warn, errors name the line and keep nothing. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
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
    struct spec_env env = {map, on_warn, NULL, false};

    json_object_clear(spec); /* each script on its own */
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

static const json_t *slurm_block(void)
{
    return json_object_get(spec, "slurm");
}

static long long slurm_i(const char *key)
{
    json_t *v = json_object_get(slurm_block(), key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -999;
}

static bool cli_flag(const char *key)
{
    return json_is_true(json_object_get(json_object_get(spec, "__cli"), key));
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
                    "#SBATCH --export=ALL --ntasks=2\n"
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
    assert_null(json_object_get(spec, "signal")); /* the limit sends SIGTERM, as Slurm's */
    assert_null(json_object_get(spec, "grace"));  /* and the kill stays at the limit */
    assert_int_equal(slurm_i("signal"), SIGUSR1);
    assert_int_equal(slurm_i("signal_before"), 60);
    assert_true(json_is_true(json_object_get(slurm_block(), "signal_batch")));
    assert_int_equal(slurm_i("ntasks"), 2);
    assert_int_equal(slurm_i("ntasks_per_node"), 1);
    assert_int_equal(slurm_i("cpus_per_task"), 8);
    assert_true(cli_flag("export_all"));
    if (nwarn)
        fail_msg("unexpected warnings:\n%s", warnings);
}

/* time_str2mins: minutes, MM:SS, HH:MM:SS, D-HH...; seconds round up to whole minutes */
static void sbatch_time_is_minutes(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --time=90\n"), 0);
    assert_int_equal(geti("time_limit"), 90 * 60);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -t 10:00\n"), 0);
    assert_int_equal(geti("time_limit"), 600);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --time=0:30\n"), 0);
    assert_int_equal(geti("time_limit"), 60);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --time=1:01\n"), 0);
    assert_int_equal(geti("time_limit"), 120);
    assert_int_equal(nwarn, 0);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --time=0\n"), 0); /* no limit in Slurm */
    assert_null(json_object_get(spec, "time_limit"));
    assert_int_equal(nwarn, 1);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --time=1h\n"), -EINVAL);
}

/* --switches=N[@max-time]: the count, and the wait in Slurm's time format, as the API
 * reads them; a bad count or time names the line */
static void sbatch_switches(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -N 4 --switches=1\n"), 0);
    assert_int_equal(geti("switches"), 1);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --switches=2@1:30:00\n"), 0);
    assert_string_equal(gets_("switches"), "2@5400s");
    assert_int_equal(nwarn, 0);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --switches=0\n"), -EINVAL);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --switches=x@10\n"), -EINVAL);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --switches=1@soon\n"), -EINVAL);
    assert_non_null(strstr(err, "--switches"));
}

static void sbatch_gres_forms(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --gres=gpu\n"), 0);
    assert_int_equal(geti("gpus"), 1);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --gres=gpu:2,tmpfs:10G\n"), 0);
    assert_int_equal(geti("gpus"), 2);
    assert_int_equal(nwarn, 1);
    assert_non_null(strstr(warnings, "only gpu resources"));
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --gres=gpu:x\n"), -EINVAL);
    assert_string_equal(err, "line 2: --gres: want gpu:N or gpu:TYPE:N, not 'gpu:x'");
}

static void sbatch_gpus_total_spread_over_nodes(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --gpus=16\n#SBATCH --nodes=2\n"), 0);
    assert_int_equal(geti("gpus"), 8);
    assert_null(json_object_get(spec, "__gpus_total"));
}

static void sbatch_gpus_uneven_refused(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -G h100:6\n#SBATCH -N 4\n"), -EINVAL);
    assert_string_equal(err, "#SBATCH lines: --gpus=6 does not spread evenly over 4 nodes; use "
                             "--gpus-per-node");
}

static void sbatch_gpus_per_node_wins(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --gpus=16 --gpus-per-node=4 -N 2\n"), 0);
    assert_int_equal(geti("gpus"), 4);
}

/* sbatch refuses what it does not know: so does docket, naming the line */
static void unknown_sbatch_refused_with_line(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -N 1\n#SBATCH --gress=gpu:1\n"), -EINVAL);
    assert_string_equal(err, "line 3: unrecognized option '--gress' (sbatch has no such option)");
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -y 3\n"), -EINVAL);
    assert_non_null(strstr(err, "line 2: invalid option -- 'y'"));
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --time 10 stray\n"), -EINVAL);
    assert_string_equal(err, "line 2: invalid directive 'stray' (not an option)");
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --hold=yes\n"), -EINVAL);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --time\n"), -EINVAL);
    assert_string_equal(err, "line 2: option '--time' requires an argument");
}

/* what would change placement or resources and cannot be honoured: refused with why */
static void unsupported_sbatch_refused_with_reason(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -w node01\n"), -EINVAL);
    assert_non_null(strstr(err, "line 2: --nodelist is not supported: docket places jobs"));
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --exclusive=user\n"), -EINVAL);
}

/* -C goes to docketd as written (the core reads its grammar); the last one wins */
static void constraint_carried_as_written(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --constraint=v100\n#SBATCH -C a100&ib\n"), 0);
    assert_string_equal(json_string_value(json_object_get(spec, "constraint")), "a100&ib");
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -C \"[rack1|rack2]\"\n"), 0);
    assert_string_equal(json_string_value(json_object_get(spec, "constraint")), "[rack1|rack2]");
}

/* what changes nothing for resources or timing: accepted, with a warning naming it */
static void harmless_sbatch_warns_with_line(void **state)
{
    const char *s = "#!/bin/sh\n"
                    "#SBATCH --mail-type=END --mail-user=a@b.c\n"
                    "#SBATCH --gpus-per-node 2\n";

    assert_int_equal(parse(s), 0);
    assert_int_equal(nwarn, 2);
    assert_non_null(strstr(warnings, "line 2: #SBATCH --mail-type=END changes nothing"));
    assert_int_equal(geti("gpus"), 2);
}

/* getopt_long: a unique prefix is the option, an ambiguous one an error */
static void sbatch_long_prefixes(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --out=o-%j.log --err e.log --job=x -N2\n"), 0);
    assert_string_equal(gets_("output"), "o-%j.log");
    assert_string_equal(gets_("error"), "e.log");
    assert_string_equal(gets_("name"), "x");
    assert_int_equal(geti("nodes"), 2);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --nod=2\n"), -EINVAL); /* nodes, nodelist.. */
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --mem-per=4G\n"), -EINVAL);
    assert_string_equal(err, "line 2: option '--mem-per' is ambiguous (--mem-per-cpu, "
                             "--mem-per-gpu)");
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --gpus-per-t=1 --ntasks-per-n=2\n"), 0);
    assert_int_equal(geti("gpus"), 2);
}

/* sbatch: "batch script must start with #!" when it has directives */
static void sbatch_needs_shebang(void **state)
{
    assert_int_equal(parse("#SBATCH -N 1\necho hi\n"), -EINVAL);
    assert_non_null(strstr(err, "line 1: a batch script must start with #!"));
    assert_int_equal(parse("#DOCKET -g 1\necho hi\n"), 0); /* docket's own: /bin/sh */
}

static void sbatch_tasks_times_cpus(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --ntasks-per-node=8 -c 10\n"), 0);
    assert_int_equal(geti("cpus"), 80);
    assert_int_equal(slurm_i("ntasks"), 8);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -N 2 -n 8\n"), 0);
    assert_int_equal(geti("cpus"), 4);
    assert_int_equal(slurm_i("ntasks_per_node"), 4);
    assert_int_equal(slurm_i("ntasks"), 8);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -N 2 --ntasks-per-node=4 --gpus-per-task=1\n"), 0);
    assert_int_equal(geti("gpus"), 4);
    assert_int_equal(slurm_i("gpus_per_task"), 1);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --gpus-per-node=4 --ntasks-per-gpu=2 -c 3\n"), 0);
    assert_int_equal(geti("cpus"), 24);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -N 4 -n 2\n"), -EINVAL);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --gres=gpu:2 --gpus-per-task=1 -n 4\n"), -EINVAL);
}

static void sbatch_memory_forms(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -c 4 --mem-per-cpu=2G\n"), 0);
    assert_int_equal(geti("mem"), 8192);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --gpus-per-node=2 --mem-per-gpu=10G\n"), 0);
    assert_int_equal(geti("mem"), 20480);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --mem=0\n"), 0);
    assert_null(json_object_get(spec, "mem"));
    assert_true(cli_flag("whole_mem"));
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --exclusive\n"), 0);
    assert_true(cli_flag("whole_node"));
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --mem=4G --mem-per-cpu=1G\n"), -EINVAL);
    assert_non_null(strstr(err, "mutually exclusive"));
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --mem-per-gpu=1G\n"), -EINVAL);
}

static void sbatch_signal_forms(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --signal=USR2\n"), 0);
    assert_int_equal(slurm_i("signal"), SIGUSR2);
    assert_int_equal(slurm_i("signal_before"), 60);
    assert_true(json_is_false(json_object_get(slurm_block(), "signal_batch")));
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --signal=B:10@20\n"), 0);
    assert_int_equal(slurm_i("signal_before"), 20);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --signal=USR1@1m\n"), -EINVAL);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --signal=KILL@5\n"), -EINVAL);
}

static void sbatch_export_begin_and_old_prefix(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SLURM --export=NONE,FOO=1\n#SBATCH --begin=now+1hour\n"),
                     0);
    assert_false(cli_flag("export_all"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(spec, "env"), "FOO")),
                        "1");
    assert_string_equal(gets_("begin"), "3600s");
    assert_int_equal(parse("#!/bin/sh\n  #SBATCH --nodes=3\n"), 0); /* indented: a comment */
    assert_null(json_object_get(spec, "nodes"));
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --begin=16:00\n"), -EINVAL);
}

/* Jean Zay's accounts: "six@a100" is the project six, with a warning */
static void sbatch_account_with_partition_suffix(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -A six@a100\n"), 0);
    assert_string_equal(gets_("project"), "six");
    assert_int_equal(nwarn, 1);
    assert_non_null(strstr(warnings, "line 2: #SBATCH --account=six@a100: the project is 'six'"));
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -A @a100\n"), -EINVAL);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -A six@\n"), -EINVAL);
    assert_int_equal(parse("#!/bin/sh\n#SBATCH -A a@b@c\n"), -EINVAL);
}

/* -p names the site's partition (docketd applies it); the user's map, when it names the
 * partition, overrides its tier or class; an unmapped QOS is warned about */
static void partition_mapped_or_warned(void **state)
{
    assert_int_equal(parse_map("#!/bin/sh\n#SBATCH -p gpu\n", "gpu=normal,debug=exploration"), 0);
    assert_string_equal(gets_("tier"), "normal");
    assert_string_equal(gets_("partition"), "gpu");
    assert_int_equal(
        parse_map("#!/bin/sh\n#SBATCH --partition=debug\n", "gpu=normal,debug=exploration"), 0);
    assert_string_equal(gets_("class"), "exploration");
    assert_int_equal(nwarn, 0);
    assert_int_equal(parse_map("#!/bin/sh\n#SBATCH --partition=cpu\n", "gpu=normal"), 0);
    assert_string_equal(gets_("partition"), "cpu");
    assert_null(json_object_get(spec, "tier"));
    assert_int_equal(nwarn, 0);
    assert_int_equal(parse_map("#!/bin/sh\n#SBATCH --qos=long\n", "gpu=normal"), 0);
    assert_int_equal(nwarn, 1);
    assert_non_null(strstr(warnings, "#SBATCH --qos=long has no mapping"));
    assert_int_equal(parse_map("#!/bin/sh\n#SBATCH --partition=cpu\n", "broken"), -EINVAL);
    assert_int_equal(parse_map("#!/bin/sh\n#SBATCH --partition=a,b\n", NULL), -EINVAL);
}

/* a site's map of many partitions: no length limit of its own */
static void partition_map_of_a_big_site(void **state)
{
    char *map = malloc(64 * 1024);
    size_t n = 0;
    for (int i = 0; i < 2000; i++)
        n += (size_t)snprintf(map + n, 64 * 1024 - n, "%spart%d=tier%d", i ? "," : "", i, i);
    assert_true(n > 1023);
    assert_int_equal(parse_map("#!/bin/sh\n#SBATCH -p part1999\n", map), 0);
    assert_string_equal(gets_("tier"), "tier1999");
    free(map);
}

static void nodes_range_takes_minimum(void **state)
{
    assert_int_equal(parse("#!/bin/sh\n#SBATCH --nodes=2-4\n"), 0);
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
    const char *s = "#!/bin/sh\n#SBATCH --mail-type=END\n";

    assert_int_equal(spec_parse_script(spec, s, strlen(s), NULL, err, sizeof(err)), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(docket_lines),
        T(directives_end_at_first_command),
        T(sbatch_common_options),
        T(sbatch_time_is_minutes),
        T(sbatch_gres_forms),
        T(sbatch_gpus_total_spread_over_nodes),
        T(sbatch_gpus_uneven_refused),
        T(sbatch_gpus_per_node_wins),
        T(unknown_sbatch_refused_with_line),
        T(unsupported_sbatch_refused_with_reason),
        T(constraint_carried_as_written),
        T(harmless_sbatch_warns_with_line),
        T(sbatch_long_prefixes),
        T(sbatch_needs_shebang),
        T(sbatch_tasks_times_cpus),
        T(sbatch_memory_forms),
        T(sbatch_signal_forms),
        T(sbatch_export_begin_and_old_prefix),
        T(sbatch_account_with_partition_suffix),
        T(partition_mapped_or_warned),
        T(partition_map_of_a_big_site),
        T(nodes_range_takes_minimum),
        T(error_names_line_and_keeps_nothing),
        T(script_errors),
        T(look_alike_comments_ignored),
        T(no_warn_callback_is_fine),
        T(sbatch_switches),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
