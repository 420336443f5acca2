/*
 * test_slurmsite.c - the readers of a Slurm site's files (cli/slurmsite.h) and the policy
 * made from them: Slurm's times, host lists and gres, continuation lines and comments, the
 * sacctmgr dump's tree, the QOS table by its header, and what is said when not mapped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cli/slurmsite.h"

static json_t *site, *unmapped;

static int fresh(void **state)
{
    site = slurm_site_new();
    unmapped = json_array();
    return 0;
}

static int done(void **state)
{
    json_decref(site);
    json_decref(unmapped);
    return 0;
}

static bool said(const char *part)
{
    for (size_t i = 0; i < json_array_size(unmapped); i++)
        if (strstr(json_string_value(json_array_get(unmapped, i)), part))
            return true;
    return false;
}

static void slurm_times(void **state)
{
    assert_int_equal(slurm_time_secs("90"), 90 * 60);
    assert_int_equal(slurm_time_secs("1:30"), 90);
    assert_int_equal(slurm_time_secs("1:30:00"), 5400);
    assert_int_equal(slurm_time_secs("2-00:00:00"), 2 * 86400);
    assert_int_equal(slurm_time_secs("1-12"), 86400 + 12 * 3600);
    assert_int_equal(slurm_time_secs("1-2:30"), 86400 + 2 * 3600 + 30 * 60);
    assert_int_equal(slurm_time_secs("UNLIMITED"), 0);
    assert_int_equal(slurm_time_secs("infinite"), 0);
    assert_int_equal(slurm_time_secs("banana"), -1);
    assert_int_equal(slurm_time_secs("1:2:3:4"), -1);
    assert_int_equal(slurm_time_secs(""), -1);
}

static void conf_nodes_partitions(void **state)
{
    slurm_conf_read(site,
                    "# comment\n"
                    "NodeName=g[01-02] Gres=gpu:a100:8,gpu:v100:2(S:0) \\\n"
                    "   Feature=a100,ib   # trailing\n"
                    "nodename=c1 Gres=gpu:4,mps:100\n"
                    "PartitionName=p Nodes=g[01-02],c1 Default=YES MaxTime=1-00:00:00 "
                    "DefaultTime=30 AllowAccounts=x,y PriorityTier=3\n"
                    "PartitionName=all Nodes=ALL\n"
                    "Include /etc/slurm/more.conf\n",
                    unmapped);
    json_t *g2 = json_object_get(json_object_get(site, "nodes"), "g02");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(g2, "gpus"), "a100")), 8);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(g2, "gpus"), "v100")), 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(g2, "features"), 1)),
                        "ib");
    json_t *c1 = json_object_get(json_object_get(site, "nodes"), "c1");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c1, "gpus"), "")), 4);
    assert_true(said("gres 'mps' is not a GPU"));
    assert_true(said("PriorityTier=3"));
    assert_true(said("Include"));
    json_t *p = json_array_get(json_object_get(site, "partitions"), 0);
    assert_int_equal(json_array_size(json_object_get(p, "nodes")), 3);
    assert_int_equal(json_integer_value(json_object_get(p, "max_time")), 86400);
    assert_int_equal(json_integer_value(json_object_get(p, "default_time")), 1800);
    json_t *doc = slurm_site_policy(site, unmapped);
    json_t *parts = json_object_get(doc, "partitions");
    assert_null(json_object_get(json_array_get(parts, 1), "nodes")); /* every node */
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(doc, "node_labels"), "g01"), "features")),
        "a100,ib");
    json_decref(doc);
}

static void gres_types(void **state)
{
    slurm_conf_read(site, "NodeName=n[1-2] Gres=gpu:2\n", unmapped);
    slurm_gres_read(site,
                    "AutoDetect=nvml\n"
                    "NodeName=n[1-2] Name=gpu Type=h100 File=/dev/nvidia[0-1]\n"
                    "Name=mps Count=100\n",
                    unmapped);
    json_t *gpus = json_object_get(json_object_get(json_object_get(site, "nodes"), "n2"), "gpus");
    assert_int_equal(json_integer_value(json_object_get(gpus, "h100")), 2);
    assert_null(json_object_get(gpus, ""));
    assert_true(said("gres.conf:3: mps is not a GPU"));
    json_t *nodes = json_pack("[{s:s,s:s},{s:s,s:s}]", "name", "n1", "gpu_type", "H100-80GB",
                              "name", "n2", "gpu_type", "h100");
    json_t *aliases = slurm_site_aliases(site, nodes, unmapped);
    assert_string_equal(json_string_value(json_object_get(aliases, "h100")), "H100-80GB");
    json_decref(aliases);
    json_decref(nodes);
}

