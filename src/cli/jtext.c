/*
 * jtext.c - JSON text read in one pass, and re-laid out, without a tree (jtext.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "cli/jtext.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/fmt.h"

void jscan_init(struct jscan *s, const char *text, size_t n)
{
    s->p = text;
    s->end = text + n;
}

static void skip_ws(struct jscan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

int jscan_peek(struct jscan *s)
{
    skip_ws(s);
    return s->p < s->end ? (unsigned char)*s->p : -1;
}

bool jscan_take(struct jscan *s, char c)
{
    if (jscan_peek(s) != (unsigned char)c)
        return false;
    s->p++;
    return true;
}

/* The length of the UTF-8 sequence at p (at most `left` bytes: 2 to 4) when it is one
 * json_loadb takes, else 0. */
static int utf8_len(const unsigned char *p, size_t left)
{
    uint32_t cp;
    return fmt_utf8_seq(p, left, &cp);
}

static int hex4(const char *p, const char *end, unsigned *v)
{
    *v = 0;
    if (end - p < 4)
        return -EPROTO;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16)
            return -EPROTO;
        *v = *v << 4 | d;
    }
    return 0;
}

static void put_utf8(struct dbuf *out, unsigned cp)
{
    unsigned char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xc0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xe0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xf0 | cp >> 18);
        b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        b[3] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    dbuf_append(out, b, n);
}

/* A string at s->p (its '"'), decoded into out when out is not NULL. */
static int scan_string(struct jscan *s, struct dbuf *out)
{
    const char *p = s->p, *end = s->end;
    if (p >= end || *p != '"')
        return -EPROTO;
    p++;
    for (;;) {
        const char *run = p;
        while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20 &&
               (unsigned char)*p < 0x80)
            p++;
        if (out && p > run)
            dbuf_append(out, run, (size_t)(p - run));
        if (p >= end)
            return -EPROTO;
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            break;
        if (c < 0x20)
            return -EPROTO;
        if (c >= 0x80) {
            int n = utf8_len((const unsigned char *)p, (size_t)(end - p));
            if (n == 0)
                return -EPROTO;
            if (out)
                dbuf_append(out, p, (size_t)n);
            p += n;
            continue;
        }
        /* an escape */
        if (++p >= end)
            return -EPROTO;
        char e = *p++, plain;
        switch (e) {
        case '"':
        case '\\':
        case '/':
            plain = e;
            break;
        case 'b':
            plain = '\b';
            break;
        case 'f':
            plain = '\f';
            break;
        case 'n':
            plain = '\n';
            break;
        case 'r':
            plain = '\r';
            break;
        case 't':
            plain = '\t';
            break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(p, end, &cp) < 0)
                return -EPROTO;
            p += 4;
            if (cp >= 0xdc00 && cp <= 0xdfff)
                return -EPROTO; /* a low surrogate alone */
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, end, &lo) < 0 ||
                    lo < 0xdc00 || lo > 0xdfff)
                    return -EPROTO;
                p += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (cp == 0)
                return -EPROTO; /* json_loadb refuses NUL in a string */
            if (out)
                put_utf8(out, cp);
            continue;
        }
        default:
            return -EPROTO;
        }
        if (out)
            dbuf_append(out, &plain, 1);
    }
    s->p = p + 1;
    if (out)
        dbuf_append(out, "", 1);
    return out && out->failed ? -ENOMEM : 0;
}

int jscan_string(struct jscan *s, struct dbuf *out)
{
    skip_ws(s);
    return scan_string(s, out);
}

/* The extent of a number at s->p: its length, *real when it has a fraction or an
 * exponent; 0 when it is not one. */
