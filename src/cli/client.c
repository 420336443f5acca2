/*
 * client.c - discovery of docketd and the transport of the CLI (client.h). One
 * connection per process, reused by every request: plain http:// and unix: go through
 * the small client of http.c (starting docket must not cost 33 shared libraries: see
 * http.h); https:// goes through libcurl, loaded with dlopen the first time it is needed.
 * No DNS for loopback: Unix sockets need none, "localhost" is pinned to 127.0.0.1, and
 * proxies from the environment are ignored (a scheduler on loopback is never proxied).
 */
#define _GNU_SOURCE
#include "cli/client.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/http.h"
#include "util/base64.h"
#include "util/clock.h"
#include "util/dbuf.h"
#include "util/fingerprint.h"
#include "util/host.h"
#include "util/parse.h"
#include "util/str.h"

enum { MAX_REPLY = 64 << 20, DEFAULT_TIMEOUT_MS = 30000, CONNECT_TIMEOUT_MS = 5000 };

/* libcurl's entry points, resolved with dlsym (https:// only). */
struct curl_api {
    void *dl;
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
    CURLcode (*easy_perform)(CURL *c);
    CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
    void (*easy_cleanup)(CURL *c);
    void (*easy_reset)(CURL *c);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
    const char *(*easy_strerror)(CURLcode rc);
    CURLcode (*easy_send)(CURL *c, const void *buf, size_t n, size_t *sent);
    CURLcode (*easy_recv)(CURL *c, void *buf, size_t n, size_t *got);
};

struct client {
    struct http_conn *http; /* http:// and unix: */
    struct curl_api api;    /* https:// */
    CURL *curl;
    bool tls;
    char base[600];        /* "https://host:port" for libcurl */
    char socket_path[512]; /* "" for TCP */
    char host[256];
    int port;
    char shown[512]; /* the URL as the user knows it, for messages */
    char ca[512];    /* https://: CA file, or "" */
    char pin[80];    /* https://: "sha256//BASE64" for CURLOPT_PINNEDPUBLICKEY, or "" */
    char auth[560];  /* "Authorization: Bearer ..." or "" */
    char source[300];
    char idem[200]; /* "Idempotency-Key: K" while client_submit runs, else "" */
    /* DOCKET_URL=URL1,URL2...: one client per controller, in the order given; the head
     * owns the others and remembers which one answered last */
    struct client *alt, *cur;
};

/* ------------------------------------------------------------------------------------ */
/* Configuration                                                                        */

static int set_key(struct client_config *cfg, const char *key, const char *val, const char *path,
                   int line, char *err, size_t errlen)
{
    char *dst = NULL;
    size_t len = 0;
    static char pm[sizeof(cfg->partition_map)];

    if (!strcmp(key, "url")) {
        dst = cfg->url;
        len = sizeof(cfg->url);
        snprintf(cfg->source, sizeof(cfg->source), "%s", path);
    } else if (!strcmp(key, "token")) {
        dst = cfg->token;
        len = sizeof(cfg->token);
    } else if (!strcmp(key, "ca")) {
        dst = cfg->ca;
        len = sizeof(cfg->ca);
    } else if (!strcmp(key, "fingerprint")) {
        dst = cfg->fingerprint;
        len = sizeof(cfg->fingerprint);
    } else if (!strcmp(key, "partition_map")) {
        dst = cfg->partition_map;
        len = sizeof(cfg->partition_map);
    } else if (str_has_prefix(key, "partition.") && str_is_name(key + 10)) {
        if (snprintf(pm, sizeof(pm), "%s%s%s=%s", cfg->partition_map,
                     cfg->partition_map[0] ? "," : "", key + 10, val) >= (int)sizeof(pm)) {
            snprintf(err, errlen, "%s:%d: partition map too long", path, line);
            return -EINVAL;
        }
        val = pm;
        dst = cfg->partition_map;
        len = sizeof(cfg->partition_map);
    } else {
        snprintf(err, errlen,
                 "%s:%d: unknown key '%.60s' (url, token, ca, fingerprint, "
                 "partition_map, partition.NAME)",
                 path, line, key);
        return -EINVAL;
    }
    if (str_copy(dst, len, val) < 0) {
        snprintf(err, errlen, "%s:%d: value of '%s' is too long", path, line, key);
        return -EINVAL;
    }
    return 0;
}

int client_config_parse(struct client_config *cfg, const char *text, const char *path, char *err,
                        size_t errlen)
{
    int line = 0;

    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text) : strlen(text);
        char buf[1200];
        char *p, *eq;

        line++;
        if (n >= sizeof(buf)) {
            snprintf(err, errlen, "%s:%d: line too long", path, line);
            return -EINVAL;
        }
        memcpy(buf, text, n);
        buf[n] = '\0';
        text += n + (nl ? 1 : 0);
        p = str_trim(buf);
        if (!*p || *p == '#')
            continue;
        eq = strchr(p, '=');
        if (!eq) {
            snprintf(err, errlen, "%s:%d: want key=value, not '%.60s'", path, line, p);
            return -EINVAL;
        }
        *eq = '\0';
        if (set_key(cfg, str_trim(p), str_trim(eq + 1), path, line, err, errlen) < 0)
            return -EINVAL;
    }
    return 0;
}

