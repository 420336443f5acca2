/* test_http.c - unit tests of docket's small HTTP/1.1 client (src/cli/http.c): response
 * heads, chunked bodies fed in every split, and whole requests against a scripted server
 * (a forked child on a Unix socket) for keep-alive, a stale connection, interim replies,
 * bodies ending at close, caps and timeouts. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/http.h"

static void head_ok(void **state)
{
    const char *r =
        "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
        "content-length: 12\r\nX-Docket-Offset: 4096\r\nX-Docket-Eof: 1\r\n\r\n{\"job\": {}}";
    struct http_head h;
    int n = http_parse_head(r, strlen(r), &h);

    assert_int_equal(n, (int)(strstr(r, "\r\n\r\n") - r) + 4);
    assert_int_equal(h.status, 201);
    assert_int_equal(h.content_length, 12);
    assert_false(h.chunked);
    assert_false(h.close);
    assert_int_equal(h.docket_offset, 4096);
    assert_true(h.docket_eof);
}

static void head_incomplete_needs_more(void **state)
{
    const char *r = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n";
    struct http_head h;

    for (size_t i = 0; i <= strlen(r); i++)
        assert_int_equal(http_parse_head(r, i, &h), 0);
}

static void head_variants(void **state)
{
    struct http_head h;
    const char *a = "HTTP/1.0 200 OK\r\n\r\n";
    const char *b = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n";
    const char *c = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n";
    const char *d = "HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n";

    assert_true(http_parse_head(a, strlen(a), &h) > 0);
    assert_true(h.close);
    assert_int_equal(h.content_length, -1);
    assert_true(http_parse_head(b, strlen(b), &h) > 0);
    assert_false(h.close);
    assert_true(http_parse_head(c, strlen(c), &h) > 0);
    assert_true(h.chunked);
    assert_int_equal(h.content_length, -1); /* chunked wins */
    assert_true(http_parse_head(d, strlen(d), &h) > 0);
    assert_int_equal(h.status, 404);
    assert_true(h.close);
}

static void head_malformed(void **state)
{
    static const char *const bad[] = {
        "HTTP/2 200 OK\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 abc OK\r\n\r\n",
        "FTP/1.1 200 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "HTTP/1.1 200 OK\nContent-Length: 1\r\n\r\n",
        "HTTP/1.1 099 Odd\r\n\r\n",
    };
    struct http_head h;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (http_parse_head(bad[i], strlen(bad[i]), &h) != -EPROTO)
            fail_msg("accepted: %s", bad[i]);
}

/* Numbers at and past their caps: the largest kept, anything above read as absent (or
 * refused, for Content-Length), however many digits (no overflow on the way). */
static void head_number_caps(void **state)
{
    const char *at = "HTTP/1.1 200 OK\r\nX-Docket-Offset: 4611686018427387903\r\n"
                     "X-Docket-Runs: 2147483647\r\nContent-Length: 1099511627776\r\n\r\n";
    const char *over = "HTTP/1.1 200 OK\r\nX-Docket-Offset: 4611686018427387904\r\n"
                       "X-Docket-Runs: 2147483648\r\n\r\n";
    const char *huge = "HTTP/1.1 200 OK\r\nX-Docket-Offset: 444444444444444444444444444444\r\n"
                       "X-Docket-Runs: 99999999999999999999999999\r\n\r\n";
    const char *cl = "HTTP/1.1 200 OK\r\nContent-Length: 1099511627777\r\n\r\n";
    struct http_head h;

    assert_true(http_parse_head(at, strlen(at), &h) > 0);
    assert_true(h.docket_offset == INT64_MAX / 2);
    assert_int_equal(h.docket_runs, INT32_MAX);
    assert_true(h.content_length == (int64_t)1 << 40);
    assert_true(http_parse_head(over, strlen(over), &h) > 0);
    assert_int_equal(h.docket_offset, -1);
    assert_int_equal(h.docket_runs, -1);
    assert_true(http_parse_head(huge, strlen(huge), &h) > 0);
    assert_int_equal(h.docket_offset, -1);
    assert_int_equal(h.docket_runs, -1);
    assert_int_equal(http_parse_head(cl, strlen(cl), &h), -EPROTO);
}

