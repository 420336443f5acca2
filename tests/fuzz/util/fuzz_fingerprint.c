/*
 * fuzz_fingerprint.c - libFuzzer harness for util/fingerprint.h: any text either fails
 * with -EINVAL or parses to 32 bytes whose written form parses back to the same bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/fingerprint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    unsigned char d[FPR_LEN], back[FPR_LEN];
    int rc = fpr_parse(s, d);
    if (rc != 0 && rc != -EINVAL)
        abort();
    if (rc == 0) {
        char text[FPR_TEXTLEN];
        fpr_format(d, text, sizeof(text));
        if (fpr_parse(text, back) != 0 || memcmp(d, back, FPR_LEN) != 0)
            abort();
    }
    free(s);
    return 0;
}
