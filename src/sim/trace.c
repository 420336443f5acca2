/*
 * trace.c - streaming CSV and SWF trace readers (see trace.h, docs/sim.md).
 *
 * One line is read at a time (getline), split in place and validated field by field.
 * Numbers are parsed here with strict digit loops rather than strtol: a million rows
 * go through this path and every field needs a range check and a column name anyway.
 */
#define _GNU_SOURCE
#include "sim/trace.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/str.h"

enum { LINE_MAX_LEN = 4096, CSV_NCOLS = 10, SWF_NFIELDS = 18, MAX_FIELDS = 32 };

enum csv_col {
    C_ID,
    C_SUBMIT,
    C_RUNTIME,
    C_GPUS,
    C_CPUS,
    C_MEM,
    C_NODES,
    C_PROJECT,
    C_USER,
    C_STATUS
};

static const char *const csv_names[CSV_NCOLS] = {
    "job_id", "submit_s", "runtime_s", "gpus", "cpus",
    "mem_mb", "nodes",    "project",   "user", "status",
};

static const char *const status_names[] = {
    "", "completed", "failed", "cancelled", "killed", "timeout", "running", "pending",
};

struct trace_reader {
    FILE *f;
    bool own;
    enum trace_format fmt;
    char name[256];
    char *line;
    size_t cap;
    long lineno;
    int col_of[CSV_NCOLS]; /* CSV: position in the row of each schema column */
    int64_t prev_submit;
    int64_t swf_base; /* SWF: submit time of the first row */
    bool swf_have_base;
    const struct trace_row *rows; /* trace_open_rows: rows in memory, not a file */
    size_t nrows, next;
};

const char *trace_status_name(enum trace_status s)
{
    if ((unsigned)s >= sizeof(status_names) / sizeof(status_names[0]))
        return "";
    return status_names[s];
}

enum trace_format trace_format_guess(const char *path)
{
    if (str_has_suffix(path, ".swf") || str_has_suffix(path, ".SWF") ||
        str_has_suffix(path, ".swf.txt"))
        return TRACE_SWF;
    return TRACE_CSV;
}

int trace_format_parse(const char *s, enum trace_format *out)
{
    if (strcmp(s, "csv") == 0)
        *out = TRACE_CSV;
    else if (strcmp(s, "swf") == 0)
        *out = TRACE_SWF;
    else
        return -EINVAL;
    return 0;
}

