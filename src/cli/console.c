/*
 * console.c - `docket console`: open the web console (docs/console.md). It asks docketd
 * for a one-time login code (POST /v1/console/codes, as whoever runs it) and prints a
 * link that logs the browser in once, within a minute. Over TCP the link is docketd's
 * own address. On the Unix-socket-only default it also runs a local forward: a loopback
 * port whose requests go to the socket, one request per connection. Over the socket
 * docketd would take a request without a token as this user (SO_PEERCRED), so the
 * forward passes only what carries no such power: the page and its files, the code
 * exchange, /healthz, and requests with an Authorization header (docketd then checks
 * that token and ignores the socket's user). Anything else gets 401 from the forward.
 * Its Host must be the forward's own address (no DNS rebinding).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/parse.h"

const char cmd_console_usage[] =
    "usage: docket console [--port N] [--json]\n"
    "\n"
    "Print a link to the web console that logs you in once (within 60 s) as the user this\n"
    "command runs as. Against a docketd reached over TCP (DOCKET_URL=http...) the link is\n"
    "docketd's address. Over the Unix socket (the local default) docket console also\n"
    "forwards a loopback port (--port, default any free one) to the socket until stopped\n"
    "(Ctrl-C); the forward passes only requests that carry a token, so other local users\n"
    "gain nothing from it.\n";

enum { C_PORT = 1 };

static const struct opt_def console_opts[] = {
    {C_PORT, 'p', "port", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

#define HEAD_MAX 65536

static const char refused_body[] =
    "{\"error\":{\"code\":\"unauthenticated\",\"message\":\"the console forward passes only "
    "requests with a token (log in first) to its own address\"}}\n";

static bool has_header(const char *head, const char *name, const char *value)
{
    size_t n = strlen(name);
    for (const char *l = strstr(head, "\r\n"); l && l[2] != '\r'; l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, name, n) != 0 || l[2 + n] != ':')
            continue;
        if (!value)
            return true;
        const char *v = l + 3 + n;
        while (*v == ' ')
            v++;
        size_t vl = strlen(value);
        return strncmp(v, value, vl) == 0 && v[vl] == '\r';
    }
    return false;
}

bool console_forward_passes(const char *head, const char *host)
{
    char method[8], path[512];
    if (sscanf(head, "%7s %511s", method, path) != 2 || !has_header(head, "Host", host))
        return false;
    char *q = strchr(path, '?');
    if (q)
        *q = '\0';
    if (strcmp(method, "GET") == 0 &&
        (strcmp(path, "/") == 0 || strncmp(path, "/console/", 9) == 0 ||
         strcmp(path, "/healthz") == 0))
        return true;
    if (strcmp(method, "POST") == 0 && strcmp(path, "/v1/console/session") == 0)
        return true;
    return has_header(head, "Authorization", NULL);
}

/* Copy both ways until the two sides are done. */
static void pump(int a, int b)
{
    struct pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    char buf[16384];
    int open = 2;
    while (open > 0 && poll(p, 2, -1) > 0) {
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(p[i].fd, buf, sizeof(buf));
            if (n <= 0 || cli_send_all(p[1 - i].fd, buf, (size_t)n) < 0) {
                shutdown(p[1 - i].fd, SHUT_WR);
                p[i].fd = -1;
                open--;
            }
        }
    }
}

/* One connection (a child process): read the head, check it, send it on with
 * "Connection: close" (one request per connection: each is checked), then copy. */
static void forward_one(int cfd, const char *sock, const char *host)
{
    char *head = malloc(HEAD_MAX + 1);
    size_t n = 0;
    char *end = NULL;
    while (head && n < HEAD_MAX && !end) {
        ssize_t r = read(cfd, head + n, HEAD_MAX - n);
        if (r <= 0)
            return;
        n += (size_t)r;
        head[n] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    if (!end || !console_forward_passes(head, host)) {
        char hdr[160];
        int hl = snprintf(hdr, sizeof(hdr),
                          "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
                          "Connection: close\r\nContent-Length: %zu\r\n\r\n",
                          sizeof(refused_body) - 1);
        if (cli_send_all(cfd, hdr, (size_t)hl) == 0)
            cli_send_all(cfd, refused_body, sizeof(refused_body) - 1);
        return;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
    int ufd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ufd < 0 || connect(ufd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return;
    char *eol = strstr(head, "\r\n");
    static const char close_hdr[] = "\r\nConnection: close";
    if (cli_send_all(ufd, head, (size_t)(eol - head)) < 0 ||
        cli_send_all(ufd, close_hdr, sizeof(close_hdr) - 1) < 0 ||
        cli_send_all(ufd, eol, n - (size_t)(eol - head)) < 0)
        return;
    pump(cfd, ufd);
}

static int listen_loopback(int *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port)};
    socklen_t sl = sizeof(sa);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

/* Print the link (with --json: {"url", "code", "expires_ms", "user"}). */
static void print_link(struct cli *c, json_t *reply, const char *base)
{
    char link[1024];
    snprintf(link, sizeof(link), "%s/#/login?code=%s", base, jstr(reply, "code"));
    if (c->json) {
        json_object_set_new(reply, "url", json_string(link));
        cli_print_json(c, reply);
    } else {
        fprintf(c->out, "%s\n", link);
    }
    fflush(c->out);
}

static int serve_forward(struct cli *c, const char *sock, int port, json_t *reply)
{
    int lfd = listen_loopback(&port);
    if (lfd < 0)
        return cli_fail(c, "cannot listen on 127.0.0.1:%d: %s (pick another --port)", port,
                        strerror(errno));
    char host[32], base[48];
    snprintf(host, sizeof(host), "127.0.0.1:%d", port);
    snprintf(base, sizeof(base), "http://%s", host);
    print_link(c, reply, base);
    fprintf(stderr, "the link logs in once, within 60 s; this forward to %s runs until Ctrl-C\n",
            sock);
    signal(SIGCHLD, SIG_IGN); /* children are reaped by the kernel */
    for (;;) {
        int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return cli_fail(c, "accept: %s", strerror(errno));
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(lfd);
            forward_one(cfd, sock, host);
            _exit(0);
        }
        close(cfd);
    }
}

int cmd_console(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    json_t *reply = NULL, *body;
    int port = 0;
    int rc = cli_parse_args(c, argc, argv, console_opts, 0, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    for (int k = 0; k < a.nopts; k++)
        if (a.ids[k] == C_PORT && parse_int(a.vals[k], 0, 65535, &port) < 0)
            return cli_usage_error(c, "--port: want 0 to 65535, not '%.40s'", a.vals[k]);
    body = json_object();
    rc = cli_call(c, "POST", "/v1/console/codes", body, &reply);
    json_decref(body);
    if (rc != 0)
        return rc;
    const char *url = c->cfg.url;
    if (strncmp(url, "unix:", 5) == 0) {
        rc = serve_forward(c, url + 5, port, reply);
    } else {
        char base[600];
        size_t ul = strlen(url);
        snprintf(base, sizeof(base), "%.*s", (int)(ul && url[ul - 1] == '/' ? ul - 1 : ul), url);
        print_link(c, reply, base);
        fprintf(stderr, "the link logs in once, within 60 s\n");
    }
    json_decref(reply);
    return rc;
}
