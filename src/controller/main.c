/*
 * main.c - docketd: flags and docketd.yaml, the state directory, the admin token of the
 * first start, signals (SIGTERM/SIGINT clean shutdown, SIGHUP reopens the log), and
 * the one libevent loop that runs everything. docs/controller.md describes it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/admin.h"
#include "controller/alerts.h"
#include "controller/anchor.h"
#include "controller/network.h"
#include "controller/lifecycle.h"
#include "controller/warm.h"
#include "controller/logarch.h"
#include "controller/storage.h"
#include "controller/backup.h"
#include "controller/config.h"
#include "controller/conn.h"
#include "controller/dbrestore.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/leader.h"
#include "controller/jobs.h"
#include "controller/logs.h"
#include "controller/loop.h"
#include "controller/metrics.h"
#include "controller/restore.h"
#include "controller/secrets.h"
#include "controller/sync.h"
#include "controller/services.h"
#include "controller/site.h"
#include "controller/templates.h"
#include "controller/tls.h"
#include "controller/turns.h"
#include "controller/lb.h"
#include "controller/rowcache.h"
#include "controller/written.h"
#include "protocol/agent_msg.h"
#include "util/clock.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/xalloc.h"

static const double wait_bounds[] = {1, 10, 60, 300, 900, 3600, 14400, 86400};
static const double cycle_bounds[] = {0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1};
static const double turn_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.1, 0.5, 1};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: docketd [--config FILE] [--state-dir DIR] [--db FILE|postgresql://...]\n"
            "               [--listen HOST:PORT|none]\n"
            "               [--socket PATH|-] [--policy FILE] [--log-file FILE]\n"
            "               [--log-level debug|info|warn|error] [--log-format text|json]\n"
            "               [--node-timeout DURATION] [--heartbeat-wait DURATION]\n"
            "               [--max-body-bytes N] [--tls auto|on|off]\n"
            "               [--tls-cert FILE --tls-key FILE] [--secrets-key FILE]\n"
            "               [--audit-anchor FILE]   (the audit trail's head, kept there)\n"
            "               [--max-connections N] [--expected-nodes N]\n"
            "               [--idle-timeout DURATION] [--request-timeout DURATION]\n"
            "               [--reserved-connections N] [--max-unproven-per-peer N]\n"
            "               [--submit-rate N] [--submit-burst N]\n"
            "               [--max-array-tasks N] [--rotate-secrets-key]\n"
            "               [--admin-uid UID]...   (an admin on the socket, besides root\n"
            "               and docketd's own uid)\n"
            "               [--advertise URL]   (PostgreSQL: where clients reach this one)\n"
            "               [--lb-haproxy PATH [--lb-bind ADDR] [--lb-ports LO-HI]]\n"
            "               (services' endpoints: docketd runs haproxy, default\n"
            "               127.0.0.1, 30000-30999)\n"
            "       docketd --restore FILE [--state-dir DIR]   (docketd stopped: install a\n"
            "               backup as the database; docs/operations.md)\n"
            "       docketd --db postgresql://... --import-sqlite FILE\n"
            "                  (copy a SQLite database into an empty PostgreSQL one, then exit)\n"
            "       docketd --routes   (every API route and the permission it needs)\n");
}

enum {
    O_CONFIG = 256,
    O_STATE,
    O_LISTEN,
    O_SOCKET,
    O_POLICY,
    O_LOGFILE,
    O_LOGLEVEL,
    O_LOGFORMAT,
    O_NODETIMEOUT,
    O_HBWAIT,
    O_MAXBODY,
    O_TLS,
    O_TLSCERT,
    O_TLSKEY,
    O_SECRETSKEY,
    O_AUDITANCHOR,
    O_MAXCONN,
    O_EXPNODES,
    O_IDLE,
    O_REQTIMEOUT,
    O_RESERVED,
    O_PERPEER,
    O_SUBRATE,
    O_SUBBURST,
    O_MAXARRAY,
    O_HELP,
    O_VERSION,
    O_ROUTES,
    O_ROTATE_SECRETS,
    O_RESTORE,
    O_DB,
    O_ADVERTISE,
    O_IMPORT_SQLITE,
    O_ADMIN_UID,
    O_LB_HAPROXY,
    O_LB_BIND,
    O_LB_PORTS
};

static const struct option opts[] = {
    {"config", required_argument, NULL, O_CONFIG},
    {"state-dir", required_argument, NULL, O_STATE},
    {"listen", required_argument, NULL, O_LISTEN},
    {"socket", required_argument, NULL, O_SOCKET},
    {"policy", required_argument, NULL, O_POLICY},
    {"log-file", required_argument, NULL, O_LOGFILE},
    {"log-level", required_argument, NULL, O_LOGLEVEL},
    {"log-format", required_argument, NULL, O_LOGFORMAT},
    {"node-timeout", required_argument, NULL, O_NODETIMEOUT},
    {"heartbeat-wait", required_argument, NULL, O_HBWAIT},
    {"max-body-bytes", required_argument, NULL, O_MAXBODY},
    {"tls", required_argument, NULL, O_TLS},
    {"tls-cert", required_argument, NULL, O_TLSCERT},
    {"tls-key", required_argument, NULL, O_TLSKEY},
    {"secrets-key", required_argument, NULL, O_SECRETSKEY},
    {"audit-anchor", required_argument, NULL, O_AUDITANCHOR},
    {"max-connections", required_argument, NULL, O_MAXCONN},
    {"expected-nodes", required_argument, NULL, O_EXPNODES},
    {"idle-timeout", required_argument, NULL, O_IDLE},
    {"request-timeout", required_argument, NULL, O_REQTIMEOUT},
    {"reserved-connections", required_argument, NULL, O_RESERVED},
    {"max-unproven-per-peer", required_argument, NULL, O_PERPEER},
    {"submit-rate", required_argument, NULL, O_SUBRATE},
    {"submit-burst", required_argument, NULL, O_SUBBURST},
    {"max-array-tasks", required_argument, NULL, O_MAXARRAY},
    {"help", no_argument, NULL, O_HELP},
    {"version", no_argument, NULL, O_VERSION},
    {"routes", no_argument, NULL, O_ROUTES},
    {"rotate-secrets-key", no_argument, NULL, O_ROTATE_SECRETS},
    {"restore", required_argument, NULL, O_RESTORE},
    {"db", required_argument, NULL, O_DB},
    {"advertise", required_argument, NULL, O_ADVERTISE},
    {"lb-haproxy", required_argument, NULL, O_LB_HAPROXY},
    {"lb-bind", required_argument, NULL, O_LB_BIND},
    {"lb-ports", required_argument, NULL, O_LB_PORTS},
    {"import-sqlite", required_argument, NULL, O_IMPORT_SQLITE},
    {"admin-uid", required_argument, NULL, O_ADMIN_UID},
    {NULL, 0, NULL, 0},
};

static int flag_error(const char *flag, const char *value, const char *what)
{
    fprintf(stderr, "docketd: --%s: %s '%s'\n", flag, what, value);
    return -EINVAL;
}

/* Apply one flag over the configuration. */
/* A text flag into its field: 0, or the flag's error when it does not fit. */
static int text_flag(char *dst, size_t len, const char *flag, const char *arg, const char *what)
{
    return str_copy(dst, len, arg) < 0 ? flag_error(flag, arg, what) : 0;
}

