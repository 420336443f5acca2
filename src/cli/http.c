/*
 * http.c - a minimal HTTP/1.1 client over one kept-alive connection, Unix socket or TCP
 * (http.h says why it exists). No pipelining, no redirects, no proxies: docket sends one
 * request, reads one reply, and the reply's size is capped by the caller's dbuf.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli/http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/str.h"

enum { CONNECT_TIMEOUT_MS = 5000, MAX_CHUNK_LINE = 30 };

/* ------------------------------------------------------------------------------------ */
/* Parsing                                                                              */

/* Case-insensitive "Name:" match at the start of a header line; returns the value
 * (leading blanks skipped) or NULL. */
static const char *header_value(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);

    if (len <= n || strncasecmp(line, name, n) || line[n] != ':')
        return NULL;
    line += n + 1;
    while (*line == ' ' || *line == '\t')
        line++;
    return line;
}

/* A decimal integer ending at CR; -1 when malformed or above max. */
static int64_t header_int(const char *v, int64_t max)
{
    int64_t n = 0;

    if (*v < '0' || *v > '9')
        return -1;
    while (*v >= '0' && *v <= '9') {
        int d = *v++ - '0';

        if (n > (max - d) / 10) /* n * 10 + d > max, asked without overflowing */
            return -1;
        n = n * 10 + d;
    }
    while (*v == ' ' || *v == '\t')
        v++;
    return *v == '\r' ? n : -1;
}

/* Does the header value (ending at its "\r") contain word? Compared only where the rest
 * of the line is long enough: strncasecmp may read all n bytes (libFuzzer's hook does),
 * and the head is not NUL-terminated. */
static bool value_has(const char *v, const char *word)
{
    size_t n = strlen(word), len = 0;

    while (v[len] && v[len] != '\r')
        len++;
    for (size_t i = 0; i + n <= len; i++)
        if (!strncasecmp(v + i, word, n))
            return true;
    return false;
}

static int parse_status(const char *buf, struct http_head *h)
{
    if (strncmp(buf, "HTTP/1.", 7) || (buf[7] != '0' && buf[7] != '1') || buf[8] != ' ')
        return -EPROTO;
    for (int i = 9; i < 12; i++)
        if (buf[i] < '0' || buf[i] > '9')
            return -EPROTO;
    if (buf[12] != ' ' && buf[12] != '\r')
        return -EPROTO;
    h->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
    if (h->status < 100)
        return -EPROTO;
    h->close = buf[7] == '0';
    return 0;
}

/* One header line [line, line+len) ending with "\r". */
static int parse_header(const char *line, size_t len, struct http_head *h)
{
    const char *v;

    if (!memchr(line, ':', len))
        return -EPROTO;
    if ((v = header_value(line, len, "Content-Length"))) {
        if ((h->content_length = header_int(v, (int64_t)1 << 40)) < 0)
            return -EPROTO;
    } else if ((v = header_value(line, len, "Transfer-Encoding"))) {
        h->chunked = value_has(v, "chunked");
    } else if ((v = header_value(line, len, "Connection"))) {
        if (value_has(v, "close"))
            h->close = true;
        else if (value_has(v, "keep-alive"))
            h->close = false;
    } else if ((v = header_value(line, len, "X-Docket-Offset"))) {
        h->docket_offset = header_int(v, INT64_MAX / 2);
    } else if ((v = header_value(line, len, "X-Docket-Eof"))) {
        h->docket_eof = *v == '1';
    } else if ((v = header_value(line, len, "X-Docket-Runs"))) {
        h->docket_runs = header_int(v, INT32_MAX);
    } else if ((v = header_value(line, len, "X-Docket-Backup-Bytes"))) {
        h->docket_bytes = header_int(v, INT64_MAX / 2);
    } else if ((v = header_value(line, len, "X-Docket-Schema"))) {
        h->docket_schema = (int)header_int(v, INT32_MAX);
    } else if ((v = header_value(line, len, "X-Docket-Backup-Format"))) {
        h->docket_pg_dump = strncmp(v, "pg_dump\r", 8) == 0;
    } else if ((v = header_value(line, len, "X-Docket-Backup-Sha256"))) {
        size_t n = 0;
        while (n < 64 && isxdigit((unsigned char)v[n]))
            n++;
        if (n == 64 && v[n] == '\r') {
            memcpy(h->docket_sha256, v, 64);
            h->docket_sha256[64] = '\0';
        }
    }
    return 0;
}

