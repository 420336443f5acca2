/*
 * etag.c - entity tags written and If-None-Match read (etag.h).
 */
#include "util/etag.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void etag_format(char *out, size_t len, uint64_t epoch, uint64_t version, uint64_t salt)
{
    snprintf(out, len, "W/\"%" PRIx64 "-%" PRIx64 "-%" PRIx64 "\"", epoch, version, salt);
}

uint64_t etag_hash(uint64_t h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
        h = (h ^ *p) * UINT64_C(1099511628211);
    return (h ^ 0xff) * UINT64_C(1099511628211);
}

/* The opaque part of a tag, its quotes included: skips W/. NULL when `t` is no tag. */
static const char *opaque(const char *t, size_t *n)
{
    if (t[0] == 'W' && t[1] == '/')
        t += 2;
    if (t[0] != '"')
        return NULL;
    const char *end = strchr(t + 1, '"');
    if (!end)
        return NULL;
    *n = (size_t)(end - t) + 1;
    return t;
}

bool etag_match(const char *inm, const char *tag)
{
    size_t tn;
    const char *want = tag ? opaque(tag, &tn) : NULL;
    if (!inm || !want || strlen(inm) > ETAG_HEADER_MAX)
        return false;
    const char *p = inm;
    for (;;) {
        p += strspn(p, " \t,");
        if (!*p)
            return false;
        if (*p == '*') /* "*" alone: any current representation */
            return p[1] == '\0' || strchr(", \t", p[1]) != NULL;
        size_t n;
        const char *o = opaque(p, &n);
        if (!o)
            return false;
        p = o + n;
        if (*p && !strchr(", \t", *p)) /* glued to what follows: no tag */
            return false;
        if (n == tn && memcmp(o, want, n) == 0)
            return true;
    }
}
