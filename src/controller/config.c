/*
 * config.c - docketd.yaml (examples/docketd.yaml): listen addresses, state directory,
 * timers, logs, the initial policy file. Read through util/yamljson.h and validated like
 * every other input: an unknown key or a bad value names the key.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "controller/config.h"
#include "protocol/proto.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/yamljson.h"

int ctl_config_lb_ports(struct ctl_config *cfg, const char *s)
{
    int lo = 0, hi = 0, end = 0;
    if (sscanf(s, "%d-%d%n", &lo, &hi, &end) != 2 || s[end] || lo < 1024 || hi > 65535 || lo > hi)
        return -EINVAL;
    cfg->lb_port_lo = lo;
    cfg->lb_port_hi = hi;
    return 0;
}

void ctl_config_defaults(struct ctl_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    str_copy(cfg->state_dir, sizeof(cfg->state_dir), "/var/lib/docket");
    str_copy(cfg->listen, sizeof(cfg->listen), "127.0.0.1:8420");
    str_copy(cfg->lb_bind, sizeof(cfg->lb_bind), "127.0.0.1");
    cfg->lb_port_lo = 30000;
    cfg->lb_port_hi = 30999;
    cfg->log_level = LOG_INFO;
    cfg->log_format = LOG_TEXT;
    cfg->node_timeout_ms = 60000;
    cfg->idempotency_window_ms = 24 * 3600 * 1000; /* docs/api.md "Retrying a submission" */
    cfg->heartbeat_wait_ms = 15000; /* at most a third of the lease (main.c heartbeat_wait_cap) */
    cfg->cycle_delay_ms = 1;
    cfg->cycle_interval_ms = 5000;
    cfg->max_body_bytes = 1u << 20;
    cfg->log_max_bytes = (int64_t)1 << 30;
    cfg->node_credential_ttl_ms = (int64_t)30 * 86400 * 1000;
    cfg->token_ttl_ms = (int64_t)90 * 24 * 3600 * 1000;
    cfg->max_connections = 0;
    cfg->expected_nodes = 1000;
    cfg->idle_timeout_ms = 30000;
    cfg->request_timeout_ms = 10000;
    cfg->reserved_connections = 0;
    cfg->max_unproven_per_peer = 32;
    cfg->submit_rate = 20;
    cfg->submit_burst = 200;
    cfg->max_array_tasks = 100000;
}

int ctl_tls_mode_parse(const char *s, enum ctl_tls_mode *out)
{
    static const char *const names[] = {"auto", "on", "off"};
    for (int i = 0; s && i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (enum ctl_tls_mode)i;
            return 0;
        }
    return -EINVAL;
}

static int get_str(json_t *doc, const char *key, char *out, size_t len, char *err, size_t errlen)
{
    json_t *v = json_object_get(doc, key);
    if (!v)
        return 0;
    if (!json_is_string(v) || str_copy(out, len, json_string_value(v)) < 0) {
        snprintf(err, errlen, "%s: must be a string of at most %zu bytes", key, len - 1);
        return -EINVAL;
    }
    return 0;
}

static int get_dur(json_t *doc, const char *key, int64_t min, int64_t *out, char *err,
                   size_t errlen)
{
    json_t *v = json_object_get(doc, key);
    struct proto_error pe;
    if (!v)
        return 0;
    if (proto_get_duration(v, key, PROTO_MAX_DURATION_MS, out, &pe) < 0 || *out < min) {
        snprintf(err, errlen, "%s: invalid duration", key);
        return -EINVAL;
    }
    return 0;
}

int ctl_config_add_admin_uid(struct ctl_config *cfg, int64_t uid)
{
    if (uid < 0 || uid > UINT32_MAX - 1 || cfg->n_admin_uids >= CTL_ADMIN_UIDS_MAX)
        return -EINVAL;
    cfg->admin_uids[cfg->n_admin_uids++] = (unsigned)uid;
    return 0;
}

/* admin_uids: a list of uids (or one); each an admin over the socket. */
static int get_admin_uids(json_t *v, struct ctl_config *cfg, char *err, size_t errlen)
{
    size_t i;
    json_t *u;
    if (!v)
        return 0;
    bool ok = json_is_array(v);
    if (json_is_integer(v))
        ok = ctl_config_add_admin_uid(cfg, json_integer_value(v)) == 0;
    json_array_foreach(v, i, u)
        ok = ok && json_is_integer(u) && ctl_config_add_admin_uid(cfg, json_integer_value(u)) == 0;
    if (!ok) {
        snprintf(err, errlen, "admin_uids: must be a list of at most %d uids (0..4294967294)",
                 CTL_ADMIN_UIDS_MAX);
        return -EINVAL;
    }
    return 0;
}