int http_parse_head(const char *buf, size_t len, struct http_head *out)
{
    struct http_head h = {
        .content_length = -1,
        .docket_offset = -1,
        .docket_runs = -1,
        .docket_schema = -1,
        .docket_bytes = -1,
    };
    size_t scan = len < HTTP_MAX_HEAD ? len : HTTP_MAX_HEAD;
    const char *end = NULL, *line, *nl;

    for (size_t i = 3; i < scan; i++)
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
            end = buf + i + 1;
            break;
        }
    if (!end)
        return len >= HTTP_MAX_HEAD ? -EPROTO : 0;
    if (memchr(buf, '\0', (size_t)(end - buf)) || end - buf < 16 || parse_status(buf, &h) < 0)
        return -EPROTO;
    line = memchr(buf, '\n', (size_t)(end - buf));
    if (line[-1] != '\r')
        return -EPROTO;
    line++;
    while (line < end - 2) {
        nl = memchr(line, '\n', (size_t)(end - line));
        if (!nl || nl == line || nl[-1] != '\r' || parse_header(line, (size_t)(nl - line), &h) < 0)
            return -EPROTO;
        line = nl + 1;
    }
    if (h.chunked)
        h.content_length = -1;
    *out = h;
    return (int)(end - buf);
}

enum { DC_SIZE, DC_DATA, DC_DATA_END, DC_TRAILER, DC_DONE };

void http_dechunk_init(struct http_dechunk *d)
{
    memset(d, 0, sizeof(*d));
    d->state = DC_SIZE;
}

/* A chunk-size line (without CRLF): hex digits, optional ";extension". */
static int chunk_size(const char *line, uint64_t *out)
{
    uint64_t n = 0;
    int digits = 0;

    for (; *line && *line != ';' && *line != ' ' && *line != '\t'; line++, digits++) {
        int v;
        if (*line >= '0' && *line <= '9')
            v = *line - '0';
        else if (*line >= 'a' && *line <= 'f')
            v = *line - 'a' + 10;
        else if (*line >= 'A' && *line <= 'F')
            v = *line - 'A' + 10;
        else
            return -EPROTO;
        if (digits >= 15)
            return -EPROTO;
        n = n * 16 + (uint64_t)v;
    }
    if (!digits)
        return -EPROTO;
    *out = n;
    return 0;
}

/* Collect a line up to LF into d->line; 1 when complete (CR stripped), 0 when more
 * input is needed, -EPROTO when too long. Lines of trailers may be long: only their
 * emptiness matters, so overflowing trailer bytes are dropped. */
static int take_line(struct http_dechunk *d, char c, bool trailer)
{
    if (c == '\n') {
        if (d->line_len && d->line[d->line_len - 1] == '\r')
            d->line_len--;
        d->line[d->line_len] = '\0';
        return 1;
    }
    if (d->line_len >= MAX_CHUNK_LINE) {
        if (!trailer)
            return -EPROTO;
        return 0;
    }
    d->line[d->line_len++] = c;
    return 0;
}

long http_dechunk_feed(struct http_dechunk *d, const char *in, size_t n, struct dbuf *out,
                       bool *done)
{
    size_t i = 0;
    int rc;

    *done = d->state == DC_DONE;
    while (i < n && d->state != DC_DONE) {
        if (d->state == DC_DATA) {
            size_t take = n - i < d->left ? n - i : (size_t)d->left;
            if (dbuf_append(out, in + i, take) < 0)
                return -ENOSPC;
            i += take;
            d->left -= take;
            if (!d->left)
                d->state = DC_DATA_END;
            continue;
        }
        if (d->state == DC_DATA_END) {
            /* exactly CRLF (or a bare LF) after a chunk's data */
            char ch = in[i++];
            if (ch == '\r' && !d->line_len) {
                d->line_len = 1;
            } else if (ch == '\n') {
                d->line_len = 0;
                d->state = DC_SIZE;
            } else {
                return -EPROTO;
            }
            continue;
        }
        rc = take_line(d, in[i++], d->state == DC_TRAILER);
        if (rc < 0)
            return rc;
        if (rc == 0)
            continue;
        d->line_len = 0;
        if (d->state == DC_SIZE) {
            if (chunk_size(d->line, &d->left) < 0)
                return -EPROTO;
            d->state = d->left ? DC_DATA : DC_TRAILER;
        } else if (d->state == DC_TRAILER && !d->line[0]) {
            d->state = DC_DONE;
        }
    }
    *done = d->state == DC_DONE;
    return (long)i;
}

