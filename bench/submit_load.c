/*
 * submit_load.c - durable submission load generator for docketd: C concurrent
 * keep-alive HTTP/1.1 connections on loopback, N job submissions in all (POST /v1/jobs),
 * each answered only once its job is committed. Prints jobs/s and the p50/p99/max
 * latency of one submission. Plain sockets and poll(): no client library in the way.
 *
 *   submit_load --port-file STATE/docketd.port --token-file STATE/admin.token \
 *               [--n 20000] [--conns 16] [--body JSON]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MAX_CONNS = 256, BUF = 65536 };

struct conn {
    int fd;
    char req[4096];
    size_t req_len, sent;
    char in[BUF];
    size_t in_len;
    double t0;
    bool busy;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int read_file_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f || !fgets(out, (int)len, f)) {
        fprintf(stderr, "submit_load: cannot read '%s'\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int one = 1;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        perror("submit_load: connect");
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A complete response in c->in? Returns its total length and the status, or 0. */
static size_t response_done(const struct conn *c, int *status)
{
    const char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!end)
        return 0;
    size_t head = (size_t)(end - c->in) + 4;
    const char *cl = memmem(c->in, head, "Content-Length:", 15);
    if (!cl)
        cl = memmem(c->in, head, "content-length:", 15);
    size_t body = cl ? strtoul(cl + 15, NULL, 10) : 0;
    if (c->in_len < head + body)
        return 0;
    *status = (int)strtol(c->in + 9, NULL, 10);
    return head + body;
}

struct opts {
    int port, conns;
    long n;
    char token[256];
    const char *body;
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
    char buf[64];
    o->conns = 16;
    o->n = 20000;
    o->body = "{\"command\": [\"true\"], \"hold\": true}";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return -1;
        if (strcmp(a, "--port-file") == 0 && read_file_line(v, buf, sizeof(buf)) == 0)
            o->port = (int)strtol(buf, NULL, 10);
        else if (strcmp(a, "--port") == 0)
            o->port = (int)strtol(v, NULL, 10);
        else if (strcmp(a, "--token-file") == 0) {
            if (read_file_line(v, o->token, sizeof(o->token)) < 0)
                return -1;
        } else if (strcmp(a, "--n") == 0)
            o->n = strtol(v, NULL, 10);
        else if (strcmp(a, "--conns") == 0)
            o->conns = (int)strtol(v, NULL, 10);
        else if (strcmp(a, "--body") == 0)
            o->body = v;
        else
            return -1;
        i++;
    }
    if (o->port <= 0 || o->port > 65535 || o->n <= 0 || o->conns <= 0 || o->conns > MAX_CONNS)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    memset(&o, 0, sizeof(o));
    if (parse_opts(argc, argv, &o) < 0) {
        fprintf(stderr, "usage: submit_load (--port-file F | --port P) --token-file F [--n N]"
                        " [--conns C] [--body JSON]\n");
        return 2;
    }
    static struct conn cs[MAX_CONNS];
    struct pollfd pfd[MAX_CONNS];
    double *lat = calloc((size_t)o.n, sizeof(double));
    long sent = 0, done = 0, errors = 0;
    for (int i = 0; i < o.conns; i++) {
        if ((cs[i].fd = connect_to(o.port)) < 0)
            return 1;
        cs[i].req_len =
            (size_t)snprintf(cs[i].req, sizeof(cs[i].req),
                             "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                             "Content-Length: %zu\r\n\r\n%s",
                             o.token, strlen(o.body), o.body);
    }
    double start = now_s();
    while (done < o.n) {
        for (int i = 0; i < o.conns; i++) {
            struct conn *c = &cs[i];
            if (!c->busy && sent < o.n) {
                c->busy = true;
                c->sent = 0;
                c->in_len = 0;
                c->t0 = now_s();
                sent++;
            }
            pfd[i].fd = c->fd;
            pfd[i].events = c->busy ? (c->sent < c->req_len ? POLLOUT : POLLIN) : 0;
        }
        if (poll(pfd, (nfds_t)o.conns, 10000) <= 0) {
            fprintf(stderr, "submit_load: timed out waiting for docketd\n");
            return 1;
        }
        for (int i = 0; i < o.conns; i++) {
            struct conn *c = &cs[i];
            if (pfd[i].revents & POLLOUT) {
                ssize_t w = write(c->fd, c->req + c->sent, c->req_len - c->sent);
                if (w > 0)
                    c->sent += (size_t)w;
            }
            if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                ssize_t r = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
                if (r <= 0) {
                    fprintf(stderr, "submit_load: connection closed by docketd\n");
                    return 1;
                }
                c->in_len += (size_t)r;
                int status = 0;
                if (response_done(c, &status)) {
                    lat[done++] = now_s() - c->t0;
                    if (status != 201)
                        errors++;
                    c->busy = false;
                }
            }
        }
    }
    double el = now_s() - start;
    qsort(lat, (size_t)o.n, sizeof(double), cmp_double);
    printf("submissions %ld conns %d errors %ld elapsed %.3f s\n", o.n, o.conns, errors, el);
    printf("rate %.0f jobs/s p50 %.3f ms p99 %.3f ms max %.3f ms\n", (double)o.n / el,
           lat[o.n / 2] * 1e3, lat[(long)((double)o.n * 0.99)] * 1e3, lat[o.n - 1] * 1e3);
    for (int i = 0; i < o.conns; i++)
        close(cs[i].fd);
    free(lat);
    return errors ? 1 : 0;
}