static int load_file(struct client_config *cfg, char *err, size_t errlen)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    char path[512];
    struct dbuf b;
    char chunk[4096];
    size_t n;
    FILE *f;
    struct stat st;
    bool readable = false;
    int rc;

    if (xdg && xdg[0])
        snprintf(path, sizeof(path), "%s/docket/config", xdg);
    else if (home && home[0])
        snprintf(path, sizeof(path), "%s/.config/docket/config", home);
    else
        return 0;
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077))
        readable = true;
    dbuf_init(&b, 1 << 20);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        dbuf_append(&b, chunk, n);
    fclose(f);
    if (b.failed || strlen(b.data) != b.len) {
        snprintf(err, errlen, "%s: not a text file of at most 1 MiB", path);
        dbuf_release(&b);
        return -EINVAL;
    }
    rc = client_config_parse(cfg, b.data, path, err, errlen);
    dbuf_release(&b);
    if (rc == 0 && readable && cfg->token[0])
        fprintf(stderr,
                "docket: warning: %s holds a token and others may read it; "
                "chmod 600 %s\n",
                path, path);
    return rc;
}

int client_config_load(struct client_config *cfg, char *err, size_t errlen)
{
    const char *url = getenv("DOCKET_URL");
    const char *token = getenv("DOCKET_TOKEN");
    const char *pm = getenv("DOCKET_PARTITION_MAP");
    const char *ca = getenv("DOCKET_CA");
    const char *fp = getenv("DOCKET_FINGERPRINT");

    memset(cfg, 0, sizeof(*cfg));
    if (load_file(cfg, err, errlen) < 0)
        return -EINVAL;
    if (url && url[0]) {
        if (str_copy(cfg->url, sizeof(cfg->url), url) < 0) {
            snprintf(err, errlen, "DOCKET_URL is too long");
            return -EINVAL;
        }
        snprintf(cfg->source, sizeof(cfg->source), "DOCKET_URL");
    }
    if (token && token[0] && str_copy(cfg->token, sizeof(cfg->token), token) < 0) {
        snprintf(err, errlen, "DOCKET_TOKEN is too long");
        return -EINVAL;
    }
    if (pm && pm[0] && str_copy(cfg->partition_map, sizeof(cfg->partition_map), pm) < 0) {
        snprintf(err, errlen, "DOCKET_PARTITION_MAP is too long");
        return -EINVAL;
    }
    if (ca && ca[0] && str_copy(cfg->ca, sizeof(cfg->ca), ca) < 0) {
        snprintf(err, errlen, "DOCKET_CA is too long");
        return -EINVAL;
    }
    if (fp && fp[0] && str_copy(cfg->fingerprint, sizeof(cfg->fingerprint), fp) < 0) {
        snprintf(err, errlen, "DOCKET_FINGERPRINT is too long");
        return -EINVAL;
    }
    if (!cfg->url[0]) {
        snprintf(cfg->url, sizeof(cfg->url), "unix:%s", CLIENT_DEFAULT_SOCKET);
        snprintf(cfg->source, sizeof(cfg->source), "default");
    }
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* URLs                                                                                 */

/* "http://HOST[:PORT][/]" -> host and port; IPv6 in brackets. */
static int split_host_port(const char *hp, bool tls, char *host, size_t hlen, int *port)
{
    const char *end = hp + strlen(hp), *colon;
    size_t n;

    if (end > hp && end[-1] == '/')
        end--;
    if (*hp == '[') {
        const char *rb = memchr(hp, ']', (size_t)(end - hp));
        if (!rb)
            return -EINVAL;
        n = (size_t)(rb - hp - 1);
        if (n == 0 || n >= hlen)
            return -EINVAL;
        memcpy(host, hp + 1, n);
        host[n] = '\0';
        colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
        if (!colon && rb + 1 != end)
            return -EINVAL;
    } else {
        colon = memchr(hp, ':', (size_t)(end - hp));
        n = (size_t)((colon ? colon : end) - hp);
        if (n == 0 || n >= hlen)
            return -EINVAL;
        memcpy(host, hp, n);
        host[n] = '\0';
    }
    *port = tls ? 443 : 80;
    if (colon) {
        char buf[16];
        size_t pl = (size_t)(end - colon - 1);
        if (pl == 0 || pl >= sizeof(buf))
            return -EINVAL;
        memcpy(buf, colon + 1, pl);
        buf[pl] = '\0';
        if (parse_int(buf, 1, 65535, port) < 0)
            return -EINVAL;
    }
    return 0;
}

static int parse_url(struct client *c, const char *url, char *err, size_t errlen)
{
    const char *hp, *slash;

    str_copy(c->shown, sizeof(c->shown), url);
    if (str_has_prefix(url, "unix:")) {
        const char *path = url + 5;
        if (path[0] != '/' || strlen(path) >= 108 ||
            str_copy(c->socket_path, sizeof(c->socket_path), path) < 0) {
            snprintf(err, errlen,
                     "bad url '%.200s': want unix:/absolute/path (at most 107 "
                     "bytes)",
                     url);
            return -EINVAL;
        }
        return 0;
    }
    c->tls = str_has_prefix(url, "https://");
    if (!c->tls && !str_has_prefix(url, "http://")) {
        snprintf(err, errlen,
                 "bad url '%.200s': want http://HOST:PORT, https://HOST:PORT "
                 "or unix:/PATH",
                 url);
        return -EINVAL;
    }
    hp = url + (c->tls ? 8 : 7);
    slash = strchr(hp, '/');
    if (strpbrk(url, " \t\r\n?#@") || (slash && slash[1]) ||
        split_host_port(hp, c->tls, c->host, sizeof(c->host), &c->port) < 0) {
        snprintf(err, errlen,
                 "bad url '%.200s': want http://HOST:PORT, https://HOST:PORT "
                 "or unix:/PATH",
                 url);
        return -EINVAL;
    }
    if (!strcmp(c->host, "localhost") && !c->tls)
        snprintf(c->host, sizeof(c->host), "127.0.0.1");
    snprintf(c->base, sizeof(c->base), "https://%s%s%s:%d", strchr(c->host, ':') ? "[" : "",
             c->host, strchr(c->host, ':') ? "]" : "", c->port);
    return 0;
}

/* How https:// trusts docketd: a pinned key (curl wants "sha256//" and base64), or a CA
 * file, or the system's CAs. */
static int set_trust(struct client *c, const struct client_config *cfg, char *err, size_t errlen)
{
    unsigned char d[FPR_LEN];
    str_copy(c->ca, sizeof(c->ca), cfg->ca);
    if (!cfg->fingerprint[0])
        return 0;
    if (fpr_parse(cfg->fingerprint, d) < 0) {
        snprintf(err, errlen,
                 "bad fingerprint '%.100s' (DOCKET_FINGERPRINT or --fingerprint): want "
                 "sha256:<64 hex digits>, as `docket token join` prints it",
                 cfg->fingerprint);
        return -EINVAL;
    }
    char *b = b64_encode(d, sizeof(d));
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    snprintf(c->pin, sizeof(c->pin), "sha256//%s", b);
    free(b);
    return 0;
}

static struct client *client_create_one(const struct client_config *cfg, char *err, size_t errlen);

/* A list of URLs (DOCKET_URL=URL1,URL2: the controllers of an active/standby pair) makes
 * one client each, chained; a request goes to the one that answered last and moves on
 * when a controller cannot be reached or answers that it is a standby. */
struct client *client_create(const struct client_config *cfg, char *err, size_t errlen)
{
    struct client_config one = *cfg;
    struct client *head = NULL, **tail = &head;
    const char *p = cfg->url;
    do {
        size_t n = strcspn(p, ",");
        if (n >= sizeof(one.url)) {
            snprintf(err, errlen, "a URL in '%.100s' is too long", cfg->url);
            client_destroy(head);
            return NULL;
        }
        memcpy(one.url, p, n);
        one.url[n] = '\0';
        struct client *c = client_create_one(&one, err, errlen);
        if (!c) {
            client_destroy(head);
            return NULL;
        }
        *tail = c;
        tail = &c->alt;
        p += n;
    } while (*p++ == ',');
    return head;
}

static struct client *client_create_one(const struct client_config *cfg, char *err, size_t errlen)
{
    struct client *c = calloc(1, sizeof(*c));

    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (parse_url(c, cfg->url, err, errlen) < 0) {
        free(c);
        return NULL;
    }
    str_copy(c->source, sizeof(c->source), cfg->source);
    for (const char *t = cfg->token; *t; t++)
        if ((unsigned char)*t <= 0x20 || (unsigned char)*t >= 0x7f) {
            /* it goes into a header line: no blanks, no control characters */
            snprintf(err, errlen,
                     "the token (DOCKET_TOKEN, --token or the config file) "
                     "holds characters a token cannot have");
            free(c);
            return NULL;
        }
    /* a token crosses the network only inside TLS, as docket-node's credential does */
    if (cfg->token[0] && !c->tls && !c->socket_path[0] && !host_is_loopback(c->host)) {
        snprintf(err, errlen,
                 "refusing to send the token over plain http:// to '%.100s', off this "
                 "machine: use https://%.100s:%d (docs/security.md, \"Network observer\")",
                 c->host, c->host, c->port);
        free(c);
        return NULL;
    }
    if (cfg->token[0])
        snprintf(c->auth, sizeof(c->auth), "Authorization: Bearer %s", cfg->token);
    if (set_trust(c, cfg, err, errlen) < 0) {
        free(c);
        return NULL;
    }
    if (!c->tls && !(c->http = http_conn_create(c->socket_path[0] ? c->socket_path : NULL, c->host,
                                                c->port))) {
        snprintf(err, errlen, "out of memory");
        free(c);
        return NULL;
    }
    return c;
}

void client_destroy(struct client *c)
{
    if (!c)
        return;
    client_destroy(c->alt);
    if (c->curl)
        c->api.easy_cleanup(c->curl);
    /* libcurl stays loaded: its OpenSSL keeps thread-local state and exit handlers, and
     * once unloaded, LeakSanitizer's scan at exit read a freed module's thread-local block
     * and crashed (tls.bats, a submission over https:// with its Idempotency-Key) */
    http_conn_destroy(c->http);
    free(c);
}

void client_reply_release(struct client_reply *r)
{
    free(r->body);
    memset(r, 0, sizeof(*r));
    r->offset = -1;
    r->runs = -1;
}

static void unreachable(const struct client *c, const char *why, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "cannot reach docketd at %s (%s): %s\n"
             "hint: start it with `docketd --state-dir DIR`, or set DOCKET_URL "
             "(http://HOST:PORT with DOCKET_TOKEN, or unix:/PATH)",
             c->shown, strcmp(c->source, "default") ? c->source : "the default", why);
}