/* ------------------------------------------------------------------------------------ */
/* The connection                                                                       */

struct http_conn {
    int fd;
    char socket_path[108];
    char host[256];
    int port;
};

struct http_conn *http_conn_create(const char *socket_path, const char *host, int port)
{
    struct http_conn *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->fd = -1;
    if (socket_path && str_copy(c->socket_path, sizeof(c->socket_path), socket_path) < 0) {
        free(c);
        errno = ENAMETOOLONG;
        return NULL;
    }
    if (host)
        str_copy(c->host, sizeof(c->host), host);
    c->port = port;
    return c;
}

static void conn_close(struct http_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

void http_conn_destroy(struct http_conn *c)
{
    if (!c)
        return;
    conn_close(c);
    free(c);
}

/* Wait for `events` on fd until the deadline; 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int64_t left = deadline - clock_mono_ms();
        int rc;

        if (left <= 0)
            return -ETIMEDOUT;
        rc = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (rc > 0)
            return 0;
        if (rc < 0 && errno != EINTR)
            return -errno;
    }
}

static int connect_unix(struct http_conn *c)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    str_copy(a.sun_path, sizeof(a.sun_path), c->socket_path);
    /* blocking connect: a local listener accepts or refuses at once */
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    c->fd = fd;
    return 0;
}

/* The address of host:port; numeric addresses never touch a resolver. */
static int resolve(const struct http_conn *c, struct sockaddr_storage *ss, socklen_t *len)
{
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;

    memset(ss, 0, sizeof(*ss));
    if (inet_pton(AF_INET, c->host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)c->port);
        *len = sizeof(*v4);
        return 0;
    }
    if (inet_pton(AF_INET6, c->host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)c->port);
        *len = sizeof(*v6);
        return 0;
    }
    if (getaddrinfo(c->host, NULL, &hints, &res) != 0 || !res)
        return -EHOSTUNREACH;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    if (ss->ss_family == AF_INET)
        v4->sin_port = htons((uint16_t)c->port);
    else
        v6->sin6_port = htons((uint16_t)c->port);
    freeaddrinfo(res);
    return 0;
}

static int connect_tcp(struct http_conn *c, int64_t deadline)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, rc, one = 1, soerr = 0;
    socklen_t sl = sizeof(soerr);

    if ((rc = resolve(c, &ss, &len)) < 0)
        return rc;
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
        if (errno != EINPROGRESS) {
            rc = -errno;
            close(fd);
            return rc;
        }
        if ((rc = wait_fd(fd, POLLOUT, deadline)) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
            close(fd);
            return rc < 0 ? rc : -(soerr ? soerr : ECONNREFUSED);
        }
    }
    c->fd = fd;
    return 0;
}

static int send_all(int fd, const char *p, size_t n, int64_t deadline)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_fd(fd, POLLOUT, deadline);
            if (rc < 0)
                return rc;
        } else if (w < 0 && errno != EINTR) {
            return -errno;
        }
    }
    return 0;
}

/* Read some bytes into b; >0 read, 0 EOF, <0 error (-ENOSPC when b is full). */
static long recv_some(int fd, struct dbuf *b, int64_t deadline)
{
    char chunk[16384];

    for (;;) {
        ssize_t r = recv(fd, chunk, sizeof(chunk), 0);
        if (r > 0)
            return dbuf_append(b, chunk, (size_t)r) < 0 ? -ENOSPC : (long)r;
        if (r == 0)
            return 0;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_fd(fd, POLLIN, deadline);
            if (rc < 0)
                return rc;
        } else if (errno != EINTR) {
            return -errno;
        }
    }
}