static int fail(struct trace_error *err, const struct trace_reader *r, const char *column,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int fail(struct trace_error *err, const struct trace_reader *r, const char *column,
                const char *fmt, ...)
{
    va_list ap;

    if (err) {
        (void)str_copy(err->file, sizeof(err->file), r ? r->name : "");
        err->line = r ? r->lineno : 0;
        (void)str_copy(err->column, sizeof(err->column), column ? column : "");
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

void trace_error_format(const struct trace_error *err, char *buf, size_t len)
{
    if (err->line > 0 && err->column[0])
        snprintf(buf, len, "%s:%ld: column '%s': %s", err->file, err->line, err->column,
                 err->message);
    else if (err->line > 0)
        snprintf(buf, len, "%s:%ld: %s", err->file, err->line, err->message);
    else
        snprintf(buf, len, "%s: %s", err->file, err->message);
}

/* Read the next line into r->line without its end of line. 1, 0 at EOF, -EIO. */
static int read_line(struct trace_reader *r)
{
    ssize_t n = getline(&r->line, &r->cap, r->f);

    if (n < 0)
        return ferror(r->f) ? -EIO : 0;
    r->lineno++;
    while (n > 0 && (r->line[n - 1] == '\n' || r->line[n - 1] == '\r'))
        r->line[--n] = '\0';
    if (memchr(r->line, '\0', (size_t)n))
        r->line[0] = '\x01'; /* an embedded NUL makes the row bad, never shorter */
    return 1;
}

/* Split a CSV line in place. Quoted fields ("a,b", "say ""hi""") are unquoted. Returns
 * the number of fields, or -1 on an unterminated quote. */
static int csv_split(char *s, char **fields, int max)
{
    int n = 0;
    char *w = s;

    for (;;) {
        if (n == max)
            return max + 1;
        fields[n++] = w;
        if (*s == '"') {
            s++;
            for (;;) {
                if (*s == '\0')
                    return -1;
                if (*s == '"' && s[1] == '"') {
                    *w++ = '"';
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    *w++ = *s++;
                }
            }
            if (*s != ',' && *s != '\0')
                return -1;
        } else {
            while (*s && *s != ',')
                *w++ = *s++;
        }
        if (*s == '\0') {
            *w = '\0';
            return n;
        }
        *w++ = '\0';
        s++;
    }
}

/* Strict non-negative integer: digits only, value <= max. */
static int parse_uint(const char *s, int64_t max, int64_t *out)
{
    int64_t v = 0;

    if (*s == '\0')
        return -EINVAL;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -EINVAL;
        if (v > (max - (*s - '0')) / 10)
            return -ERANGE;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 0;
}

/* Strict non-negative decimal: digits, optionally '.' and digits ("0.5", "2", "2."
 * is refused), value <= max. No signs, exponents or spaces: a trace either says a plain
 * number or the row is bad. */
static int parse_decimal(const char *s, double max, double *out)
{
    const char *dot = strchr(s, '.');
    int64_t whole = 0;
    double frac = 0, scale = 0.1;
    int rc;

    if (!dot)
        rc = parse_uint(s, INT64_MAX / 2, &whole);
    else {
        char buf[32];
        size_t n = (size_t)(dot - s);

        if (n == 0 || n >= sizeof(buf) || dot[1] == '\0')
            return -EINVAL;
        memcpy(buf, s, n);
        buf[n] = '\0';
        rc = parse_uint(buf, INT64_MAX / 2, &whole);
        for (const char *p = dot + 1; rc == 0 && *p; p++, scale /= 10) {
            if (*p < '0' || *p > '9')
                return -EINVAL;
            frac += (*p - '0') * scale;
        }
    }
    if (rc < 0)
        return rc;
    if ((double)whole + frac > max)
        return -ERANGE;
    *out = (double)whole + frac;
    return 0;
}

/* An optional decimal column (GPU or CPU counts): "" gives 0. */
static int dec_col(struct trace_reader *r, struct trace_error *err, const char *col, const char *s,
                   double max, double *out)
{
    int rc;

    if (*s == '\0') {
        *out = 0;
        return 0;
    }
    rc = parse_decimal(s, max, out);
    if (rc == -ERANGE)
        return fail(err, r, col, "value '%.40s' out of range 0..%g", s, max);
    if (rc < 0)
        return fail(err, r, col, "not a non-negative number: '%.40s'", s);
    return 0;
}

/* An optional integer column: "" gives `empty`. */
static int int_col(struct trace_reader *r, struct trace_error *err, const char *col, const char *s,
                   int64_t max, int64_t empty, int64_t *out)
{
    int rc;

    if (*s == '\0') {
        *out = empty;
        return 0;
    }
    rc = parse_uint(s, max, out);
    if (rc == -ERANGE)
        return fail(err, r, col, "value '%.40s' out of range 0..%lld", s, (long long)max);
    if (rc < 0)
        return fail(err, r, col, "not a non-negative integer: '%.40s'", s);
    return 0;
}

static bool name_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

static int str_col(struct trace_reader *r, struct trace_error *err, const char *col, const char *s,
                   bool required, char *dst)
{
    if (required && *s == '\0')
        return fail(err, r, col, "empty");
    if (strlen(s) >= TRACE_STR_MAX)
        return fail(err, r, col, "longer than %d characters", TRACE_STR_MAX - 1);
    if (!name_ok(s))
        return fail(err, r, col, "control character in '%.40s'", s);
    (void)str_copy(dst, TRACE_STR_MAX, s);
    return 0;
}

static int status_col(struct trace_reader *r, struct trace_error *err, const char *s,
                      enum trace_status *out)
{
    for (size_t i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++) {
        if (strcmp(s, status_names[i]) == 0) {
            *out = (enum trace_status)i;
            return 0;
        }
    }
    return fail(err, r, "status", "unknown status '%.40s'", s);
}

static int check_order(struct trace_reader *r, struct trace_error *err, const char *col,
                       int64_t submit)
{
    if (submit < r->prev_submit)
        return fail(err, r, col,
                    "submission %lld is before the previous row's %lld "
                    "(rows must be sorted by submission time)",
                    (long long)submit, (long long)r->prev_submit);
    r->prev_submit = submit;
    return 0;
}

static int csv_header(struct trace_reader *r, struct trace_error *err)
{
    char *fields[MAX_FIELDS];
    int rc = read_line(r), n;

    if (rc < 0)
        return fail(err, r, NULL, "cannot read: %s", strerror(-rc));
    if (rc == 0)
        return fail(err, r, NULL, "empty file, expected the header line");
    n = csv_split(r->line, fields, MAX_FIELDS);
    if (n != CSV_NCOLS)
        return fail(err, r, NULL, "header has %d columns, expected %d (%s,...)", n < 0 ? 0 : n,
                    CSV_NCOLS, csv_names[0]);
    for (int c = 0; c < CSV_NCOLS; c++)
        r->col_of[c] = -1;
    for (int i = 0; i < n; i++) {
        char *h = str_trim(fields[i]);
        int c = 0;

        while (c < CSV_NCOLS && strcmp(h, csv_names[c]) != 0)
            c++;
        if (c == CSV_NCOLS)
            return fail(err, r, h, "unknown column in the header");
        if (r->col_of[c] >= 0)
            return fail(err, r, h, "column appears twice in the header");
        r->col_of[c] = i;
    }
    return 0;
}

/* The row's times in milliseconds, as the simulation reads them (trace.h). */
static void set_ms(struct trace_row *out)
{
    out->submit_ms = out->submit_s * 1000;
    out->runtime_ms = out->runtime_s < 0 ? -1 : out->runtime_s * 1000;
}

static int csv_row(struct trace_reader *r, struct trace_row *out, struct trace_error *err)
{
    char *f[MAX_FIELDS];
    int n;
    int64_t v = 0;

    if (strlen(r->line) > LINE_MAX_LEN)
        return fail(err, r, NULL, "line longer than %d bytes", LINE_MAX_LEN);
    n = csv_split(r->line, f, MAX_FIELDS);
    if (n < 0)
        return fail(err, r, NULL, "unterminated quoted field");
    if (n != CSV_NCOLS)
        return fail(err, r, NULL, "%d fields, expected %d", n > MAX_FIELDS ? MAX_FIELDS : n,
                    CSV_NCOLS);
#define COL(c) f[r->col_of[c]]
    memset(out, 0, sizeof(*out));
    out->line = r->lineno;
    out->req_time_s = -1;
    if (str_col(r, err, "job_id", COL(C_ID), true, out->id) < 0 ||
        str_col(r, err, "project", COL(C_PROJECT), false, out->project) < 0 ||
        str_col(r, err, "user", COL(C_USER), false, out->user) < 0 ||
        status_col(r, err, COL(C_STATUS), &out->status) < 0)
        return -EINVAL;
    if (*COL(C_SUBMIT) == '\0')
        return fail(err, r, "submit_s", "empty");
    /* an empty runtime is a job that never ran: the caller counts and skips it */
    if (int_col(r, err, "submit_s", COL(C_SUBMIT), 100000000000LL, 0, &out->submit_s) < 0 ||
        int_col(r, err, "runtime_s", COL(C_RUNTIME), 100000000000LL, -1, &out->runtime_s) < 0)
        return -EINVAL;
    if (dec_col(r, err, "gpus", COL(C_GPUS), 100000, &out->gpus) < 0 ||
        dec_col(r, err, "cpus", COL(C_CPUS), 10000000, &out->cpus) < 0)
        return -EINVAL;
    if (int_col(r, err, "mem_mb", COL(C_MEM), 1000000000000LL, 0, &out->mem_mb) < 0)
        return -EINVAL;
    if (int_col(r, err, "nodes", COL(C_NODES), 1000000, 0, &v) < 0)
        return -EINVAL;
    out->nodes = (int)v;
#undef COL
    set_ms(out);
    return check_order(r, err, "submit_s", out->submit_s);
}

/* Split on blanks. Returns the count (max + 1 when there are more). */
static int ws_split(char *s, char **fields, int max)
{
    int n = 0;

    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '\0')
            return n;
        if (n == max)
            return max + 1;
        fields[n++] = s;
        while (*s && *s != ' ' && *s != '\t')
            s++;
        if (*s)
            *s++ = '\0';
    }
}

static const char *const swf_names[SWF_NFIELDS] = {
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
};

/* SWF fields that may be decimals: the spec allows floating point values for the time
 * fields (2 submit, 3 wait, 4 run, 9 requested time) and logs write average CPU time and
 * memory (6, 7) with decimals. They are rounded to the nearest integer. Counts (5, 8
 * processors) and ids must be integers. 0-based indices here. */
static bool swf_decimal_ok(int i)
{
    return i == 1 || i == 2 || i == 3 || i == 5 || i == 6 || i == 8;
}

/* An SWF number: an integer >= -1, or (the fields above) a decimal >= 0, rounded. */
static int swf_number(struct trace_reader *r, struct trace_error *err, int i, const char *s,
                      int64_t *out)
{
    double d;
    int64_t v = 0;

    if (strcmp(s, "-1") == 0) {
        *out = -1;
        return 0;
    }
    if (parse_uint(s, 100000000000LL, &v) == 0) {
        *out = v;
        return 0;
    }
    if (swf_decimal_ok(i) && parse_decimal(s, 100000000000.0, &d) == 0) {
        *out = llround(d);
        return 0;
    }
    return fail(err, r, swf_names[i], "not %s >= -1: '%.40s'",
                swf_decimal_ok(i) ? "a number" : "an integer", s);
}

static int swf_status(int64_t v, enum trace_status *out)
{
    switch (v) {
    case -1:
        *out = TRACE_ST_UNKNOWN;
        return 0;
    case 0:
        *out = TRACE_ST_FAILED;
        return 0;
    case 1:
        *out = TRACE_ST_COMPLETED;
        return 0;
    case 2:
    case 3:
    case 4:
        *out = TRACE_ST_COMPLETED;
        return 0; /* partial executions */
    case 5:
        *out = TRACE_ST_CANCELLED;
        return 0;
    default:
        return -EINVAL;
    }
}

static int swf_fill(struct trace_reader *r, const int64_t *v, char *const *f, struct trace_row *out,
                    struct trace_error *err)
{
    int64_t procs = v[4] > 0 ? v[4] : v[7];
    int64_t kb = v[9] > 0 ? v[9] : v[6];

    memset(out, 0, sizeof(*out));
    out->line = r->lineno;
    if (str_col(r, err, swf_names[0], f[0], true, out->id) < 0)
        return -EINVAL;
    if (v[1] < 0)
        return fail(err, r, swf_names[1], "missing (-1)");
    if (swf_status(v[10], &out->status) < 0)
        return fail(err, r, swf_names[10], "unknown status %lld", (long long)v[10]);
    if (procs <= 0)
        return fail(err, r, swf_names[4],
                    "no processor count (allocated and requested "
                    "are both missing)");
    if (procs > 10000000)
        return fail(err, r, swf_names[4], "processor count %lld out of range", (long long)procs);
    if (!r->swf_have_base) {
        r->swf_base = v[1];
        r->swf_have_base = true;
        r->prev_submit = 0;
    }
    if (v[1] < r->swf_base)
        return fail(err, r, swf_names[1], "submission %lld is before the first row's %lld",
                    (long long)v[1], (long long)r->swf_base);
    out->submit_s = v[1] - r->swf_base;
    out->runtime_s = v[3]; /* -1: never ran; the caller counts and skips it */
    out->req_time_s = v[8];
    out->cpus = (double)procs;
    out->mem_mb = kb > 0 ? (kb * procs + 1023) / 1024 : 0;
    if (v[12] >= 0)
        snprintf(out->project, sizeof(out->project), "g%lld", (long long)v[12]);
    if (v[11] >= 0)
        snprintf(out->user, sizeof(out->user), "u%lld", (long long)v[11]);
    set_ms(out);
    return check_order(r, err, swf_names[1], out->submit_s);
}

static int swf_row(struct trace_reader *r, struct trace_row *out, struct trace_error *err)
{
    char *f[SWF_NFIELDS + 1];
    int64_t v[SWF_NFIELDS];
    int n;

    if (strlen(r->line) > LINE_MAX_LEN)
        return fail(err, r, NULL, "line longer than %d bytes", LINE_MAX_LEN);
    n = ws_split(r->line, f, SWF_NFIELDS);
    if (n != SWF_NFIELDS)
        return fail(err, r, NULL, "%d fields, expected %d", n > SWF_NFIELDS ? SWF_NFIELDS + 1 : n,
                    SWF_NFIELDS);
    for (int i = 0; i < SWF_NFIELDS; i++)
        if (swf_number(r, err, i, f[i], &v[i]) < 0)
            return -EINVAL;
    return swf_fill(r, v, f, out, err);
}

static bool blank(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return *s == '\0';
}

int trace_next(struct trace_reader *r, struct trace_row *out, struct trace_error *err)
{
    if (r->rows) {
        if (r->next == r->nrows)
            return 0;
        *out = r->rows[r->next++];
        return 1;
    }
    for (;;) {
        int rc = read_line(r);

        if (rc < 0) {
            fail(err, r, NULL, "read error");
            return -EIO;
        }
        if (rc == 0)
            return 0;
        if (blank(r->line))
            continue; /* no row at all; rows with blank fields are validated */
        if (r->fmt == TRACE_SWF) {
            const char *p = r->line;

            while (*p == ' ' || *p == '\t')
                p++;
            if (*p == ';')
                continue; /* SWF header comment */
            return swf_row(r, out, err) < 0 ? -EINVAL : 1;
        }
        return csv_row(r, out, err) < 0 ? -EINVAL : 1;
    }
}

struct trace_reader *trace_open_stream(FILE *f, const char *name, enum trace_format fmt,
                                       struct trace_error *err)
{
    struct trace_reader *r = calloc(1, sizeof(*r));

    if (!r) {
        fail(err, NULL, NULL, "out of memory");
        return NULL;
    }
    r->f = f;
    r->fmt = fmt;
    (void)str_copy(r->name, sizeof(r->name), name);
    if (fmt == TRACE_CSV && csv_header(r, err) < 0) {
        trace_close(r);
        return NULL;
    }
    return r;
}

struct trace_reader *trace_open(const char *path, enum trace_format fmt, struct trace_error *err)
{
    FILE *f = fopen(path, "r");
    struct trace_reader *r;

    if (!f) {
        int e = errno;

        if (err) {
            memset(err, 0, sizeof(*err));
            (void)str_copy(err->file, sizeof(err->file), path);
            snprintf(err->message, sizeof(err->message), "cannot open: %s", strerror(e));
        }
        return NULL;
    }
    r = trace_open_stream(f, path, fmt, err);
    if (!r) {
        fclose(f);
        return NULL;
    }
    r->own = true;
    return r;
}

struct trace_reader *trace_open_rows(const struct trace_row *rows, size_t n, const char *name)
{
    struct trace_reader *r = calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    r->rows = rows;
    r->nrows = n;
    (void)str_copy(r->name, sizeof(r->name), name);
    return r;
}

void trace_close(struct trace_reader *r)
{
    if (!r)
        return;
    if (r->own && r->f)
        fclose(r->f);
    free(r->line);
    free(r);
}