static int apply_flag(struct ctl_config *cfg, int opt, const char *arg)
{
    int64_t n;
    switch (opt) {
    case O_STATE:
        return text_flag(cfg->state_dir, sizeof(cfg->state_dir), "state-dir", arg, "path too long");
    case O_LISTEN:
        return str_copy(cfg->listen, sizeof(cfg->listen), strcmp(arg, "none") ? arg : "");
    case O_SOCKET:
        return text_flag(cfg->socket_path, sizeof(cfg->socket_path), "socket", arg,
                         "path too long");
    case O_POLICY:
        return str_copy(cfg->policy_file, sizeof(cfg->policy_file), arg);
    case O_LOGFILE:
        return str_copy(cfg->log_file, sizeof(cfg->log_file), arg);
    case O_LOGLEVEL:
        return log_level_parse(arg, &cfg->log_level) < 0
                   ? flag_error("log-level", arg, "unknown level")
                   : 0;
    case O_LOGFORMAT:
        if (strcmp(arg, "text") && strcmp(arg, "json"))
            return flag_error("log-format", arg, "must be text or json, not");
        cfg->log_format = strcmp(arg, "json") == 0 ? LOG_JSON : LOG_TEXT;
        return 0;
    case O_NODETIMEOUT:
        return parse_duration_ms(arg, &cfg->node_timeout_ms) < 0 || cfg->node_timeout_ms < 1000
                   ? flag_error("node-timeout", arg, "invalid duration (at least 1s)")
                   : 0;
    case O_HBWAIT:
        return parse_duration_ms(arg, &cfg->heartbeat_wait_ms) < 0
                   ? flag_error("heartbeat-wait", arg, "invalid duration")
                   : 0;
    case O_MAXBODY:
        if (parse_int64(arg, 1024, (int64_t)64 << 20, &n) < 0)
            return flag_error("max-body-bytes", arg, "must be 1024..67108864, not");
        cfg->max_body_bytes = (size_t)n;
        return 0;
    case O_TLS:
        return ctl_tls_mode_parse(arg, &cfg->tls) < 0
                   ? flag_error("tls", arg, "must be auto, on or off, not")
                   : 0;
    case O_TLSCERT:
        return text_flag(cfg->tls_cert, sizeof(cfg->tls_cert), "tls-cert", arg, "path too long");
    case O_TLSKEY:
        return text_flag(cfg->tls_key, sizeof(cfg->tls_key), "tls-key", arg, "path too long");
    case O_SECRETSKEY:
        return text_flag(cfg->secrets_key, sizeof(cfg->secrets_key), "secrets-key", arg,
                         "path too long");
    case O_AUDITANCHOR:
        return text_flag(cfg->audit_anchor, sizeof(cfg->audit_anchor), "audit-anchor", arg,
                         "path too long");
    case O_MAXCONN:
        return parse_int64(arg, 0, 10000000, &cfg->max_connections) < 0
                   ? flag_error("max-connections", arg, "must be 0 (auto)..10000000, not")
                   : 0;
    case O_EXPNODES:
        return parse_int64(arg, 1, 1000000, &cfg->expected_nodes) < 0
                   ? flag_error("expected-nodes", arg, "must be 1..1000000, not")
                   : 0;
    case O_IDLE:
        return parse_duration_ms(arg, &cfg->idle_timeout_ms) < 0 || cfg->idle_timeout_ms < 1000
                   ? flag_error("idle-timeout", arg, "invalid duration (at least 1s)")
                   : 0;
    case O_REQTIMEOUT:
        return parse_duration_ms(arg, &cfg->request_timeout_ms) < 0 ||
                       cfg->request_timeout_ms < 1000
                   ? flag_error("request-timeout", arg, "invalid duration (at least 1s)")
                   : 0;
    case O_RESERVED:
        return parse_int64(arg, 0, 10000000, &cfg->reserved_connections) < 0
                   ? flag_error("reserved-connections", arg, "must be 0 (auto)..10000000, not")
                   : 0;
    case O_PERPEER:
        return parse_int64(arg, 1, 10000000, &cfg->max_unproven_per_peer) < 0
                   ? flag_error("max-unproven-per-peer", arg, "must be 1..10000000, not")
                   : 0;
    case O_SUBRATE:
        return parse_int64(arg, 0, 1000000, &cfg->submit_rate) < 0
                   ? flag_error("submit-rate", arg, "must be 0 (no limit)..1000000, not")
                   : 0;
    case O_SUBBURST:
        return parse_int64(arg, 1, 1000000, &cfg->submit_burst) < 0
                   ? flag_error("submit-burst", arg, "must be 1..1000000, not")
                   : 0;
    case O_ROTATE_SECRETS:
        cfg->rotate_secrets_key = true;
        return 0;
    case O_RESTORE:
        return text_flag(cfg->restore_file, sizeof(cfg->restore_file), "restore", arg,
                         "path too long");
    case O_DB:
        return text_flag(cfg->db, sizeof(cfg->db), "db", arg, "too long");
    case O_ADVERTISE:
        return text_flag(cfg->advertise, sizeof(cfg->advertise), "advertise", arg, "too long");
    case O_LB_HAPROXY:
        return text_flag(cfg->lb_haproxy, sizeof(cfg->lb_haproxy), "lb-haproxy", arg,
                         "path too long");
    case O_LB_BIND:
        return text_flag(cfg->lb_bind, sizeof(cfg->lb_bind), "lb-bind", arg, "too long");
    case O_LB_PORTS:
        return ctl_config_lb_ports(cfg, arg) < 0
                   ? flag_error("lb-ports", arg, "must be LO-HI within 1024..65535, not")
                   : 0;
    case O_IMPORT_SQLITE:
        return text_flag(cfg->import_sqlite, sizeof(cfg->import_sqlite), "import-sqlite", arg,
                         "path too long");
    case O_ADMIN_UID:
        return parse_int64(arg, 0, UINT32_MAX - 1, &n) < 0 || ctl_config_add_admin_uid(cfg, n) < 0
                   ? flag_error("admin-uid", arg, "must be a uid (at most 16 of them), not")
                   : 0;
    case O_MAXARRAY:
        return parse_int64(arg, 1, PROTO_MAX_ARRAY, &cfg->max_array_tasks) < 0
                   ? flag_error("max-array-tasks", arg, "must be 1..100000, not")
                   : 0;
    default:
        return -EINVAL;
    }
}

