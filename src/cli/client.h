/*
 * client.h - how docket finds docketd and talks to it: the public HTTP API of docs/api.md,
 * nothing else, over one kept-alive connection: our own HTTP/1.1 client (http.h) for
 * http:// and unix: URLs, libcurl loaded with dlopen only for https:// (http.h says why).
 *
 * Discovery, first match wins:
 *   1. DOCKET_URL (http://host:port, https://host:port or unix:/path) and DOCKET_TOKEN
 *   2. ~/.config/docket/config ($XDG_CONFIG_HOME/docket/config): key=value lines
 *      (url, token, ca, fingerprint, partition_map, partition.NAME=VALUE); '#' starts a
 *      comment
 *   3. the controller's default socket unix:/run/docket/docketd.sock
 * Variables fill only what they name: DOCKET_TOKEN alone keeps the file's url.
 * A url may be a list, "URL1,URL2" (the controllers of an active/standby pair): each
 * request goes to the one that answered last, and on to the next only where nothing was
 * sent (it cannot be reached) or the answer is a standby's 503; never again after a
 * request may have arrived, but for a submission, which carries an Idempotency-Key
 * (client_submit).
 *
 * https:// checks docketd's certificate: against a pinned public key (DOCKET_FINGERPRINT,
 * --fingerprint, "sha256:<hex>" as docketd prints it) when one is given, else against
 * the CA file of DOCKET_CA (--ca), else against the system's CAs. A mismatch is an error
 * that says so; nothing is sent to a controller that fails the check.
 */
#ifndef DOCKET_CLI_CLIENT_H
#define DOCKET_CLI_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CLIENT_DEFAULT_SOCKET "/run/docket/docketd.sock"

struct client_config {
    char url[512]; /* as the user wrote it, for messages */
    char token[512];
    /* "gpu=normal,debug=exploration": a user's override of the site's partitions
       (docs/slurm.md); thousands of entries fit */
    char partition_map[64 * 1024];
    char ca[512];          /* CA file for https:// ("" = the system's) */
    char fingerprint[128]; /* pinned public key of docketd, "sha256:<hex>" */
    char source[300];      /* where url came from: "DOCKET_URL", a file path, "default" */
};

/* Fill cfg from the environment and the config file. 0, or -EINVAL with err naming the
 * bad line or value (a malformed config file is an error, not silently ignored). */
int client_config_load(struct client_config *cfg, char *err, size_t errlen);
/* Parse one config file's text into cfg (only keys present are set). Exposed for tests. */
int client_config_parse(struct client_config *cfg, const char *text, const char *path, char *err,
                        size_t errlen);

struct client_reply {
    long status; /* HTTP status, 0 when no reply came */
    char *body;  /* NUL-terminated, owned by the reply */
    size_t len;
    int64_t offset; /* X-Docket-Offset, -1 when absent */
    bool eof;       /* X-Docket-Eof: 1 */
    int64_t runs;   /* X-Docket-Runs, -1 when absent */
    /* a backup's (client_download): X-Docket-Backup-Bytes, -Sha256, X-Docket-Schema */
    int64_t backup_bytes; /* -1 when absent */
    char backup_sha256[65];
    bool backup_pg_dump; /* X-Docket-Backup-Format: pg_dump */
    int schema;          /* -1 when absent */
};

void client_reply_release(struct client_reply *r);

struct client;

/* NULL with err filled when the URL is malformed. The connection is opened on the first
 * request and kept for the next ones. */
struct client *client_create(const struct client_config *cfg, char *err, size_t errlen);
void client_destroy(struct client *c);

/* One request. `path` starts with "/v1/" (query string included). `body` may be NULL.
 * Returns 0 when a reply came (whatever its status), or a negative errno with err saying
 * what to do ("cannot reach docketd at ...: ..."). timeout_ms 0 = default (30 s). */
int client_request(struct client *c, const char *method, const char *path, const char *content_type,
                   const char *body, size_t body_len, long timeout_ms, struct client_reply *r,
                   char *err, size_t errlen);

/* POST a submission with an Idempotency-Key (docs/api.md "Retrying a submission"): where
 * its outcome is unknown (the connection cut after it was sent, no answer in time) or no
 * controller leads yet (a standby's 503, a takeover under way), the same request with the
 * same key goes again, to the next controller, for up to CLIENT_SUBMIT_RETRY_MS: docketd
 * answers a repeat with what the first made, so it lands once. Refused everywhere on the
 * first try, nothing was sent, and that is said at once. Same returns as client_request;
 * err says the key when the outcome stays unknown. */
#define CLIENT_SUBMIT_RETRY_MS 60000
int client_submit(struct client *c, const char *path, const char *body, size_t body_len,
                  const char *key, struct client_reply *r, char *err, size_t errlen);

/* A GET whose 2xx body goes to sink as it arrives (a file that may not fit in memory);
 * an error reply's body is in r->body as client_request's. Same returns. */
struct http_sink;
int client_download(struct client *c, const char *path, long timeout_ms,
                    const struct http_sink *sink, struct client_reply *r, char *err, size_t errlen);

/* An upgraded connection (docs/interactive.md): GET path with `Upgrade: protocol` and the
 * token, over the same transport and trust as every request (TLS through libcurl's
 * CONNECT_ONLY). 0 when an answer came: *out is the stream when it was 101, else NULL
 * with r holding the status and the error body; a negative errno with err otherwise. */
struct client_stream;
int client_upgrade(struct client *c, const char *path, const char *protocol, long timeout_ms,
                   struct client_stream **out, struct client_reply *r, char *err, size_t errlen);
/* Bytes read (0 at the end), -EAGAIN when none is there now, or another -errno. */
ssize_t client_stream_recv(struct client_stream *s, void *buf, size_t n);
/* All n bytes, or -errno. */
int client_stream_send(struct client_stream *s, const void *buf, size_t n);
/* The socket to poll; after it is readable, recv until -EAGAIN (TLS buffers records). */
int client_stream_fd(const struct client_stream *s);
/* Bytes may be readable without the socket saying so (read ahead, or TLS). */
bool client_stream_pending(const struct client_stream *s);
void client_stream_close(struct client_stream *s);

/* Percent-encode `s` for a query string into buf. 0 or -ENAMETOOLONG. */
int client_escape(const char *s, char *buf, size_t len);

#endif