/* ------------------------------------------------------------------------------------ */
/* Plain HTTP (http.c)                                                                  */

static int plain_request(struct client *c, const char *method, const char *path,
                         const char *content_type, const char *body, size_t body_len,
                         long timeout_ms, const struct http_sink *sink, struct client_reply *r,
                         char *err, size_t errlen)
{
    struct http_head head;
    struct dbuf reply, headers;
    char why[256];
    int rc;

    dbuf_init(&headers, 2048);
    if (c->auth[0])
        dbuf_printf(&headers, "%s\r\n", c->auth);
    if (c->idem[0])
        dbuf_printf(&headers, "%s\r\n", c->idem);
    if (body)
        dbuf_printf(&headers, "Content-Type: %s\r\n",
                    content_type ? content_type : "application/json");
    dbuf_init(&reply, MAX_REPLY);
    rc = http_request_to(c->http, method, path, headers.data, body, body_len,
                         timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS, &head, &reply, sink, why,
                         sizeof(why));
    dbuf_release(&headers);
    if (rc < 0) {
        bool unreached = rc == -ENOENT || rc == -ECONNREFUSED || rc == -EHOSTUNREACH ||
                         rc == -ENETUNREACH || rc == -EACCES;
        if (unreached)
            unreachable(c, why, err, errlen);
        else if (rc == -ETIMEDOUT)
            snprintf(err, errlen, "docketd at %s did not answer in time", c->shown);
        else
            snprintf(err, errlen, "request to docketd at %s failed: %s", c->shown, why);
        dbuf_release(&reply);
        return unreached ? -ECONNREFUSED : -EIO;
    }
    r->status = head.status;
    r->offset = head.docket_offset;
    r->eof = head.docket_eof;
    r->runs = head.docket_runs;
    r->backup_bytes = head.docket_bytes;
    r->schema = head.docket_schema;
    memcpy(r->backup_sha256, head.docket_sha256, sizeof(r->backup_sha256));
    r->backup_pg_dump = head.docket_pg_dump;
    r->body = dbuf_detach(&reply, &r->len);
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* TLS through libcurl                                                                  */

#define LOAD(field, name)                                                                          \
    do {                                                                                           \
        *(void **)(&c->api.field) = dlsym(c->api.dl, name);                                        \
        if (!c->api.field)                                                                         \
            goto fail;                                                                             \
    } while (0)

static int load_curl(struct client *c, char *err, size_t errlen)
{
    if (c->api.dl)
        return 0;
    c->api.dl = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!c->api.dl) {
        snprintf(err, errlen, "https:// needs libcurl (apt-get install libcurl4): %s", dlerror());
        return -ENOENT;
    }
    LOAD(global_init, "curl_global_init");
    LOAD(easy_init, "curl_easy_init");
    LOAD(easy_setopt, "curl_easy_setopt");
    LOAD(easy_perform, "curl_easy_perform");
    LOAD(easy_getinfo, "curl_easy_getinfo");
    LOAD(easy_cleanup, "curl_easy_cleanup");
    LOAD(easy_reset, "curl_easy_reset");
    LOAD(slist_append, "curl_slist_append");
    LOAD(slist_free_all, "curl_slist_free_all");
    LOAD(easy_strerror, "curl_easy_strerror");
    LOAD(easy_send, "curl_easy_send");
    LOAD(easy_recv, "curl_easy_recv");
    if (c->api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(c->curl = c->api.easy_init()))
        goto fail;
    return 0;
fail:
    snprintf(err, errlen, "cannot initialise libcurl for https://");
    dlclose(c->api.dl);
    memset(&c->api, 0, sizeof(c->api));
    return -ENOENT;
}

