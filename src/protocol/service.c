/*
 * service.c - the service spec's one reader and its normalised form (service.h). The
 * replica's job spec is validated by jobspec.c's parser here and kept as given: the
 * controller resolves it (owner, project, defaults) once, at creation.
 */
#include "protocol/service.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "protocol/proto.h"
#include "util/str.h"

#define DAY_MS (24LL * 3600 * 1000)

void proto_probe_release(struct proto_probe *p)
{
    json_decref(p->command);
    memset(p, 0, sizeof(*p));
}

void proto_service_init(struct proto_service *s)
{
    memset(s, 0, sizeof(*s));
    s->replicas = 1;
    s->backoff_ms = 1000;
    s->backoff_max_ms = 300000;
    s->crash_loop_restarts = 5;
    s->crash_loop_window_ms = 600000;
    s->update_deadline_ms = 300000;
}

void proto_service_release(struct proto_service *s)
{
    json_decref(s->job);
    proto_probe_release(&s->liveness);
    proto_probe_release(&s->readiness);
    s->job = NULL;
}

static void path_join(char *out, size_t len, const char *a, const char *b)
{
    snprintf(out, len, "%s.%s", a, b);
}

static int get_port(const json_t *v, const char *field, int *port, struct proto_error *err)
{
    int64_t n = 0;
    if (v && proto_get_int(v, field, 0, 65535, &n, err) < 0)
        return -EINVAL;
    *port = (int)n;
    return 0;
}

static int probe_http(const json_t *o, const char *field, struct proto_probe *p,
                      struct proto_error *err)
{
    static const char *const known[] = {"path", "port", NULL};
    char f[160];
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, field, "%s must be an object", field);
    if (proto_check_fields(o, field, known, err) < 0)
        return -EINVAL;
    const json_t *path = json_object_get(o, "path");
    path_join(f, sizeof(f), field, "path");
    const char *s = path ? json_string_value(path) : "/";
    if (!s || s[0] != '/' || strlen(s) >= sizeof(p->path))
        return proto_errorf(err, 400, NULL, f,
                            "%s must be a path starting with '/' (at most %d bytes)", f,
                            (int)sizeof(p->path) - 1);
    for (const char *c = s; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f) /* it goes into a request line as is */
            return proto_errorf(err, 400, NULL, f, "%s must hold no space or control byte", f);
    str_copy(p->path, sizeof(p->path), s);
    path_join(f, sizeof(f), field, "port");
    p->kind = PROTO_PROBE_HTTP;
    return get_port(json_object_get(o, "port"), f, &p->port, err);
}

static int probe_tcp(const json_t *o, const char *field, struct proto_probe *p,
                     struct proto_error *err)
{
    static const char *const known[] = {"port", NULL};
    char f[160];
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, field, "%s must be an object", field);
    if (proto_check_fields(o, field, known, err) < 0)
        return -EINVAL;
    path_join(f, sizeof(f), field, "port");
    p->kind = PROTO_PROBE_TCP;
    return get_port(json_object_get(o, "port"), f, &p->port, err);
}

static int probe_exec(const json_t *o, const char *field, struct proto_probe *p,
                      struct proto_error *err)
{
    static const char *const known[] = {"command", NULL};
    char f[160];
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, field, "%s must be an object", field);
    if (proto_check_fields(o, field, known, err) < 0)
        return -EINVAL;
    const json_t *cmd = json_object_get(o, "command");
    path_join(f, sizeof(f), field, "command");
    size_t n = json_array_size(cmd);
    if (!json_is_array(cmd) || n == 0 || n > PROTO_PROBE_ARGV_MAX)
        return proto_errorf(err, 400, NULL, f, "%s must be an array of 1 to %d strings", f,
                            PROTO_PROBE_ARGV_MAX);
    size_t i;
    const json_t *a;
    json_array_foreach(cmd, i, a) {
        const char *s = json_string_value(a);
        if (!s || strlen(s) > 4096 || (i == 0 && !s[0]))
            return proto_errorf(err, 400, NULL, f, "%s[%zu] must be a string (at most 4096 bytes)",
                                f, i);
    }
    p->kind = PROTO_PROBE_EXEC;
    p->command = json_deep_copy(cmd);
    return p->command ? 0 : proto_errorf(err, 500, NULL, NULL, "out of memory");
}

static int probe_duration(const json_t *o, const char *field, const char *key, int64_t min,
                          int64_t max, int64_t *out, struct proto_error *err)
{
    const json_t *v = json_object_get(o, key);
    char f[160];
    path_join(f, sizeof(f), field, key);
    if (!v)
        return 0;
    if (proto_get_duration(v, f, max, out, err) < 0)
        return -EINVAL;
    if (*out < min)
        return proto_errorf(err, 400, NULL, f, "%s must be at least %lldms", f, (long long)min);
    return 0;
}

