/*
 * shell.c - interactive sessions (docs/interactive.md): `docket shell` submits a job of
 * class `interactive` that runs on a terminal (the spec's "tty"), waits for it to start,
 * then attaches this terminal to it; `docket attach JOB` attaches again after a dropped
 * connection; `salloc` and `srun --pty` (outside an allocation) come here with Slurm's
 * options. The terminal stream is an upgraded connection to docketd
 * (GET /v1/jobs/ID/tty, `Upgrade: docket-tty`, client.h) carrying the frames of
 * protocol/ttyframe.h. The local terminal is put in raw mode for the session (so Ctrl-C
 * travels as a byte, for the remote line discipline to turn into SIGINT) and restored on
 * every way out.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/slurm.h"
#include "cli/spec.h"
#include "protocol/ttyframe.h"
#include "util/clock.h"

enum { EXIT_LOST = 255, ATTACH_TRIES = 50 };

/* The default command: the user's login shell on the node (its passwd entry gives SHELL) */
static const char *const login_shell[] = {"/bin/sh", "-c", "exec \"${SHELL:-/bin/sh}\" -l"};

const char cmd_shell_usage[] =
    "usage: docket shell [FLAGS] [-- COMMAND [ARGS...]]\n"
    "\n"
    "Allocate resources like `docket submit` (class interactive unless --class says\n"
    "otherwise), wait for them, and attach this terminal to COMMAND on the first node\n"
    "(default: your login shell there). Its exit status is docket's. A dropped\n"
    "connection leaves the session running: `docket attach JOB` comes back to it.\n"
    "A session with no input and no output for the class's session_idle time (1h by\n"
    "default) is warned, then ended. See docs/interactive.md.\n"
    "\n"
    "  -p, -A, --project NAME project to charge (default: your default project)\n"
    "  -g, --gpus N|NxTYPE    GPUs; -c, --cpus N; -m, --mem SIZE; -N, --nodes N\n"
    "      --time DURATION    time limit (default: the class's)\n"
    "      --tier NAME, --class NAME, --gpu-type TYPE, --select K=V, --env K=V,\n"
    "      --secret NAME, --label K=V, -J NAME: as for docket submit\n"
    "      --workdir DIR      working directory (default: your session directory on the\n"
    "                         node, kept between sessions of the same project)\n";

const char cmd_attach_usage[] = "usage: docket attach JOB\n"
                                "\n"
                                "Attach this terminal to the running interactive session JOB\n"
                                "(started by docket shell, salloc or srun --pty) again; the\n"
                                "session's recent output is shown first. Only the job's owner\n"
                                "may attach.\n";

const char cmd_salloc_usage[] =
    "usage: salloc [SBATCH OPTIONS] [COMMAND [ARGS...]]\n"
    "\n"
    "Slurm's salloc: an interactive session with sbatch's options (-N, -n, -c, --gres,\n"
    "--mem, -t, -p, -A ...), COMMAND (default: your login shell) on the allocation's\n"
    "first node with this terminal. Inside it, srun runs steps across the allocation.\n"
    "The same as docket shell (docs/interactive.md, docs/slurm.md).\n";

/* ------------------------------------------------------------------------------------ */
/* The local terminal                                                                    */

static struct termios saved_tio;
static bool raw_on;
static int sig_pipe[2] = {-1, -1};
static volatile sig_atomic_t got_stop, got_int;

static void restore_tty(void)
{
    if (raw_on)
        tcsetattr(0, TCSADRAIN, &saved_tio);
    raw_on = false;
}

static void on_signal(int sig)
{
    int e = errno;
    char b = sig == SIGWINCH ? 'W' : 'T';
    if (sig == SIGINT)
        got_int = 1;
    else if (sig != SIGWINCH)
        got_stop = 1;
    if (sig_pipe[1] >= 0 && write(sig_pipe[1], &b, 1) < 0)
        (void)0;
    errno = e;
}

