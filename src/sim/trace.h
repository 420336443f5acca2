/*
 * trace.h - streaming readers for workload traces: the normalised CSV of the shared
 * traces (job_id,submit_s,runtime_s,gpus,cpus,mem_mb,nodes,project,user,status) and the
 * Standard Workload Format (SWF) of the Parallel Workloads Archive. Design: docs/sim.md.
 *
 * A reader yields one validated row at a time and keeps only the current line in memory,
 * so a million-row trace costs one line buffer. Every bad row is reported with its file,
 * line and column; the reader never skips a row silently: trace_next() returns -EINVAL
 * for it (err filled) and the caller decides to stop or to count it and go on.
 *
 * Ownership: the reader owns its FILE unless opened with trace_open_stream (the caller's
 * stream stays the caller's). Strings in struct trace_row are copies inside the row.
 */
#ifndef DOCKET_SIM_TRACE_H
#define DOCKET_SIM_TRACE_H

#include <stdint.h>
#include <stdio.h>

enum { TRACE_STR_MAX = 64 };

enum trace_format { TRACE_CSV, TRACE_SWF };

enum trace_status {
    TRACE_ST_UNKNOWN, /* empty field */
    TRACE_ST_COMPLETED,
    TRACE_ST_FAILED,
    TRACE_ST_CANCELLED,
    TRACE_ST_KILLED,
    TRACE_ST_TIMEOUT,
    TRACE_ST_RUNNING,
    TRACE_ST_PENDING,
};

struct trace_row {
    char id[TRACE_STR_MAX];
    int64_t submit_s;            /* seconds since the first submission of the file */
    int64_t runtime_s;           /* >= 0; -1 when the row has none (the job never ran) */
    int64_t req_time_s;          /* requested time limit (SWF field 9); -1 unknown */
    double gpus;                 /* >= 0, may be fractional (GPU sharing); 0 when empty */
    double cpus;                 /* >= 0, may be fractional; 0 when empty */
    int64_t mem_mb;              /* 0 when empty */
    int nodes;                   /* 0 when empty */
    char project[TRACE_STR_MAX]; /* "" when empty */
    char user[TRACE_STR_MAX];    /* "" when empty */
    enum trace_status status;
    long line; /* 1-based line in the file */
    /* submit_s and runtime_s in milliseconds (runtime -1: never ran). The file readers set
     * them to the seconds x 1000; a site's own history (sim/site.h) keeps its milliseconds.
     * The simulation reads these. */
    int64_t submit_ms, runtime_ms;
    /* The Docket tier and class the job ran with ("" from files: the mapping decides). */
    char tier[TRACE_STR_MAX];
    char class_name[TRACE_STR_MAX];
};

struct trace_error {
    char file[256];
    long line;         /* 0 when not about a line */
    char column[32];   /* the field at fault, or "" */
    char message[256]; /* lowercase, no trailing period */
};

struct trace_reader;

/* Guess the format from the file name: ".swf" (also ".swf.txt") is SWF, else CSV. */
enum trace_format trace_format_guess(const char *path);
/* Parse "csv" / "swf"; -EINVAL otherwise. */
int trace_format_parse(const char *s, enum trace_format *out);
const char *trace_status_name(enum trace_status s);

/* Open a file. NULL with err filled (I/O error or bad CSV header). */
struct trace_reader *trace_open(const char *path, enum trace_format fmt, struct trace_error *err);
/* Read from a caller's stream; `name` is used in messages. The stream is not closed. */
struct trace_reader *trace_open_stream(FILE *f, const char *name, enum trace_format fmt,
                                       struct trace_error *err);
/* Read rows already in memory (a site's history, sim/site.h): trace_next returns copies of
 * rows[0..n) in order. The array stays the caller's and must outlive the reader. */
struct trace_reader *trace_open_rows(const struct trace_row *rows, size_t n, const char *name);
void trace_close(struct trace_reader *r);

/* Next row: 1 with *out filled, 0 at end of file, -EINVAL for a bad row (err names the
 * line and column; the next call goes on with the following line), -EIO on read errors.
 * Rows must be sorted by submission time: a row earlier than the previous one is bad.
 * A row without a runtime (CSV: empty; SWF: -1) is not bad: it comes back with
 * runtime_s -1 and the caller decides (docket-sim counts it as never run and skips it).
 * Fractional GPU/CPU counts come back as they are; rounding is the caller's choice. */
int trace_next(struct trace_reader *r, struct trace_row *out, struct trace_error *err);

/* "file:line: column 'x': message" into buf. */
void trace_error_format(const struct trace_error *err, char *buf, size_t len);

#endif