/* Where a body goes: the reply buffer, or a sink (a 2xx reply of http_request_to). */
struct body_out {
    struct dbuf *buf;
    const struct http_sink *sink;
    uint64_t n; /* bytes of the body so far */
};

static int body_put(struct body_out *o, const char *p, size_t n)
{
    o->n += n;
    if (o->sink)
        return n ? o->sink->put(o->sink->arg, p, n) : 0;
    return dbuf_append(o->buf, p, n) < 0 ? -ENOSPC : 0;
}

/* A sink takes what the chunk decoder left in the buffer. */
static int body_flush(struct body_out *o)
{
    if (!o->sink || o->buf->len == 0)
        return 0;
    int rc = o->sink->put(o->sink->arg, o->buf->data, o->buf->len);
    dbuf_reset(o->buf);
    return rc;
}

/* Read the body after a head of `hlen` bytes in `in` (which may hold some body bytes). */
static int read_body(struct http_conn *c, const struct http_head *h, bool no_body, struct dbuf *in,
                     size_t hlen, struct body_out *o, int64_t deadline)
{
    struct http_dechunk dc;
    size_t pos = hlen;
    bool done = false;
    long r;
    int rc;

    if (no_body)
        return 0;
    if (h->chunked) {
        http_dechunk_init(&dc);
        for (;;) {
            r = http_dechunk_feed(&dc, in->data + pos, in->len - pos, o->buf, &done);
            if (r < 0)
                return (int)r;
            if ((rc = body_flush(o)) < 0)
                return rc;
            pos += (size_t)r;
            if (done)
                return 0;
            dbuf_reset(in);
            pos = 0;
            if ((r = recv_some(c->fd, in, deadline)) <= 0)
                return r == 0 ? -EPROTO : (int)r;
        }
    }
    if (h->content_length >= 0) {
        uint64_t want = (uint64_t)h->content_length;
        size_t have = in->len - pos;
        if (have > want)
            have = (size_t)want;
        if ((rc = body_put(o, in->data + pos, have)) < 0)
            return rc;
        while (o->n < want) {
            dbuf_reset(in);
            if ((r = recv_some(c->fd, in, deadline)) <= 0)
                return r == 0 ? -EPROTO : (int)r;
            have = in->len;
            if (have > want - o->n)
                have = (size_t)(want - o->n);
            if ((rc = body_put(o, in->data, have)) < 0)
                return rc;
        }
        return 0;
    }
    /* neither: the body ends when the server closes */
    if ((rc = body_put(o, in->data + pos, in->len - pos)) < 0)
        return rc;
    for (;;) {
        dbuf_reset(in);
        if ((r = recv_some(c->fd, in, deadline)) < 0)
            return (int)r;
        if (r == 0) {
            conn_close(c);
            return 0;
        }
        if ((rc = body_put(o, in->data, in->len)) < 0)
            return rc;
    }
}

/* Read one response: head (skipping 1xx) then body. -EAGAIN: the connection was closed
 * before a single byte came (a stale kept-alive connection: the caller may retry). */
static int read_response(struct http_conn *c, const char *method, struct http_head *h,
                         struct dbuf *reply, const struct http_sink *sink, int64_t deadline)
{
    struct dbuf in;
    int hlen = 0, rc;
    long r;

    dbuf_init(&in, HTTP_MAX_HEAD + 16384);
    for (;;) {
        r = recv_some(c->fd, &in, deadline);
        if (r == 0 && in.len == 0) {
            rc = -EAGAIN;
            goto out;
        }
        if (r <= 0) {
            rc = r == 0 || r == -ENOSPC ? -EPROTO : (int)r;
            goto out;
        }
        hlen = http_parse_head(in.data, in.len, h);
        if (hlen < 0) {
            rc = hlen;
            goto out;
        }
        if (hlen > 0 && h->status >= 100 && h->status < 200) {
            /* an interim reply: drop it and read on */
            memmove(in.data, in.data + hlen, in.len - (size_t)hlen);
            in.len -= (size_t)hlen;
            in.data[in.len] = '\0';
            hlen = in.len ? http_parse_head(in.data, in.len, h) : 0;
        }
        if (hlen > 0)
            break;
    }
    /* only a success goes to the sink: an error's JSON is read as usual */
    struct body_out o = {reply, h->status >= 200 && h->status < 300 ? sink : NULL, 0};
    rc = read_body(c, h, !strcmp(method, "HEAD") || h->status == 204 || h->status == 304, &in,
                   (size_t)hlen, &o, deadline);
out:
    dbuf_release(&in);
    return rc;
}

