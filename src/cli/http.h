/*
 * http.h - the small HTTP/1.1 client docket uses for plain http:// and unix: URLs, the
 * common case (docketd on this host or on the cluster network).
 *
 * Why not libcurl here: linking libcurl loads 33 shared libraries (TLS, LDAP, SSH,
 * Kerberos, IDN ...), which costs 4-5 ms per process on our reference machine, more
 * than the whole submission; a CLI called in shell loops must start in well under a
 * millisecond (bench/RESULTS.md, "CLI"). https:// still goes through libcurl, loaded
 * with dlopen only then (client.c). This client speaks exactly what docketd answers:
 * one request at a time on one kept-alive connection, Content-Length or chunked bodies.
 *
 * The response parsers are pure functions over bytes (unit-tested and fuzzed).
 */
#ifndef DOCKET_CLI_HTTP_H
#define DOCKET_CLI_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/dbuf.h"

enum { HTTP_MAX_HEAD = 64 << 10 };

struct http_head {
    int status;             /* 100..599 */
    int64_t content_length; /* -1 when absent */
    bool chunked;           /* Transfer-Encoding: chunked */
    bool close;             /* Connection: close, or HTTP/1.0 without keep-alive */
    int64_t docket_offset;  /* X-Docket-Offset, -1 when absent */
    bool docket_eof;        /* X-Docket-Eof: 1 */
    int64_t docket_runs;    /* X-Docket-Runs (a job's runs so far), -1 when absent */
    int docket_schema;      /* X-Docket-Schema (a backup's), -1 when absent */
    int64_t docket_bytes;   /* X-Docket-Backup-Bytes, -1 when absent */
    char docket_sha256[65]; /* X-Docket-Backup-Sha256 (64 hex digits), "" when absent */
    bool docket_pg_dump;    /* X-Docket-Backup-Format: pg_dump (a PostgreSQL docketd's) */
};

/* Parse a response head in buf[0..len). Returns the head's length (through the blank
 * line) when complete, 0 when more bytes are needed, -EPROTO when malformed (or longer
 * than HTTP_MAX_HEAD). Fills *h only on success. */
int http_parse_head(const char *buf, size_t len, struct http_head *h);

/* Incremental decoder of a chunked body. */
struct http_dechunk {
    int state;     /* internal */
    uint64_t left; /* bytes left in the current chunk */
    char line[32]; /* a chunk-size line being read */
    size_t line_len;
};

void http_dechunk_init(struct http_dechunk *d);
/* Feed n bytes; decoded data is appended to out. Returns the number of input bytes
 * consumed (the rest belongs to the next response), with *done set once the last
 * chunk and its trailer are read; -EPROTO on a malformed body, -ENOSPC when out is full. */
long http_dechunk_feed(struct http_dechunk *d, const char *in, size_t n, struct dbuf *out,
                       bool *done);

struct http_conn;

/* Where to connect: a Unix socket path, or a host and port (numeric addresses need no
 * resolver). No connection is made until the first request. NULL on out of memory. */
struct http_conn *http_conn_create(const char *socket_path, const char *host, int port);
void http_conn_destroy(struct http_conn *c);

/* One request; reconnects once if a kept-alive connection was closed by the server.
 * `headers` is extra header lines, each ending "\r\n" (may be ""). On success fills
 * head and body (its max sets the reply cap) and returns 0; else a negative errno with
 * err saying what failed: -ECONNREFUSED/-ENOENT (cannot connect), -ETIMEDOUT, -EPROTO,
 * -ENOSPC (reply too large). */
int http_request(struct http_conn *c, const char *method, const char *path, const char *headers,
                 const char *body, size_t body_len, long timeout_ms, struct http_head *head,
                 struct dbuf *reply, char *err, size_t errlen);

/* Where the body of a 2xx reply goes instead of the reply buffer (a download): put(arg,
 * p, n) gets its bytes in order as they arrive; a negative return ends the request with
 * that error. */
struct http_sink {
    int (*put)(void *arg, const char *p, size_t n);
    void *arg;
};
/* http_request with a 2xx reply's body handed to sink (an error reply's body still goes
 * to reply; a chunked body passes through it, one read's worth at a time). A connection
 * found stale before any byte came is retried, as there. */
int http_request_to(struct http_conn *c, const char *method, const char *path, const char *headers,
                    const char *body, size_t body_len, long timeout_ms, struct http_head *head,
                    struct dbuf *reply, const struct http_sink *sink, char *err, size_t errlen);

#endif
