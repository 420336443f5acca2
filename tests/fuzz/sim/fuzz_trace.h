/*
 * fuzz_trace.h - the body shared by the two trace-reader harnesses: any bytes go through
 * trace_open_stream/trace_next of one format. Every row either comes back with values in
 * range or as an error naming its line; the reader must never crash, hang or leak.
 */
#ifndef DOCKET_FUZZ_SIM_TRACE_H
#define DOCKET_FUZZ_SIM_TRACE_H

#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/trace.h"

static int fuzz_trace(const uint8_t *data, size_t size, enum trace_format fmt)
{
    struct trace_error err;
    struct trace_row row;
    struct trace_reader *r;
    FILE *f;
    long rows = 0, last_line = 0;
    int rc;

    if (size == 0)
        return 0;
    f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    r = trace_open_stream(f, "fuzz", fmt, &err);
    if (!r) {
        if (err.message[0] == '\0')
            abort(); /* a refusal always says why */
        fclose(f);
        return 0;
    }
    while ((rc = trace_next(r, &row, &err)) != 0 && rows < 100000) {
        rows++;
        if (rc == 1) {
            /* runtime -1: a row that never ran; GPU/CPU counts may be fractional but
             * are always finite and non-negative; requested time -1 is unknown */
            if (row.line <= last_line || row.submit_s < 0 || row.runtime_s < -1 ||
                row.req_time_s < -1 || !isfinite(row.gpus) || !isfinite(row.cpus) || row.gpus < 0 ||
                row.cpus < 0 || row.mem_mb < 0 || row.nodes < 0 || row.id[0] == '\0' ||
                strlen(row.project) >= TRACE_STR_MAX)
                abort();
            if (fmt == TRACE_SWF && (row.gpus != 0 || row.cpus < 1 || row.cpus != floor(row.cpus)))
                abort(); /* SWF: whole processors, never GPUs */
            last_line = row.line;
        } else if (rc == -EINVAL) {
            if (err.line <= 0 || err.message[0] == '\0')
                abort(); /* a bad row is always located */
            last_line = err.line;
        } else {
            break;
        }
    }
    trace_close(r);
    fclose(f);
    return 0;
}

#endif
