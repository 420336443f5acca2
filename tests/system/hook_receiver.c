/*
 * hook_receiver.c - a real local HTTP webhook receiver for the bats tests (alerts.bats):
 * listens on 127.0.0.1 (port 0: the kernel picks; written to PORTFILE once listening),
 * appends each POST body as one line to OUTFILE, and answers 200 - or 500 to the first
 * FAIL requests, so a test can watch docketd retry. Stopped by the test, by pid.
 *
 * usage: hook_receiver PORTFILE OUTFILE [FAIL]
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *out_path;
static long fail_left;

static void on_request(struct evhttp_request *req, void *arg)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    char *body = malloc(n + 1);
    if (!body) {
        evhttp_send_error(req, 500, NULL);
        return;
    }
    evbuffer_remove(in, body, n);
    body[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (body[i] == '\n')
            body[i] = ' ';
    const char *sig =
        evhttp_find_header(evhttp_request_get_input_headers(req), "X-Docket-Signature");
    if (fail_left > 0) {
        fail_left--;
        free(body);
        evhttp_send_error(req, 500, "failing on purpose");
        return;
    }
    FILE *f = fopen(out_path, "a");
    if (f) {
        fprintf(f, "%s\t%s\n", sig ? sig : "-", body);
        fclose(f);
    }
    free(body);
    evhttp_send_reply(req, 200, "OK", NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: hook_receiver PORTFILE OUTFILE [FAIL]\n");
        return 2;
    }
    out_path = argv[2];
    fail_left = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
    struct event_base *base = event_base_new();
    struct evhttp *http = base ? evhttp_new(base) : NULL;
    struct evhttp_bound_socket *s =
        http ? evhttp_bind_socket_with_handle(http, "127.0.0.1", 0) : NULL;
    if (!s) {
        fprintf(stderr, "hook_receiver: cannot listen\n");
        return 1;
    }
    evhttp_set_gencb(http, on_request, NULL);
    struct sockaddr_storage ss;
    ev_socklen_t len = sizeof ss;
    getsockname(evhttp_bound_socket_get_fd(s), (struct sockaddr *)&ss, &len);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return 1;
    fprintf(f, "%d\n", ntohs(((struct sockaddr_in *)&ss)->sin_port));
    fclose(f);
    rename(tmp, argv[1]);
    event_base_dispatch(base);
    return 0;
}