static int build_request(const struct http_conn *c, const char *method, const char *path,
                         const char *headers, const char *body, size_t body_len, struct dbuf *req)
{
    dbuf_printf(req, "%s %s HTTP/1.1\r\nHost: ", method, path);
    if (c->socket_path[0])
        dbuf_puts(req, "docketd");
    else
        dbuf_printf(req, "%s%s%s:%d", strchr(c->host, ':') ? "[" : "", c->host,
                    strchr(c->host, ':') ? "]" : "", c->port);
    dbuf_printf(req, "\r\nUser-Agent: docket/0.1\r\nAccept: */*\r\n%s", headers);
    if (body || strcmp(method, "GET"))
        dbuf_printf(req, "Content-Length: %zu\r\n", body ? body_len : 0);
    dbuf_puts(req, "\r\n");
    if (body)
        dbuf_append(req, body, body_len);
    return req->failed ? -ENOMEM : 0;
}

static void describe(int rc, char *err, size_t errlen)
{
    switch (rc) {
    case -ENOENT:
        snprintf(err, errlen, "no such socket");
        break;
    case -ECONNREFUSED:
        snprintf(err, errlen, "connection refused (is docketd running?)");
        break;
    case -ETIMEDOUT:
        snprintf(err, errlen, "no answer in time");
        break;
    case -EPROTO:
        snprintf(err, errlen, "the reply is not HTTP as docketd speaks it");
        break;
    case -ENOSPC:
        snprintf(err, errlen, "the reply is too large");
        break;
    case -EHOSTUNREACH:
        snprintf(err, errlen, "cannot resolve or reach the host");
        break;
    default:
        snprintf(err, errlen, "%s", strerror(-rc));
        break;
    }
}

int http_request(struct http_conn *c, const char *method, const char *path, const char *headers,
                 const char *body, size_t body_len, long timeout_ms, struct http_head *head,
                 struct dbuf *reply, char *err, size_t errlen)
{
    return http_request_to(c, method, path, headers, body, body_len, timeout_ms, head, reply, NULL,
                           err, errlen);
}

int http_request_to(struct http_conn *c, const char *method, const char *path, const char *headers,
                    const char *body, size_t body_len, long timeout_ms, struct http_head *head,
                    struct dbuf *reply, const struct http_sink *sink, char *err, size_t errlen)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    struct dbuf req;
    int rc = 0;

    dbuf_init(&req, (size_t)body_len + 16384);
    if ((rc = build_request(c, method, path, headers, body, body_len, &req)) < 0)
        goto out;
    for (int attempt = 0; attempt < 2; attempt++) {
        bool reused = c->fd >= 0;

        if (!reused) {
            int64_t cdl = clock_mono_ms() + CONNECT_TIMEOUT_MS;
            rc = c->socket_path[0] ? connect_unix(c)
                                   : connect_tcp(c, cdl < deadline ? cdl : deadline);
            if (rc < 0)
                goto out;
        }
        dbuf_reset(reply);
        rc = send_all(c->fd, req.data, req.len, deadline);
        if (rc == 0)
            rc = read_response(c, method, head, reply, sink, deadline);
        if (rc == 0) {
            if (head->close)
                conn_close(c);
            goto out;
        }
        conn_close(c);
        /* (a reset may come after a sink took bytes: those are not asked for twice) */
        if (!reused || (rc != -EAGAIN && rc != -EPIPE && (rc != -ECONNRESET || sink)))
            break;
    }
    if (rc == -EAGAIN)
        rc = -EPROTO;
out:
    if (rc < 0)
        describe(rc, err, errlen);
    dbuf_release(&req);
    return rc;
}