static int parse_args(int argc, char **argv, struct ctl_config *cfg)
{
    const char *config = NULL;
    int opt;
    ctl_config_defaults(cfg);
    /* first pass: only --config, so flags override the file */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == O_CONFIG)
            config = optarg;
        else if (opt == O_HELP) {
            usage(stdout);
            exit(0);
        } else if (opt == O_ROUTES) {
            ctl_routes_print(stdout);
            exit(0);
        } else if (opt == O_VERSION) {
            printf("docketd %s\n", DOCKET_VERSION);
            exit(0);
        } else if (opt == '?') {
            fprintf(stderr, "docketd: unknown or incomplete option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return -EINVAL;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "docketd: unexpected argument '%s'\n", argv[optind]);
        return -EINVAL;
    }
    char err[512];
    if (config && ctl_config_load(cfg, config, err, sizeof(err)) < 0) {
        fprintf(stderr, "docketd: config %s\n", err);
        return -EINVAL;
    }
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1)
        if (opt != O_CONFIG && apply_flag(cfg, opt, optarg) < 0)
            return -EINVAL;
    if (!cfg->socket_path[0] &&
        snprintf(cfg->socket_path, sizeof(cfg->socket_path), "%s/docketd.sock", cfg->state_dir) >=
            (int)sizeof(cfg->socket_path))
        return -ENAMETOOLONG;
    return 0;
}

