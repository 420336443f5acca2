/*
 * test_supervisor.c - the per-job supervisor for real: jobs run in their own cgroup on this
 * machine's hierarchy, output and exit codes come back, the environment carries the GPU
 * binding, signals reach the whole tree with an exact grace, daemonised grandchildren
 * die, time and memory limits end jobs, launch failures are reported. Needs root and a
 * cgroup hierarchy (skipped otherwise). Every cgroup and process made is removed.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cgroup.h"
#include "agent/supervisor.h"
#include "util/clock.h"

static char state_dir[256], scratch[300], node[64];
static struct cg_layout layout;
static char no_cgroups[300]; /* why layout.mode is CG_NONE (printed with the skip) */
static struct sup_config cfg;

static int setup(void **st)
{
    (void)st;
    snprintf(state_dir, sizeof state_dir, "/tmp/docket-utest-sup-%d", (int)getpid());
    snprintf(scratch, sizeof scratch, "%s/scratch", state_dir);
    snprintf(node, sizeof node, "utest-%d", (int)getpid());
    mkdir(state_dir, 0711);
    mkdir(scratch, 0711);
    char err[256];
    if (geteuid() != 0) {
        layout.mode = CG_NONE;
        snprintf(no_cgroups, sizeof no_cgroups, "needs root: cgroups are made by root");
    } else if (cg_detect(NULL, &layout, err, sizeof err) < 0) {
        layout.mode = CG_NONE;
        snprintf(no_cgroups, sizeof no_cgroups, "needs cgroups: %s", err);
    }
    cfg = (struct sup_config){.state_dir = state_dir, .scratch_root = scratch, .node = node,
                              .cg = &layout, .allow_root_jobs = true};
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    if (layout.mode != CG_NONE) {
        struct cg_job n;
        cg_node_init(&n, &layout, node);
        cg_job_remove(&n);
    }
    sup_remove_tree(state_dir);
    return 0;
}

static void need_cgroups(void)
{
    if (layout.mode == CG_NONE) {
        print_message("# skip: %s\n", no_cgroups);
        skip();
    }
}

/* Launch a job from a JSON text and wait until its state is "exited". */
static void run_job(const char *json, struct sup_state *out, int64_t *elapsed_ms,
                    void (*during)(uint64_t id, int sup_pid))
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *o = json_loads(json, 0, &je);
    assert_non_null(o);
    struct agent_job j;
    struct agent_msg_error e;
    assert_int_equal(agent_job_parse(o, &j, &e), 0);
    json_decref(o);
    char err[512] = "";
    int sup = 0;
    int64_t t0 = clock_mono_ms();
    int rc = sup_launch(&cfg, &j, 1, &sup, err, sizeof err);
    if (rc != 0)
        print_error("sup_launch: %s\n", err);
    assert_int_equal(rc, 0);
    char dir[512];
    sup_job_dir(&cfg, j.id, dir, sizeof dir);
    bool ran_during = false;
    for (int i = 0; i < 3000; i++) {
        struct sup_state s;
        if (sup_state_read(dir, &s) == 0) {
            if (!ran_during && during && strcmp(s.state, "exited") != 0) {
                ran_during = true;
                during(j.id, sup);
            }
            if (strcmp(s.state, "exited") == 0) {
                *out = s;
                break;
            }
        }
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
        if (i == 2999)
            fail_msg("job %llu did not end", (unsigned long long)j.id);
    }
    if (elapsed_ms)
        *elapsed_ms = clock_mono_ms() - t0;
    int status;
    assert_int_equal(waitpid(sup, &status, 0), sup);
    agent_job_release(&j);
}

