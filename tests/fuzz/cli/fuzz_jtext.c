/*
 * fuzz_jtext.c - libFuzzer harness of docket queue's one-pass JSON reader
 * (src/cli/jtext.c), against jansson, the reader it stands in for: a text the scanner
 * takes whole is one jansson reads, and one it refuses jansson refuses; a text
 * jtext_indent lays out comes out byte for byte as json_dumps(JSON_INDENT(2)) writes
 * what jansson read of it, and one it refuses leaves the output as it was.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jtext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The scanner and jansson agree on whether the text is one JSON value. */
static void same_verdict(const char *text, size_t n)
{
    struct jscan s;
    jscan_init(&s, text, n);
    bool took = jscan_skip(&s) == 0 && jscan_peek(&s) == -1;
    json_error_t e;
    json_t *v = json_loadb(text, n, JSON_DECODE_ANY, &e);
    if (took != (v != NULL))
        abort();
    json_decref(v);
}

/* What jtext_indent laid out at depth 0 is what jansson writes of the text. */
static void same_layout(const char *text, size_t n)
{
    struct dbuf out;
    dbuf_init(&out, 0);
    dbuf_puts(&out, "<");
    int rc = jtext_indent(text, n, 0, &out);
    if (rc != 0) {
        if (rc != -EPROTO || out.len != 1 || out.data[0] != '<')
            abort();
        dbuf_release(&out);
        return;
    }
    json_error_t e;
    json_t *v = json_loadb(text, n, JSON_DECODE_ANY, &e);
    if (!v)
        abort(); /* laid out what jansson does not read */
    char *want = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    json_decref(v);
    if (want && (out.len - 1 != strlen(want) || memcmp(out.data + 1, want, out.len - 1) != 0))
        abort();
    free(want);
    dbuf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    /* up to a NUL byte, which no reply holds: jansson reads a number then NUL at the very
       end ("4\0") as the number, a string or an object then NUL as an error */
    size_t n = strnlen((const char *)data, size);
    same_verdict((const char *)data, n);
    same_layout((const char *)data, n);
    return 0;
}
