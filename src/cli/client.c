/*
 * client.c - discovery of docketd and the HTTP transport of the CLI (client.h), on one
 * libcurl easy handle kept for the whole process so every request reuses one connection.
 * No DNS: Unix sockets need none, "localhost" is pinned to 127.0.0.1, and proxies from
 * the environment are ignored (a scheduler on loopback must never be proxied).
 */
#define _POSIX_C_SOURCE 200809L
#include "cli/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/dbuf.h"
#include "util/str.h"

enum { MAX_REPLY = 64 << 20, DEFAULT_TIMEOUT_MS = 30000, CONNECT_TIMEOUT_MS = 5000 };

struct client {
    CURL *curl;
    char base[600];          /* "http://127.0.0.1:8420" or "http://docketd" for sockets */
    char socket_path[512];   /* "" for TCP */
    char shown[512];         /* the URL as the user knows it, for messages */
    char auth[560];          /* "Authorization: Bearer ..." or "" */
    char source[300];
};

/* ------------------------------------------------------------------------------------ */
/* Configuration                                                                        */

static int set_key(struct client_config *cfg, const char *key, const char *val,
                   const char *path, int line, char *err, size_t errlen)
{
    char *dst = NULL;
    size_t len = 0;
    char pm[1024];

    if (!strcmp(key, "url")) {
        dst = cfg->url;
        len = sizeof(cfg->url);
        snprintf(cfg->source, sizeof(cfg->source), "%s", path);
    } else if (!strcmp(key, "token")) {
        dst = cfg->token;
        len = sizeof(cfg->token);
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
        snprintf(err, errlen, "%s:%d: unknown key '%.60s' (url, token, partition_map, "
                 "partition.NAME)", path, line, key);
        return -EINVAL;
    }
    if (str_copy(dst, len, val) < 0) {
        snprintf(err, errlen, "%s:%d: value of '%s' is too long", path, line, key);
        return -EINVAL;
    }
    return 0;
}

int client_config_parse(struct client_config *cfg, const char *text, const char *path,
                        char *err, size_t errlen)
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
    return rc;
}

int client_config_load(struct client_config *cfg, char *err, size_t errlen)
{
    const char *url = getenv("DOCKET_URL");
    const char *token = getenv("DOCKET_TOKEN");
    const char *pm = getenv("DOCKET_PARTITION_MAP");

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
    if (!cfg->url[0]) {
        snprintf(cfg->url, sizeof(cfg->url), "unix:%s", CLIENT_DEFAULT_SOCKET);
        snprintf(cfg->source, sizeof(cfg->source), "default");
    }
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Transport                                                                            */

/* "http://localhost:8420" -> "http://127.0.0.1:8420": loopback needs no resolver. */
static void pin_localhost(char *base, size_t len)
{
    const char *scheme = str_has_prefix(base, "https://") ? "https://" : "http://";
    size_t sl = strlen(scheme);
    char tmp[600];

    if (strncmp(base + sl, "localhost", 9) || (base[sl + 9] && base[sl + 9] != ':' &&
                                               base[sl + 9] != '/'))
        return;
    if (!strcmp(scheme, "https://"))
        return; /* TLS checks the certificate against the name: keep it */
    snprintf(tmp, sizeof(tmp), "%s127.0.0.1%s", scheme, base + sl + 9);
    str_copy(base, len, tmp);
}

static int parse_url(struct client *c, const char *url, char *err, size_t errlen)
{
    str_copy(c->shown, sizeof(c->shown), url);
    if (str_has_prefix(url, "unix:")) {
        const char *path = url + 5;
        if (path[0] != '/' || str_copy(c->socket_path, sizeof(c->socket_path), path) < 0) {
            snprintf(err, errlen, "bad url '%.200s': want unix:/absolute/path", url);
            return -EINVAL;
        }
        snprintf(c->base, sizeof(c->base), "http://docketd");
        return 0;
    }
    if (!str_has_prefix(url, "http://") && !str_has_prefix(url, "https://")) {
        snprintf(err, errlen, "bad url '%.200s': want http://HOST:PORT, https://HOST:PORT "
                 "or unix:/PATH", url);
        return -EINVAL;
    }
    if (strpbrk(url, " \t\r\n?#")) {
        snprintf(err, errlen, "bad url '%.200s'", url);
        return -EINVAL;
    }
    if (str_copy(c->base, sizeof(c->base), url) < 0) {
        snprintf(err, errlen, "url too long");
        return -EINVAL;
    }
    if (str_has_suffix(c->base, "/"))
        c->base[strlen(c->base) - 1] = '\0';
    pin_localhost(c->base, sizeof(c->base));
    return 0;
}

struct client *client_create(const struct client_config *cfg, char *err, size_t errlen)
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
    if (cfg->token[0])
        snprintf(c->auth, sizeof(c->auth), "Authorization: Bearer %s", cfg->token);
    return c;
}