/* A parked heartbeat refreshes neither side: docketd counts a node's silence from the
 * poll's arrival (lost at node_timeout + margin), and the agent renews its fencing lease
 * only from a reply, to (poll sent) + node_timeout - margin. A quiet node's next reply
 * comes a whole wait after that, so the lease must outlast two waits or every quiet
 * node's jobs are fenced (lost, NODE_FAIL, requeued) although nothing failed. The wait
 * is cut to a third of the lease; the last third is the slack for a slow reply. With the
 * defaults (60 s, margin 10 s) that is 16.6 s, and the default wait is 15 s. */
static void heartbeat_wait_cap(struct ctl_config *cfg)
{
    int64_t margin = agent_fence_margin_ms(cfg->node_timeout_ms, AGENT_FENCE_MARGIN_DEFAULT_MS);
    int64_t cap = (cfg->node_timeout_ms - margin) / 3;
    if (cfg->heartbeat_wait_ms <= cap)
        return;
    log_warn("heartbeat_wait_capped",
             "heartbeat_wait_ms=%lld cap_ms=%lld node_timeout_ms=%lld margin_ms=%lld"
             " effect=\"long polls end within a third of the fencing lease\"",
             (long long)cfg->heartbeat_wait_ms, (long long)cap, (long long)cfg->node_timeout_ms,
             (long long)margin);
    cfg->heartbeat_wait_ms = cap;
}

