/*
 * error.h - the one error type of src/protocol: every parser of the protocol (job spec,
 * policy, operator sections, agent messages) fills a struct proto_error, and docketd
 * answers with it as the error object of docs/api.md: {"error": {"code", "message",
 * "field"}}.
 *
 * `field` is the JSON path of the bad input ("gpus", "env.PATH", "events[1].exit.kind"),
 * "" when none; `message` is lowercase and names the subject. Parsers return 0 or a
 * negative errno (-EINVAL for bad input, status 400; -ENOMEM, status 500).
 *
 * This header depends on jansson and libc only (the agent includes it without the core).
 */
#ifndef DOCKET_PROTOCOL_ERROR_H
#define DOCKET_PROTOCOL_ERROR_H

#include <jansson.h>

#define PROTO_WUR __attribute__((warn_unused_result))

struct proto_error {
    int status;      /* HTTP status: 400, 401, 404, 409, 413, 429 ... */
    char code[32];   /* "invalid_argument", "not_found" ... */
    char field[128]; /* JSON path, or "" */
    char message[256];
};

/* Fill `e` (which may be NULL) and return -EINVAL. `field` may be NULL. */
int proto_errorf(struct proto_error *e, int status, const char *code, const char *field,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The default code for an HTTP status ("invalid_argument" for 400 ...). */
const char *proto_status_code(int status);
/* {"error": {...}}: a new reference. */
json_t *proto_error_json(const struct proto_error *e);

#endif