/* Where libcurl's body goes: the buffer, or (a 2xx reply of client_download) the sink. */
struct tls_body {
    struct client *c;
    struct dbuf *b;
    const struct http_sink *sink;
    int sink_rc; /* the sink's error, which stopped the transfer */
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct tls_body *t = arg;
    long status = 0;

    if (t->sink) {
        t->c->api.easy_getinfo(t->c->curl, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 200 && status < 300) {
            t->sink_rc = t->sink->put(t->sink->arg, p, size * n);
            return t->sink_rc < 0 ? 0 : size * n;
        }
    }
    return dbuf_append(t->b, p, size * n) == 0 ? size * n : 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct client_reply *r = arg;
    size_t len = size * n;
    char buf[128];

    if (len >= sizeof(buf))
        return len;
    memcpy(buf, p, len);
    buf[len] = '\0';
    if (!strncasecmp(buf, "X-Docket-Offset:", 16))
        r->offset = strtoll(buf + 16, NULL, 10);
    else if (!strncasecmp(buf, "X-Docket-Eof:", 13))
        r->eof = strtol(buf + 13, NULL, 10) == 1;
    else if (!strncasecmp(buf, "X-Docket-Runs:", 14))
        r->runs = strtoll(buf + 14, NULL, 10);
    else if (!strncasecmp(buf, "X-Docket-Backup-Bytes:", 22))
        r->backup_bytes = strtoll(buf + 22, NULL, 10);
    else if (!strncasecmp(buf, "X-Docket-Schema:", 16))
        r->schema = (int)strtol(buf + 16, NULL, 10);
    else if (!strncasecmp(buf, "X-Docket-Backup-Format:", 23))
        r->backup_pg_dump = strstr(buf + 23, "pg_dump") != NULL;
    else if (!strncasecmp(buf, "X-Docket-Backup-Sha256:", 23))
        sscanf(buf + 23, " %64[0-9a-f]", r->backup_sha256);
    return len;
}