void client_destroy(struct client *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c);
}

void client_reply_release(struct client_reply *r)
{
    free(r->body);
    memset(r, 0, sizeof(*r));
    r->offset = -1;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct dbuf *b = arg;

    return dbuf_append(b, p, size * n) == 0 ? size * n : 0;
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
    return len;
}

static int setup(struct client *c, char *err, size_t errlen)
{
    if (c->curl) {
        curl_easy_reset(c->curl);
    } else {
        if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK ||
            !(c->curl = curl_easy_init())) {
            snprintf(err, errlen, "cannot initialise libcurl");
            return -ENOMEM;
        }
    }
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
    curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "docket/0.1");
    if (c->socket_path[0])
        curl_easy_setopt(c->curl, CURLOPT_UNIX_SOCKET_PATH, c->socket_path);
    return 0;
}

static void connect_error(struct client *c, CURLcode rc, const char *detail, char *err,
                          size_t errlen)
{
    const char *why = detail && detail[0] ? detail : curl_easy_strerror(rc);

    if (c->socket_path[0] && rc == CURLE_COULDNT_CONNECT)
        why = access(c->socket_path, F_OK) == 0 ? "connection refused (is docketd running?)"
                                                : "no such socket";
    if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
        snprintf(err, errlen, "cannot reach docketd at %s (%s): %s\n"
                 "hint: start it with `docketd --state-dir DIR`, or set DOCKET_URL "
                 "(http://HOST:PORT with DOCKET_TOKEN, or unix:/PATH)",
                 c->shown, strcmp(c->source, "default") ? c->source : "the default", why);
    else if (rc == CURLE_OPERATION_TIMEDOUT)
        snprintf(err, errlen, "docketd at %s did not answer in time: %s", c->shown, why);
    else
        snprintf(err, errlen, "request to docketd at %s failed: %s", c->shown, why);
}

int client_request(struct client *c, const char *method, const char *path,
                   const char *content_type, const char *body, size_t body_len,
                   long timeout_ms, struct client_reply *r, char *err, size_t errlen)
{
    char url[2048], ctype[128], detail[CURL_ERROR_SIZE] = "";
    struct curl_slist *h = NULL;
    struct dbuf b;
    CURLcode rc;
    int ret;

    memset(r, 0, sizeof(*r));
    r->offset = -1;
    if (snprintf(url, sizeof(url), "%s%s", c->base, path) >= (int)sizeof(url)) {
        snprintf(err, errlen, "request path too long");
        return -ENAMETOOLONG;
    }
    if ((ret = setup(c, err, errlen)) < 0)
        return ret;
    dbuf_init(&b, MAX_REPLY);
    if (c->auth[0])
        h = curl_slist_append(h, c->auth);
    if (body) {
        snprintf(ctype, sizeof(ctype), "Content-Type: %s",
                 content_type ? content_type : "application/json");
        h = curl_slist_append(h, ctype);
        h = curl_slist_append(h, "Expect:");
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    }
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "GET"))
        curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    else if (!body)
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, 0L);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms
                                                                 : (long)DEFAULT_TIMEOUT_MS);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, detail);
    rc = curl_easy_perform(c->curl);
    curl_slist_free_all(h);
    if (rc != CURLE_OK) {
        if (rc == CURLE_WRITE_ERROR && b.failed)
            snprintf(err, errlen, "reply from docketd larger than %d MiB", MAX_REPLY >> 20);
        else
            connect_error(c, rc, detail, err, errlen);
        dbuf_release(&b);
        return -EIO;
    }
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &r->status);
    r->body = dbuf_detach(&b, &r->len);
    return 0;
}

int client_escape(const char *s, char *buf, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;

    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' ||
                     ch == '~' || ch == ',';
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
