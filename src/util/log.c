/*
 * log.c - structured logs, one line per event (see log.h): text "ts=... level=info
 * event=x k=v" or one JSON object per line. Each line is built in memory and written
 * with one write(2) on an O_APPEND descriptor, so lines from several processes sharing
 * a file do not interleave. log_reopen only calls open/dup3/close and so may be called
 * from a SIGHUP handler. The state is process-wide: a process has one log.
 */
#define _GNU_SOURCE /* dup3 */
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/dbuf.h"
#include "util/parse.h"
#include "util/str.h"

#define LOG_LINE_MAX 65536

static struct {
    int fd;          /* 2, or our own descriptor on path */
    char path[4096]; /* "" = stderr */
    enum log_level level;
    enum log_format format;
} lg = {2, "", LOG_INFO, LOG_TEXT};

static const char *const level_names[] = {"debug", "info", "warn", "error"};

static int open_log_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);

    return fd < 0 ? -errno : fd;
}

int log_open(const char *path, enum log_level level, enum log_format format)
{
    int fd = 2;

    if (level < LOG_DEBUG || level > LOG_ERROR || (format != LOG_TEXT && format != LOG_JSON))
        return -EINVAL;
    if (path) {
        if (strlen(path) >= sizeof(lg.path))
            return -ENAMETOOLONG;
        fd = open_log_file(path);
        if (fd < 0)
            return fd;
    }
    log_close();
    lg.fd = fd;
    str_copy(lg.path, sizeof(lg.path), path ? path : "");
    lg.level = level;
    lg.format = format;
    return 0;
}

int log_reopen(void)
{
    int fd, saved = errno, rc = 0;

    if (lg.path[0] == '\0')
        return 0;
    fd = open(lg.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
        rc = -errno; /* keep writing to the old file */
    } else {
        if (dup3(fd, lg.fd, O_CLOEXEC) < 0)
            rc = -errno;
        close(fd);
    }
    errno = saved;
    return rc;
}

void log_close(void)
{
    if (lg.fd != 2)
        close(lg.fd);
    lg.fd = 2;
    lg.path[0] = '\0';
}

int log_level_parse(const char *s, enum log_level *out)
{
    size_t i;

    for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    if (strcasecmp(s, "warning") == 0) {
        *out = LOG_WARN;
        return 0;
    }
    return -EINVAL;
}

bool log_enabled(enum log_level level)
{
    return level >= lg.level;
}

