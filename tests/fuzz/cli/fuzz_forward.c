/*
 * fuzz_forward.c - libFuzzer harness of the check `docket console`'s forward makes on a
 * request head from the network (console_forward_passes, src/cli/console.c). Beyond
 * memory safety: a head without the forward's Host never passes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char host[] = "127.0.0.1:4242";
    char *head = malloc(size + 1);
    if (!head)
        return 0;
    memcpy(head, data, size);
    head[size] = '\0';
    bool ok = console_forward_passes(head, host);
    if (ok && !strstr(head, host))
        abort();
    free(head);
    return 0;
}
