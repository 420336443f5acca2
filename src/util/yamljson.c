/*
 * yamljson.c - YAML text to a jansson value through libyaml's event parser (see
 * yamljson.h). One document; mappings become objects (keys must be scalars, no
 * duplicates), sequences arrays. Plain scalars are typed with the YAML 1.2 core schema
 * restricted to decimal numbers: null/~/empty, true/false, integers (no leading zeros,
 * must fit in int64), floats; everything else, and every quoted scalar, is a string.
 * Anchors, aliases and tags other than !!str are refused; nesting is capped at 64,
 * input at 4 MiB and nodes at 1M so a hostile file cannot take the daemon's memory.
 */
#define _POSIX_C_SOURCE 200809L
#include "util/yamljson.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define YJ_MAX_DEPTH 64
#define YJ_MAX_BYTES (4u << 20)
#define YJ_MAX_NODES 1000000

struct yj_frame {
    json_t *node; /* object or array being filled (owned by the stack) */
    char *key;    /* pending key of an object, or NULL */
};

struct yj {
    yaml_parser_t parser;
    struct yj_frame stack[YJ_MAX_DEPTH + 1];
    int depth;
    json_t *root;
    size_t nodes;
    int docs;
    char *err;
    size_t errlen;
    bool failed; /* a message was written (or would have been) */
};