static int tls_request(struct client *c, const char *method, const char *path,
                       const char *content_type, const char *body, size_t body_len, long timeout_ms,
                       const struct http_sink *sink, struct client_reply *r, char *err,
                       size_t errlen)
{
    const struct curl_api *a = &c->api;
    char url[2048], ctype[128], detail[CURL_ERROR_SIZE] = "";
    struct curl_slist *h = NULL;
    struct dbuf b;
    CURLcode rc;

    if (load_curl(c, err, errlen) < 0)
        return -ENOEXEC; /* nothing was sent */
    if (snprintf(url, sizeof(url), "%s%s", c->base, path) >= (int)sizeof(url)) {
        snprintf(err, errlen, "request path too long");
        return -ENAMETOOLONG;
    }
    a->easy_reset(c->curl);
    dbuf_init(&b, MAX_REPLY);
    if (c->auth[0])
        h = a->slist_append(h, c->auth);
    if (c->idem[0])
        h = a->slist_append(h, c->idem);
    if (body) {
        snprintf(ctype, sizeof(ctype), "Content-Type: %s",
                 content_type ? content_type : "application/json");
        h = a->slist_append(h, ctype);
        h = a->slist_append(h, "Expect:");
        a->easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
        a->easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    } else if (strcmp(method, "GET")) {
        a->easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, 0L);
    }
    a->easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    a->easy_setopt(c->curl, CURLOPT_NOPROXY, "*");
    a->easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
    a->easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
    a->easy_setopt(c->curl, CURLOPT_USERAGENT, "docket/0.1");
    a->easy_setopt(c->curl, CURLOPT_URL, url);
    a->easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
    a->easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
    a->easy_setopt(c->curl, CURLOPT_TIMEOUT_MS,
                   timeout_ms > 0 ? timeout_ms : (long)DEFAULT_TIMEOUT_MS);
    a->easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
    struct tls_body tb = {c, &b, sink, 0};
    a->easy_setopt(c->curl, CURLOPT_WRITEDATA, &tb);
    a->easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
    a->easy_setopt(c->curl, CURLOPT_HEADERDATA, r);
    a->easy_setopt(c->curl, CURLOPT_ERRORBUFFER, detail);
    if (c->pin[0]) {
        /* the pin is the trust: a self-signed certificate has no chain to check */
        a->easy_setopt(c->curl, CURLOPT_PINNEDPUBLICKEY, c->pin);
        a->easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, 0L);
        a->easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (c->ca[0]) {
        a->easy_setopt(c->curl, CURLOPT_CAINFO, c->ca);
    }
    rc = a->easy_perform(c->curl);
    a->slist_free_all(h);
    if (rc != CURLE_OK) {
        const char *why = detail[0] ? detail : a->easy_strerror(rc);
        if (rc == CURLE_WRITE_ERROR && tb.sink_rc < 0)
            snprintf(err, errlen, "cannot write what docketd sent: %s", strerror(-tb.sink_rc));
        else if (rc == CURLE_WRITE_ERROR && b.failed)
            snprintf(err, errlen, "reply from docketd larger than %d MiB", MAX_REPLY >> 20);
        else if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
            unreachable(c, why, err, errlen);
        else if (rc == CURLE_SSL_PINNEDPUBKEYNOTMATCH)
            snprintf(err, errlen,
                     "docketd at %s is not the one pinned: its key does not match the "
                     "fingerprint (DOCKET_FINGERPRINT or --fingerprint); nothing was sent. "
                     "Check the fingerprint with your admin (`docket token join` prints it)",
                     c->shown);
        else if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
            snprintf(err, errlen,
                     "cannot verify docketd's certificate at %s: %s; nothing was sent. Give "
                     "its CA with --ca FILE (DOCKET_CA) or pin its key with --fingerprint "
                     "(DOCKET_FINGERPRINT)",
                     c->shown, why);
        else if (rc == CURLE_OPERATION_TIMEDOUT)
            snprintf(err, errlen, "docketd at %s did not answer in time", c->shown);
        else
            snprintf(err, errlen, "request to docketd at %s failed: %s", c->shown, why);
        dbuf_release(&b);
        /* nothing was sent when it could not connect: another controller may be tried;
         * nor to one that failed the check of its certificate, which is tried no more */
        if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
            return -ECONNREFUSED;
        return rc == CURLE_SSL_PINNEDPUBKEYNOTMATCH || rc == CURLE_PEER_FAILED_VERIFICATION ||
                       rc == CURLE_SSL_CACERT_BADFILE
                   ? -EPERM
                   : -EIO;
    }
    a->easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &r->status);
    r->body = dbuf_detach(&b, &r->len);
    return 0;
}

