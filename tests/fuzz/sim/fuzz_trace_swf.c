/* fuzz_trace_swf.c - libFuzzer harness of the SWF trace reader (sim/trace.h). */
#include "fuzz_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_trace(data, size, TRACE_SWF);
}
