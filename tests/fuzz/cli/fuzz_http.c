/*
 * fuzz_http.c - libFuzzer harness of the reply parsers of docket's HTTP client
 * (src/cli/http.c): any bytes as a response head, and as a chunked body fed in two
 * pieces split where the first byte says. Checks, beyond memory safety: a parsed head
 * fits the input and has a real status, and a backup's SHA-256 only whole; the decoder never
 * consumes more than it is given, never outputs more than it consumed, and decodes the same
 * whatever the split.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decode in two pieces; returns the decoded bytes (caller frees) or NULL on error. */
static char *decode(const char *in, size_t n, size_t cut, size_t *out_len, bool *done)
{
    struct http_dechunk d;
    struct dbuf out;
    long a, b = 0;

    http_dechunk_init(&d);
    dbuf_init(&out, 1 << 20);
    a = http_dechunk_feed(&d, in, cut, &out, done);
    if (a >= 0 && (size_t)a > cut)
        abort();
    if (a >= 0 && !*done) {
        if ((size_t)a != cut)
            abort(); /* not done: everything given must have been consumed */
        b = http_dechunk_feed(&d, in + cut, n - cut, &out, done);
        if (b >= 0 && (size_t)b > n - cut)
            abort();
    }
    if (a < 0 || b < 0) {
        dbuf_release(&out);
        return NULL;
    }
    if (out.len > (size_t)(a + b))
        abort();
    return dbuf_detach(&out, out_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    struct http_head h;
    int n = http_parse_head(in, size, &h);

    if (n > 0 && ((size_t)n > size || h.status < 100 || h.status > 999 ||
                  (h.chunked && h.content_length != -1)))
        abort();
    /* a backup's SHA-256 is read whole (64 hex digits) or not at all */
    if (n > 0 && h.docket_sha256[0] &&
        (strlen(h.docket_sha256) != 64 || strspn(h.docket_sha256, "0123456789abcdefABCDEF") != 64))
        abort();
    if (size > 1) {
        size_t cut = data[0] % size, l1 = 0, l2 = 0;
        bool d1 = false, d2 = false;
        char *x = decode(in + 1, size - 1, cut > size - 1 ? size - 1 : cut, &l1, &d1);
        char *y = decode(in + 1, size - 1, size - 1, &l2, &d2);
        /* a complete body decodes the same whatever the split */
        if (x && y && d1 && d2 && (l1 != l2 || memcmp(x, y, l1)))
            abort();
        free(x);
        free(y);
    }
    return 0;
}