static void reply_init(struct client_reply *r)
{
    memset(r, 0, sizeof(*r));
    r->offset = -1;
    r->runs = -1;
    r->backup_bytes = -1;
    r->schema = -1;
}

/* One request to controller c. */
static int request_one(struct client *c, const char *method, const char *path,
                       const char *content_type, const char *body, size_t body_len, long timeout_ms,
                       const struct http_sink *sink, struct client_reply *r, char *err,
                       size_t errlen)
{
    reply_init(r);
    if (c->tls)
        return tls_request(c, method, path, content_type, body, body_len, timeout_ms, sink, r, err,
                           errlen);
    return plain_request(c, method, path, content_type, body, body_len, timeout_ms, sink, r, err,
                         errlen);
}

/* A standby docketd's answer (docs/operations.md "Active and standby"): 503 with the
 * error code "standby". */
static bool is_standby(const struct client_reply *r)
{
    if (r->status != 503 || !r->body)
        return false;
    json_t *o = json_loadb(r->body, r->len, 0, NULL);
    const char *code = json_string_value(json_object_get(json_object_get(o, "error"), "code"));
    bool standby = code && strcmp(code, "standby") == 0;
    json_decref(o);
    return standby;
}

/* The request to the controller that answered last, then to each other in turn where
 * one cannot be reached (nothing was sent) or is a standby; the last answer or error
 * stands when none leads. A request that may have reached a controller is never sent
 * again. 0; -ECONNREFUSED when none could be reached (nothing was sent); -EIO when it may
 * have arrived; another -errno when it was not sent (a certificate that fails its check). */
static int request_any(struct client *c, const char *method, const char *path,
                       const char *content_type, const char *body, size_t body_len, long timeout_ms,
                       const struct http_sink *sink, struct client_reply *r, char *err,
                       size_t errlen)
{
    struct client *k = c->cur ? c->cur : c;
    const struct client *standby = NULL; /* one that answered as a standby */
    int rc = 0;
    do {
        if (k != (c->cur ? c->cur : c))
            client_reply_release(r);
        rc = request_one(k, method, path, content_type, body, body_len, timeout_ms, sink, r, err,
                         errlen);
        if (rc == 0 && !is_standby(r)) {
            c->cur = k;
            return 0;
        }
        if (rc < 0 && rc != -ECONNREFUSED)
            return rc; /* -EIO: it may have arrived */
        if (rc == 0)
            standby = k;
        k = k->alt ? k->alt : c;
    } while (k != (c->cur ? c->cur : c));
    if (!standby)
        return -ECONNREFUSED; /* none could be reached: nothing was sent */
    /* a standby answered and none leads: a takeover may be under way (nothing was sent
     * that took effect); whichever came last, it is the standby's answer that is said */
    snprintf(err, errlen, "docketd at %s is a standby and no other controller leads",
             standby->shown);
    return rc == 0 ? 0 : -EAGAIN;
}

int client_request(struct client *c, const char *method, const char *path, const char *content_type,
                   const char *body, size_t body_len, long timeout_ms, struct client_reply *r,
                   char *err, size_t errlen)
{
    int rc = request_any(c, method, path, content_type, body, body_len, timeout_ms, NULL, r, err,
                         errlen);
    return rc < 0 ? -EIO : 0;
}

/* Was the answer "the same key is still being written" (a big array's; 409 in_progress)? */
static bool is_in_progress(const struct client_reply *r)
{
    if (r->status != 409 || !r->body)
        return false;
    json_t *o = json_loadb(r->body, r->len, 0, NULL);
    const char *code = json_string_value(json_object_get(json_object_get(o, "error"), "code"));
    bool busy = code && strcmp(code, "in_progress") == 0;
    json_decref(o);
    return busy;
}

static void set_idem(struct client *c, const char *key)
{
    for (struct client *k = c; k; k = k->alt)
        if (key)
            snprintf(k->idem, sizeof(k->idem), "Idempotency-Key: %s", key);
        else
            k->idem[0] = '\0';
}

