/* fuzz_conn.c - libFuzzer harness for what docketd reads byte by byte on a connection
 * outside the JSON parsers: the percent-decoding of a path segment (ctl_path_decode) and
 * the recognition of libevent's HTML error page in an output buffer, which may hold a
 * job's log (ctl_html_error_status). The first byte picks which. */
#include <event2/buffer.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/conn.h"
#include "controller/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void path(const uint8_t *data, size_t size)
{
    char seg[128];
    if (size >= sizeof(seg))
        return;
    memcpy(seg, data, size);
    seg[size] = '\0';
    if (strchr(seg, '/'))
        return; /* the router splits at '/' before decoding */
    size_t before = strlen(seg);
    if (ctl_path_decode(seg, sizeof(seg)) == 0 && (strchr(seg, '/') || strlen(seg) > before))
        abort(); /* a decoded segment never names another path nor grows */
}

static void page(const uint8_t *data, size_t size)
{
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return;
    evbuffer_add(b, data, size);
    int st = ctl_html_error_status(b);
    /* only a whole HTTP response whose headers say text/html is taken for the page */
    if (st && (size < 7 || memcmp(data, "HTTP/1.", 7) != 0 || st < 400 || st > 599 ||
               !memmem(data, size, "Content-Type: text/html", 23)))
        abort();
    evbuffer_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1)
        page(data + 1, size - 1);
    else
        path(data + 1, size - 1);
    return 0;
}
