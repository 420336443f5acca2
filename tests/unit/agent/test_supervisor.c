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
#include <glob.h>
#include <poll.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cgroup.h"
#include "agent/supervisor.h"
#include "protocol/ttyframe.h"
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
    static char sessions[300];
    snprintf(sessions, sizeof sessions, "%s/sessions", state_dir);
    cfg = (struct sup_config){.state_dir = state_dir,
                              .scratch_root = scratch,
                              .session_root = sessions,
                              .node = node,
                              .cg = &layout,
                              .allow_root_jobs = true};
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
    struct proto_error e = {0};
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

/* issue 33 #11: the default output files on the node keep the log limit, the marker
 * after it, and no disk for the rest; a path the job named is the user's, left whole */
static void test_default_output_capped(void **st)
{
    (void)st;
    cfg.log_limit_bytes = 100000;
    struct sup_state s;
    run_job("{\"id\": 58, \"user\": \"nobody\", \"workdir\": \"/tmp\", \"command\": "
            "[\"sh\", \"-c\", \"head -c 3000000 /dev/zero | tr '\\\\0' a; "
            "head -c 200 /dev/zero | tr '\\\\0' b >&2\"]}",
            &s, NULL, NULL);
    cfg.log_limit_bytes = 0;
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    assert_int_equal(s.exit_code, 0);
    struct stat sb;
    assert_int_equal(stat(s.out_path, &sb), 0);
    assert_int_equal(sb.st_size, 3000000);             /* the job wrote on undisturbed */
    assert_true((int64_t)sb.st_blocks * 512 < 400000); /* the disk: the limit and little more */
    char buf[128];
    FILE *f = fopen(s.out_path, "r");
    assert_non_null(f);
    assert_int_equal(fseek(f, 99990, SEEK_SET), 0);
    size_t n = fread(buf, 1, 80, f);
    fclose(f);
    assert_int_equal(n, 80);
    assert_memory_equal(buf, "aaaaaaaaaa\n[docket-node: output cut here", 40);
    /* stderr stayed below the limit: whole */
    char err[512];
    read_text(s.err_path, err, sizeof err);
    assert_int_equal(strlen(err), 200);
}