static int get_int(json_t *doc, const char *key, int64_t min, int64_t max, int64_t *out, char *err,
                   size_t errlen)
{
    json_t *v = json_object_get(doc, key);
    struct proto_error pe;
    if (v && proto_get_int(v, key, min, max, out, &pe) < 0) {
        snprintf(err, errlen, "%s: %s", key, pe.message);
        return -EINVAL;
    }
    return 0;
}

int ctl_config_load(struct ctl_config *cfg, const char *path, char *err, size_t errlen)
{
    static const char *const known[] = {"listen",
                                        "socket",
                                        "state_dir",
                                        "db",
                                        "advertise",
                                        "log_file",
                                        "log_level",
                                        "log_format",
                                        "policy",
                                        "node_timeout",
                                        "idempotency_window",
                                        "heartbeat_wait",
                                        "cycle_delay",
                                        "cycle_interval",
                                        "max_body_bytes",
                                        "log_max_bytes",
                                        "node_credential_ttl",
                                        "token_ttl",
                                        "tls",
                                        "tls_cert",
                                        "tls_key",
                                        "secrets_key",
                                        "audit_anchor",
                                        "max_connections",
                                        "expected_nodes",
                                        "idle_timeout",
                                        "submit_rate",
                                        "submit_burst",
                                        "max_array_tasks",
                                        "request_timeout",
                                        "reserved_connections",
                                        "max_unproven_per_peer",
                                        "admin_uids",
                                        "lb_haproxy",
                                        "lb_bind",
                                        "lb_ports",
                                        NULL};
    char yerr[256];
    struct proto_error pe;
    json_t *doc = yaml_file_to_json(path, yerr, sizeof(yerr));
    if (!doc) {
        snprintf(err, errlen, "%s: %s", path, yerr);
        return -EINVAL;
    }
    int rc = json_is_object(doc) ? 0 : -EINVAL;
    json_t *v;
    if (rc < 0)
        snprintf(err, errlen, "%s: must be a mapping", path);
    if (rc == 0 && proto_check_fields(doc, "", known, &pe) < 0) {
        snprintf(err, errlen, "%s: %s", path, pe.message);
        rc = -EINVAL;
    }
    if (rc == 0)
        rc = get_str(doc, "listen", cfg->listen, sizeof(cfg->listen), err, errlen);
    if (rc == 0)
        rc = get_str(doc, "socket", cfg->socket_path, sizeof(cfg->socket_path), err, errlen);
    if (rc == 0)
        rc = get_str(doc, "state_dir", cfg->state_dir, sizeof(cfg->state_dir), err, errlen);
    if (rc == 0)
        rc = get_str(doc, "db", cfg->db, sizeof(cfg->db), err, errlen);
    if (rc == 0)
        rc = get_str(doc, "advertise", cfg->advertise, sizeof(cfg->advertise), err, errlen);
    if (rc == 0)
        rc = get_str(doc, "log_file", cfg->log_file, sizeof(cfg->log_file), err, errlen);
    if (rc == 0)
        rc = get_str(doc, "policy", cfg->policy_file, sizeof(cfg->policy_file), err, errlen);
    if (rc == 0)
        rc = get_str(doc, "tls_cert", cfg->tls_cert, sizeof(cfg->tls_cert), err, errlen);
    if (rc == 0)
        rc = get_str(doc, "tls_key", cfg->tls_key, sizeof(cfg->tls_key), err, errlen);
    if (rc == 0)
        rc = get_str(doc, "secrets_key", cfg->secrets_key, sizeof(cfg->secrets_key), err, errlen);
    if (rc == 0)
        rc =
            get_str(doc, "audit_anchor", cfg->audit_anchor, sizeof(cfg->audit_anchor), err, errlen);
    if (rc == 0)
        rc = get_str(doc, "lb_haproxy", cfg->lb_haproxy, sizeof(cfg->lb_haproxy), err, errlen);
    if (rc == 0)
        rc = get_str(doc, "lb_bind", cfg->lb_bind, sizeof(cfg->lb_bind), err, errlen);
    if (rc == 0 && (v = json_object_get(doc, "lb_ports")) &&
        (!json_is_string(v) || ctl_config_lb_ports(cfg, json_string_value(v)) < 0)) {
        snprintf(err, errlen, "lb_ports: must be LO-HI within 1024..65535");
        rc = -EINVAL;
    }
    if (rc == 0 && (v = json_object_get(doc, "tls")) &&
        ctl_tls_mode_parse(json_string_value(v), &cfg->tls) < 0) {
        snprintf(err, errlen, "tls: must be auto, on or off");
        rc = -EINVAL;
    }
    if (rc == 0 && (v = json_object_get(doc, "log_level")) &&
        (!json_is_string(v) || log_level_parse(json_string_value(v), &cfg->log_level) < 0)) {
        snprintf(err, errlen, "log_level: must be debug, info, warn or error");
        rc = -EINVAL;
    }
    if (rc == 0 && (v = json_object_get(doc, "log_format"))) {
        const char *s = json_string_value(v);
        if (s && strcmp(s, "text") == 0)
            cfg->log_format = LOG_TEXT;
        else if (s && strcmp(s, "json") == 0)
            cfg->log_format = LOG_JSON;
        else {
            snprintf(err, errlen, "log_format: must be text or json");
            rc = -EINVAL;
        }
    }
    if (rc == 0)
        rc = get_dur(doc, "node_timeout", 1000, &cfg->node_timeout_ms, err, errlen);
    if (rc == 0)
        rc = get_dur(doc, "idempotency_window", 1000, &cfg->idempotency_window_ms, err, errlen);
    if (rc == 0)
        rc = get_dur(doc, "heartbeat_wait", 0, &cfg->heartbeat_wait_ms, err, errlen);
    if (rc == 0)
        rc = get_dur(doc, "cycle_delay", 0, &cfg->cycle_delay_ms, err, errlen);
    if (rc == 0)
        rc = get_dur(doc, "cycle_interval", 10, &cfg->cycle_interval_ms, err, errlen);
    if (rc == 0)
        rc = get_dur(doc, "token_ttl", 60000, &cfg->token_ttl_ms, err, errlen);
    if (rc == 0)
        rc = get_dur(doc, "idle_timeout", 1000, &cfg->idle_timeout_ms, err, errlen);
    if (rc == 0)
        rc = get_dur(doc, "request_timeout", 1000, &cfg->request_timeout_ms, err, errlen);
    if (rc == 0)
        rc = get_admin_uids(json_object_get(doc, "admin_uids"), cfg, err, errlen);
    if (rc == 0)
        rc = get_int(doc, "max_connections", 0, 10000000, &cfg->max_connections, err, errlen);
    if (rc == 0)
        rc = get_int(doc, "reserved_connections", 0, 10000000, &cfg->reserved_connections, err,
                     errlen);
    if (rc == 0)
        rc = get_int(doc, "max_unproven_per_peer", 1, 10000000, &cfg->max_unproven_per_peer, err,
                     errlen);
    if (rc == 0)
        rc = get_int(doc, "submit_rate", 0, 1000000, &cfg->submit_rate, err, errlen);
    if (rc == 0)
        rc = get_int(doc, "submit_burst", 1, 1000000, &cfg->submit_burst, err, errlen);
    if (rc == 0)
        rc =
            get_int(doc, "max_array_tasks", 1, PROTO_MAX_ARRAY, &cfg->max_array_tasks, err, errlen);
    if (rc == 0)
        rc = get_int(doc, "expected_nodes", 1, 1000000, &cfg->expected_nodes, err, errlen);
    if (rc == 0 && (v = json_object_get(doc, "max_body_bytes"))) {
        int64_t n;
        if (proto_get_int(v, "max_body_bytes", 1024, (int64_t)64 << 20, &n, &pe) < 0) {
            snprintf(err, errlen, "max_body_bytes: %s", pe.message);
            rc = -EINVAL;
        } else {
            cfg->max_body_bytes = (size_t)n;
        }
    }
    if (rc == 0 && (v = json_object_get(doc, "log_max_bytes")) &&
        proto_get_int(v, "log_max_bytes", 64, INT64_MAX / 2, &cfg->log_max_bytes, &pe) < 0) {
        snprintf(err, errlen, "log_max_bytes: %s", pe.message);
        rc = -EINVAL;
    }
    if (rc == 0)
        rc = get_dur(doc, "node_credential_ttl", 1000, &cfg->node_credential_ttl_ms, err, errlen);
    json_decref(doc);
    return rc;
}
