/*
 * common.c - the error object of docs/api.md (protocol/error.h) and the small typed getters every
 * protocol parser uses, each naming the JSON path of the value it refuses.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/proto.h"
#include "util/parse.h"
#include "util/str.h"

int proto_errorf(struct proto_error *e, int status, const char *code, const char *field,
                 const char *fmt, ...)
{
    if (!e)
        return -EINVAL;
    va_list ap;
    e->status = status;
    str_copy(e->code, sizeof(e->code), code ? code : proto_status_code(status));
    str_copy(e->field, sizeof(e->field), field ? field : "");
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
    return -EINVAL;
}

const char *proto_status_code(int status)
{
    switch (status) {
    case 400:
        return "invalid_argument";
    case 401:
        return "unauthenticated";
    case 403:
        return "forbidden";
    case 404:
        return "not_found";
    case 405:
        return "method_not_allowed";
    case 409:
        return "conflict";
    case 413:
        return "payload_too_large";
    case 415:
        return "unsupported_media_type";
    case 429:
        return "quota_exceeded";
    case 503:
        return "unavailable";
    default:
        return "internal";
    }
}

json_t *proto_error_json(const struct proto_error *e)
{
    json_t *inner = json_object();
    json_object_set_new(inner, "code",
                        json_string(e->code[0] ? e->code : proto_status_code(e->status)));
    json_object_set_new(inner, "message", json_string(e->message));
    if (e->field[0])
        json_object_set_new(inner, "field", json_string(e->field));
    json_t *o = json_object();
    json_object_set_new(o, "error", inner);
    return o;
}

int proto_check_fields(const json_t *obj, const char *path, const char *const *known,
                       struct proto_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        bool ok = false;
        for (size_t i = 0; known[i]; i++)
            if (strcmp(known[i], key) == 0) {
                ok = true;
                break;
            }
        if (!ok) {
            char f[128];
            if (path && path[0])
                snprintf(f, sizeof(f), "%s.%s", path, key);
            else
                snprintf(f, sizeof(f), "%s", key);
            return proto_errorf(err, 400, NULL, f, "unknown field '%s'", key);
        }
    }
    return 0;
}

int proto_member_text(const json_t *o, const char *key, const char *path, bool required, char *out,
                      size_t cap, struct proto_error *err)
{
    char f[160];
    snprintf(f, sizeof(f), "%s.%s", path, key);
    json_t *v = json_object_get(o, key);
    if (!v)
        return required ? proto_errorf(err, 400, NULL, f, "%s is required", f) : 0;
    const char *s = json_string_value(v);
    size_t len = s ? json_string_length(v) : 0;
    if (!s || len == 0 || len >= cap || strlen(s) != len)
        return proto_errorf(err, 400, NULL, f, "%s must be a string of 1 to %zu characters", f,
                            cap - 1);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return proto_errorf(err, 400, NULL, f, "%s must be printable", f);
    str_copy(out, cap, s);
    return 0;
}

int proto_member_flag(const json_t *o, const char *key, const char *path, bool *out,
                      struct proto_error *err)
{
    char f[160];
    snprintf(f, sizeof(f), "%s.%s", path, key);
    json_t *v = json_object_get(o, key);
    return v ? proto_get_bool(v, f, out, err) : 0;
}

int proto_list_parse(const json_t *v, const char *field, const char *what, size_t max, size_t size,
                     proto_elem_parse_fn parse, proto_list_release_fn release, void **out,
                     size_t *n, struct proto_error *err)
{
    *out = NULL;
    *n = 0;
    if (!json_is_array(v) || json_array_size(v) > max)
        return proto_errorf(err, 400, NULL, field, "%s must be a list of at most %zu %s", field,
                            max, what);
    char *list = calloc(json_array_size(v) + 1, size);
    if (!list)
        return proto_errorf(err, 500, NULL, field, "out of memory");
    for (size_t i = 0; i < json_array_size(v); i++) {
        char path[64];
        snprintf(path, sizeof(path), "%s[%zu]", field, i);
        int rc = parse(json_array_get(v, i), path, list + i * size, err);
        if (rc < 0) {
            if (release)
                release(list, i + 1);
            else
                free(list);
            return rc;
        }
    }
    *out = list;
    *n = json_array_size(v);
    return 0;
}

int proto_get_int(const json_t *v, const char *field, int64_t min, int64_t max, int64_t *out,
                  struct proto_error *err)
{
    if (!json_is_integer(v))
        return proto_errorf(err, 400, NULL, field, "%s must be an integer", field);
    json_int_t n = json_integer_value(v);
    if (n < min || n > max)
        return proto_errorf(err, 400, NULL, field, "%s must be between %lld and %lld", field,
                            (long long)min, (long long)max);
    *out = n;
    return 0;
}

int proto_get_bool(const json_t *v, const char *field, bool *out, struct proto_error *err)
{
    if (!json_is_boolean(v))
        return proto_errorf(err, 400, NULL, field, "%s must be true or false", field);
    *out = json_is_true(v);
    return 0;
}

int proto_get_name(const json_t *v, const char *field, char *out, struct proto_error *err)
{
    if (!json_is_string(v))
        return proto_errorf(err, 400, NULL, field, "%s must be a string", field);
    const char *s = json_string_value(v);
    if (!str_is_name(s) || strlen(s) >= PROTO_NAME_MAX)
        return proto_errorf(err, 400, NULL, field,
                            "%s: invalid name (1-63 characters of A-Z a-z 0-9 . _ -)", field);
    str_copy(out, PROTO_NAME_MAX, s);
    return 0;
}

int proto_get_duration(const json_t *v, const char *field, int64_t max_ms, int64_t *out,
                       struct proto_error *err)
{
    int64_t ms;
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n < 0 || n > max_ms / 1000)
            return proto_errorf(err, 400, NULL, field, "%s out of range", field);
        ms = (int64_t)n * 1000;
    } else if (json_is_string(v)) {
        if (parse_duration_ms(json_string_value(v), &ms) < 0)
            return proto_errorf(err, 400, NULL, field,
                                "%s: invalid duration '%.64s' (e.g. \"90s\", \"4h\", \"1h30m\")",
                                field, json_string_value(v));
        if (ms > max_ms)
            return proto_errorf(err, 400, NULL, field, "%s out of range", field);
    } else {
        return proto_errorf(err, 400, NULL, field,
                            "%s must be a duration string or integer seconds", field);
    }
    *out = ms;
    return 0;
}

int proto_get_size_mb(const json_t *v, const char *field, int64_t *out, struct proto_error *err)
{
    int64_t mb;
    if (json_is_integer(v)) {
        mb = json_integer_value(v);
        if (mb < 0 || mb > PROTO_MAX_MEM_MB)
            return proto_errorf(err, 400, NULL, field, "%s out of range", field);
    } else if (json_is_string(v)) {
        if (parse_size_mb(json_string_value(v), &mb) < 0)
            return proto_errorf(err, 400, NULL, field,
                                "%s: invalid size '%.64s' (e.g. \"512M\", \"64G\")", field,
                                json_string_value(v));
        if (mb < 0 || mb > PROTO_MAX_MEM_MB)
            return proto_errorf(err, 400, NULL, field, "%s out of range", field);
    } else {
        return proto_errorf(err, 400, NULL, field, "%s must be a size string or integer MiB",
                            field);
    }
    *out = mb;
    return 0;
}

bool proto_exported_function_name(const char *name)
{
    size_t n = strlen(name);
    if (n < 13 || n > 255 || strncmp(name, "BASH_FUNC_", 10) || strcmp(name + n - 2, "%%"))
        return false;
    for (size_t i = 10; i < n - 2; i++) {
        char c = name[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == ':' || c == '-'))
            return false;
    }
    return true;
}