/* At first start, an admin token: its hash in the store, the text in admin.token (0600). */
static int admin_token(struct ctl *c)
{
    char path[CTL_PATH_MAX + 32], tok[96];
    snprintf(path, sizeof(path), "%s/admin.token", c->cfg.state_dir);
    if (access(path, F_OK) == 0)
        return 0;
    struct store_token t;
    memset(&t, 0, sizeof(t));
    if (ctl_random_token("dkt_", tok, sizeof(tok)) < 0)
        return -EIO;
    store_token_hash(tok, t.hash);
    t.kind = STORE_TOKEN_USER;
    str_copy(t.user, sizeof(t.user), "admin");
    str_copy(t.role, sizeof(t.role), "admin");
    t.created_ms = clock_now_ms();
    t.expires_ms = t.created_ms + c->cfg.token_ttl_ms; /* docket token rotate-admin renews it */
    int rc = store_begin(c->store);
    if (rc == 0)
        rc = store_token_put(c->store, &t);
    json_t *after = json_pack("{s:s,s:s,s:I}", "user", "admin", "role", "admin", "expires_ms",
                              (json_int_t)t.expires_ms);
    if (rc == 0)
        rc = ctl_audit(c, "docketd", "token.issue", "admin", NULL, after, "first start");
    json_decref(after);
    if (rc == 0)
        rc = store_commit(c->store);
    if (rc < 0)
        return rc;
    if ((rc = ctl_admin_token_write(c, tok)) < 0)
        return rc;
    log_info("admin_token_written", "path=%s", path);
    return 0;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct ctl *c = arg;
    if (sig == SIGHUP) {
        char err[512];
        log_reopen();
        log_info("log_reopened", "signal=HUP");
        if (c->tls_ctx && ctl_tls_reload(c, err, sizeof(err)) < 0)
            log_error("tls_reload_failed",
                      "error=\"%s\" action=\"the previous certificate is "
                      "still served; fix the files and send SIGHUP again\"",
                      err);
        return;
    }
    log_info("shutdown", "signal=%s", sig == SIGTERM ? "TERM" : "INT");
    c->shutting_down = true;
    event_base_loopexit(c->base, NULL);
}