static void dump_tree_and_members(void **state)
{
    slurm_sacctmgr_read(site,
                        "Cluster - 'c':Fairshare=1\n"
                        "Parent - 'root'\n"
                        "Account - 'org':Fairshare=1\n"
                        "Account - 'solo':Fairshare=1:GrpTRES=cpu=4,gres/gpu=6:MaxWall='1:00:00'\n"
                        "Parent - 'org'\n"
                        "Account - 'team':Fairshare=1:Description='a: colon'\n"
                        "Parent - 'team'\n"
                        "User - 'u1':DefaultAccount='team'\n"
                        "User - 'bad name':DefaultAccount='team'\n"
                        "Parent - 'solo'\n"
                        "User - 'u1':DefaultAccount='team':MaxJobs=3\n"
                        "Wckey - 'x'\n",
                        unmapped);
    json_t *doc = slurm_site_policy(site, unmapped);
    json_t *groups = json_object_get(doc, "groups"), *projects = json_object_get(doc, "projects");
    assert_int_equal(json_array_size(groups), 1);
    assert_int_equal(json_array_size(projects), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *p = json_array_get(projects, i);
        const char *name = json_string_value(json_object_get(p, "name"));
        if (!strcmp(name, "team")) {
            assert_string_equal(json_string_value(json_object_get(p, "group")), "org");
            assert_int_equal(json_array_size(json_object_get(p, "default_for")), 1);
        } else {
            assert_int_equal(json_integer_value(json_object_get(p, "gpu_limit")), 6);
            assert_int_equal(json_array_size(json_object_get(p, "default_for")), 0);
        }
    }
    assert_true(said("user 'bad name' is not a name"));
    assert_true(said("MaxWall=1:00:00"));
    assert_true(said("MaxJobs=3"));
    assert_true(said("Wckey entries are not read"));
    json_decref(doc);
}

/* Shares and GPU counts as large as a file can write neither overflow nor go negative
 * (the fuzzer's find: two Fairshare values near LLONG_MAX summed). */
static void huge_shares_and_counts(void **state)
{
    slurm_conf_read(site, "NodeName=n1 Gres=gpu:8\nNodeName=n2 Gres=gpu:99999999999\n", unmapped);
    slurm_sacctmgr_read(site,
                        "Parent - 'root'\n"
                        "Account - 'a':Fairshare=9223372036854775807\n"
                        "Account - 'b':Fairshare=9223372036854775807\n"
                        "Account - 'c':Fairshare=-5\n",
                        unmapped);
    json_t *doc = slurm_site_policy(site, unmapped);
    json_t *projects = json_object_get(doc, "projects");
    assert_int_equal(json_array_size(projects), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *p = json_array_get(projects, i);
        double g = json_real_value(json_object_get(p, "guarantee_gpus"));
        if (!strcmp(json_string_value(json_object_get(p, "name")), "c"))
            assert_true(g == 0.0);
        else
            assert_true(g == 4.0);
    }
    assert_true(said("gres gpu count 99999999999 is not 0 to 1024"));
    json_decref(doc);
}

static void qos_by_header(void **state)
{
    slurm_qos_read(site,
                   "Name|Priority|Preempt|PreemptMode|MaxWall\n"
                   "low|10||cluster|\n"
                   "high|100|low|cluster|2-00:00:00\n"
                   "mid|50||suspend|\n",
                   unmapped);
    json_t *doc = slurm_site_policy(site, unmapped);
    json_t *tiers = json_object_get(doc, "tiers");
    assert_int_equal(json_array_size(tiers), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tiers, 0), "name")),
                        "high");
    assert_string_equal(json_string_value(json_object_get(json_array_get(tiers, 2), "name")),
                        "low");
    assert_true(said("qos high: Preempt=low leaves out mid"));
    assert_true(said("qos mid: PreemptMode=SUSPEND"));
    assert_true(said("qos high: MaxWall=2-00:00:00"));
    json_decref(doc);
}

/* QOS limits with a home (docs/slurm.md "A site imports itself"): GrpJobs on the one
 * project at the tier, GrpTRES shared by exactly one group's projects on that group,
 * MaxSubmitPU given alike by every QOS with projects as the site's user_max_queued; the
 * rest said with the reason. */