int client_submit(struct client *c, const char *path, const char *body, size_t body_len,
                  const char *key, struct client_reply *r, char *err, size_t errlen)
{
    int64_t deadline = clock_mono_ms() + CLIENT_SUBMIT_RETRY_MS;
    int wait_ms = 100, rc;
    bool unknown = false; /* a try may have reached a controller */
    set_idem(c, key);
    for (;;) {
        rc = request_any(c, "POST", path, "application/json", body, body_len, 0, NULL, r, err,
                         errlen);
        /* refused everywhere on the first try: nothing was sent, say so at once */
        if (rc == -EIO)
            unknown = true;
        bool again = rc == 0 ? is_standby(r) || is_in_progress(r)
                             : rc == -EIO || rc == -EAGAIN || (unknown && rc == -ECONNREFUSED);
        if (!again || clock_mono_ms() + wait_ms > deadline)
            break;
        client_reply_release(r);
        poll(NULL, 0, wait_ms); /* the standby takes the lead within seconds */
        wait_ms = wait_ms * 2 > 2000 ? 2000 : wait_ms * 2;
        /* the next try starts at the next controller: the one that failed may be gone */
        struct client *k = c->cur ? c->cur : c;
        c->cur = k->alt ? k->alt : c;
    }
    set_idem(c, NULL);
    if (rc < 0 && unknown) {
        char why[512];
        snprintf(why, sizeof(why), "%s", err);
        snprintf(err, errlen,
                 "%s; the submission's outcome is unknown after %d s of retries with "
                 "Idempotency-Key %s (sending it again with that key is safe: it lands once)",
                 why, CLIENT_SUBMIT_RETRY_MS / 1000, key);
    }
    return rc < 0 ? -EIO : 0;
}

int client_download(struct client *c, const char *path, long timeout_ms,
                    const struct http_sink *sink, struct client_reply *r, char *err, size_t errlen)
{
    int rc = request_any(c, "GET", path, NULL, NULL, 0, timeout_ms, sink, r, err, errlen);
    return rc < 0 ? -EIO : 0;
}

int client_escape(const char *s, char *buf, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;

    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '~' ||
                     ch == ',';
        if (o + (plain ? 1 : 3) >= len)
            return -ENAMETOOLONG;
        if (plain) {
            buf[o++] = (char)ch;
        } else {
            buf[o++] = '%';
            buf[o++] = hex[ch >> 4];
            buf[o++] = hex[ch & 15];
        }
    }
    buf[o] = '\0';
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Upgraded connections (client.h): a socket of our own, or libcurl's CONNECT_ONLY      */

struct client_stream {
    struct client *c; /* libcurl's handle when TLS */
    int fd;
    bool tls;
    char *early; /* bytes read past the 101's head */
    size_t nearly, early_at;
};

static int plain_connect(const struct client *c)
{
    if (c->socket_path[0]) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(c->socket_path) >= sizeof sa.sun_path)
            return -ENAMETOOLONG;
        memcpy(sa.sun_path, c->socket_path, strlen(c->socket_path) + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return fd;
        int e = errno;
        if (fd >= 0)
            close(fd);
        return -e;
    }
    char port[16];
    snprintf(port, sizeof port, "%d", c->port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(c->host, port, &hints, &res) != 0)
        return -EHOSTUNREACH;
    int fd = -ECONNREFUSED;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int s = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s >= 0 && connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
            int one = 1;
            setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            fd = s;
            break;
        }
        fd = -errno;
        if (s >= 0)
            close(s);
    }
    freeaddrinfo(res);
    return fd;
}

static int tls_connect(struct client *c, char *err, size_t errlen)
{
    const struct curl_api *a = &c->api;
    char detail[CURL_ERROR_SIZE] = "";
    if (load_curl(c, err, errlen) < 0)
        return -ENOEXEC; /* nothing was sent */
    a->easy_reset(c->curl);
    a->easy_setopt(c->curl, CURLOPT_URL, c->base);
    a->easy_setopt(c->curl, CURLOPT_CONNECT_ONLY, 1L);
    a->easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    a->easy_setopt(c->curl, CURLOPT_NOPROXY, "*");
    a->easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
    a->easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
    a->easy_setopt(c->curl, CURLOPT_ERRORBUFFER, detail);
    if (c->pin[0]) {
        a->easy_setopt(c->curl, CURLOPT_PINNEDPUBLICKEY, c->pin);
        a->easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, 0L);
        a->easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (c->ca[0]) {
        a->easy_setopt(c->curl, CURLOPT_CAINFO, c->ca);
    }
    CURLcode rc = a->easy_perform(c->curl);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "cannot open a connection to docketd at %s: %s", c->shown,
                 detail[0] ? detail : a->easy_strerror(rc));
        return -EIO;
    }
    curl_socket_t fd = CURL_SOCKET_BAD;
    a->easy_getinfo(c->curl, CURLINFO_ACTIVESOCKET, &fd);
    return fd == CURL_SOCKET_BAD ? -EIO : (int)fd;
}

/* Waits for the socket (up to timeout_ms) in the direction libcurl or we need. */
static int stream_wait(const struct client_stream *s, short ev, int timeout_ms)
{
    struct pollfd p = {s->fd, ev, 0};
    int rc = poll(&p, 1, timeout_ms);
    return rc > 0 ? 0 : rc == 0 ? -ETIMEDOUT : -errno;
}

