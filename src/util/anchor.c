/*
 * anchor.c - the audit anchor's one reader and one writer (anchor.h).
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/anchor.h"
#include "util/str.h"

bool audit_hash_valid(const char *s)
{
    return s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

static int fail(char *why, size_t wlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t wlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, wlen, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

/* A whole number >= min named key (absent: -EINVAL unless optional). */
static int get_int(const json_t *o, const char *key, int64_t min, bool optional, int64_t *out,
                   char *why, size_t wlen)
{
    json_t *v = json_object_get(o, key);
    if (!v && optional)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < min)
        return fail(why, wlen, "%s: want a whole number of at least %lld", key, (long long)min);
    *out = (int64_t)json_integer_value(v);
    return 0;
}

int audit_anchor_parse(const char *text, size_t len, struct audit_anchor *out, char *why,
                       size_t wlen)
{
    json_error_t je;
    const char *key;
    json_t *v;
    memset(out, 0, sizeof(*out));
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return fail(why, wlen, "not JSON: %s", je.text);
    int rc = json_is_object(o) ? 0 : fail(why, wlen, "not a JSON object");
    json_object_foreach(o, key, v) {
        if (rc == 0 && strcmp(key, "id") && strcmp(key, "hash") && strcmp(key, "chain_from") &&
            strcmp(key, "time_ms"))
            rc = fail(why, wlen, "unknown field '%.40s'", key);
    }
    const char *hash = json_string_value(json_object_get(o, "hash"));
    if (rc == 0)
        rc = get_int(o, "id", 1, false, &out->id, why, wlen);
    if (rc == 0)
        rc = get_int(o, "chain_from", 1, false, &out->chain_from, why, wlen);
    if (rc == 0)
        rc = get_int(o, "time_ms", 0, true, &out->time_ms, why, wlen);
    if (rc == 0 && !audit_hash_valid(hash))
        rc = fail(why, wlen, "hash: want 64 lowercase hex digits");
    if (rc == 0 && out->chain_from > out->id)
        rc = fail(why, wlen, "chain_from: past id");
    if (rc == 0)
        str_copy(out->hash, sizeof(out->hash), hash);
    json_decref(o);
    return rc;
}

char *audit_anchor_text(const struct audit_anchor *a)
{
    json_t *o =
        json_pack("{s:I,s:s,s:I,s:I}", "id", (json_int_t)a->id, "hash", a->hash, "chain_from",
                  (json_int_t)a->chain_from, "time_ms", (json_int_t)a->time_ms);
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!body)
        return NULL;
    size_t n = strlen(body);
    char *text = realloc(body, n + 2);
    if (!text) {
        free(body);
        return NULL;
    }
    text[n] = '\n';
    text[n + 1] = '\0';
    return text;
}