static void test_exit_code_and_output(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    run_job("{\"id\": 11, \"command\": [\"sh\", \"-c\", \"echo hello; echo oops >&2; exit 3\"]}",
            &s, NULL, NULL);
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
    assert_int_equal(stat(cg.dir[0], &sb), -1); /* removed */
    /* the job's spec (its environment, later its secrets) is for root's eyes only */
    char dir[500], path[600];
    sup_job_dir(&cfg, 11, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/job.json", dir);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 077, 0);
}

/* An interactive session (suptty.c): the command waits for the first client, runs on a
 * PTY of the client's size in the session directory, its output and exit come back as
 * frames; a client that sends garbage is dropped and the session goes on. */
static void read_frames(int fd, char *data, size_t len, int *exit_code, long pause_ns)
{
    static uint8_t in[4 * (TTY_FRAME_HEAD + TTY_FRAME_MAX)];
    size_t have = 0, got = 0;
    *exit_code = -1;
    while (*exit_code < 0) {
        struct timespec slow = {0, pause_ns}; /* a client slower than the command */
        if (pause_ns)
            nanosleep(&slow, NULL);
        struct pollfd p = {fd, POLLIN, 0};
        assert_true(poll(&p, 1, 20000) > 0);
        size_t room = sizeof in - have;
        ssize_t r = read(fd, in + have, pause_ns && room > 4096 ? 4096 : room);
        assert_true(r > 0);
        have += (size_t)r;
        size_t at = 0;
        struct tty_frame f;
        int n;
        while ((n = tty_frame_parse(in + at, have - at, &f)) > 0) {
            if (f.type == TTY_DATA && got + f.len < len) {
                memcpy(data + got, f.payload, f.len);
                got += f.len;
            }
            if (f.type == TTY_EXIT)
                *exit_code = f.exit_value;
            at += (size_t)n;
        }
        assert_true(n == 0);
        memmove(in, in + at, have - at);
        have -= at;
    }
    data[got] = '\0';
}

/* A session's supervisor launched for `spec` (JSON), and a client connected to its
 * JOBDIR/tty.sock (a moment is given for the socket to appear): the job, its
 * supervisor's pid and its directory are returned, the connection's descriptor too. */
static int tty_launch(const char *spec, struct agent_job *j, int *sup, char *dir, size_t len)
{
    json_error_t je;
    json_t *o = json_loads(spec, 0, &je);
    assert_non_null(o);
    struct proto_error e = {0};
    assert_int_equal(agent_job_parse(o, j, &e), 0);
    json_decref(o);
    char err[512] = "";
    assert_int_equal(sup_launch(&cfg, j, 1, sup, err, sizeof err), 0);
    sup_job_dir(&cfg, j->id, dir, len);
    int fd = -1;
    for (int i = 0; i < 2000 && fd < 0; i++) {
        fd = sup_tty_connect(dir);
        struct timespec ts = {0, 5000000};
        if (fd < 0)
            nanosleep(&ts, NULL);
    }
    assert_true(fd >= 0);
    return fd;
}

static void send_hello(int fd, int rows, int cols)
{
    uint8_t hello[8];
    size_t n = tty_frame_put_size(hello, sizeof hello, TTY_HELLO, rows, cols);
    assert_int_equal(write(fd, hello, n), (ssize_t)n);
}

static void test_tty_session(void **st)
{
    (void)st;
    struct agent_job j;
    char dir[512];
    int sup = 0;
    int fd = tty_launch("{\"id\": 71, \"project\": \"pty\", \"tty\": {\"idle_ms\": 60000},"
                        " \"command\": [\"sh\", \"-c\", \"stty size; pwd; exit 5\"]}",
                        &j, &sup, dir, sizeof dir);
    char sock[600];
    snprintf(sock, sizeof sock, "%s/tty.sock", dir);
    struct stat sb;
    assert_int_equal(stat(sock, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600); /* the agent's alone */
    send_hello(fd, 31, 97);
    char out[4096];
    int code;
    read_frames(fd, out, sizeof out, &code, 0);
    close(fd);
    assert_int_equal(code, 5);
    assert_non_null(strstr(out, "31 97"));
    char want[600];
    snprintf(want, sizeof want, "%s/pty/", cfg.session_root);
    assert_non_null(strstr(out, want));
    int status;
    assert_int_equal(waitpid(sup, &status, 0), sup);
    struct sup_state s;
    assert_int_equal(sup_state_read(dir, &s), 0);
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    assert_int_equal(s.exit_code, 5);
    agent_job_release(&j);
}

/* Output written just before the command exits reaches a client whole, then the exit,
 * even when the client reads nothing for seconds after the command ended (a loaded
 * machine: CI lost the last 198 of 300,000 lines of `docket shell`, the end's flush
 * giving up after a fixed 2 s) and then reads slowly. */
static void test_tty_flood_before_exit(void **st)
{
    (void)st;
    struct agent_job j;
    char dir[512];
    int sup = 0;
    int fd = tty_launch("{\"id\": 72, \"project\": \"pty\", \"tty\": {\"idle_ms\": 60000},"
                        " \"command\": [\"sh\", \"-c\", \"seq 1 40000; exit 4\"]}",
                        &j, &sup, dir, sizeof dir);
    send_hello(fd, 24, 80);
    sleep(3); /* the command runs and ends meanwhile: its output waits in the queue */
    static char out[4 * 1024 * 1024];
    int code;
    read_frames(fd, out, sizeof out, &code, 200000);
    close(fd);
    assert_int_equal(code, 4);
    size_t lines = 0;
    for (const char *c = out; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 40000);
    assert_non_null(strstr(out, "\n40000\r\n"));
    int status;
    assert_int_equal(waitpid(sup, &status, 0), sup);
    agent_job_release(&j);
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
            " $MASTER_ADDR $MASTER_PORT $WORLD_SIZE $NODE_RANK\"]}",
            &s, NULL, NULL);
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
    run_job("{\"id\": 13, \"workdir\": \"/tmp\", \"script\": \"#!/bin/sh\\npwd\\necho $TMPDIR | "
            "grep -c job_13\\n\"}",
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
    assert_int_equal(sup_command(&cfg, id, sup, 0, 2, "kill"), 0);
}

static void test_kill_takes_daemons(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    char json[1024];
    snprintf(json, sizeof json,
             "{\"id\": 14, \"command\": [\"sh\", \"-c\", \"setsid sh -c 'sleep 1000 & echo $! > "
             "%s/daemon.pid' &"
             " sleep 1000\"]}",
             state_dir);
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
    struct timespec ts = {0, 200000000}; /* let the trap be installed */
    nanosleep(&ts, NULL);
    assert_int_equal(sup_command(&cfg, id, sup, 0, 3, "signal 10 400"), 0);
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
            " while :; do sleep 0.05; done\"]}",
            &s, &elapsed, signal_during);
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
    run_job("{\"id\": 16, \"time_limit_ms\": 300, \"grace_ms\": 200, \"command\": [\"sleep\", "
            "\"100\"]}",
            &s, &elapsed, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_SIGNAL);
    assert_int_equal(s.exit_code, SIGTERM); /* sleep dies of the checkpoint signal */
    assert_string_equal(s.message, "time limit reached");
    assert_in_range(elapsed, 300, 1500);
}

static void test_oom(void **st)
{
    (void)st;
    need_cgroups();
    struct sup_state s;
    /* tail keeps a newline-less input whole in memory: 400 MB against a 64 MB limit */
    run_job("{\"id\": 17, \"mem_mb\": 64, \"command\": [\"sh\", \"-c\", \"head -c 400000000 "
            "/dev/zero | tail -n 1 >/dev/null\"]}",
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
    run_job("{\"id\": 21, \"user\": \"nobody\", \"workdir\": \"/\", \"command\": [\"sh\", \"-c\", "
            "\"id -u; id -G\"]}",
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
             " sleep 1000 & p=$!; for c in freezer memory; do echo $p > "
             "/sys/fs/cgroup/$c/$g/cgroup.procs; done;"
             " echo $p > %s/nested.pid\"]}",
             state_dir);
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
    assert_true(spare_group_exists(pid)); /* made in advance, with the spare in it */
    json_error_t je;
    json_t *o = json_loads(
        "{\"id\": 23, \"mem_mb\": 100, \"gpus\": [1], \"command\": [\"sh\", \"-c\","
        " \"echo $CUDA_VISIBLE_DEVICES; grep -c . /proc/self/cgroup >/dev/null; exit 5\"]}",
        0, &je);
    struct agent_job j;
    struct proto_error e = {0};
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
             " setsid sh -c 'sleep 1000 & echo $! > %s/v2daemon.pid'; sleep 0.2; exit 4\"]}",
             state_dir);
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
    assert_int_equal(
        sup_resolve_output(NULL, "/s/jobs/42", "stdout", "/w", &j, NULL, out, sizeof out), 0);
    assert_string_equal(out, "/s/jobs/42/stdout");
    assert_int_equal(
        sup_resolve_output("%x-%j_%a.out", "/d", "stdout", "/w", &j, NULL, out, sizeof out), 0);
    assert_string_equal(out, "/w/resnet-42_7.out");
    assert_int_equal(
        sup_resolve_output("/abs/%j%%", "/d", "stdout", "/w", &j, NULL, out, sizeof out), 0);
    assert_string_equal(out, "/abs/42%");
    assert_int_equal(sup_resolve_output("x", "/d", "stdout", "/w", &j, NULL, out, 4),
                     -ENAMETOOLONG);
    /* Slurm's filename pattern: the array's id, user, short node name, padding, \ */
    char *nodes[] = {"gpu01.example.org", "gpu02", NULL};
    j.array_id = 40;
    j.nodelist = nodes;
    j.nnodes = 2;
    j.node_rank = 1;
    assert_int_equal(sup_resolve_output("%A_%a-%J-%u-%N-%n-%b.log", "/d", "stdout", "/w", &j, "ann",
                                        out, sizeof out),
                     0);
    assert_string_equal(out, "/w/40_7-42-ann-gpu02-1-7.log");
    j.node_rank = 0;
    assert_int_equal(
        sup_resolve_output("%N/%4j.%3a", "/d", "stdout", "/w", &j, "ann", out, sizeof out), 0);
    assert_string_equal(out, "/w/gpu01/0042.007");
    assert_int_equal(sup_resolve_output("o\\%j", "/d", "stdout", "/w", &j, "ann", out, sizeof out),
                     0);
    assert_string_equal(out, "/w/o%j");
    j.array_id = 0;
    assert_int_equal(
        sup_resolve_output("slurm-%A.out", "/d", "stdout", "/w", &j, NULL, out, sizeof out), 0);
    assert_string_equal(out, "/w/slurm-42.out");
    j.nodelist = NULL;
    j.nnodes = 0;
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

/* ---------------------------------------------------------------------------------- */
/* Issue 12: what a hostile job can do with its outputs, devices, processes and memory  */

static void make_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    chmod(path, mode);
}

/* Outputs are opened as the job's user, never through a final symlink, never a FIFO
 * (which used to hang the launch), only regular files: each is a clear launch error. */
static void test_outputs_refused(void **st)
{
    (void)st;
    need_cgroups();
    char wd[400], secret[400], json[2048];
    snprintf(wd, sizeof wd, "%s/wd-out", state_dir);
    mkdir(wd, 01777);
    chmod(wd, 01777);
    snprintf(secret, sizeof secret, "%s/secret", state_dir);
    make_file(secret, "TOPSECRET\n", 0600);
    char path[600];
    snprintf(path, sizeof path, "%s/link.out", wd);
    assert_int_equal(symlink(secret, path), 0);
    snprintf(path, sizeof path, "%s/fifo.out", wd);
    assert_int_equal(mkfifo(path, 0666), 0);
    chmod(path, 0666);
    struct sup_state s;
    /* a symlink at the end of the path */
    snprintf(json, sizeof json,
             "{\"id\": 40, \"user\": \"nobody\", \"workdir\": \"%s\", \"output\": \"link.out\","
             " \"command\": [\"echo\", \"x\"]}",
             wd);
    run_job(json, &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_LAUNCH_FAILED);
    assert_non_null(strstr(s.message, "is a symbolic link"));
    /* a directory on the way that is a symlink (issue 33 #11) */
    char dlink[600];
    snprintf(dlink, sizeof dlink, "%s/dirlink", state_dir);
    assert_int_equal(symlink(wd, dlink), 0);
    snprintf(json, sizeof json,
             "{\"id\": 56, \"user\": \"nobody\", \"workdir\": \"%s\", \"output\": \"%s/via.out\","
             " \"command\": [\"echo\", \"x\"]}",
             wd, dlink);
    run_job(json, &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_LAUNCH_FAILED);
    assert_non_null(strstr(s.message, "is a symbolic link"));
    char via[700];
    snprintf(via, sizeof via, "%s/via.out", wd);
    assert_int_equal(access(via, F_OK), -1);
    /* a FIFO with no reader: refused at once, not a hang */
    int64_t ms = 0;
    snprintf(json, sizeof json,
             "{\"id\": 41, \"user\": \"nobody\", \"workdir\": \"%s\", \"error\": \"fifo.out\","
             " \"command\": [\"echo\", \"x\"]}",
             wd);
    run_job(json, &s, &ms, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_LAUNCH_FAILED);
    assert_non_null(strstr(s.message, "fifo.out"));
    assert_true(ms < 5000);
    /* a FIFO that has a reader opens, but is no regular file */
    int rfd = open(path, O_RDONLY | O_NONBLOCK);
    assert_true(rfd >= 0);
    run_job(json, &s, NULL, NULL);
    close(rfd);
    assert_int_equal(s.exit_kind, AGENT_EXIT_LAUNCH_FAILED);
    assert_non_null(strstr(s.message, "is not a regular file"));
    /* a device */
    snprintf(json, sizeof json,
             "{\"id\": 42, \"user\": \"nobody\", \"workdir\": \"%s\", \"output\": \"/dev/null\","
             " \"command\": [\"echo\", \"x\"]}",
             wd);
    run_job(json, &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_LAUNCH_FAILED);
    assert_non_null(strstr(s.message, "is not a regular file"));
    /* a file the user may not write (root's, 0600): opened as the user, so refused */
    snprintf(json, sizeof json,
             "{\"id\": 43, \"user\": \"nobody\", \"workdir\": \"%s\", \"output\": \"%s\","
             " \"command\": [\"echo\", \"x\"]}",
             wd, secret);
    run_job(json, &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_LAUNCH_FAILED);
    assert_non_null(strstr(s.message, "Permission denied"));
    char buf[64];
    read_text(secret, buf, sizeof buf);
    assert_string_equal(buf, "TOPSECRET\n");
    /* a working directory that is not a directory */
    snprintf(json, sizeof json,
             "{\"id\": 44, \"user\": \"nobody\", \"workdir\": \"%s\", \"command\": [\"true\"]}",
             secret);
    run_job(json, &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_LAUNCH_FAILED);
    assert_non_null(strstr(s.message, "cannot enter working directory"));
    /* and a good one: the user's own new file, its inode recorded for the agent */
    snprintf(json, sizeof json,
             "{\"id\": 45, \"user\": \"nobody\", \"workdir\": \"%s\", \"output\": \"ok-%%j.out\","
             " \"command\": [\"echo\", \"fine\"]}",
             wd);
    run_job(json, &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    assert_int_equal(s.exit_code, 0);
    read_text(s.out_path, buf, sizeof buf);
    assert_string_equal(buf, "fine\n");
    struct stat sb;
    assert_int_equal(stat(s.out_path, &sb), 0);
    assert_int_equal((int64_t)sb.st_ino, s.out_ino);
    assert_int_equal((int64_t)sb.st_dev, s.out_dev);
    assert_int_equal(s.out_start, 0);
    assert_int_equal(sb.st_uid, 65534);
}

/* Stand-in GPUs: character nodes with NVIDIA's major (195) in a temporary directory. */
static void make_gpu_nodes(char *dir, size_t len, int n)
{
    snprintf(dir, len, "%s/dev", state_dir);
    mkdir(dir, 0755);
    for (int i = 0; i < n; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/nvidia%d", dir, i);
        unlink(path);
        assert_int_equal(mknod(path, S_IFCHR | 0666, makedev(CG_GPU_MAJOR, i)), 0);
        chmod(path, 0666);
    }
}

/* The job holds GPU 1 of the `declared` the node has (of the 4 device nodes there are):
 * opening its own node reaches the (absent) driver, ENXIO; opening any other, declared
 * or not, is refused by the cgroup, EPERM. */
static void gpu_isolation(const struct cg_layout *l, uint64_t id, int declared)
{
    char dev[400], json[2048];
    make_gpu_nodes(dev, sizeof dev, 4);
    const struct cg_layout *saved = cfg.cg;
    cfg.cg = l;
    cfg.node_gpus = declared;
    snprintf(json, sizeof json,
             "{\"id\": %llu, \"user\": \"nobody\", \"workdir\": \"/tmp\", \"gpus\": [1], "
             "\"command\": [\"sh\", \"-c\","
             " \"for i in 0 1 2 3; do cat %s/nvidia$i 2>&1 | sed 's/.*: //'; done\"]}",
             (unsigned long long)id, dev);
    struct sup_state s;
    run_job(json, &s, NULL, NULL);
    cfg.cg = saved;
    cfg.node_gpus = 0;
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    char buf[512];
    read_text(s.out_path, buf, sizeof buf);
    assert_string_equal(buf, "Operation not permitted\nNo such device or address\n"
                             "Operation not permitted\nOperation not permitted\n");
}

static void test_gpu_isolation_v1(void **st)
{
    (void)st;
    need_cgroups();
    if (layout.mode != CG_V1 || !layout.v1_devices) {
        print_message("# skip: needs the v1 devices controller\n");
        skip();
    }
    gpu_isolation(&layout, 46, 4);
    /* minors past the declared count are denied too (issue 33 #11: deny by default) */
    gpu_isolation(&layout, 57, 2);
}

/* NVML's GPU 1 may be /dev/nvidia2: the rules follow the device minors, not indices. */
static void test_gpu_isolation_minors(void **st)
{
    (void)st;
    need_cgroups();
    if (layout.mode == CG_V1 && !layout.v1_devices) {
        print_message("# skip: no v1 devices controller\n");
        skip();
    }
    char dev[400], json[1024];
    make_gpu_nodes(dev, sizeof dev, 4);
    static const int minors[4] = {3, 2, 1, 0};
    cfg.node_gpus = 4;
    cfg.gpu_minor = minors;
    snprintf(json, sizeof json,
             "{\"id\": 55, \"user\": \"nobody\", \"workdir\": \"/tmp\", \"gpus\": [1], "
             "\"command\": [\"sh\", \"-c\","
             " \"for i in 0 1 2 3; do cat %s/nvidia$i 2>&1 | sed 's/.*: //'; done\"]}",
             dev);
    struct sup_state s;
    run_job(json, &s, NULL, NULL);
    cfg.node_gpus = 0;
    cfg.gpu_minor = NULL;
    char buf[512];
    read_text(s.out_path, buf, sizeof buf);
    assert_string_equal(buf, "Operation not permitted\nOperation not permitted\n"
                             "No such device or address\nOperation not permitted\n");
}

static void test_gpu_isolation_v2(void **st)
{
    (void)st;
    if (layout.mode == CG_V2) { /* a v2 machine: its own hierarchy */
        gpu_isolation(&layout, 47, 4);
        return;
    }
    struct stat sb;
    if (geteuid() != 0 || stat("/sys/fs/cgroup/unified/cgroup.procs", &sb) < 0) {
        print_message("# skip: no v2 tree here (neither the hierarchy in use nor "
                      "/sys/fs/cgroup/unified), or not root\n");
        skip();
    }
    /* a v1 machine with the (controller-less) v2 tree beside it: device programs attach
     * to any v2 group, so the job is checked by both hierarchies and the program decides */
    struct cg_layout v2;
    memset(&v2, 0, sizeof v2);
    v2.mode = CG_V2;
    snprintf(v2.root, sizeof v2.root, "/sys/fs/cgroup");
    snprintf(v2.v2, sizeof v2.v2, "/sys/fs/cgroup/unified");
    v2.v2_kill = true;
    gpu_isolation(&v2, 47, 4);
    char path[512];
    snprintf(path, sizeof path, "/sys/fs/cgroup/unified/docket/%s", node);
    rmdir(path);
    rmdir("/sys/fs/cgroup/unified/docket");
}

/* pids.max: a fork loop stops at the job's limit, the node does not. The job reads its
 * own group's files with shell builtins (no fork left to spare). */
static void test_pids_max(void **st)
{
    (void)st;
    need_cgroups();
    cfg.pids_max = 12;
    char json[1024], g[300];
    struct cg_job cg;
    cg_job_init(&cg, &layout, node, 48);
    snprintf(g, sizeof g, "%s", cg.dir[layout.mode == CG_V2 ? 0 : CG_PIDS]);
    snprintf(
        json, sizeof json,
        "{\"id\": 48, \"user\": \"nobody\", \"workdir\": \"/tmp\", \"command\": [\"sh\", \"-c\","
        " \"(for i in $(seq 1 40); do sleep 2 & done) 2>/dev/null; read m < %s/pids.max; read e < "
        "%s/pids.events;"
        " echo $m $e\"]}",
        g, g);
    struct sup_state s;
    run_job(json, &s, NULL, NULL);
    cfg.pids_max = 0;
    char buf[256];
    read_text(s.out_path, buf, sizeof buf);
    int max = 0, failed = 0;
    if (sscanf(buf, "%d max %d", &max, &failed) != 2 || max != 12 || failed < 1)
        fail_msg("want pids.max 12 and refused forks, the job saw '%s'", buf);
    assert_true(s.reclaim_ok);
}

/* h-node: the class's pids_max in the start command wins over the node's default. */
static void test_pids_max_from_class(void **st)
{
    (void)st;
    need_cgroups();
    cfg.pids_max = 100;
    char json[1024], g[300];
    struct cg_job cg;
    cg_job_init(&cg, &layout, node, 149);
    snprintf(g, sizeof g, "%s", cg.dir[layout.mode == CG_V2 ? 0 : CG_PIDS]);
    snprintf(json, sizeof json,
             "{\"id\": 149, \"user\": \"nobody\", \"workdir\": \"/tmp\","
             " \"pids_max\": 9, \"command\": [\"sh\", \"-c\", \"read m < %s/pids.max; echo $m\"]}",
             g);
    struct sup_state s;
    run_job(json, &s, NULL, NULL);
    cfg.pids_max = 0;
    char buf[256];
    read_text(s.out_path, buf, sizeof buf);
    if (atoi(buf) != 9)
        fail_msg("want pids.max 9 (the class's), the job saw '%s'", buf);
    assert_true(s.reclaim_ok);
}

/* The job's oom_score_adj is positive (it goes before the agent, which is -1000). */
static void test_oom_score_adj(void **st)
{
    (void)st;
    need_cgroups();
    cfg.job_oom_score_adj = 500;
    struct sup_state s;
    run_job(
        "{\"id\": 49, \"user\": \"nobody\", \"workdir\": \"/tmp\", \"command\": [\"sh\", \"-c\","
        " \"cat /proc/self/oom_score_adj; echo -1000 > /proc/self/oom_score_adj || echo kept\"]}",
        &s, NULL, NULL);
    cfg.job_oom_score_adj = 0;
    char buf[256];
    read_text(s.out_path, buf, sizeof buf);
    assert_string_equal(buf, "500\nkept\n");
}

/* A job that names no memory gets the default limit. */
static void test_default_memory_limit(void **st)
{
    (void)st;
    need_cgroups();
    cfg.default_mem_mb = 48;
    struct sup_state s;
    run_job(
        "{\"id\": 50, \"user\": \"nobody\", \"workdir\": \"/tmp\", \"command\": [\"sh\", \"-c\","
        " \"head -c 300000000 /dev/zero | tail -n 1 >/dev/null\"]}",
        &s, NULL, NULL);
    cfg.default_mem_mb = 0;
    assert_int_equal(s.exit_kind, AGENT_EXIT_OOM);
}

/* Fencing: a lease that runs out stops the job (its signal, a grace bounded by the
 * lease's, kill); a lease renewed in time does not. */
static void write_lease_from(int64_t deadline, int64_t grace, int64_t contact, int64_t margin)
{
    int fd = -1;
    struct sup_lease l = {deadline, grace, contact, margin}, got;
    assert_int_equal(sup_lease_write(state_dir, &fd, &l), 0);
    close(fd);
    assert_int_equal(sup_lease_read(state_dir, &got), 0);
    assert_int_equal(got.deadline_ms, deadline);
    assert_int_equal(got.grace_ms, grace);
    assert_int_equal(got.contact_ms, contact);
    assert_int_equal(got.margin_ms, margin);
}

static void write_lease(int64_t deadline, int64_t grace)
{
    write_lease_from(deadline, grace, 0, 0);
}

static void renew_during(uint64_t id, int sup)
{
    (void)id;
    (void)sup;
    write_lease(clock_mono_ms() + 60000, 200);
}

static void test_fence(void **st)
{
    (void)st;
    need_cgroups();
    char path[400], lease[400];
    snprintf(path, sizeof path, "%s/fence.log", state_dir);
    snprintf(lease, sizeof lease, "%s/lease", state_dir);
    /* the job traps TERM and would live on for 100 s: the fence's grace is 300 ms */
    char json[1024];
    snprintf(json, sizeof json,
             "{\"id\": 51, \"grace_ms\": 60000, \"command\": [\"sh\", \"-c\","
             " \"trap 'echo term >> %s' TERM; while :; do sleep 0.05; done\"]}",
             path);
    write_lease(clock_mono_ms() + 400, 300);
    int64_t ms = 0;
    struct sup_state s;
    run_job(json, &s, &ms, NULL);
    char buf[64];
    read_text(path, buf, sizeof buf);
    assert_string_equal(buf, "term\n");
    assert_int_equal(s.exit_kind, AGENT_EXIT_LOST); /* lost by the node, not ended */
    assert_int_equal(s.exit_code, SIGKILL);
    assert_non_null(strstr(s.message, "fenced"));
    if (ms < 600 || ms > 3000)
        fail_msg("fenced job ended after %lld ms (lease 400 ms, grace 300 ms)", (long long)ms);
    /* renewed in time: the job ends on its own */
    write_lease(clock_mono_ms() + 500, 200);
    run_job("{\"id\": 52, \"command\": [\"sh\", \"-c\", \"sleep 1.2; exit 6\"]}", &s, NULL,
            renew_during);
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    assert_int_equal(s.exit_code, 6);
    assert_null(strstr(s.message, "fenced"));
    unlink(lease);
}

/* Leases (docs/agent.md "Fencing and leases"): a job's own lease, counted from the last contact,
 * keeps it running past the node's deadline; a job without one is fenced at the node's. */
static void test_job_lease(void **st)
{
    (void)st;
    struct sup_lease l = {.deadline_ms = 1000, .grace_ms = 50, .contact_ms = 600, .margin_ms = 100};
    assert_int_equal(sup_lease_deadline(&l, 0), 1000);      /* the node timeout's */
    assert_int_equal(sup_lease_deadline(&l, 300), 1000);    /* never before the node's */
    assert_int_equal(sup_lease_deadline(&l, 60000), 60500); /* contact + lease - margin */
    l.contact_ms = 0; /* an older agent's file: no contact time, the node's deadline */
    assert_int_equal(sup_lease_deadline(&l, 60000), 1000);
    need_cgroups();
    /* the node's deadline passes while it runs; its 20 s lease from now does not */
    int64_t now = clock_mono_ms();
    write_lease_from(now + 200, 100, now, 100);
    struct sup_state s;
    run_job("{\"id\": 53, \"lease_ms\": 20000, \"command\": [\"sh\", \"-c\", \"sleep 1; exit 7\"]}",
            &s, NULL, NULL);
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    assert_int_equal(s.exit_code, 7);
    assert_null(strstr(s.message, "fenced"));
    char lease[400];
    snprintf(lease, sizeof lease, "%s/lease", state_dir);
    unlink(lease);
}

enum { LEASE_TEST_LINE1 = 4 * 21 };

/* A torn lease (two halves that differ) is read as "again", never as a deadline. */
static void test_lease_torn(void **st)
{
    (void)st;
    char path[400];
    snprintf(path, sizeof path, "%s/lease", state_dir);
    char text[128];
    snprintf(text, sizeof text, "%020lld %020lld %020lld %020lld\n", 5LL, 1LL, 5LL, 1LL);
    make_file(path, text, 0644);
    struct sup_lease l;
    assert_int_equal(sup_lease_read(state_dir, &l), 0); /* whole, as older agents wrote it */
    assert_int_equal(l.deadline_ms, 5);
    assert_int_equal(l.grace_ms, 1);
    assert_int_equal(l.contact_ms, 0);
    snprintf(text, sizeof text, "%020lld %020lld %020lld %020lld\n", 5LL, 1LL, 9LL, 1LL);
    make_file(path, text, 0644); /* the first half of a rewrite from 9 to 5 */
    assert_int_equal(sup_lease_read(state_dir, &l), -EAGAIN);
    char two[256];
    snprintf(two, sizeof two,
             "%020lld %020lld %020lld %020lld\n%020lld %020lld %020lld %020lld %020lld %020lld\n",
             5LL, 1LL, 5LL, 1LL, 3LL, 2LL, 5LL, 3LL, 2LL, 5LL);
    make_file(path, two, 0644);
    assert_int_equal(sup_lease_read(state_dir, &l), 0); /* with the contact line */
    assert_int_equal(l.contact_ms, 3);
    assert_int_equal(l.margin_ms, 2);
    two[LEASE_TEST_LINE1 + 2 * 21 + 19] = '9'; /* the contact line names another deadline */
    make_file(path, two, 0644);
    assert_int_equal(sup_lease_read(state_dir, &l), -EAGAIN);
    unlink(path);
    assert_int_equal(sup_lease_read(state_dir, &l), 0);
    assert_int_equal(l.deadline_ms, 0);
}

/* A scratch dir that cannot be removed (a mount the job left in it) is quarantined:
 * moved whole into SCRATCH_ROOT/.docket-quarantine (root's, 0700) and reported, and the
 * reclaim is still good, so the node stays in service (issue 33 #2). */
static void test_scratch_failure_quarantined(void **st)
{
    (void)st;
    need_cgroups();
    char src[300], json[1024], pattern[600], q[400], dir[400];
    snprintf(src, sizeof src, "%s/mnt-src2", state_dir);
    mkdir(src, 0755);
    snprintf(json, sizeof json,
             "{\"id\": 53, \"command\": [\"sh\", \"-c\","
             " \"mkdir $DOCKET_SCRATCH/pinned && mount --bind %s $DOCKET_SCRATCH/pinned\"]}",
             src);
    struct sup_state s;
    run_job(json, &s, NULL, NULL);
    snprintf(q, sizeof q, "%s/.docket-quarantine", scratch);
    snprintf(pattern, sizeof pattern, "%s/job_53.*/pinned", q);
    glob_t g;
    int found = glob(pattern, 0, NULL, &g);
    int um = found == 0 ? umount2(g.gl_pathv[0], MNT_DETACH) : -1;
    if (found == 0)
        globfree(&g);
    struct stat sb;
    int qrc = stat(q, &sb);
    sup_remove_tree(q);
    snprintf(dir, sizeof dir, "%s/job_53", scratch);
    assert_int_equal(found, 0);
    assert_int_equal(um, 0);
    assert_int_equal(s.exit_code, 0);
    assert_true(s.reclaim_ok);
    assert_non_null(strstr(s.quarantined, "quarantined as"));
    assert_int_equal(qrc, 0);
    assert_int_equal(sb.st_mode & 07777, 0700);
    assert_int_equal(sb.st_uid, geteuid());
    assert_int_equal(access(dir, F_OK), -1);
}

/* A quarantine directory someone else made (or a link put there) is not trusted: the
 * scratch that cannot be removed stays a reclaim failure, and says why. */
static void test_scratch_quarantine_not_ours(void **st)
{
    (void)st;
    char root[400], path[500], mnt[600], msg[256], q[500];
    snprintf(root, sizeof root, "%s/qroot", state_dir);
    mkdir(root, 0711);
    snprintf(q, sizeof q, "%s/.docket-quarantine", root);
    mkdir(q, 0777);
    assert_int_equal(chown(q, 65534, 65534), 0);
    snprintf(path, sizeof path, "%s/job_54", root);
    mkdir(path, 0700);
    snprintf(mnt, sizeof mnt, "%s/pinned", path);
    mkdir(mnt, 0700);
    if (mount("none", mnt, "tmpfs", 0, "size=64k") < 0) {
        print_message("# skip: cannot mount a tmpfs here (%s)\n", strerror(errno));
        sup_remove_tree(root);
        skip();
    }
    int rc = sup_scratch_remove(root, path, 54, msg, sizeof msg);
    umount2(mnt, MNT_DETACH);
    struct stat sb;
    int still = stat(path, &sb);
    sup_remove_tree(root);
    assert_true(rc < 0);
    assert_int_equal(still, 0);
    assert_non_null(strstr(msg, "cannot remove scratch directory"));
    assert_non_null(strstr(msg, "nor quarantine it"));
    /* removable: removed, nothing quarantined */
    mkdir(root, 0711);
    mkdir(path, 0700);
    assert_int_equal(sup_scratch_remove(root, path, 55, msg, sizeof msg), 0);
    assert_int_equal(stat(path, &sb), -1);
    sup_remove_tree(root);
}

/* rm -rf never follows a symlink: the link goes, what it points at stays. */
static void test_remove_tree_no_follow(void **st)
{
    (void)st;
    char top[400], keep[400], path[700];
    snprintf(top, sizeof top, "%s/rmtree", state_dir);
    snprintf(keep, sizeof keep, "%s/keepme", state_dir);
    mkdir(top, 0755);
    mkdir(keep, 0755);
    snprintf(path, sizeof path, "%s/precious", keep);
    make_file(path, "x", 0644);
    snprintf(path, sizeof path, "%s/a", top);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/a/link", top);
    assert_int_equal(symlink(keep, path), 0);
    snprintf(path, sizeof path, "%s/a/file", top);
    make_file(path, "y", 0644);
    assert_int_equal(sup_remove_tree(top), 0);
    struct stat sb;
    assert_int_equal(stat(top, &sb), -1);
    snprintf(path, sizeof path, "%s/precious", keep);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sup_remove_tree("/nonexistent/docket-x"), 0);
}

/* A tree deeper than any walk would hold open (a job's `mkdir d && cd d` in a loop, with a
 * file at every level) is removed whole: cleanup once gave up below depth 256 and the
 * node went out of service. */
static void test_remove_tree_of_any_depth(void **st)
{
    (void)st;
    char top[400];
    snprintf(top, sizeof top, "%s/deep", state_dir);
    assert_int_equal(mkdir(top, 0755), 0);
    int fd = open(top, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    for (int i = 0; i < 3000; i++) {
        assert_int_equal(mkdirat(fd, "d", 0700), 0);
        int f = openat(fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(f >= 0);
        close(f);
        int next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
        assert_true(next >= 0);
        close(fd);
        fd = next;
    }
    /* the deepest level holds a directory nobody may read (mode 0), empty: it goes too */
    assert_int_equal(mkdirat(fd, "locked", 0), 0);
    close(fd);
    assert_int_equal(sup_remove_tree(top), 0);
    struct stat sb;
    assert_int_equal(stat(top, &sb), -1);
    assert_int_equal(errno, ENOENT);
}

/* A supervisor is woken only when its pid still is that process (start time checked). */
static volatile sig_atomic_t got_usr1;
static void on_usr1(int sig)
{
    (void)sig;
    got_usr1 = 1;
}

static void test_command_checks_start_time(void **st)
{
    (void)st;
    char dir[500];
    sup_job_dir(&cfg, 54, dir, sizeof dir);
    char jobs[400];
    snprintf(jobs, sizeof jobs, "%s/jobs", state_dir);
    mkdir(jobs, 0711);
    mkdir(dir, 0711);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        signal(SIGUSR1, on_usr1);
        assert_int_equal(write(p[1], "r", 1), 1);
        for (int i = 0; i < 300 && !got_usr1; i++) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
        _exit(got_usr1 ? 7 : 0);
    }
    close(p[1]);
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    int64_t start = sup_proc_starttime(pid);
    assert_true(start > 0);
    /* a stale start time (the pid was reused by another process): no signal */
    assert_int_equal(sup_command(&cfg, 54, pid, start + 1, 5, "kill"), -ESRCH);
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    assert_int_equal(kill(pid, 0), 0); /* still waiting: it was not woken */
    assert_int_equal(sup_command(&cfg, 54, pid, start, 6, "kill"), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 7);
}

/* A Slurm-style job's rank > 0: the supervisor opens the step host's socket on a port the
 * kernel picks, records the port in the job's state and hands the socket to the step host
 * (srun --docket-step-host, here a script in the CLI's place) as descriptor 3, listening. */
static int step_port_seen;

static void connect_step_port(uint64_t id, int sup_pid)
{
    (void)sup_pid;
    char dir[500];
    struct sup_state s;
    sup_job_dir(&cfg, id, dir, sizeof dir);
    assert_int_equal(sup_state_read(dir, &s), 0);
    step_port_seen = s.step_port;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s.step_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    close(fd);
}

static void write_fake_cli(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

static void test_step_host_socket(void **st)
{
    (void)st;
    char cli[400];
    snprintf(cli, sizeof cli, "%s/fake-srun", state_dir);
    /* the host's view: its arguments, what descriptor 3 is, and it waits to be reached */
    write_fake_cli(cli, "echo \"$1 $(readlink /proc/self/fd/3 | cut -c1-7)\"; sleep 1");
    cfg.slurm_cli = cli;
    struct sup_state s;
    step_port_seen = 0;
    run_job("{\"id\": 61, \"command\": [\"false\"], \"node_rank\": 1, \"world_size\": 2,"
            " \"slurm\": {\"step_key\": \"k\", \"step_hosts\": [\"127.0.0.1\", \"127.0.0.1\"]}}",
            &s, NULL, connect_step_port);
    cfg.slurm_cli = NULL;
    assert_int_equal(s.exit_kind, AGENT_EXIT_CODE);
    assert_int_equal(s.exit_code, 0);
    assert_true(s.step_port > 0);
    assert_int_equal(s.step_port, step_port_seen);
    char buf[256];
    read_text(s.out_path, buf, sizeof buf);
    assert_string_equal(buf, "--docket-step-host socket:\n");
}

/* Rank 0: a step_host command becomes .slurm-bin/step-host.RANK, which srun reads. */
static void send_step_host(uint64_t id, int sup_pid)
{
    assert_int_equal(sup_command(&cfg, id, sup_pid, 0, 2, "step_host 1 127.0.0.1:4242"), 0);
    /* a line that is not HOST:PORT of a rank > 0 is ignored */
    assert_int_equal(sup_command(&cfg, id, sup_pid, 0, 3, "step_host 0 127.0.0.1:1"), 0);
}

static void test_step_host_recorded(void **st)
{
    (void)st;
    char cli[400];
    snprintf(cli, sizeof cli, "%s/fake-srun", state_dir);
    write_fake_cli(cli, "exit 0");
    cfg.slurm_cli = cli;
    struct sup_state s;
    run_job("{\"id\": 62, \"node_rank\": 0, \"world_size\": 2, \"slurm\": {\"step_key\": \"k\","
            " \"step_hosts\": [\"127.0.0.1\", \"127.0.0.1\"]}, \"command\": [\"sh\", \"-c\","
            " \"b=$DOCKET_SCRATCH/.slurm-bin; for i in $(seq 200); do [ -f $b/step-host.1 ] &&"
            " break; sleep 0.02; done; sleep 0.2; cat $b/step-host.1; ls -A $b | grep -c"
            " step-host; stat -c %U $b/step-host.1\"]}",
            &s, NULL, send_step_host);
    cfg.slurm_cli = NULL;
    assert_int_equal(s.step_port, 0); /* rank 0 listens for nothing */
    char buf[256];
    read_text(s.out_path, buf, sizeof buf);
    assert_string_equal(buf, "127.0.0.1:4242\n1\nroot\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve_output),
        cmocka_unit_test(test_starttime_guard),
        cmocka_unit_test(test_exit_code_and_output),
        cmocka_unit_test(test_tty_session),
        cmocka_unit_test(test_tty_flood_before_exit),
        cmocka_unit_test(test_step_host_socket),
        cmocka_unit_test(test_step_host_recorded),
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
        cmocka_unit_test(test_outputs_refused),
        cmocka_unit_test(test_default_output_capped),
        cmocka_unit_test(test_gpu_isolation_v1),
        cmocka_unit_test(test_gpu_isolation_v2),
        cmocka_unit_test(test_gpu_isolation_minors),
        cmocka_unit_test(test_pids_max),
        cmocka_unit_test(test_pids_max_from_class),
        cmocka_unit_test(test_oom_score_adj),
        cmocka_unit_test(test_default_memory_limit),
        cmocka_unit_test(test_fence),
        cmocka_unit_test(test_job_lease),
        cmocka_unit_test(test_lease_torn),
        cmocka_unit_test(test_scratch_failure_quarantined),
        cmocka_unit_test(test_scratch_quarantine_not_ours),
        cmocka_unit_test(test_remove_tree_no_follow),
        cmocka_unit_test(test_remove_tree_of_any_depth),
        cmocka_unit_test(test_command_checks_start_time),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