static size_t number_len(const char *p, const char *end, bool *real)
{
    const char *q = p;
    *real = false;
    if (q < end && *q == '-')
        q++;
    if (q >= end || *q < '0' || *q > '9')
        return 0;
    if (*q == '0')
        q++;
    else
        while (q < end && *q >= '0' && *q <= '9')
            q++;
    if (q < end && *q == '.') {
        *real = true;
        if (++q >= end || *q < '0' || *q > '9')
            return 0;
        while (q < end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        *real = true;
        if (++q < end && (*q == '+' || *q == '-'))
            q++;
        if (q >= end || *q < '0' || *q > '9')
            return 0;
        while (q < end && *q >= '0' && *q <= '9')
            q++;
    }
    return (size_t)(q - p);
}

/* A number's text as json_loadb reads it: an integer within int64, a finite real. */
static int number_value(const char *p, size_t n, int64_t *iv, double *dv, bool real)
{
    char tmp[512], *e;
    if (n >= sizeof(tmp))
        return -EPROTO;
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    errno = 0;
    if (!real && n <= 18) { /* (18 digits never overflow: no strtoll needed) */
        int64_t v = 0;
        for (size_t i = p[0] == '-'; i < n; i++)
            v = v * 10 + (p[i] - '0');
        *iv = p[0] == '-' ? -v : v;
        return 0;
    }
    if (!real) {
        long long v = strtoll(tmp, &e, 10);
        if (errno == ERANGE || *e)
            return -EPROTO;
        *iv = v;
        return 0;
    }
    double d = strtod(tmp, &e);
    if (*e || isinf(d) || isnan(d))
        return -EPROTO;
    *dv = d;
    return 0;
}

int jscan_number(struct jscan *s, int64_t *v, bool *integer)
{
    bool real;
    double d = 0;
    skip_ws(s);
    size_t n = number_len(s->p, s->end, &real);
    if (n == 0 || number_value(s->p, n, v, &d, real) < 0)
        return -EPROTO;
    if (real)
        *v = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
    *integer = !real;
    s->p += n;
    return 0;
}

static bool literal(struct jscan *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return false;
    s->p += n;
    return true;
}

static int skip_value(struct jscan *s, int depth)
{
    int c = jscan_peek(s);
    bool first = true, real;
    int64_t iv;
    double dv;
    switch (c) {
    case '"':
        return scan_string(s, NULL);
    case '{':
    case '[':
        if (depth >= JTEXT_DEPTH)
            return -EPROTO;
        s->p++;
        if (jscan_take(s, c == '{' ? '}' : ']'))
            return 0;
        for (;;) {
            if (!first && !jscan_take(s, ','))
                return jscan_take(s, c == '{' ? '}' : ']') ? 0 : -EPROTO;
            first = false;
            if (c == '{' && (jscan_string(s, NULL) < 0 || !jscan_take(s, ':')))
                return -EPROTO;
            if (skip_value(s, depth + 1) < 0)
                return -EPROTO;
        }
    case 't':
        return literal(s, "true") ? 0 : -EPROTO;
    case 'f':
        return literal(s, "false") ? 0 : -EPROTO;
    case 'n':
        return literal(s, "null") ? 0 : -EPROTO;
    default: {
        size_t n = number_len(s->p, s->end, &real);
        if (n == 0 || number_value(s->p, n, &iv, &dv, real) < 0)
            return -EPROTO;
        s->p += n;
        return 0;
    }
    }
}

int jscan_skip(struct jscan *s)
{
    return skip_value(s, 0);
}

int jscan_member(struct jscan *s, bool *first, struct dbuf *key)
{
    if (jscan_take(s, '}'))
        return 0;
    if (!*first && !jscan_take(s, ','))
        return -EPROTO;
    *first = false;
    dbuf_reset(key);
    if (jscan_string(s, key) < 0 || !jscan_take(s, ':'))
        return -EPROTO;
    return 1;
}

/* ------------------------------------------------------------------------------------ */
/* Re-laying out jansson's compact text as its JSON_INDENT(2) text                       */

/* Whether the string at p (its '"') is as json_dumps writes it: valid UTF-8, raw but for
 * '"', '\\' and the controls, which are \b \f \n \r \t or \u00XX (upper-case hex). Its
 * length with the quotes, or 0. */
static size_t canonical_string(const char *p, const char *end)
{
    const char *q = p + 1;
    for (;;) {
        while (q < end && (unsigned char)*q >= 0x20 && (unsigned char)*q < 0x80 && *q != '"' &&
               *q != '\\')
            q++;
        if (q >= end || (unsigned char)*q < 0x20)
            return 0;
        if (*q == '"')
            return (size_t)(q + 1 - p);
        if ((unsigned char)*q >= 0x80) {
            int n = utf8_len((const unsigned char *)q, (size_t)(end - q));
            if (n == 0)
                return 0;
            q += n;
            continue;
        }
        if (end - q < 2)
            return 0;
        switch (q[1]) {
        case '"':
        case '\\':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            q += 2;
            continue;
        case 'u': {
            unsigned cp;
            if (end - q < 6 || q[2] != '0' || q[3] != '0' || hex4(q + 2, end, &cp) < 0 || cp == 0 ||
                cp == '\b' || cp == '\f' || cp == '\n' || cp == '\r' || cp == '\t' || cp >= 0x20 ||
                (q[5] >= 'a' && q[5] <= 'f'))
                return 0;
            q += 6;
            continue;
        }
        default:
            return 0;
        }
    }
}

/* A real as json_dumps writes it: "%.17g", ".0" added when that has neither '.' nor an
 * exponent, the exponent without '+' and leading zeros. */
static void real_text(double d, char *buf, size_t len)
{
    snprintf(buf, len, "%.17g", d);
    if (!strchr(buf, '.') && !strchr(buf, 'e')) {
        size_t n = strlen(buf);
        if (n + 3 <= len)
            memcpy(buf + n, ".0", 3);
        return;
    }
    char *e = strchr(buf, 'e');
    if (!e)
        return;
    char *digits = e + 1, *from = digits;
    if (*from == '-')
        digits = ++from;
    else if (*from == '+')
        from++;
    while (*from == '0' && from[1])
        from++;
    memmove(digits, from, strlen(from) + 1);
}

/* The number at p as json_dumps writes it back: its length, or 0. */
static size_t canonical_number(const char *p, const char *end)
{
    bool real;
    int64_t iv;
    double dv;
    size_t n = number_len(p, end, &real);
    if (n == 0 || number_value(p, n, &iv, &dv, real) < 0)
        return 0;
    if (!real)
        return n == 2 && p[0] == '-' && p[1] == '0' ? 0 : n; /* "-0" is written "0" */
    char buf[64];
    real_text(dv, buf, sizeof(buf));
    return strlen(buf) == n && memcmp(buf, p, n) == 0 ? n : 0;
}

/* A key of an object being laid out, to find a key given twice */
struct keyref {
    uint32_t hash;
    uint32_t len;
    const char *at;
};

struct indent {
    const char *p, *end;
    struct dbuf *out;
    struct keyref *keys; /* the keys of the objects open, outermost first */
    size_t nkeys, akeys;
};

/* dbuf_append, inline while the buffer has room (a row is laid out a few bytes at a
 * time) */
static inline void put(struct dbuf *o, const char *p, size_t n)
{
    if (!o->failed && o->len + n + 1 <= o->alloc && o->len + n <= o->max) {
        memcpy(o->data + o->len, p, n);
        o->len += n;
        o->data[o->len] = '\0';
    } else {
        dbuf_append(o, p, n);
    }
}

static void newline(struct dbuf *out, int depth)
{
    static const char spaces[] = "\n                                                      ";
    int n = depth * 2;
    put(out, spaces, 1);
    while (n > 0) {
        int k = n < (int)sizeof(spaces) - 2 ? n : (int)sizeof(spaces) - 2;
        put(out, spaces + 1, (size_t)k);
        n -= k;
    }
}

static uint32_t hash_key(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

/* A key not yet seen in its object (the keys from `first` on): add it. */
static int new_key(struct indent *in, size_t first, const char *at, size_t n)
{
    uint32_t h = hash_key(at, n);
    for (size_t i = first; i < in->nkeys; i++)
        if (in->keys[i].hash == h && in->keys[i].len == n && memcmp(in->keys[i].at, at, n) == 0)
            return -EPROTO;
    if (in->nkeys == in->akeys) {
        size_t a = in->akeys ? in->akeys * 2 : 64;
        struct keyref *k = realloc(in->keys, a * sizeof(*k));
        if (!k)
            return -ENOMEM;
        in->keys = k;
        in->akeys = a;
    }
    in->keys[in->nkeys++] = (struct keyref){h, (uint32_t)n, at};
    return 0;
}

static int indent_value(struct indent *in, int depth)
{
    const char *p = in->p, *end = in->end;
    size_t n;
    if (p >= end)
        return -EPROTO;
    char c = *p;
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        if (depth >= JTEXT_DEPTH)
            return -EPROTO;
        if (p + 1 < end && p[1] == close) {
            put(in->out, p, 2);
            in->p = p + 2;
            return 0;
        }
        put(in->out, &c, 1);
        in->p = p + 1;
        size_t first = in->nkeys;
        for (;;) {
            newline(in->out, depth + 1);
            if (c == '{') {
                if (in->p >= end || *in->p != '"' || !(n = canonical_string(in->p, end)) ||
                    n > UINT32_MAX || new_key(in, first, in->p, n) < 0)
                    return -EPROTO;
                put(in->out, in->p, n);
                in->p += n;
                if (in->p >= end || *in->p != ':')
                    return -EPROTO;
                in->p++;
                put(in->out, ": ", 2);
            }
            if (indent_value(in, depth + 1) < 0)
                return -EPROTO;
            if (in->p < end && *in->p == ',') {
                put(in->out, ",", 1);
                in->p++;
                continue;
            }
            if (in->p < end && *in->p == close) {
                in->p++;
                in->nkeys = first;
                newline(in->out, depth);
                put(in->out, &close, 1);
                return 0;
            }
            return -EPROTO;
        }
    }
    if (c == '"')
        n = canonical_string(p, end);
    else if (c == 't')
        n = end - p >= 4 && !memcmp(p, "true", 4) ? 4 : 0;
    else if (c == 'f')
        n = end - p >= 5 && !memcmp(p, "false", 5) ? 5 : 0;
    else if (c == 'n')
        n = end - p >= 4 && !memcmp(p, "null", 4) ? 4 : 0;
    else
        n = canonical_number(p, end);
    if (n == 0)
        return -EPROTO;
    put(in->out, p, n);
    in->p = p + n;
    return 0;
}

int jtext_indent(const char *text, size_t n, int depth, struct dbuf *out)
{
    struct indent in = {text, text + n, out, NULL, 0, 0};
    size_t was = out->len;
    int rc = indent_value(&in, depth);
    free(in.keys);
    if (rc == 0 && in.p != in.end)
        rc = -EPROTO;
    if (rc == 0 && out->failed)
        rc = -ENOMEM;
    if (rc < 0 && !out->failed && out->len != was) {
        out->len = was;
        out->data[was] = '\0';
    }
    return rc;
}