int proto_probe_parse(const json_t *v, const char *field, struct proto_probe *out,
                      struct proto_error *err)
{
    static const char *const known[] = {
        "http", "tcp", "exec", "period", "timeout", "initial_delay", "failure_threshold", NULL};
    char f[160];
    memset(out, 0, sizeof(*out));
    out->period_ms = 10000;
    out->timeout_ms = 1000;
    out->failure_threshold = 3;
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, field, "%s must be an object", field);
    if (proto_check_fields(v, field, known, err) < 0)
        return -EINVAL;
    int kinds =
        !!json_object_get(v, "http") + !!json_object_get(v, "tcp") + !!json_object_get(v, "exec");
    if (kinds != 1)
        return proto_errorf(err, 400, NULL, field, "%s needs exactly one of http, tcp, exec",
                            field);
    int rc;
    if (json_object_get(v, "http")) {
        path_join(f, sizeof(f), field, "http");
        rc = probe_http(json_object_get(v, "http"), f, out, err);
    } else if (json_object_get(v, "tcp")) {
        path_join(f, sizeof(f), field, "tcp");
        rc = probe_tcp(json_object_get(v, "tcp"), f, out, err);
    } else {
        path_join(f, sizeof(f), field, "exec");
        rc = probe_exec(json_object_get(v, "exec"), f, out, err);
    }
    int64_t n = out->failure_threshold;
    const json_t *ft = json_object_get(v, "failure_threshold");
    path_join(f, sizeof(f), field, "failure_threshold");
    if (rc == 0 && ft && proto_get_int(ft, f, 1, 1000, &n, err) < 0)
        rc = -EINVAL;
    out->failure_threshold = (int)n;
    if (rc == 0 &&
        (probe_duration(v, field, "period", 100, DAY_MS, &out->period_ms, err) < 0 ||
         probe_duration(v, field, "timeout", 10, 3600000, &out->timeout_ms, err) < 0 ||
         probe_duration(v, field, "initial_delay", 0, DAY_MS, &out->initial_delay_ms, err) < 0))
        rc = -EINVAL;
    if (rc < 0)
        proto_probe_release(out);
    return rc;
}

static json_t *dur(int64_t ms)
{
    char b[32];
    snprintf(b, sizeof(b), "%lldms", (long long)ms);
    return json_string(b);
}

json_t *proto_probe_to_json(const struct proto_probe *p)
{
    json_t *kind;
    switch (p->kind) {
    case PROTO_PROBE_HTTP:
        kind = json_pack("{s:{s:s,s:i}}", "http", "path", p->path, "port", p->port);
        break;
    case PROTO_PROBE_TCP:
        kind = json_pack("{s:{s:i}}", "tcp", "port", p->port);
        break;
    case PROTO_PROBE_EXEC:
        kind = json_pack("{s:{s:O}}", "exec", "command", p->command);
        break;
    default:
        return NULL;
    }
    if (!kind)
        return NULL;
    json_object_set_new(kind, "period", dur(p->period_ms));
    json_object_set_new(kind, "timeout", dur(p->timeout_ms));
    json_object_set_new(kind, "initial_delay", dur(p->initial_delay_ms));
    json_object_set_new(kind, "failure_threshold", json_integer(p->failure_threshold));
    return kind;
}

static int parse_probes(const json_t *v, struct proto_service *s, struct proto_error *err)
{
    static const char *const known[] = {"liveness", "readiness", NULL};
    if (!v)
        return 0;
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, "probes", "probes must be an object");
    if (proto_check_fields(v, "probes", known, err) < 0)
        return -EINVAL;
    const json_t *l = json_object_get(v, "liveness"), *r = json_object_get(v, "readiness");
    if (l && proto_probe_parse(l, "probes.liveness", &s->liveness, err) < 0)
        return -EINVAL;
    if (r && proto_probe_parse(r, "probes.readiness", &s->readiness, err) < 0)
        return -EINVAL;
    return 0;
}

static int parse_restart(const json_t *v, struct proto_service *s, struct proto_error *err)
{
    static const char *const known[] = {"backoff", "backoff_max", "crash_loop_restarts",
                                        "crash_loop_window", NULL};
    if (!v)
        return 0;
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, "restart", "restart must be an object");
    if (proto_check_fields(v, "restart", known, err) < 0 ||
        probe_duration(v, "restart", "backoff", 0, DAY_MS, &s->backoff_ms, err) < 0 ||
        probe_duration(v, "restart", "backoff_max", 0, DAY_MS, &s->backoff_max_ms, err) < 0 ||
        probe_duration(v, "restart", "crash_loop_window", 1000, 7 * DAY_MS,
                       &s->crash_loop_window_ms, err) < 0)
        return -EINVAL;
    const json_t *n = json_object_get(v, "crash_loop_restarts");
    int64_t k = s->crash_loop_restarts;
    if (n && proto_get_int(n, "restart.crash_loop_restarts", 1, 1000, &k, err) < 0)
        return -EINVAL;
    s->crash_loop_restarts = (int)k;
    if (s->backoff_max_ms < s->backoff_ms)
        return proto_errorf(err, 400, NULL, "restart.backoff_max",
                            "restart.backoff_max must be at least restart.backoff");
    return 0;
}

