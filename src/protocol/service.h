/*
 * service.h - the service spec (POST /v1/services, docs/services.md): its one reader
 * (proto_service_parse) and its stored, normalised form. A service is a name in a
 * project, a count of replicas, the job spec of one replica (read by jobspec.c's parser:
 * its class is always `service`), liveness and readiness probes, the restart backoff and
 * the rolling update's deadline. The agent reads the probes of a replica's start command
 * with proto_probe_parse, so both sides share one reader.
 */
#ifndef DOCKET_PROTOCOL_SERVICE_H
#define DOCKET_PROTOCOL_SERVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "protocol/error.h"

enum {
    PROTO_SERVICE_MAX_REPLICAS = 64,
    PROTO_PROBE_PATH_MAX = 256,
    PROTO_PROBE_ARGV_MAX = 32,
};

enum proto_probe_kind { PROTO_PROBE_NONE, PROTO_PROBE_HTTP, PROTO_PROBE_TCP, PROTO_PROBE_EXEC };

/* One probe. port 0: the replica's own port ($PORT). */
struct proto_probe {
    enum proto_probe_kind kind;
    char path[PROTO_PROBE_PATH_MAX]; /* http: starts with '/' */
    int port;
    json_t *command;          /* exec: array of 1..PROTO_PROBE_ARGV_MAX strings, owned */
    int64_t period_ms;        /* between two runs (default 10 s) */
    int64_t timeout_ms;       /* a run longer than this fails (default 1 s) */
    int64_t initial_delay_ms; /* after the start, before the first run (default 0) */
    int failure_threshold;    /* failures in a row that count (default 3) */
};

struct proto_service {
    char name[64];    /* a name (str_is_name), unique in the cluster */
    char project[64]; /* "" = as the job spec says, or the caller's default */
    int replicas;     /* 0..PROTO_SERVICE_MAX_REPLICAS */
    json_t *job;      /* the replica's job spec as given (an object), owned */
    struct proto_probe liveness, readiness;
    int64_t backoff_ms, backoff_max_ms; /* restart backoff: first delay, cap */
    int crash_loop_restarts;            /* restarts within the window that make a crash loop */
    int64_t crash_loop_window_ms;
    int64_t update_deadline_ms; /* a new replica not ready by then rolls the update back */
};

void proto_service_init(struct proto_service *s);
void proto_service_release(struct proto_service *s);
/* Parse and validate a service spec (unknown fields refused naming them). The job spec
 * inside is checked with proto_jobspec_parse; its "class", when given, must be
 * "service". On error `out` is released. */
int proto_service_parse(const json_t *body, int64_t now_ms, struct proto_service *out,
                        struct proto_error *err) PROTO_WUR;
int proto_service_parse_text(const char *text, size_t len, int64_t now_ms,
                             struct proto_service *out, struct proto_error *err) PROTO_WUR;
/* The normalised form (every default written, durations as "Nms"): a new reference that
 * proto_service_parse reads back to the same form. */
json_t *proto_service_to_json(const struct proto_service *s);

/* One probe object ({"http": {...}} | {"tcp": {...}} | {"exec": {...}}, with period ...);
 * `field` names it in errors. */
int proto_probe_parse(const json_t *v, const char *field, struct proto_probe *out,
                      struct proto_error *err) PROTO_WUR;
json_t *proto_probe_to_json(const struct proto_probe *p); /* NULL for PROTO_PROBE_NONE */
void proto_probe_release(struct proto_probe *p);

#endif