static int prepare_dirs(struct ctl *c)
{
    char logs[CTL_PATH_MAX + 16];
    if (mkdir(c->cfg.state_dir, 0700) < 0 && errno != EEXIST) {
        fprintf(stderr, "docketd: cannot create state directory '%s': %s\n", c->cfg.state_dir,
                strerror(errno));
        return -errno;
    }
    snprintf(logs, sizeof(logs), "%s/logs", c->cfg.state_dir);
    if (mkdir(logs, 0750) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

static int start(struct ctl *c)
{
    char err[512], db[CTL_PATH_MAX + 32];
    int rc;
    if (c->cfg.db[0])
        snprintf(db, sizeof(db), "%s", c->cfg.db);
    else
        snprintf(db, sizeof(db), "%s/docket.db", c->cfg.state_dir);
    /* first, so a listener that may not serve plain HTTP stops docketd before it
     * touches any state */
    if ((rc = ctl_tls_start(c, err, sizeof(err))) < 0) {
        log_error("tls_failed", "error=\"%s\"", err);
        return rc;
    }
    if ((rc = ctl_secrets_start(c, err, sizeof(err))) < 0) {
        log_error("secrets_key_failed", "error=\"%s\"", err);
        return rc;
    }
    /* one docketd per state directory (a restart's old one gets 10 s to close it) */
    if ((c->state_lock = ctl_state_lock_wait(c->cfg.state_dir, 10000, err, sizeof(err))) < 0) {
        log_error("state_dir_locked", "error=\"%s\"", err);
        return c->state_lock;
    }
    int64_t t0 = clock_mono_ms();
    if ((rc = ctl_conn_limits(c)) < 0)
        log_warn("fd_limit_unknown", "error=\"%s\"", strerror(-rc));
    c->store = store_open(db, err, sizeof(err));
    if (!c->store) {
        log_error("store_open_failed", "error=\"%s\"", err);
        return -EIO;
    }
    /* PostgreSQL: lead, or wait as a standby answering where the leader is (leader.c) */
    bool pg = store_is_postgres(c->store);
    if (pg) {
        c->standby = true;
        if ((rc = ctl_http_start(c, err, sizeof(err))) < 0) {
            log_error("listen_failed", "error=\"%s\"", err);
            return rc;
        }
        if ((rc = ctl_leader_await(c)) < 0)
            return rc;
        t0 = clock_mono_ms();
    }
    ctl_written_start(c); /* before any write: it sees them all */
    ctl_backup_init(c);
    if ((rc = ctl_secrets_recover(c, err, sizeof(err))) < 0 ||
        (c->cfg.rotate_secrets_key && (rc = ctl_secrets_rotate(c, err, sizeof(err))) < 0)) {
        log_error("secrets_key_rotation_failed", "error=\"%s\"", err);
        return rc;
    }
    /* an array still marked as being written never got its 201: it goes whole
     * (docs/controller.md "Big submissions") */
    size_t rolled = 0;
    if ((rc = store_arrays_rollback(c->store, &rolled)) < 0) {
        log_error("restore_failed", "error=\"arrays being written: %s\"", store_errmsg(c->store));
        return rc;
    }
    if (rolled > 0)
        log_warn("arrays_rolled_back", "arrays=%zu why=\"docketd stopped while writing them\"",
                 rolled);
    const char *delay = getenv("DOCKETD_TEST_ARRAY_SLICE_DELAY_MS");
    if (delay && parse_int64(delay, 0, 10000, &c->cfg.test_array_slice_delay_ms) < 0)
        c->cfg.test_array_slice_delay_ms = 0;
    if ((rc = ctl_restore(c, err, sizeof(err))) < 0) {
        log_error("restore_failed", "error=\"%s\"", err);
        return rc;
    }
    if ((rc = admin_token(c)) < 0) {
        log_error("admin_token_failed", "error=\"%s\"", strerror(-rc));
        return rc;
    }
    log_info("state_loaded", "ms=%lld jobs=%zu", (long long)(clock_mono_ms() - t0),
             sched_job_count(c->sched));
    ctl_anchor_publish(c); /* the head as it is at start: logged, and the anchor file */
    /* COMMIT without waiting for the disk, a helper thread syncing (SQLite: the WAL file;
     * PostgreSQL: the server's WAL, on a connection of its own) */
    if ((rc = ctl_sync_start(c)) < 0)
        log_warn("sync_helper_failed", "error=\"%s\" fallback=inline", strerror(-rc));
    c->standby = false; /* the state is loaded: requests are served from here on */
    if (!pg && (rc = ctl_http_start(c, err, sizeof(err))) < 0) {
        log_error("listen_failed", "error=\"%s\"", err);
        return rc;
    }
    if ((rc = ctl_alerts_start(c)) < 0) {
        log_error("alerts_failed", "error=\"%s\"", strerror(-rc));
        return rc;
    }
    return ctl_loop_start(c);
}

/*
 * A base whose clock is the precise monotonic one. Without the flag libevent reads
 * CLOCK_MONOTONIC_COARSE, which moves once a tick (4 ms here): timers fire up to a tick
 * late, and every loop turn that polls within one tick sees the same cached time, so
 * turns.c, which tells turns apart by that time, would count two or more turns as one.
 */
static struct event_base *new_event_base(void)
{
    struct event_config *cfg = event_config_new();
    if (!cfg)
        return NULL;
    event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
    struct event_base *base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    return base;
}

/* --import-sqlite: the SQLite database copied into the (empty) PostgreSQL one named by
 * --db, then exit (docs/operations.md "Moving to PostgreSQL"). */
static int import_sqlite(const struct ctl_config *cfg)
{
    char err[512];
    struct store_import_stats stats;
    if (!store_path_is_postgres(cfg->db)) {
        fprintf(stderr, "docketd: --import-sqlite needs --db postgresql://...\n");
        return 2;
    }
    struct store *dst = store_open(cfg->db, err, sizeof(err));
    if (!dst) {
        fprintf(stderr, "docketd: %s\n", err);
        return 1;
    }
    int rc = store_import_sqlite(dst, cfg->import_sqlite, &stats, err, sizeof(err));
    store_close(dst);
    if (rc < 0) {
        fprintf(stderr, "docketd: import of '%s' failed, nothing imported: %s\n",
                cfg->import_sqlite, err);
        return 1;
    }
    printf("docketd: imported '%s': %d tables, %lld rows\n", cfg->import_sqlite, stats.tables,
           (long long)stats.rows);
    return 0;
}

int main(int argc, char **argv)
{
    static struct ctl ctl;
    struct ctl *c = &ctl;
    signal(SIGPIPE, SIG_IGN);
    if (parse_args(argc, argv, &c->cfg) < 0)
        return 2;
    if (c->cfg.restore_file[0] && store_path_is_postgres(c->cfg.db)) /* offline, as below */
        return ctl_restore_pg(c->cfg.state_dir, c->cfg.db, c->cfg.restore_file);
    if (c->cfg.restore_file[0]) /* offline: no log, no loop, no listener */
        return ctl_restore_file(c->cfg.state_dir, c->cfg.restore_file);
    if (log_open(c->cfg.log_file[0] ? c->cfg.log_file : NULL, c->cfg.log_level, c->cfg.log_format) <
        0) {
        fprintf(stderr, "docketd: cannot open log file '%s'\n", c->cfg.log_file);
        return 1;
    }
    if (c->cfg.import_sqlite[0])
        return import_sqlite(&c->cfg);
    heartbeat_wait_cap(&c->cfg);
    c->metrics.queue_wait = (struct ctl_hist){wait_bounds, 8, {0}, 0, 0};
    c->metrics.cycle = (struct ctl_hist){cycle_bounds, 9, {0}, 0, 0};
    c->metrics.commit = (struct ctl_hist){cycle_bounds, 9, {0}, 0, 0};
    c->metrics.turn = (struct ctl_hist){turn_bounds, 10, {0}, 0, 0};
    ctl_turns_init(c);
    c->start_mono_ms = clock_mono_ms();
    c->base = new_event_base();
    if (!c->base || prepare_dirs(c) < 0)
        return 1;
    int rc = start(c);
    if (rc == 0) {
        c->sig_term = xnonnull(evsignal_new(c->base, SIGTERM, on_signal, c), "signal event");
        c->sig_int = xnonnull(evsignal_new(c->base, SIGINT, on_signal, c), "signal event");
        c->sig_hup = xnonnull(evsignal_new(c->base, SIGHUP, on_signal, c), "signal event");
        event_add(c->sig_term, NULL);
        event_add(c->sig_int, NULL);
        event_add(c->sig_hup, NULL);
        log_info("started", "version=%s state_dir=%s", DOCKET_VERSION, c->cfg.state_dir);
        event_base_dispatch(c->base);
    }
    /* arrays still being written are answered 503 (their marker stays: the next start
     * rolls them back), then whatever the last iteration wrote is committed */
    ctl_arrays_stop_all(c);
    ctl_backup_stop(c);
    if (c->store && c->commit_ev)
        ctl_commit_now(c);
    ctl_sync_stop(c);
    if (c->base)
        event_base_loop(c->base, EVLOOP_NONBLOCK); /* flush the last replies */
    ctl_logs_stop(c);
    ctl_alerts_stop(c);
    ctl_services_free(c);
    ctl_lb_free(c);
    ctl_templates_stop(c);
    ctl_site_stop(c);
    ctl_storage_free(c);
    ctl_net_free(c);
    ctl_lifecycle_free(c);
    ctl_warm_free(c);
    ctl_logarch_free(c);
    ctl_loop_stop(c);
    ctl_http_stop(c);
    ctl_secrets_stop(c);
    if (c->sig_term) {
        event_free(c->sig_term);
        event_free(c->sig_int);
        event_free(c->sig_hup);
    }
    json_decref(c->boost_reasons);
    json_decref(c->submit_buckets);
    json_decref(c->step_hosts);
    sched_destroy(c->sched);
    ctl_written_stop(c);
    ctl_rowcache_free(c->rowcache);
    store_close(c->store);
    event_base_free(c->base);
    if (c->state_lock > 0)
        close(c->state_lock); /* last: the database is closed */
    log_info("stopped", "exit=%d", rc < 0 ? 1 : c->exit_code);
    log_close();
    return rc < 0 ? 1 : c->exit_code;
}
