/*
 * log.h - structured logs: one line per event, "ts=... level=info event=job_started
 * job=12 node=gpu03" (text) or the same as a JSON object (json). Written to stderr or a
 * file (reopened on SIGHUP through log_reopen).
 */
#ifndef DOCKET_UTIL_LOG_H
#define DOCKET_UTIL_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };
enum log_format { LOG_TEXT, LOG_JSON };

/* path NULL = stderr. Returns 0 or -errno. */
int log_open(const char *path, enum log_level level, enum log_format format);
int log_reopen(void);
void log_close(void);
int log_level_parse(const char *s, enum log_level *out);
bool log_enabled(enum log_level level);
/* `fields` is a printf format producing space-separated key=value pairs; values with
 * spaces must be quoted by the caller with %s and log_quote is not needed for JSON: the
 * JSON writer converts key=value pairs (quoted values allowed) into members. */
void log_event(enum log_level level, const char *event, const char *fields, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes s into buf[len] as a double-quoted value ("a \"b\"", control characters
 * blanked, newlines as \n), truncated to fit but always closed; returns buf. For text
 * values that may hold spaces: log_info("x", "msg=%s", log_quote(m, b, sizeof(b))). */
char *log_quote(const char *s, char *buf, size_t len);

#define log_debug(ev, ...) log_event(LOG_DEBUG, ev, __VA_ARGS__)
#define log_info(ev, ...)  log_event(LOG_INFO, ev, __VA_ARGS__)
#define log_warn(ev, ...)  log_event(LOG_WARN, ev, __VA_ARGS__)
#define log_error(ev, ...) log_event(LOG_ERROR, ev, __VA_ARGS__)

#endif
