/* fuzz_anchor.c - libFuzzer harness for the audit anchor's reader (util/anchor.h): any
 * bytes are either refused with a reason, or read into an anchor that the writer writes
 * and the reader reads back the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/anchor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct audit_anchor a, back;
    char why[160] = "";
    if (audit_anchor_parse((const char *)data, size, &a, why, sizeof(why)) < 0) {
        if (!why[0])
            abort(); /* every refusal says why */
        return 0;
    }
    if (a.id < 1 || a.chain_from < 1 || a.chain_from > a.id || !audit_hash_valid(a.hash))
        abort();
    char *text = audit_anchor_text(&a);
    if (!text)
        return 0;
    if (audit_anchor_parse(text, strlen(text), &back, why, sizeof(why)) < 0 || a.id != back.id ||
        a.chain_from != back.chain_from || a.time_ms != back.time_ms ||
        strcmp(a.hash, back.hash) != 0)
        abort(); /* what we write we must read back */
    free(text);
    return 0;
}
