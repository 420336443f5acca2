/*
 * fuzz_etag.c - libFuzzer harness for util/etag.h: any If-None-Match header is read
 * without a fault (against a written tag and against itself), and a written tag always
 * matches itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/etag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    char t[ETAG_TEXTLEN];
    uint64_t v = etag_hash(ETAG_HASH_SEED, s);
    etag_format(t, sizeof(t), v, v >> 7, v >> 13);
    (void)etag_match(s, t);
    (void)etag_match(s, s);
    if (!etag_match(t, t))
        abort();
    free(s);
    return 0;
}
