/*
 * config.h - what config.c owns: docketd's configuration (docketd.yaml, then the flags
 * main.c parses on top), its defaults and its reader.
 */
#ifndef DOCKET_CONTROLLER_CONFIG_H
#define DOCKET_CONTROLLER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/log.h"

#define CTL_PATH_MAX 4096

/* tls: auto = TLS unless the listener is on loopback (or with tls_cert: always). */
enum ctl_tls_mode { CTL_TLS_AUTO, CTL_TLS_ON, CTL_TLS_OFF };

#define CTL_ADMIN_UIDS_MAX 16

struct ctl_config {
    char state_dir[CTL_PATH_MAX];
    /* the database: "" = STATE_DIR/docket.db (SQLite), a file (SQLite) or a
     * postgresql:// URI (PostgreSQL; docs/operations.md "PostgreSQL") */
    char db[CTL_PATH_MAX];
    char advertise[256]; /* PostgreSQL: the URL clients reach this docketd at ("" = from listen) */
    char listen[256];    /* "HOST:PORT"; "" = no TCP listener */
    char socket_path[CTL_PATH_MAX]; /* "" = STATE_DIR/docketd.sock; "-" = none */
    char log_file[CTL_PATH_MAX];    /* "" = stderr */
    enum log_level log_level;
    enum log_format log_format;
    char policy_file[CTL_PATH_MAX]; /* initial policy, applied when the database has none */
    int64_t node_timeout_ms;
    int64_t idempotency_window_ms; /* a submission's Idempotency-Key is held this long */
    int64_t heartbeat_wait_ms;
    int64_t cycle_delay_ms;    /* debounce after an event */
    int64_t cycle_interval_ms; /* slow timer for time-based rules */
    size_t max_body_bytes;
    int64_t log_max_bytes;          /* per job, all runs and streams: past it, a marker */
    int64_t node_credential_ttl_ms; /* node credentials expire; the agent rotates before */
    int64_t token_ttl_ms;           /* default lifetime of user tokens (the admin's too) */
    enum ctl_tls_mode tls;
    char tls_cert[CTL_PATH_MAX]; /* "" = self-signed, made in STATE_DIR at first start */
    char tls_key[CTL_PATH_MAX];
    char secrets_key[CTL_PATH_MAX];  /* "" = STATE_DIR/secrets.key (outside the database) */
    char audit_anchor[CTL_PATH_MAX]; /* "" = none: the audit head, written there (anchor.c) */
    /* the Unix uids that are admins on the socket, besides root and docketd's own
     * (admin_uids, --admin-uid): configured, never a login name (docs/security.md) */
    unsigned admin_uids[CTL_ADMIN_UIDS_MAX];
    int n_admin_uids;
    /* connections (conn.c): 0 = sized from the fd limit */
    int64_t max_connections;
    int64_t expected_nodes;  /* sizes the listen backlog and the fd warning */
    int64_t idle_timeout_ms; /* a connection silent this long is closed (not long polls) */
    /* a request (head and body) must arrive whole this long after its first byte (the
     * first request: after the connection opens), however slowly it trickles */
    int64_t request_timeout_ms;
    /* the connection budget (docs/security.md): slots of max_connections only connections
     * that proved an identity may hold (0 = sized from expected_nodes), and how many
     * unproven connections one peer (address, or uid on the socket) may hold */
    int64_t reserved_connections;
    int64_t max_unproven_per_peer;
    /* submissions per user (jobs.c): a token bucket; rate 0 = no limit; admins exempt */
    int64_t submit_rate;  /* requests per second */
    int64_t submit_burst; /* bucket size */
    /* tasks one array submission may have. Past CTL_ARRAY_SLICE_TASKS an array is
     * written in slices, one per loop turn (docs/controller.md "Big submissions") */
    int64_t max_array_tasks;
    int64_t test_array_slice_delay_ms; /* DOCKETD_TEST_ARRAY_SLICE_DELAY_MS: tests only */
    bool rotate_secrets_key; /* --rotate-secrets-key: once, at this start (not a config key) */
    char restore_file[CTL_PATH_MAX];  /* --restore FILE: install it as the database, exit */
    char import_sqlite[CTL_PATH_MAX]; /* --import-sqlite FILE: copy it into db, then exit */
    /* the services' load balancer (lb.c, docs/services.md "The endpoint"): the haproxy
     * program docketd runs ("" = none, no endpoints), the address its frontends bind
     * (and `docket services endpoint` prints), the range of their ports */
    char lb_haproxy[CTL_PATH_MAX];
    char lb_bind[256];
    int64_t lb_port_lo, lb_port_hi;
};

void ctl_config_defaults(struct ctl_config *cfg);
/* One more admin uid (admin_uids, --admin-uid): 0, or -EINVAL (out of range, too many). */
int ctl_config_add_admin_uid(struct ctl_config *cfg, int64_t uid);
/* Read docketd.yaml into cfg (fields present override). 0 or -errno with err filled. */
int ctl_config_load(struct ctl_config *cfg, const char *path, char *err, size_t errlen);
/* "LO-HI" into lb_port_lo/hi (1024..65535). 0 or -EINVAL. */
int ctl_config_lb_ports(struct ctl_config *cfg, const char *s);
/* "auto", "on" or "off". 0 or -EINVAL. */
int ctl_tls_mode_parse(const char *s, enum ctl_tls_mode *out);

#endif