ssize_t client_stream_recv(struct client_stream *s, void *buf, size_t n)
{
    if (s->early_at < s->nearly) {
        size_t k = s->nearly - s->early_at < n ? s->nearly - s->early_at : n;
        memcpy(buf, s->early + s->early_at, k);
        s->early_at += k;
        return (ssize_t)k;
    }
    if (!s->tls) {
        ssize_t r = recv(s->fd, buf, n, MSG_DONTWAIT);
        return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? -EAGAIN : r < 0 ? -errno : r;
    }
    size_t got = 0;
    CURLcode rc = s->c->api.easy_recv(s->c->curl, buf, n, &got);
    if (rc == CURLE_AGAIN)
        return -EAGAIN;
    return rc == CURLE_OK ? (ssize_t)got : -EIO;
}

int client_stream_send(struct client_stream *s, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        size_t sent = 0;
        if (!s->tls) {
            ssize_t w = send(s->fd, p, n, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                return -errno;
            sent = (size_t)w;
        } else {
            CURLcode rc = s->c->api.easy_send(s->c->curl, p, n, &sent);
            if (rc == CURLE_AGAIN) {
                if (stream_wait(s, POLLOUT, 30000) < 0)
                    return -ETIMEDOUT;
                continue;
            }
            if (rc != CURLE_OK)
                return -EIO;
        }
        p += sent;
        n -= sent;
    }
    return 0;
}

int client_stream_fd(const struct client_stream *s)
{
    return s->fd;
}

bool client_stream_pending(const struct client_stream *s)
{
    return s->early_at < s->nearly || s->tls;
}

void client_stream_close(struct client_stream *s)
{
    if (!s)
        return;
    if (!s->tls && s->fd >= 0)
        close(s->fd);
    if (s->tls)
        s->c->api.easy_reset(s->c->curl); /* the next request connects afresh */
    free(s->early);
    free(s);
}

/* Reads the answer's head (and, for an error, its body) into b; the head's length. */
static int read_answer(struct client_stream *s, struct dbuf *b, struct http_head *h,
                       long timeout_ms)
{
    int64_t until = clock_mono_ms() + timeout_ms;
    int hl = 0;
    for (;;) {
        if (b->len > 0 && hl == 0 && (hl = http_parse_head(b->data, b->len, h)) < 0)
            return -EPROTO;
        if (hl > 0 && (h->status == 101 || h->content_length < 0 ||
                       (int64_t)b->len - hl >= h->content_length))
            return hl;
        char buf[4096];
        ssize_t r = client_stream_recv(s, buf, sizeof buf);
        if (r == -EAGAIN) {
            int64_t left = until - clock_mono_ms();
            if (left <= 0 || stream_wait(s, POLLIN, (int)left) < 0)
                return -ETIMEDOUT;
            continue;
        }
        if (r <= 0)
            return hl > 0 ? hl : -ECONNRESET;
        dbuf_append(b, buf, (size_t)r);
        if (b->failed)
            return -ENOSPC;
    }
}

int client_upgrade(struct client *head, const char *path, const char *protocol, long timeout_ms,
                   struct client_stream **out, struct client_reply *r, char *err, size_t errlen)
{
    struct client *c = head->cur ? head->cur : head;
    reply_init(r);
    *out = NULL;
    struct client_stream *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->c = c;
    s->tls = c->tls;
    s->fd = c->tls ? tls_connect(c, err, errlen) : plain_connect(c);
    if (s->fd < 0) {
        int rc = s->fd;
        if (!c->tls)
            unreachable(c, strerror(-rc), err, errlen);
        free(s);
        return rc;
    }
    char req[2048];
    int n = snprintf(
        req, sizeof req,
        "GET %s HTTP/1.1\r\nHost: %s\r\n%s%sUpgrade: %s\r\nConnection: Upgrade\r\n\r\n", path,
        c->socket_path[0] ? "localhost" : c->host, c->auth, c->auth[0] ? "\r\n" : "", protocol);
    struct dbuf b;
    dbuf_init(&b, 1 << 20);
    int rc = n >= (int)sizeof req ? -ENAMETOOLONG : client_stream_send(s, req, (size_t)n);
    struct http_head h;
    int hl = rc < 0 ? rc : read_answer(s, &b, &h, timeout_ms);
    if (hl < 0) {
        snprintf(err, errlen, "docketd at %s did not answer the upgrade: %s", c->shown,
                 strerror(-hl));
        dbuf_release(&b);
        client_stream_close(s);
        return hl;
    }
    r->status = h.status;
    if (h.status != 101) { /* an error, with its JSON body */
        size_t len = b.len - (size_t)hl;
        r->body = malloc(len + 1);
        if (r->body) {
            memcpy(r->body, b.data + hl, len);
            r->body[len] = '\0';
            r->len = len;
        }
        dbuf_release(&b);
        client_stream_close(s);
        return 0;
    }
    s->nearly = b.len - (size_t)hl;
    s->early = s->nearly ? malloc(s->nearly) : NULL;
    if (s->early)
        memcpy(s->early, b.data + hl, s->nearly);
    else
        s->nearly = 0;
    dbuf_release(&b);
    *out = s;
    return 0;
}
