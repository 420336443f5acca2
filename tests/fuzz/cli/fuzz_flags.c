/*
 * fuzz_flags.c - libFuzzer harness of docket's flag parser (src/cli/opt.c) driving the
 * submit flags (spec_apply): the input is split at NUL bytes into an argv. Checks, beyond
 * memory safety: the iterator always advances and ends, values point into argv, errors
 * come with a message, and a refused flag value adds nothing to the spec.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_ARGS = 64 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    char *argv[MAX_ARGS + 1];
    int argc = 0, id, steps = 0;
    struct opt_iter it;
    json_t *spec = json_object();
    const char *v;
    char err[512];

    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    for (size_t i = 0; i <= size && argc < MAX_ARGS;) {
        argv[argc++] = copy + i;
        i += strlen(copy + i) + 1;
    }
    argv[argc] = NULL;
    opt_iter_init(&it, argc, argv, 0);
    while ((id = opt_next(&it, spec_submit_opts, &v, err, sizeof(err))) != OPT_DONE) {
        if (++steps > (int)size + argc + 8 || it.index > argc) /* one step per letter at most */
            abort();
        if (v && (v < copy || v > copy + size))
            abort();
        if (id == OPT_ERROR) {
            if (!err[0])
                abort();
            continue;
        }
        if (id == OPT_POSITIONAL || id >= SO_JSON)
            continue;
        {
            char *before = json_dumps(spec, JSON_SORT_KEYS);
            if (spec_apply(spec, id, v, err, sizeof(err)) < 0) {
                char *after = json_dumps(spec, JSON_SORT_KEYS);
                if (strcmp(before, after))
                    abort();
                free(after);
            }
            free(before);
        }
    }
    json_decref(spec);
    free(copy);
    return 0;
}