static json_t *with_qos(const char *qos)
{
    slurm_sacctmgr_read(site,
                        "Parent - 'root'\n"
                        "Account - 'sci':Fairshare=1\n"
                        "Account - 'ops':Fairshare=1:GrpJobs=30:QOS='urgent'\n"
                        "Account - 'solo':Fairshare=1:QOS='normal'\n"
                        "Parent - 'sci'\n"
                        "Account - 'chem':Fairshare=1:QOS='high'\n"
                        "Account - 'bio':Fairshare=1:QOS='high'\n",
                        unmapped);
    slurm_qos_read(site, qos, unmapped);
    return slurm_site_policy(site, unmapped);
}

static json_t *named(json_t *list, const char *name)
{
    for (size_t i = 0; i < json_array_size(list); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(list, i), "name")), name))
            return json_array_get(list, i);
    fail_msg("no %s", name);
    return NULL;
}

static long long ival(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return v ? (long long)json_integer_value(v) : -1;
}

static void qos_limits_mapped(void **state)
{
    json_t *doc = with_qos("Name|Priority|GrpTRES|GrpJobs|MaxSubmitPU|MaxTRES|UsageFactor\n"
                           "urgent|1000||20|50|gres/gpu=16|2.000000\n"
                           "high|500|gres/gpu=32|100|50||1.000000\n"
                           "normal|100|gres/gpu=8||50||0.500000\n"
                           "low|10||5|||\n");
    json_t *projects = json_object_get(doc, "projects"), *groups = json_object_get(doc, "groups");
    assert_int_equal(ival(named(projects, "ops"), "max_running"), 20); /* below its own 30 */
    assert_int_equal(ival(named(groups, "sci"), "gpu_limit"), 32);     /* chem and bio */
    assert_int_equal(ival(named(projects, "chem"), "gpu_limit"), -1);
    assert_int_equal(ival(named(projects, "solo"), "gpu_limit"), 8);
    assert_int_equal(ival(json_object_get(doc, "settings"), "user_max_queued"), 50);
    assert_true(said("qos high: GrpJobs=100: shared by several projects"));
    assert_true(said("qos low: GrpJobs=5: no project is at this tier"));
    assert_true(said("qos urgent: MaxTRES=gres/gpu=16: a cap on each job's size"));
    assert_true(said("qos urgent: UsageFactor=2.000000: Docket's fair share charges"));
    assert_true(said("qos normal: UsageFactor=0.500000"));
    assert_false(said("UsageFactor=1.000000"));
    assert_false(said("MaxSubmitPU"));
    assert_false(said("GrpTRES"));
    json_decref(doc);
}

static void qos_limits_not_mapped(void **state)
{
    /* MaxSubmitPU differs between QOSes with projects; then GrpTRES shared by two projects
       that are no group's */
    json_t *doc = with_qos("Name|Priority|GrpTRES|MaxSubmitPU\n"
                           "urgent|1000||10\n"
                           "high|500||20\n"
                           "normal|100|gres/gpu=8|\n");
    assert_null(json_object_get(json_object_get(doc, "settings"), "user_max_queued"));
    assert_true(said("qos urgent: MaxSubmitPU=10: Docket's cap on a user's queued jobs is one"));
    assert_true(said("qos high: MaxSubmitPU=20"));
    json_decref(doc);
    json_decref(site);
    json_decref(unmapped);
    site = slurm_site_new();
    unmapped = json_array();
    slurm_sacctmgr_read(site,
                        "Parent - 'root'\n"
                        "Account - 'a':Fairshare=1:QOS='normal'\n"
                        "Account - 'b':Fairshare=1:QOS='normal'\n",
                        unmapped);
    slurm_qos_read(site, "Name|Priority|GrpTRES\nnormal|100|gres/gpu=8\n", unmapped);
    doc = slurm_site_policy(site, unmapped);
    assert_true(said("qos normal: GrpTRES=gres/gpu=8: shared by several projects at this tier "
                     "that are not one group's"));
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slurm_times),
        cmocka_unit_test_setup_teardown(conf_nodes_partitions, fresh, done),
        cmocka_unit_test_setup_teardown(gres_types, fresh, done),
        cmocka_unit_test_setup_teardown(dump_tree_and_members, fresh, done),
        cmocka_unit_test_setup_teardown(qos_by_header, fresh, done),
        cmocka_unit_test_setup_teardown(qos_limits_mapped, fresh, done),
        cmocka_unit_test_setup_teardown(qos_limits_not_mapped, fresh, done),
        cmocka_unit_test_setup_teardown(huge_shares_and_counts, fresh, done),
    };
    return cmocka_run_group_tests_name("cli: slurm site import", tests, NULL, NULL);
}