char *log_quote(const char *s, char *buf, size_t len)
{
    size_t o = 0;

    if (len < 3) {
        if (len)
            buf[0] = '\0';
        return buf;
    }
    buf[o++] = '"';
    for (; *s && o + 2 < len; s++) {
        const char *esc = *s == '"' ? "\\\"" : *s == '\\' ? "\\\\" : *s == '\n' ? "\\n" : NULL;
        if (esc) {
            if (o + 3 >= len)
                break;
            buf[o++] = esc[0];
            buf[o++] = esc[1];
        } else {
            buf[o++] = (unsigned char)*s < 0x20 ? ' ' : *s;
        }
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

static void format_ts(char *buf, size_t len)
{
    int64_t ms = clock_now_ms();
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;

    gmtime_r(&sec, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* Appends s with control characters escaped, so one event stays one line. */
static void put_clean(struct dbuf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n')
            dbuf_puts(b, "\\n");
        else if (c < 0x20 || c == 0x7f)
            dbuf_printf(b, "\\x%02x", c);
        else
            dbuf_append(b, s, 1);
    }
}

/* A JSON string of [s, s+n); bytes that are not UTF-8 become '?'. */
static json_t *json_str_lossy(const char *s, size_t n)
{
    json_t *v = json_stringn(s, n);
    char *buf;
    size_t i;

    if (v)
        return v;
    buf = malloc(n ? n : 1);
    if (!buf)
        return NULL;
    for (i = 0; i < n; i++)
        buf[i] = (unsigned char)s[i] >= 0x80 ? '?' : s[i];
    v = json_stringn(buf, n);
    free(buf);
    return v;
}

/* Reads one value at *p (quoted with \" and \\ escapes, or up to a blank) into b. */
static bool read_value(const char **p, struct dbuf *b)
{
    const char *s = *p;
    bool quoted = *s == '"';

    if (quoted) {
        for (s++; *s && *s != '"'; s++) {
            if (*s == '\\' && s[1]) {
                s++;
                dbuf_append(b, *s == 'n' ? "\n" : s, 1);
            } else {
                dbuf_append(b, s, 1);
            }
        }
        if (*s == '"')
            s++;
    } else {
        for (; *s && *s != ' '; s++)
            dbuf_append(b, s, 1);
    }
    *p = s;
    return quoted;
}

static void json_add_field(json_t *obj, const char *key, size_t klen, struct dbuf *val, bool quoted)
{
    int kn = (int)(klen < 100 ? klen : 100);
    char k[128];
    int64_t iv;
    json_t *v;

    snprintf(k, sizeof(k), "%.*s", kn, key);
    /* the caller's fields never replace ours */
    if (!strcmp(k, "ts") || !strcmp(k, "level") || !strcmp(k, "event") || k[0] == '\0')
        snprintf(k, sizeof(k), "_%.*s", kn, key);
    if (!quoted && parse_int64(val->data, INT64_MIN, INT64_MAX, &iv) == 0)
        v = json_integer(iv);
    else
        v = json_str_lossy(val->data, val->len);
    if (v && json_object_set_new(obj, k, v) != 0) {
        v = json_str_lossy(k, strlen(k)); /* the key was not UTF-8 */
        if (v)
            json_object_set_new(obj, "_bad_key", v);
    }
}

/* "a=1 b=\"x y\" c" -> {"a": 1, "b": "x y", "c": true} */
static void json_add_fields(json_t *obj, const char *s)
{
    struct dbuf val;
    const char *key;
    size_t klen;

    dbuf_init(&val, LOG_LINE_MAX);
    while (*s) {
        while (*s == ' ')
            s++;
        if (!*s)
            break;
        key = s;
        while (*s && *s != '=' && *s != ' ')
            s++;
        klen = (size_t)(s - key);
        if (*s != '=') {
            json_object_set_new(obj, "_", json_str_lossy(key, klen));
            continue;
        }
        s++;
        dbuf_reset(&val);
        json_add_field(obj, key, klen, &val, read_value(&s, &val));
    }
    dbuf_release(&val);
}

static void build_json(struct dbuf *line, const char *ts, enum log_level level, const char *event,
                       const char *fields, bool truncated)
{
    json_t *obj = json_object();
    char *text;

    if (!obj)
        return;
    json_object_set_new(obj, "ts", json_string(ts));
    json_object_set_new(obj, "level", json_string(level_names[level]));
    json_object_set_new(obj, "event", json_str_lossy(event, strlen(event)));
    json_add_fields(obj, fields);
    if (truncated)
        json_object_set_new(obj, "_truncated", json_true());
    text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(obj);
    if (text) {
        dbuf_puts(line, text);
        free(text);
    }
}

static void write_all(int fd, const char *p, size_t n)
{
    ssize_t w;

    while (n > 0) {
        w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* nowhere left to report it */
        p += w;
        n -= (size_t)w;
    }
}

void log_event(enum log_level level, const char *event, const char *fields, ...)
{
    char f[16384], ts[128];
    struct dbuf line;
    va_list ap;
    int n, saved = errno;

    if (level < LOG_DEBUG || level > LOG_ERROR || !log_enabled(level))
        return;
    va_start(ap, fields);
    n = vsnprintf(f, sizeof(f), fields, ap);
    va_end(ap);
    if (n < 0)
        f[0] = '\0';
    format_ts(ts, sizeof(ts));
    dbuf_init(&line, LOG_LINE_MAX);
    if (lg.format == LOG_JSON) {
        build_json(&line, ts, level, event, f, n >= (int)sizeof(f));
    } else {
        dbuf_printf(&line, "ts=%s level=%s event=", ts, level_names[level]);
        put_clean(&line, event);
        if (f[0]) {
            dbuf_puts(&line, " ");
            put_clean(&line, f);
        }
        if (n >= (int)sizeof(f))
            dbuf_puts(&line, " _truncated=true");
    }
    if (!line.failed && dbuf_puts(&line, "\n") == 0)
        write_all(lg.fd, line.data, line.len);
    dbuf_release(&line);
    errno = saved;
}