static void catch_signals(void)
{
    if (sig_pipe[0] < 0 && pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        sig_pipe[0] = sig_pipe[1] = -1;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGWINCH, SIGTERM, SIGHUP, SIGINT, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    atexit(restore_tty);
}

static void make_raw(void)
{
    if (raw_on || !isatty(0) || tcgetattr(0, &saved_tio) < 0)
        return;
    struct termios t = saved_tio;
    cfmakeraw(&t);
    if (tcsetattr(0, TCSADRAIN, &t) == 0)
        raw_on = true;
}

static void window(unsigned *rows, unsigned *cols)
{
    struct winsize ws = {0};
    *rows = 24;
    *cols = 80;
    if ((ioctl(0, TIOCGWINSZ, &ws) == 0 || ioctl(1, TIOCGWINSZ, &ws) == 0) && ws.ws_row &&
        ws.ws_col) {
        *rows = ws.ws_row;
        *cols = ws.ws_col;
    }
}

static void write_all(int fd, const void *p, size_t n)
{
    const char *q = p;
    while (n > 0) {
        ssize_t w = write(fd, q, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        q += w;
        n -= (size_t)w;
    }
}

/* A line for the person: on a raw terminal it needs its own carriage returns. */
static void say(const char *open, const char *text, const char *close)
{
    char line[TTY_FRAME_MAX + 64];
    int n = snprintf(line, sizeof line, "\r\n%s%s%s\r\n", open, text, close);
    if (n > 0)
        write_all(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* ------------------------------------------------------------------------------------ */
/* The session                                                                           */

struct session {
    struct client_stream *s;
    uint8_t in[2 * (TTY_FRAME_HEAD + TTY_FRAME_MAX)];
    size_t inlen;
    bool stdin_done, exited;
    int exit_status;
};

static int send_frame(struct session *ss, int type, const void *p, size_t n)
{
    uint8_t f[TTY_FRAME_HEAD + TTY_FRAME_MAX];
    size_t len = tty_frame_put(f, sizeof f, type, p, n);
    return len ? client_stream_send(ss->s, f, len) : -EINVAL;
}

static int send_size(struct session *ss, int type)
{
    unsigned rows, cols;
    uint8_t f[8];
    window(&rows, &cols);
    size_t len = tty_frame_put_size(f, sizeof f, type, rows, cols);
    return client_stream_send(ss->s, f, len);
}

/* Frames from the session; -1 when the stream is done (ended or broken). */
static int take_frames(struct session *ss)
{
    size_t at = 0;
    for (;;) {
        struct tty_frame f;
        int n = tty_frame_parse(ss->in + at, ss->inlen - at, &f);
        if (n < 0) {
            say("docket: ", "the session sent something that is not a frame", "");
            return -1;
        }
        if (n == 0)
            break;
        at += (size_t)n;
        if (f.type == TTY_DATA)
            write_all(1, f.payload, f.len);
        else if (f.type == TTY_NOTICE) {
            char text[TTY_FRAME_MAX + 1];
            memcpy(text, f.payload, f.len);
            text[f.len] = '\0';
            for (char *p = text; *p; p++)
                if ((unsigned char)*p < 0x20)
                    *p = ' '; /* a notice is one line of text, never terminal control */
            say("[", text, "]");
        } else if (f.type == TTY_EXIT) {
            ss->exited = true;
            ss->exit_status = f.exit_kind == TTY_EXIT_SIGNAL ? 128 + f.exit_value : f.exit_value;
        }
    }
    memmove(ss->in, ss->in + at, ss->inlen - at);
    ss->inlen -= at;
    return ss->exited ? -1 : 0;
}

static int read_stream(struct session *ss)
{
    for (;;) {
        ssize_t r = client_stream_recv(ss->s, ss->in + ss->inlen, sizeof ss->in - ss->inlen);
        if (r == -EAGAIN)
            return 0;
        if (r <= 0)
            return -1;
        ss->inlen += (size_t)r;
        if (take_frames(ss) < 0)
            return -1;
    }
}

static int read_stdin(struct session *ss)
{
    char buf[4096];
    ssize_t r = read(0, buf, sizeof buf);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (r <= 0 && raw_on) { /* our terminal hung up: detach, the session goes on */
        got_stop = 1;
        return 0;
    }
    if (r <= 0) { /* no terminal, and its input ended: an end-of-file for the session */
        ss->stdin_done = true;
        return send_frame(ss, TTY_DATA, "\004", 1);
    }
    return send_frame(ss, TTY_DATA, buf, (size_t)r);
}

static void drain_signals(struct session *ss)
{
    char b[16];
    ssize_t n;
    while ((n = read(sig_pipe[0], b, sizeof b)) > 0)
        for (ssize_t i = 0; i < n; i++)
            if (b[i] == 'W')
                send_size(ss, TTY_WINDOW);
    if (got_int) { /* not raw (no terminal): Ctrl-C is passed on as a signal */
        got_int = 0;
        uint8_t sig = SIGINT;
        send_frame(ss, TTY_SIGNAL, &sig, 1);
    }
}

/* Runs the attached session until it ends or the link breaks. */
static void pump(struct session *ss)
{
    int fd = client_stream_fd(ss->s);
    while (!got_stop) {
        struct pollfd p[3] = {
            {fd, POLLIN, 0}, {sig_pipe[0], POLLIN, 0}, {ss->stdin_done ? -1 : 0, POLLIN, 0}};
        int rc = poll(p, 3, client_stream_pending(ss->s) ? 0 : -1);
        if (rc < 0 && errno != EINTR)
            return;
        if (read_stream(ss) < 0)
            return;
        if (p[1].revents)
            drain_signals(ss);
        if (rc > 0 && p[2].revents && read_stdin(ss) < 0)
            return;
    }
}

/* Opens the terminal stream of job `id`: 0, or an exit status after a message.
 * `starting`: the job has just started, its node may not have offered it yet. */
static int open_stream(struct cli *c, int64_t id, struct session *ss)
{
    char path[64], err[1024];
    snprintf(path, sizeof path, "/v1/jobs/%lld/tty", (long long)id);
    if (!c->client && !(c->client = client_create(&c->cfg, err, sizeof err)))
        return cli_fail(c, "%s", err);
    for (int i = 0;; i++) {
        struct client_reply r;
        int rc = client_upgrade(c->client, path, "docket-tty", 30000, &ss->s, &r, err, sizeof err);
        if (rc < 0)
            return cli_fail(c, "%s", err);
        if (ss->s) {
            client_reply_release(&r);
            return 0;
        }
        /* the node offers the terminal a moment after the start */
        if (r.status == 503 && i < ATTACH_TRIES) {
            client_reply_release(&r);
            struct timespec ts = {0, 200 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        rc = cli_report_error(c, &r);
        client_reply_release(&r);
        return rc;
    }
}

/* The job's end as an exit status, when the stream broke without saying it. */
static int job_end_status(struct cli *c, int64_t id, bool *ended)
{
    char path[64];
    json_t *reply = NULL;
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    *ended = false;
    if (cli_call_quiet(c, "GET", path, &reply) != 0)
        return EXIT_LOST;
    json_t *job = json_object_get(reply, "job");
    const char *state = jstr(job, "state");
    int status = EXIT_LOST;
    if (strcmp(state, "RUNNING") && strcmp(state, "STOPPING") && strcmp(state, "PENDING") &&
        strcmp(state, "HELD") && strcmp(state, "STARTING")) {
        json_t *x = json_object_get(job, "exit");
        *ended = true;
        status = !strcmp(jstr(x, "kind"), "signal") ? 128 + (int)jint(x, "code", 0)
                 : !strcmp(jstr(x, "kind"), "code") ? (int)jint(x, "code", 0)
                                                    : EXIT_FAIL;
    }
    json_decref(reply);
    return status;
}

/* `node`: where the session runs, said once the terminal is raw (so nothing typed from
 * then on is echoed here or taken for a signal of ours); NULL says nothing. */
static int attach(struct cli *c, int64_t id, const char *node)
{
    struct session *ss = calloc(1, sizeof *ss);
    if (!ss)
        return cli_fail(c, "out of memory");
    catch_signals();
    make_raw();
    if (node && isatty(2))
        fprintf(stderr, "\r\033[Kdocket: session %lld on %s\r\n", (long long)id, node);
    int rc = open_stream(c, id, ss);
    if (rc == 0 && send_size(ss, TTY_HELLO) < 0) {
        client_stream_close(ss->s);
        restore_tty();
        rc = cli_fail(c, "the connection to job %lld's terminal broke", (long long)id);
    }
    if (rc != 0) {
        restore_tty();
        free(ss);
        return rc;
    }
    pump(ss);
    restore_tty();
    client_stream_close(ss->s);
    int status = ss->exit_status;
    bool exited = ss->exited;
    free(ss);
    if (exited)
        return status;
    bool ended;
    status = job_end_status(c, id, &ended);
    if (ended)
        return status;
    fprintf(stderr,
            "\ndocket: %s job %lld's terminal; the session goes on: `docket attach %lld` "
            "comes back to it\n",
            got_stop ? "detached from" : "lost the connection to", (long long)id, (long long)id);
    return EXIT_LOST;
}

/* ------------------------------------------------------------------------------------ */
/* Submitting and waiting                                                                */

static void cancel_job(struct cli *c, int64_t id)
{
    char path[64];
    json_t *reply = NULL;
    snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", (long long)id);
    if (cli_call_quiet(c, "POST", path, &reply) == 0)
        json_decref(reply);
}

/* Until job `id` runs (its first node into node[len]): 0, or an exit status after a
 * message. */
static int wait_running(struct cli *c, int64_t id, char *node, size_t len)
{
    char path[64], last[128] = "";
    bool tty = isatty(2);
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    for (int turn = 0;; turn++) {
        json_t *reply = NULL;
        if (got_int || got_stop) {
            cancel_job(c, id);
            fprintf(stderr, "%sdocket: job %lld cancelled while it waited\n", last[0] ? "\n" : "",
                    (long long)id);
            return 128 + SIGINT;
        }
        if (cli_call(c, "GET", path, NULL, &reply) != 0)
            return EXIT_FAIL;
        json_t *job = json_object_get(reply, "job");
        char state[32], reason[96];
        snprintf(state, sizeof state, "%s", jstr(job, "state"));
        snprintf(reason, sizeof reason, "%s", jstr(job, "reason"));
        snprintf(node, len, "%s",
                 jstr(json_array_get(json_object_get(job, "allocation"), 0), "node"));
        json_decref(reply);
        if (!strcmp(state, "RUNNING"))
            return 0;
        if (strcmp(state, "PENDING") && strcmp(state, "HELD") && strcmp(state, "STARTING")) {
            fprintf(stderr, "%sdocket: job %lld is %s; it did not start\n", last[0] ? "\n" : "",
                    (long long)id, state);
            return EXIT_FAIL;
        }
        char now[128];
        snprintf(now, sizeof now, "%s%s%s", state, reason[0] ? ": " : "", reason);
        if (tty && strcmp(now, last) && strcmp(state, "STARTING")) {
            fprintf(stderr, "\rdocket: job %lld waiting for resources (%s)...\033[K", (long long)id,
                    now);
            snprintf(last, sizeof last, "%s", now);
        }
        struct timespec ts = {0, (turn < 100 ? 10 : 500) * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Submit `spec` (made a session here) and attach to it; the process's exit status. */
int shell_run(struct cli *c, json_t *spec)
{
    json_t *reply = NULL;
    json_object_set_new(spec, "tty", json_true());
    if (!json_object_get(spec, "class"))
        json_object_set_new(spec, "class", json_string("interactive"));
    if (!json_object_get(spec, "name"))
        json_object_set_new(spec, "name", json_string("shell"));
    if (!json_object_get(spec, "command") && !json_object_get(spec, "script")) {
        json_t *cmd = json_array();
        for (size_t i = 0; i < sizeof login_shell / sizeof login_shell[0]; i++)
            json_array_append_new(cmd, json_string(login_shell[i]));
        json_object_set_new(spec, "command", cmd);
    }
    const char *term = getenv("TERM");
    json_t *env = json_object_get(spec, "env");
    if (!env) {
        env = json_object();
        json_object_set_new(spec, "env", env);
    }
    if (term && *term && strlen(term) < 64 && !json_object_get(env, "TERM"))
        json_object_set_new(env, "TERM", json_string(term));
    catch_signals();
    int rc = cli_submit_call(c, spec, &reply);
    if (rc != 0)
        return rc;
    int64_t id = jint(json_object_get(reply, "job"), "id", 0);
    json_decref(reply);
    if (id <= 0)
        return cli_fail(c, "docketd did not say which job it made");
    char node[80] = "";
    if ((rc = wait_running(c, id, node, sizeof node)) != 0)
        return rc;
    /* the id `docket attach` needs after a dropped connection, and where it runs */
    return attach(c, id, node);
}

static void warn_cb(void *arg, const char *msg)
{
    cli_warn(arg, "%s", msg);
}

int cmd_shell(struct cli *c, int argc, char **argv)
{
    struct opt_iter it;
    const char *v;
    char err[512];
    int id;
    json_t *spec = json_object();
    opt_iter_init(&it, argc, argv, 1);
    while ((id = opt_next(&it, spec_submit_opts, &v, err, sizeof err)) != OPT_DONE) {
        int rc = 0;
        switch (id) {
        case SO_HELP:
            fputs(c->usage, c->out);
            json_decref(spec);
            return EXIT_OK;
        case OPT_ERROR:
            rc = cli_usage_error(c, "%s", err);
            break;
        case OPT_POSITIONAL:
            rc = cli_usage_error(c, "the command comes after --: docket shell -- %s", v);
            break;
        case SO_ARRAY:
        case SO_WRAP:
        case SO_PARSABLE:
        case SO_DRY_RUN:
        case SO_JSON:
        case SO_HOLD:
        case SO_OUTPUT:
        case SO_ERROR:
            rc = cli_usage_error(c, "this flag has no meaning for an interactive session");
            break;
        default:
            if (spec_apply(spec, id, v, err, sizeof err))
                rc = cli_usage_error(c, "%s", err);
        }
        if (rc) {
            json_decref(spec);
            return rc;
        }
        if (it.dashdash)
            break;
    }
    if (it.dashdash && it.index < argc) {
        json_t *cmd = json_array();
        for (int i = it.index; i < argc; i++)
            json_array_append_new(cmd, json_string(argv[i]));
        json_object_set_new(spec, "command", cmd);
    }
    if (spec_finish(spec, err, sizeof err) < 0) {
        json_decref(spec);
        return cli_usage_error(c, "%s", err);
    }
    int rc = shell_run(c, spec);
    json_decref(spec);
    return rc;
}

int cmd_attach(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    int64_t id;
    int rc = cli_parse_args(c, argc, argv, NULL, 1, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    if (a.npos != 1)
        return cli_usage_error(c, "give the job to attach to: docket attach JOB");
    if ((rc = cli_job_id(c, a.pos[0], &id)) != 0)
        return rc;
    return attach(c, id, NULL);
}

/* salloc's (and srun --pty's) command line: sbatch's options, then the command. */
int shell_slurm(struct cli *c, char **words, int n)
{
    json_t *spec = json_object();
    struct spec_env env = {c->cfg.partition_map, warn_cb, c, true};
    char err[512];
    int stop = n;
    if (spec_sbatch_args(spec, words, n, &env, &stop, err, sizeof err) < 0 ||
        spec_slurm_finish(spec, err, sizeof err) < 0 || spec_finish(spec, err, sizeof err) < 0) {
        json_decref(spec);
        return cli_usage_error(c, "%s", err);
    }
    if (stop < n) {
        json_t *cmd = json_array();
        for (int i = stop; i < n; i++)
            json_array_append_new(cmd, json_string(words[i]));
        json_object_set_new(spec, "command", cmd);
    }
    json_t *cli = spec_take_cli(spec);
    int rc = slurm_prepare(c, spec, cli, false);
    json_decref(cli);
    json_object_del(spec, "output"); /* a session's output is its terminal */
    json_object_del(spec, "error");
    if (rc == 0)
        rc = shell_run(c, spec);
    json_decref(spec);
    return rc;
}

int cmd_salloc(struct cli *c, int argc, char **argv)
{
    for (int i = 1; i < argc && argv[i][0] == '-'; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(c->usage, c->out);
            return EXIT_OK;
        }
    return shell_slurm(c, argv + 1, argc - 1);
}