static void read_text(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void test_exit_code_and_output(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    run_job("{\"id\": 11, \"command\": [\"sh\", \"-c\", \"echo hello; echo oops >&2; exit 3\"]}", &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    assert_int_equal(s.exit_code, 3);
    assert_true(s.reclaim_ok);
    char buf[256];
    read_text(s.out_path, buf, sizeof buf);
    assert_string_equal(buf, "hello\n");
    read_text(s.err_path, buf, sizeof buf);
    assert_string_equal(buf, "oops\n");
    struct cg_job cg;
    cg_job_init(&cg, &layout, node, 11);
    struct stat sb;
    assert_int_equal(stat(cg.dir[0], &sb), -1);   /* removed */
    /* the job's spec (its environment, later its secrets) is for root's eyes only */
    char dir[500], path[600];
    sup_job_dir(&cfg, 11, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/job.json", dir);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 077, 0);
}

static void test_environment(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    run_job("{\"id\": 12, \"project\": \"vision\", \"tier\": \"high\", \"gpus\": [2, 5],"
            " \"env\": {\"EPOCHS\": \"90\"}, \"nodelist\": [\"n1\", \"n2\"], \"world_size\": 2,"
            " \"node_rank\": 1, \"master_addr\": \"n1\", \"master_port\": 29501,"
            " \"command\": [\"sh\", \"-c\", \"echo $DOCKET_JOB_ID $DOCKET_PROJECT $DOCKET_TIER"
            " $CUDA_VISIBLE_DEVICES $NVIDIA_VISIBLE_DEVICES $DOCKET_GPUS $DOCKET_NODELIST $EPOCHS"
            " $MASTER_ADDR $MASTER_PORT $WORLD_SIZE $NODE_RANK\"]}", &s, NULL, NULL);
    assert_int_equal(s.exit_code, 0);
    char buf[512];
    read_text(s.out_path, buf, sizeof buf);
    assert_string_equal(buf, "12 vision high 2,5 2,5 2,5 n1,n2 90 n1 29501 2 1\n");
}

static void test_script_and_workdir(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    run_job("{\"id\": 13, \"workdir\": \"/tmp\", \"script\": \"#!/bin/sh\\npwd\\necho $TMPDIR | grep -c job_13\\n\"}",
            &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    assert_int_equal(s.exit_code, 0);
    char buf[256];
    read_text(s.out_path, buf, sizeof buf);
    assert_string_equal(buf, "/tmp\n1\n");
}

static int daemon_pid;

static void kill_during(uint64_t id, int sup)
{
    /* wait for the daemon to write its pid, then ask for a kill */
    char path[512];
    snprintf(path, sizeof path, "%s/daemon.pid", state_dir);
    for (int i = 0; i < 400; i++) {
        char buf[32] = "";
        read_text(path, buf, sizeof buf);
        if ((daemon_pid = (int)strtol(buf, NULL, 10)) > 0)
            break;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(sup_command(&cfg, id, sup, 2, "kill"), 0);
}

static void test_kill_takes_daemons(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    char json[1024];
    snprintf(json, sizeof json,
             "{\"id\": 14, \"command\": [\"sh\", \"-c\", \"setsid sh -c 'sleep 1000 & echo $! > %s/daemon.pid' &"
             " sleep 1000\"]}", state_dir);
    run_job(json, &s, NULL, kill_during);
    assert_true(daemon_pid > 0);
    assert_int_equal(s.exit_kind, AGENT_EXIT_SIGNAL);
    assert_int_equal(s.exit_code, SIGKILL);
    assert_true(s.reclaim_ok);
    /* the double-forked daemon is gone, reaped by the supervisor (not even a zombie) */
    assert_int_equal(kill(daemon_pid, 0), -1);
    assert_int_equal(errno, ESRCH);
}

static void signal_during(uint64_t id, int sup)
{
    struct timespec ts = {0, 200000000};   /* let the trap be installed */
    nanosleep(&ts, NULL);
    assert_int_equal(sup_command(&cfg, id, sup, 3, "signal 10 400"), 0);
}

static void test_signal_reaches_tree_with_exact_grace(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    int64_t elapsed;
    /* the leader and a child both trap USR1 and keep running: the grace ends it */
    run_job("{\"id\": 15, \"command\": [\"sh\", \"-c\", \"trap 'echo leader-got-usr1' USR1;"
            " (trap 'echo child-got-usr1' USR1; while :; do sleep 0.05; done) &"
            " while :; do sleep 0.05; done\"]}", &s, &elapsed, signal_during);
    assert_int_equal(s.exit_kind, AGENT_EXIT_SIGNAL);
    assert_int_equal(s.exit_code, SIGKILL);
    char buf[256];
    read_text(s.out_path, buf, sizeof buf);
    assert_non_null(strstr(buf, "leader-got-usr1"));
    assert_non_null(strstr(buf, "child-got-usr1"));
    /* 200 ms before the signal + 400 ms grace; well under a second */
    assert_in_range(elapsed, 600, 1500);
}

static void test_time_limit(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    int64_t elapsed;
    run_job("{\"id\": 16, \"time_limit_ms\": 300, \"grace_ms\": 200, \"command\": [\"sleep\", \"100\"]}",
            &s, &elapsed, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_SIGNAL);
    assert_int_equal(s.exit_code, SIGTERM);          /* sleep dies of the checkpoint signal */
    assert_string_equal(s.message, "time limit reached");
    assert_in_range(elapsed, 300, 1500);
}

static void test_oom(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    /* tail keeps a newline-less input whole in memory: 400 MB against a 64 MB limit */
    run_job("{\"id\": 17, \"mem_mb\": 64, \"command\": [\"sh\", \"-c\", \"head -c 400000000 /dev/zero | tail -n 1 >/dev/null\"]}",
            &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_OOM);
    assert_true(s.reclaim_ok);
    assert_true(s.usage.max_rss_mb >= 32);
}

static void test_launch_failed(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    run_job("{\"id\": 18, \"command\": [\"/nonexistent/prog\"]}", &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_LAUNCH_FAILED);
    assert_non_null(strstr(s.message, "cannot execute '/nonexistent/prog'"));
    run_job("{\"id\": 19, \"workdir\": \"/nonexistent\", \"command\": [\"true\"]}", &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_LAUNCH_FAILED);
    assert_non_null(strstr(s.message, "working directory '/nonexistent'"));
}

static void test_root_refused(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    cfg.allow_root_jobs = false;
    run_job("{\"id\": 20, \"user\": \"root\", \"command\": [\"true\"]}", &s, NULL, NULL);
    cfg.allow_root_jobs = true;
    assert_int_equal(s.exit_kind, AGENT_EXIT_LAUNCH_FAILED);
    assert_non_null(strstr(s.message, "refusing to run a job as root"));
}

static void test_runs_as_owner(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    run_job("{\"id\": 21, \"user\": \"nobody\", \"workdir\": \"/\", \"command\": [\"sh\", \"-c\", \"id -u; id -G\"]}",
            &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    char buf[256];
    read_text(s.out_path, buf, sizeof buf);
    assert_string_equal(buf, "65534\n65534\n");
}

static void test_nested_groups_reclaimed(void **st)
{
    (void)st;
    need_cgroups();
    if (layout.mode != CG_V1) {
        print_message("# skip: a v1 hierarchy test; this machine's is v2\n");
        skip();
    }
    /* a root job makes its own sub-group and hides a process in it, then exits */
    struct sup_state s;
    char json[2048];
    snprintf(json, sizeof json,
             "{\"id\": 22, \"command\": [\"sh\", \"-c\", \"g=docket/$DOCKET_NODE/job_22/inner;"
             " for c in freezer memory; do mkdir /sys/fs/cgroup/$c/$g || exit 1; done;"
             " sleep 1000 & p=$!; for c in freezer memory; do echo $p > /sys/fs/cgroup/$c/$g/cgroup.procs; done;"
             " echo $p > %s/nested.pid\"]}", state_dir);
    run_job(json, &s, NULL, NULL);
    if (!s.reclaim_ok)
        print_error("reclaim: %s\n", s.reclaim_msg);
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    assert_int_equal(s.exit_code, 0);
    assert_true(s.reclaim_ok);
    char path[512], buf[32] = "";
    snprintf(path, sizeof path, "%s/nested.pid", state_dir);
    read_text(path, buf, sizeof buf);
    int pid = (int)strtol(buf, NULL, 10);
    assert_true(pid > 0);
    assert_int_equal(kill(pid, 0), -1);
    struct cg_job cg;
    cg_job_init(&cg, &layout, node, 22);
    struct stat sb;
    for (int i = 0; i < cg.ndirs; i++)
        assert_int_equal(stat(cg.dir[i], &sb), -1);
}

/* A reclaim that cannot finish is reported, not hidden: a root job pins a sub-group of
 * its own with a bind mount, so the job's group cannot be removed. */
static void test_reclaim_failure_reported(void **st)
{
    (void)st;
    need_cgroups();
    if (layout.mode != CG_V1) {
        print_message("# skip: a v1 hierarchy test; this machine's is v2\n");
        skip();
    }
    char src[300], inner[600], json[2048];
    snprintf(src, sizeof src, "%s/mnt-src", state_dir);
    mkdir(src, 0755);
    snprintf(inner, sizeof inner, "/sys/fs/cgroup/freezer/docket/%s/job_25/inner", node);
    snprintf(json, sizeof json,
             "{\"id\": 25, \"command\": [\"sh\", \"-c\", \"mkdir %s && mount --bind %s %s\"]}",
             inner, src, inner);
    struct sup_state s;
    run_job(json, &s, NULL, NULL);
    /* undo the pin before anything can fail, then clean up what reclaim could not */
    int um = umount2(inner, MNT_DETACH);
    rmdir(inner);
    struct cg_job cg;
    cg_job_init(&cg, &layout, node, 25);
    cg_job_remove(&cg);
    assert_int_equal(um, 0);
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    assert_int_equal(s.exit_code, 0);
    assert_false(s.reclaim_ok);
    assert_non_null(strstr(s.reclaim_msg, "cannot remove cgroup"));
    assert_non_null(strstr(s.reclaim_msg, "job_25"));
}

static bool spare_group_exists(int pid)
{
    char path[512];
    snprintf(path, sizeof path, "/sys/fs/cgroup/freezer/docket/%s/spare_%d", node, pid);
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void test_spare_runs_a_job(void **st)
{
    (void)st;
    need_cgroups();
    if (layout.mode != CG_V1) {
        print_message("# skip: a v1 hierarchy test; this machine's is v2\n");
        skip();
    }
    struct sup_spare sp;
    char err[256];
    assert_int_equal(sup_spare_start(&cfg, &sp, err, sizeof err), 0);
    int pid = sp.pid;
    for (int i = 0; i < 400 && !spare_group_exists(pid); i++) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    assert_true(spare_group_exists(pid));   /* made in advance, with the spare in it */
    json_error_t je;
    json_t *o = json_loads("{\"id\": 23, \"mem_mb\": 100, \"gpus\": [1], \"command\": [\"sh\", \"-c\","
                           " \"echo $CUDA_VISIBLE_DEVICES; grep -c . /proc/self/cgroup >/dev/null; exit 5\"]}", 0, &je);
    struct agent_job j;
    struct agent_msg_error e;
    assert_int_equal(agent_job_parse(o, &j, &e), 0);
    json_decref(o);
    int sup = 0;
    assert_int_equal(sup_spare_launch(&cfg, &sp, &j, 7, &sup, err, sizeof err), 0);
    assert_int_equal(sup, pid);
    assert_int_equal(sp.pid, 0);
    int status;
    assert_int_equal(waitpid(sup, &status, 0), sup);
    char dir[512];
    sup_job_dir(&cfg, 23, dir, sizeof dir);
    struct sup_state s;
    assert_int_equal(sup_state_read(dir, &s), 0);
    assert_string_equal(s.state, "exited");
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    assert_int_equal(s.exit_code, 5);
    assert_true(s.reclaim_ok);
    char buf[64];
    read_text(s.out_path, buf, sizeof buf);
    assert_string_equal(buf, "1\n");
    assert_false(spare_group_exists(pid));
    struct cg_job cg;
    cg_job_init(&cg, &layout, node, 23);
    struct stat sb;
    for (int i = 0; i < cg.ndirs; i++)
        assert_int_equal(stat(cg.dir[i], &sb), -1);
    assert_int_equal(sup_start_seq(&cfg, 23), 7);
    agent_job_release(&j);
}

static void test_spare_dropped_cleans_up(void **st)
{
    (void)st;
    need_cgroups();
    if (layout.mode != CG_V1) {
        print_message("# skip: a v1 hierarchy test; this machine's is v2\n");
        skip();
    }
    struct sup_spare sp;
    char err[256];
    assert_int_equal(sup_spare_start(&cfg, &sp, err, sizeof err), 0);
    int pid = sp.pid;
    for (int i = 0; i < 400 && !spare_group_exists(pid); i++) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    sup_spare_drop(&sp);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_false(spare_group_exists(pid));
}

/* A whole job on cgroup v2: this machine's unified tree has no controllers, so no limits,
 * but the job is created inside its group (clone3 CLONE_INTO_CGROUP), tracked, killed
 * with its daemon and reclaimed through v2 files alone. */
static void test_v2_job(void **st)
{
    (void)st;
    struct stat sb;
    if (geteuid() != 0) {
        print_message("# skip: needs root: cgroups are made by root\n");
        skip();
    }
    if (stat("/sys/fs/cgroup/unified/cgroup.procs", &sb) < 0) {
        print_message("# skip: no v2 tree mounted at /sys/fs/cgroup/unified\n");
        skip();
    }
    struct cg_layout v2;
    memset(&v2, 0, sizeof v2);
    v2.mode = CG_V2;
    snprintf(v2.root, sizeof v2.root, "/sys/fs/cgroup");
    snprintf(v2.v2, sizeof v2.v2, "/sys/fs/cgroup/unified");
    v2.v2_kill = true;
    const struct cg_layout *saved = cfg.cg;
    cfg.cg = &v2;
    struct sup_state s;
    char json[1024];
    snprintf(json, sizeof json,
             "{\"id\": 24, \"command\": [\"sh\", \"-c\", \"grep '^0::' /proc/self/cgroup;"
             " setsid sh -c 'sleep 1000 & echo $! > %s/v2daemon.pid'; sleep 0.2; exit 4\"]}", state_dir);
    run_job(json, &s, NULL, NULL);
    cfg.cg = saved;
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    assert_int_equal(s.exit_code, 4);
    assert_true(s.reclaim_ok);
    char buf[256], want[256];
    read_text(s.out_path, buf, sizeof buf);
    snprintf(want, sizeof want, "0::/docket/%s/job_24\n", node);
    assert_string_equal(buf, want);
    char path[512];
    snprintf(path, sizeof path, "%s/v2daemon.pid", state_dir);
    read_text(path, buf, sizeof buf);
    int pid = (int)strtol(buf, NULL, 10);
    assert_true(pid > 0);
    assert_int_equal(kill(pid, 0), -1);
    snprintf(path, sizeof path, "/sys/fs/cgroup/unified/docket/%s/job_24", node);
    assert_int_equal(stat(path, &sb), -1);
    snprintf(path, sizeof path, "/sys/fs/cgroup/unified/docket/%s", node);
    rmdir(path);
    rmdir("/sys/fs/cgroup/unified/docket");
}

static void test_resolve_output(void **st)
{
    (void)st;
    struct agent_job j;
    agent_job_init(&j);
    j.id = 42;
    j.array_index = 7;
    snprintf(j.name, sizeof j.name, "resnet");
    char out[512];
    assert_int_equal(sup_resolve_output(NULL, "/s/jobs/42", "stdout", "/w", &j, out, sizeof out), 0);
    assert_string_equal(out, "/s/jobs/42/stdout");
    assert_int_equal(sup_resolve_output("%x-%j_%a.out", "/d", "stdout", "/w", &j, out, sizeof out), 0);
    assert_string_equal(out, "/w/resnet-42_7.out");
    assert_int_equal(sup_resolve_output("/abs/%j%%", "/d", "stdout", "/w", &j, out, sizeof out), 0);
    assert_string_equal(out, "/abs/42%");
    assert_int_equal(sup_resolve_output("x", "/d", "stdout", "/w", &j, out, 4), -ENAMETOOLONG);
}

static void test_starttime_guard(void **st)
{
    (void)st;
    int64_t me = sup_proc_starttime(getpid());
    assert_true(me > 0);
    assert_true(sup_alive(getpid(), me));
    assert_false(sup_alive(getpid(), me + 1));
    assert_false(sup_alive(0, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve_output),
        cmocka_unit_test(test_starttime_guard),
        cmocka_unit_test(test_exit_code_and_output),
        cmocka_unit_test(test_environment),
        cmocka_unit_test(test_script_and_workdir),
        cmocka_unit_test(test_kill_takes_daemons),
        cmocka_unit_test(test_signal_reaches_tree_with_exact_grace),
        cmocka_unit_test(test_time_limit),
        cmocka_unit_test(test_oom),
        cmocka_unit_test(test_launch_failed),
        cmocka_unit_test(test_root_refused),
        cmocka_unit_test(test_runs_as_owner),
        cmocka_unit_test(test_nested_groups_reclaimed),
        cmocka_unit_test(test_spare_runs_a_job),
        cmocka_unit_test(test_spare_dropped_cleans_up),
        cmocka_unit_test(test_v2_job),
        cmocka_unit_test(test_reclaim_failure_reported),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