static void head_too_long(void **state)
{
    size_t n = HTTP_MAX_HEAD + 10;
    char *big = malloc(n);
    struct http_head h;

    memset(big, 'a', n);
    memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 21);
    assert_int_equal(http_parse_head(big, n, &h), -EPROTO);
    free(big);
}

/* Decode `in` split at every position; the result must always be `want`. */
static void dechunk_all_splits(const char *in, const char *want, size_t rest)
{
    size_t n = strlen(in);

    for (size_t cut = 0; cut <= n; cut++) {
        struct http_dechunk d;
        struct dbuf out;
        bool done = false;
        long a, b = 0;

        http_dechunk_init(&d);
        dbuf_init(&out, 1 << 20);
        a = http_dechunk_feed(&d, in, cut, &out, &done);
        assert_true(a >= 0);
        if (!done) {
            b = http_dechunk_feed(&d, in + a, n - (size_t)a, &out, &done);
            assert_true(b >= 0);
        }
        assert_true(done);
        if (strcmp(out.data, want))
            fail_msg("split at %zu: decoded '%s'; want '%s'", cut, out.data, want);
        assert_int_equal(n - (size_t)(a + b), rest);
        dbuf_release(&out);
    }
}

static void dechunk_bodies(void **state)
{
    dechunk_all_splits("5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n", "hello, world", 0);
    dechunk_all_splits("A\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n", "0123456789", 0);
    dechunk_all_splits("0\r\n\r\nHTTP/1.1 next", "", 13);
}

static void dechunk_malformed(void **state)
{
    static const char *const bad[] = {"x\r\n", "5\r\nhelloXX", "\r\n", "1234567890abcdef0\r\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct http_dechunk d;
        struct dbuf out;
        bool done;

        http_dechunk_init(&d);
        dbuf_init(&out, 1024);
        if (http_dechunk_feed(&d, bad[i], strlen(bad[i]), &out, &done) != -EPROTO)
            fail_msg("accepted chunked body '%s'", bad[i]);
        dbuf_release(&out);
    }
}

static void dechunk_cap(void **state)
{
    struct http_dechunk d;
    struct dbuf out;
    bool done;
    const char *in = "a\r\n0123456789\r\n0\r\n\r\n";

    http_dechunk_init(&d);
    dbuf_init(&out, 4);
    assert_int_equal(http_dechunk_feed(&d, in, strlen(in), &out, &done), -ENOSPC);
    dbuf_release(&out);
}

/* ------------------------------------------------------------------------------------ */
/* A scripted server: for connection i it reads one request, writes replies[i] (NULL:
 * close without answering), then either keeps reading (keep) or closes. */

static char sock_path[108];
static pid_t server;

struct script {
    const char *replies[4]; /* per request, in order, across connections */
    bool close_after[4];    /* close the connection after this reply */
};

static bool read_request(int fd)
{
    char buf[8192];
    size_t got = 0;

    while (got < sizeof(buf) - 1) {
        ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);
        if (r <= 0)
            return false;
        got += (size_t)r;
        buf[got] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (end) {
            char *cl = strstr(buf, "Content-Length: ");
            size_t body = cl ? strtoul(cl + 16, NULL, 10) : 0;
            if (got >= (size_t)(end + 4 - buf) + body)
                return true;
        }
    }
    return false;
}

static void serve(const struct script *s)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int l = socket(AF_UNIX, SOCK_STREAM, 0), i = 0;

    snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
    unlink(sock_path);
    if (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4) < 0)
        _exit(1);
    server = fork();
    if (server != 0) {
        close(l);
        return;
    }
    while (i < 4 && s->replies[i]) {
        int fd = accept(l, NULL, NULL);
        for (; i < 4 && s->replies[i]; i++) {
            if (!read_request(fd))
                break;
            if (strcmp(s->replies[i], "-")) {
                ssize_t w = write(fd, s->replies[i], strlen(s->replies[i]));
                (void)w;
            }
            if (s->close_after[i] || !strcmp(s->replies[i], "-")) {
                i++;
                break;
            }
        }
        if (i > 0 && !s->close_after[i - 1] && strcmp(s->replies[i - 1], "-") &&
            (i == 4 || !s->replies[i]))
            sleep(30); /* the script's last reply keeps the connection open */
        close(fd);
    }
    _exit(0);
}