static int parse_update(const json_t *v, struct proto_service *s, struct proto_error *err)
{
    static const char *const known[] = {"deadline", NULL};
    if (!v)
        return 0;
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, "update", "update must be an object");
    if (proto_check_fields(v, "update", known, err) < 0 ||
        probe_duration(v, "update", "deadline", 1000, DAY_MS, &s->update_deadline_ms, err) < 0)
        return -EINVAL;
    return 0;
}

/* The job spec is read by its own parser; a service's replicas are of class `service`. */
static int parse_job(const json_t *v, int64_t now_ms, struct proto_service *s,
                     struct proto_error *err)
{
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, "job", "job must be an object (a job spec)");
    struct proto_jobspec js;
    if (proto_jobspec_parse(v, now_ms, &js, err) < 0) {
        char f[sizeof(err->field)];
        snprintf(f, sizeof(f), "job%s%s", err->field[0] ? "." : "", err->field);
        str_copy(err->field, sizeof(err->field), f);
        return -EINVAL;
    }
    int rc = 0;
    if (js.class_name[0] && strcmp(js.class_name, "service") != 0)
        rc = proto_errorf(err, 400, NULL, "job.class",
                          "a service's replicas are of class service, not '%s'", js.class_name);
    else if (js.array[0])
        rc = proto_errorf(err, 400, NULL, "job.array", "a replica is one job, not an array");
    else if (js.ndeps)
        rc = proto_errorf(err, 400, NULL, "job.deps", "a replica depends on no job");
    proto_jobspec_release(&js);
    if (rc == 0 && !(s->job = json_deep_copy(v)))
        rc = proto_errorf(err, 500, NULL, NULL, "out of memory");
    return rc;
}

int proto_service_parse(const json_t *body, int64_t now_ms, struct proto_service *out,
                        struct proto_error *err)
{
    static const char *const known[] = {"name",   "project", "replicas", "job",
                                        "probes", "restart", "update",   NULL};
    proto_service_init(out);
    int64_t n = out->replicas;
    const json_t *v;
    if (!json_is_object(body)) {
        proto_errorf(err, 400, NULL, NULL, "a service spec must be a JSON object");
        goto fail;
    }
    if (proto_check_fields(body, "", known, err) < 0 ||
        proto_get_name(json_object_get(body, "name"), "name", out->name, err) < 0)
        goto fail;
    if ((v = json_object_get(body, "project")) &&
        proto_get_name(v, "project", out->project, err) < 0)
        goto fail;
    if ((v = json_object_get(body, "replicas")) &&
        proto_get_int(v, "replicas", 0, PROTO_SERVICE_MAX_REPLICAS, &n, err) < 0)
        goto fail;
    out->replicas = (int)n;
    if (parse_job(json_object_get(body, "job"), now_ms, out, err) < 0 ||
        parse_probes(json_object_get(body, "probes"), out, err) < 0 ||
        parse_restart(json_object_get(body, "restart"), out, err) < 0 ||
        parse_update(json_object_get(body, "update"), out, err) < 0)
        goto fail;
    return 0;
fail:
    proto_service_release(out);
    return -EINVAL;
}

int proto_service_parse_text(const char *text, size_t len, int64_t now_ms,
                             struct proto_service *out, struct proto_error *err)
{
    json_error_t je;
    json_t *body = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!body) {
        proto_service_init(out);
        return proto_errorf(err, 400, NULL, NULL, "invalid JSON: %s", je.text);
    }
    int rc = proto_service_parse(body, now_ms, out, err);
    json_decref(body);
    return rc;
}

json_t *proto_service_to_json(const struct proto_service *s)
{
    json_t *o = json_pack("{s:s,s:i,s:O}", "name", s->name, "replicas", s->replicas, "job",
                          s->job ? s->job : json_null());
    if (!o)
        return NULL;
    if (s->project[0])
        json_object_set_new(o, "project", json_string(s->project));
    json_t *probes = json_object();
    json_t *l = proto_probe_to_json(&s->liveness), *r = proto_probe_to_json(&s->readiness);
    if (l)
        json_object_set_new(probes, "liveness", l);
    if (r)
        json_object_set_new(probes, "readiness", r);
    json_object_set_new(o, "probes", probes);
    json_object_set_new(o, "restart",
                        json_pack("{s:o,s:o,s:i,s:o}", "backoff", dur(s->backoff_ms), "backoff_max",
                                  dur(s->backoff_max_ms), "crash_loop_restarts",
                                  s->crash_loop_restarts, "crash_loop_window",
                                  dur(s->crash_loop_window_ms)));
    json_object_set_new(o, "update", json_pack("{s:o}", "deadline", dur(s->update_deadline_ms)));
    return o;
}