static void yj_fail(struct yj *y, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void yj_fail(struct yj *y, size_t line, const char *fmt, ...)
{
    va_list ap;
    int n;

    y->failed = true;
    if (!y->err || y->errlen == 0)
        return;
    n = snprintf(y->err, y->errlen, "line %zu: ", line);
    if (n < 0 || (size_t)n >= y->errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(y->err + n, y->errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

static size_t line_of(const yaml_event_t *ev)
{
    return ev->start_mark.line + 1;
}

/* Line of a byte offset, for reader errors that carry no mark. */
static size_t line_at_offset(const char *text, size_t len, size_t off)
{
    size_t line = 1, i;

    for (i = 0; i < off && i < len; i++)
        if (text[i] == '\n')
            line++;
    return line;
}

static bool match_int(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    if (s[0] == '0')
        return s[1] == '\0';
    if (*s < '1' || *s > '9')
        return false;
    while (*s >= '0' && *s <= '9')
        s++;
    return *s == '\0';
}

static bool skip_digits(const char **p)
{
    const char *s = *p;

    while (**p >= '0' && **p <= '9')
        (*p)++;
    return *p != s;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool match_float(const char *s)
{
    bool whole, frac = false;

    if (*s == '-' || *s == '+')
        s++;
    if (s[0] == '0' && s[1] >= '0' && s[1] <= '9')
        return false; /* "007.5": leading zeros stay strings, as for integers */
    whole = skip_digits(&s);
    if (*s == '.') {
        s++;
        frac = skip_digits(&s);
    }
    if (!whole && !frac)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        if (!skip_digits(&s))
            return false;
    }
    return *s == '\0';
}

static bool is_null_word(const char *s)
{
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

/* A new value for a plain scalar, or NULL with the error set. */
static json_t *plain_scalar(struct yj *y, const char *s, size_t len, size_t line)
{
    long long v;
    double d;
    char *end;

    if (strlen(s) != len)
        return json_stringn(s, len); /* has a NUL: cannot be a number */
    if (is_null_word(s))
        return json_null();
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        return json_true();
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        return json_false();
    if (match_int(s)) {
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno == ERANGE) {
            yj_fail(y, line, "integer '%.40s' out of range", s);
            return NULL;
        }
        return json_integer(v);
    }
    if (match_float(s)) {
        d = strtod(s, &end);
        if (!isfinite(d)) {
            yj_fail(y, line, "number '%.40s' out of range", s);
            return NULL;
        }
        return json_real(d);
    }
    return json_stringn(s, len);
}

static json_t *scalar_value(struct yj *y, const yaml_event_t *ev)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    json_t *v;

    if (tag && strcmp(tag, YAML_STR_TAG) != 0) {
        yj_fail(y, line_of(ev), "unsupported tag '%.60s'", tag);
        return NULL;
    }
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !tag)
        v = plain_scalar(y, s, len, line_of(ev));
    else
        v = json_stringn(s, len);
    if (!v && !y->failed)
        yj_fail(y, line_of(ev), "string is not valid UTF-8");
    return v;
}

/* Put v (stolen) where the parser is: the root, an array, or an object's pending key.
 * Collections are then pushed by the caller. */
static int yj_place(struct yj *y, json_t *v, size_t line)
{
    struct yj_frame *f;
    int rc;

    if (++y->nodes > YJ_MAX_NODES) {
        json_decref(v);
        yj_fail(y, line, "more than %d nodes", YJ_MAX_NODES);
        return -1;
    }
    if (y->depth == 0) {
        y->root = v;
        return 0;
    }
    f = &y->stack[y->depth - 1];
    if (json_is_array(f->node)) {
        rc = json_array_append_new(f->node, v);
    } else {
        rc = json_object_set_new(f->node, f->key, v);
        free(f->key);
        f->key = NULL;
    }
    if (rc != 0)
        yj_fail(y, line, "out of memory");
    return rc == 0 ? 0 : -1;
}

/* A scalar inside an object with no pending key is a key. */
static int yj_key(struct yj *y, const yaml_event_t *ev)
{
    struct yj_frame *f = &y->stack[y->depth - 1];
    const char *s = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;

    if (ev->data.scalar.tag && strcmp((const char *)ev->data.scalar.tag, YAML_STR_TAG)) {
        yj_fail(y, line_of(ev), "unsupported tag '%.60s'", (const char *)ev->data.scalar.tag);
        return -1;
    }
    if (strlen(s) != len) {
        yj_fail(y, line_of(ev), "key contains a NUL byte");
        return -1;
    }
    if (json_object_get(f->node, s)) {
        yj_fail(y, line_of(ev), "duplicate key '%.60s'", s);
        return -1;
    }
    f->key = strdup(s);
    if (!f->key) {
        yj_fail(y, line_of(ev), "out of memory");
        return -1;
    }
    return 0;
}

static bool expecting_key(const struct yj *y)
{
    const struct yj_frame *f;

    if (y->depth == 0)
        return false;
    f = &y->stack[y->depth - 1];
    return json_is_object(f->node) && !f->key;
}

static int yj_push(struct yj *y, const yaml_event_t *ev, json_t *node)
{
    if (!node) {
        yj_fail(y, line_of(ev), "out of memory");
        return -1;
    }
    if (y->depth >= YJ_MAX_DEPTH) {
        json_decref(node);
        yj_fail(y, line_of(ev), "nesting deeper than %d levels", YJ_MAX_DEPTH);
        return -1;
    }
    json_incref(node); /* one reference for the parent, one for the stack */
    if (yj_place(y, node, line_of(ev)) < 0) {
        json_decref(node);
        return -1;
    }
    y->stack[y->depth].node = node;
    y->stack[y->depth].key = NULL;
    y->depth++;
    return 0;
}

static void yj_pop(struct yj *y)
{
    struct yj_frame *f = &y->stack[--y->depth];

    json_decref(f->node);
    free(f->key);
    f->key = NULL;
}

static const char *anchor_of(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        return (const char *)ev->data.scalar.anchor;
    case YAML_SEQUENCE_START_EVENT:
        return (const char *)ev->data.sequence_start.anchor;
    case YAML_MAPPING_START_EVENT:
        return (const char *)ev->data.mapping_start.anchor;
    default:
        return NULL;
    }
}

static const char *collection_tag(const yaml_event_t *ev)
{
    if (ev->type == YAML_SEQUENCE_START_EVENT)
        return (const char *)ev->data.sequence_start.tag;
    if (ev->type == YAML_MAPPING_START_EVENT)
        return (const char *)ev->data.mapping_start.tag;
    return NULL;
}

/* One event; 1 when the stream ended, 0 to continue, -1 on error. */
static int yj_event(struct yj *y, const yaml_event_t *ev)
{
    json_t *v;

    if (anchor_of(ev) || ev->type == YAML_ALIAS_EVENT) {
        yj_fail(y, line_of(ev), "anchors and aliases are not allowed");
        return -1;
    }
    if (collection_tag(ev)) {
        yj_fail(y, line_of(ev), "unsupported tag '%.60s'", collection_tag(ev));
        return -1;
    }
    if ((ev->type == YAML_MAPPING_START_EVENT || ev->type == YAML_SEQUENCE_START_EVENT) &&
        expecting_key(y)) {
        yj_fail(y, line_of(ev), "mapping keys must be scalars");
        return -1;
    }
    switch (ev->type) {
    case YAML_STREAM_END_EVENT:
        return 1;
    case YAML_DOCUMENT_START_EVENT:
        if (++y->docs > 1) {
            yj_fail(y, line_of(ev), "more than one document");
            return -1;
        }
        return 0;
    case YAML_MAPPING_START_EVENT:
        return yj_push(y, ev, json_object());
    case YAML_SEQUENCE_START_EVENT:
        return yj_push(y, ev, json_array());
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        yj_pop(y);
        return 0;
    case YAML_SCALAR_EVENT:
        if (expecting_key(y))
            return yj_key(y, ev);
        v = scalar_value(y, ev);
        return v ? yj_place(y, v, line_of(ev)) : -1;
    default:
        return 0;
    }
}

static void yj_parser_error(struct yj *y, const char *text, size_t len)
{
    const yaml_parser_t *p = &y->parser;
    const char *problem = p->problem ? p->problem : "invalid YAML";
    size_t line = p->problem_mark.line + 1;

    if (p->error == YAML_READER_ERROR)
        line = line_at_offset(text, len, p->problem_offset);
    if (p->error == YAML_MEMORY_ERROR)
        problem = "out of memory";
    if (p->context)
        yj_fail(y, line, "%s %s", problem, p->context);
    else
        yj_fail(y, line, "%s", problem);
}

static json_t *yj_run(struct yj *y, const char *text, size_t len)
{
    yaml_event_t ev;
    int rc = 0;

    while (rc == 0) {
        if (!yaml_parser_parse(&y->parser, &ev)) {
            yj_parser_error(y, text, len);
            rc = -1;
            break;
        }
        rc = yj_event(y, &ev);
        yaml_event_delete(&ev);
    }
    while (y->depth > 0)
        yj_pop(y);
    if (rc < 0) {
        json_decref(y->root);
        return NULL;
    }
    return y->root ? y->root : json_null();
}

json_t *yaml_to_json(const char *text, size_t len, char *err, size_t errlen)
{
    struct yj y;
    json_t *root;

    memset(&y, 0, sizeof(y));
    y.err = err;
    y.errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
    if (len > YJ_MAX_BYTES) {
        if (err && errlen)
            snprintf(err, errlen, "document larger than %u MiB", YJ_MAX_BYTES >> 20);
        return NULL;
    }
    if (!yaml_parser_initialize(&y.parser)) {
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)text, len);
    yaml_parser_set_encoding(&y.parser, YAML_UTF8_ENCODING);
    root = yj_run(&y, text, len);
    yaml_parser_delete(&y.parser);
    return root;
}

/* Reads at most YJ_MAX_BYTES + 1 bytes of fd into a new buffer. */
static int read_all(int fd, char **out, size_t *out_len)
{
    size_t cap = YJ_MAX_BYTES + 1, len = 0;
    char *buf = malloc(cap);
    ssize_t n;

    if (!buf)
        return -ENOMEM;
    while (len < cap) {
        n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            return -e;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    *out = buf;
    *out_len = len;
    return 0;
}

json_t *yaml_file_to_json(const char *path, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    json_t *v;
    int fd, rc;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
    } else {
        rc = read_all(fd, &buf, &len);
        close(fd);
    }
    if (rc < 0) {
        if (err && errlen)
            snprintf(err, errlen, "cannot read '%s': %s", path, strerror(-rc));
        return NULL;
    }
    if (len > YJ_MAX_BYTES) {
        free(buf);
        if (err && errlen)
            snprintf(err, errlen, "cannot read '%s': larger than %u MiB", path, YJ_MAX_BYTES >> 20);
        return NULL;
    }
    v = yaml_to_json(buf, len, err, errlen);
    free(buf);
    return v;
}
