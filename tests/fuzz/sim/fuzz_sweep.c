/* fuzz_sweep.c - libFuzzer harness of docket-sim's --sweep parser (sim/sweep.h): any bytes
 * as up to three --sweep arguments, then every point of the grid built. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sim_sweep sw = {0};
    struct sim_sweep_point p;
    char *text = malloc(size + 1), err[256], *arg, *next;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    for (arg = text; arg; arg = next) { /* arguments separated by newlines */
        next = strchr(arg, '\n');
        if (next)
            *next++ = '\0';
        (void)sim_sweep_parse(&sw, arg, err, sizeof(err));
    }
    if (sim_sweep_count(&sw) > SIM_SWEEP_MAX_POINTS)
        abort();
    for (int i = 0; i < sim_sweep_count(&sw); i++)
        sim_sweep_point(&sw, i, &p);
    free(text);
    return 0;
}