static int server_setup(void **state)
{
    snprintf(sock_path, sizeof(sock_path), "/tmp/docket-http-test-%d.sock", (int)getpid());
    return 0;
}

static int server_teardown(void **state)
{
    if (server > 0) {
        kill(server, SIGKILL);
        waitpid(server, NULL, 0);
        server = 0;
    }
    unlink(sock_path);
    return 0;
}

static int req(struct http_conn *c, const char *method, struct http_head *h, struct dbuf *out,
               long timeout_ms)
{
    char err[256];
    return http_request(c, method, "/v1/x", "Authorization: Bearer t\r\n",
                        method[0] == 'P' ? "{}" : NULL, method[0] == 'P' ? 2 : 0, timeout_ms, h,
                        out, err, sizeof(err));
}

static void keepalive_then_stale_connection(void **state)
{
    struct script s = {.replies = {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                                   "-", /* the server drops the kept-alive connection unanswered */
                                   "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   "3\r\nabc\r\n0\r\n\r\n"}};
    struct http_conn *c;
    struct http_head h;
    struct dbuf out;

    serve(&s);
    c = http_conn_create(sock_path, NULL, 0);
    dbuf_init(&out, 1024);
    assert_int_equal(req(c, "GET", &h, &out, 5000), 0);
    assert_int_equal(h.status, 200);
    assert_string_equal(out.data, "ok");
    assert_int_equal(req(c, "POST", &h, &out, 5000), 0); /* retried on a new connection */
    assert_int_equal(h.status, 201);
    assert_string_equal(out.data, "abc");
    dbuf_release(&out);
    http_conn_destroy(c);
}

static void interim_reply_and_body_to_close(void **state)
{
    struct script s = {.replies = {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\nall of it"},
                       .close_after = {true}};
    struct http_conn *c;
    struct http_head h;
    struct dbuf out;

    serve(&s);
    c = http_conn_create(sock_path, NULL, 0);
    dbuf_init(&out, 1024);
    assert_int_equal(req(c, "GET", &h, &out, 5000), 0);
    assert_int_equal(h.status, 200);
    assert_string_equal(out.data, "all of it");
    dbuf_release(&out);
    http_conn_destroy(c);
}

static void reply_over_the_cap(void **state)
{
    struct script s = {.replies = {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"}};
    struct http_conn *c;
    struct http_head h;
    struct dbuf out;

    serve(&s);
    c = http_conn_create(sock_path, NULL, 0);
    dbuf_init(&out, 4);
    assert_int_equal(req(c, "GET", &h, &out, 5000), -ENOSPC);
    dbuf_release(&out);
    http_conn_destroy(c);
}

/* A download's sink: what it was handed, in order, and in how many pieces. */
struct collect {
    struct dbuf got;
    int calls;
    int fail_at; /* the call that answers an error (0: none) */
};

static int collect_put(void *arg, const char *p, size_t n)
{
    struct collect *k = arg;
    if (++k->calls == k->fail_at)
        return -ECANCELED;
    return dbuf_append(&k->got, p, n);
}

static int req_to(struct http_conn *c, struct http_head *h, struct dbuf *out, struct collect *k)
{
    char err[256];
    struct http_sink sink = {collect_put, k};
    return http_request_to(c, "GET", "/v1/admin/backup", "", NULL, 0, 5000, h, out, &sink, err,
                           sizeof(err));
}

/* A 2xx body (sized, then chunked) goes to the sink, never to the capped buffer, with the
 * backup's headers read; an error's body goes to the buffer; the sink's error ends it. */
static void download_to_sink(void **state)
{
    static const char sha[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    struct script s = {
        .replies = {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nX-Docket-Backup-Bytes: 10\r\n"
                    "X-Docket-Backup-Sha256: 0123456789abcdef0123456789abcdef0123456789abcdef"
                    "0123456789abcdef\r\nX-Docket-Schema: 12\r\n\r\n0123456789",
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n",
                    "HTTP/1.1 409 Conflict\r\nContent-Length: 7\r\n\r\n{\"e\":1}",
                    "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"}};
    struct collect k = {.fail_at = 0};
    struct http_conn *c;
    struct http_head h;
    struct dbuf out;

    serve(&s);
    c = http_conn_create(sock_path, NULL, 0);
    /* smaller than the sized body (a chunked one passes through it a read at a time) */
    dbuf_init(&out, 8);
    dbuf_init(&k.got, 1024);
    assert_int_equal(req_to(c, &h, &out, &k), 0);
    assert_int_equal(h.status, 200);
    assert_int_equal(out.len, 0);
    assert_string_equal(k.got.data, "0123456789");
    assert_int_equal(h.docket_bytes, 10);
    assert_int_equal(h.docket_schema, 12);
    assert_string_equal(h.docket_sha256, sha);
    dbuf_reset(&k.got);
    assert_int_equal(req_to(c, &h, &out, &k), 0);
    assert_string_equal(k.got.data, "abcdefg");
    assert_int_equal(h.docket_bytes, -1);
    assert_string_equal(h.docket_sha256, "");
    dbuf_release(&out);
    dbuf_init(&out, 1024);
    dbuf_reset(&k.got);
    assert_int_equal(req_to(c, &h, &out, &k), 0);
    assert_int_equal(h.status, 409);
    assert_string_equal(out.data, "{\"e\":1}");
    assert_int_equal(k.got.len, 0);
    k.fail_at = k.calls + 1;
    assert_int_equal(req_to(c, &h, &out, &k), -ECANCELED);
    dbuf_release(&k.got);
    dbuf_release(&out);
    http_conn_destroy(c);
}

static void garbage_and_truncation(void **state)
{
    struct script s = {
        .replies = {"SMTP ready\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"},
        .close_after = {true, true}};
    struct http_conn *c;
    struct http_head h;
    struct dbuf out;

    serve(&s);
    c = http_conn_create(sock_path, NULL, 0);
    dbuf_init(&out, 1024);
    assert_int_equal(req(c, "GET", &h, &out, 5000), -EPROTO);
    assert_int_equal(req(c, "GET", &h, &out, 5000), -EPROTO);
    dbuf_release(&out);
    http_conn_destroy(c);
}

static void no_server(void **state)
{
    struct http_conn *c = http_conn_create(sock_path, NULL, 0);
    struct http_conn *t = http_conn_create(NULL, "127.0.0.1", 1);
    struct http_head h;
    struct dbuf out;
    char err[256];

    dbuf_init(&out, 1024);
    assert_int_equal(http_request(c, "GET", "/", "", NULL, 0, 2000, &h, &out, err, sizeof(err)),
                     -ENOENT);
    assert_string_equal(err, "no such socket");
    assert_int_equal(http_request(t, "GET", "/", "", NULL, 0, 2000, &h, &out, err, sizeof(err)),
                     -ECONNREFUSED);
    dbuf_release(&out);
    http_conn_destroy(c);
    http_conn_destroy(t);
}

static void timeout(void **state)
{
    struct script s = {.replies = {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nnot all"}};
    struct http_conn *c;
    struct http_head h;
    struct dbuf out;

    s.close_after[0] = false;
    serve(&s);
    c = http_conn_create(sock_path, NULL, 0);
    dbuf_init(&out, 1024);
    /* the server keeps the connection open without sending the rest */
    assert_int_equal(req(c, "GET", &h, &out, 300), -ETIMEDOUT);
    dbuf_release(&out);
    http_conn_destroy(c);
}

int main(void)
{
#define S(f) cmocka_unit_test_setup_teardown(f, server_setup, server_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(head_ok),
        cmocka_unit_test(head_incomplete_needs_more),
        cmocka_unit_test(head_variants),
        cmocka_unit_test(head_malformed),
        cmocka_unit_test(head_too_long),
        cmocka_unit_test(head_number_caps),
        cmocka_unit_test(dechunk_bodies),
        cmocka_unit_test(dechunk_malformed),
        cmocka_unit_test(dechunk_cap),
        S(keepalive_then_stale_connection),
        S(interim_reply_and_body_to_close),
        S(reply_over_the_cap),
        S(download_to_sink),
        S(garbage_and_truncation),
        S(no_server),
        S(timeout),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
