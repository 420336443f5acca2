/* fuzz_trace_csv.c - libFuzzer harness of the normalised CSV trace reader (sim/trace.h). */
#include "fuzz_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_trace(data, size, TRACE_CSV);
}
