/*
 * fmt.c - tables, colours and times for people (fmt.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "cli/fmt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util/dbuf.h"
#include "util/parse.h"

struct cell {
    size_t text; /* offset + 1 in the table's pool, 0 for an empty cell */
    enum fmt_color color;
};

struct table {
    int ncols;
    char **headers;
    unsigned *flags;
    struct cell *cells; /* row-major, nrows * ncols */
    int nrows;
    int alloc_rows;
    int cur;          /* next cell of the last row */
    struct dbuf pool; /* every cell's text, NUL-terminated, one after the other: one
                       * allocation for a table of 10,000 rows, not one per cell */
};

struct table *table_create(const char *const *headers, int ncols)
{
    struct table *t = calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    t->ncols = ncols;
    dbuf_init(&t->pool, 0);
    t->headers = calloc((size_t)ncols, sizeof(char *));
    t->flags = calloc((size_t)ncols, sizeof(unsigned));
    if (!t->headers || !t->flags)
        goto fail;
    for (int i = 0; i < ncols; i++)
        if (!(t->headers[i] = strdup(headers[i])))
            goto fail;
    return t;
fail:
    table_destroy(t);
    return NULL;
}

void table_destroy(struct table *t)
{
    if (!t)
        return;
    for (int i = 0; t->headers && i < t->ncols; i++)
        free(t->headers[i]);
    dbuf_release(&t->pool);
    free(t->headers);
    free(t->flags);
    free(t->cells);
    free(t);
}

void table_set_flags(struct table *t, int col, unsigned flags)
{
    if (col >= 0 && col < t->ncols)
        t->flags[col] = flags;
}

int table_rows(const struct table *t)
{
    return t->nrows;
}

int table_row(struct table *t)
{
    if (t->nrows == t->alloc_rows) {
        int n = t->alloc_rows ? t->alloc_rows * 2 : 16;
        struct cell *c = realloc(t->cells, sizeof(*c) * (size_t)n * (size_t)t->ncols);
        if (!c)
            return -ENOMEM;
        t->cells = c;
        t->alloc_rows = n;
    }
    memset(&t->cells[t->nrows * t->ncols], 0, sizeof(struct cell) * (size_t)t->ncols);
    t->nrows++;
    t->cur = 0;
    return 0;
}

int table_cell(struct table *t, enum fmt_color color, const char *fmt, ...)
{
    char small[256], *heap = NULL;
    const char *s = small;
    va_list ap;
    int n;

    if (t->nrows == 0 || t->cur >= t->ncols)
        return 0;
    va_start(ap, fmt);
    if (strcmp(fmt, "%s") == 0) { /* most cells: the string itself, no printf */
        s = va_arg(ap, const char *);
        s = s ? s : "(null)";
        n = 0;
    } else {
        n = vsnprintf(small, sizeof(small), fmt, ap);
    }
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    if (s == small && (size_t)n >= sizeof(small)) {
        if (!(heap = malloc((size_t)n + 1)))
            return -ENOMEM;
        va_start(ap, fmt);
        vsnprintf(heap, (size_t)n + 1, fmt, ap);
        va_end(ap);
        s = heap;
    }
    /* a cell is one line, and nothing from the server reaches the terminal raw */
    bool plain = fmt_is_plain(s, false);
    char *safe = plain ? NULL : fmt_safe(s, false);
    const char *text = plain ? s : safe;
    size_t off = t->pool.len;
    int rc = text ? dbuf_append(&t->pool, text, strlen(text) + 1) : -ENOMEM;
    free(safe);
    free(heap);
    if (rc < 0)
        return rc;
    struct cell *c = &t->cells[(t->nrows - 1) * t->ncols + t->cur++];
    c->text = off + 1;
    c->color = color;
    return 0;
}

int fmt_width(const char *s)
{
    int w = 0;

    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80)
            w++;
    return w;
}

static void put_spaces(FILE *out, int n)
{
    static const char spaces[] = "                                                                ";
    while (n > 0) {
        int k = n < (int)sizeof(spaces) - 1 ? n : (int)sizeof(spaces) - 1;
        fwrite(spaces, 1, (size_t)k, out);
        n -= k;
    }
}

/* Print s in exactly `width` columns: cut with "…" or padded (left or right aligned). */
static void put_cell(FILE *out, const char *s, int width, bool right, bool pad)
{
    int w = fmt_width(s);

    if (w > width) {
        int keep = width - 1, seen = 0;
        const char *p = s;
        while (*p) {
            if (((unsigned char)*p & 0xc0) != 0x80) {
                if (seen == keep)
                    break;
                seen++;
            }
            p++;
        }
        fwrite(s, 1, (size_t)(p - s), out);
        if (width > 0)
            fputs("…", out);
        return;
    }
    if (right)
        put_spaces(out, width - w);
    fputs(s, out);
    if (!right && pad)
        put_spaces(out, width - w);
}

static const char *cell_text(const struct table *t, int row, int col)
{
    size_t off = t->cells[row * t->ncols + col].text;
    return off ? t->pool.data + off - 1 : "";
}

/* Column widths, shrinking flexible columns to fit `width`. */
static void widths(const struct table *t, int *w, int width)
{
    int total = 0;

    for (int c = 0; c < t->ncols; c++) {
        w[c] = fmt_width(t->headers[c]);
        for (int r = 0; r < t->nrows; r++) {
            int cw = fmt_width(cell_text(t, r, c));
            if (cw > w[c])
                w[c] = cw;
        }
        total += w[c] + (c ? 2 : 0);
    }
    for (int c = t->ncols - 1; width > 0 && total > width && c >= 0; c--) {
        int min = fmt_width(t->headers[c]), cut;
        if (!(t->flags[c] & TABLE_FLEX) || w[c] <= min)
            continue;
        cut = total - width;
        if (cut > w[c] - min)
            cut = w[c] - min;
        if (w[c] - cut < 8 && w[c] > 8)
            cut = w[c] - (min > 8 ? min : 8);
        if (cut <= 0)
            continue;
        w[c] -= cut;
        total -= cut;
    }
}

void table_print(const struct table *t, FILE *out, int width, bool color)
{
    int *w = calloc((size_t)t->ncols, sizeof(int));

    if (!w)
        return;
    widths(t, w, width);
    for (int c = 0; c < t->ncols; c++) {
        if (c)
            fputs("  ", out);
        if (color)
            fputs(fmt_color_on(FMT_BOLD), out);
        put_cell(out, t->headers[c], w[c], t->flags[c] & TABLE_RIGHT, c < t->ncols - 1 || color);
        if (color)
            fputs(fmt_color_off(), out);
    }
    fputc('\n', out);
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const struct cell *cl = &t->cells[r * t->ncols + c];
            bool paint = color && cl->color != FMT_PLAIN;
            if (c)
                fputs("  ", out);
            if (paint)
                fputs(fmt_color_on(cl->color), out);
            put_cell(out, cell_text(t, r, c), w[c], t->flags[c] & TABLE_RIGHT, c < t->ncols - 1);
            if (paint)
                fputs(fmt_color_off(), out);
        }
        fputc('\n', out);
    }
    free(w);
}

int fmt_term_width(int fd)
{
    struct winsize ws;
    const char *cols = getenv("COLUMNS");
    int n;

    if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    if (cols && parse_int(cols, 10, 10000, &n) == 0)
        return n;
    return 0;
}

bool fmt_use_color(int fd)
{
    const char *nc = getenv("NO_COLOR");
    const char *term = getenv("TERM");

    if (nc && nc[0])
        return false;
    if (term && !strcmp(term, "dumb"))
        return false;
    return isatty(fd);
}

static bool names_utf8(const char *v)
{
    for (; v && *v; v++)
        if ((v[0] == 'U' || v[0] == 'u') && (v[1] == 'T' || v[1] == 't') &&
            (v[2] == 'F' || v[2] == 'f') && (v[3] == '8' || (v[3] == '-' && v[4] == '8')))
            return true;
    return false;
}

bool fmt_use_utf8(int fd)
{
    const char *term = getenv("TERM");
    const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    if (!term || !strcmp(term, "dumb") || !isatty(fd))
        return false;
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && v[0])
            return names_utf8(v);
    }
    return false;
}

void fmt_spark(const double *v, int n, double max, bool utf8, char *buf, size_t len)
{
    static const char *const blocks[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                          "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char ascii[8] = {'_', '.', '-', '=', '+', '*', '#', '@'};
    size_t at = 0;
    if (len == 0)
        return;
    for (int i = 0; i < n; i++) {
        int k = max > 0 ? (int)(v[i] / max * 7.0 + 0.5) : 0;
        k = k < 0 ? 0 : k > 7 ? 7 : k;
        const char *cell = v[i] < 0 ? " " : utf8 ? blocks[k] : (const char[2]){ascii[k], 0};
        size_t cl = strlen(cell);
        if (at + cl + 1 > len)
            break;
        memcpy(buf + at, cell, cl);
        at += cl;
    }
    buf[at] = '\0';
}

const char *fmt_color_on(enum fmt_color c)
{
    switch (c) {
    case FMT_RED:
        return "\033[31m";
    case FMT_GREEN:
        return "\033[32m";
    case FMT_YELLOW:
        return "\033[33m";
    case FMT_BLUE:
        return "\033[34m";
    case FMT_MAGENTA:
        return "\033[35m";
    case FMT_CYAN:
        return "\033[36m";
    case FMT_DIM:
        return "\033[2m";
    case FMT_BOLD:
        return "\033[1m";
    case FMT_PLAIN:
        break;
    }
    return "";
}

const char *fmt_color_off(void)
{
    return "\033[0m";
}

enum fmt_color fmt_state_color(const char *s)
{
    static const struct {
        const char *state;
        enum fmt_color color;
    } map[] = {
        {"RUNNING", FMT_GREEN},   {"COMPLETED", FMT_DIM},     {"UP", FMT_GREEN},
        {"PENDING", FMT_YELLOW},  {"HELD", FMT_MAGENTA},      {"STARTING", FMT_CYAN},
        {"STOPPING", FMT_CYAN},   {"FAILED", FMT_RED},        {"TIMEOUT", FMT_RED},
        {"NODE_FAIL", FMT_RED},   {"PREEMPTED", FMT_MAGENTA}, {"CANCELLED", FMT_DIM},
        {"DRAINING", FMT_YELLOW}, {"DRAINED", FMT_YELLOW},    {"DOWN", FMT_RED},
        {"UNREACHABLE", FMT_RED}, {"UNHEALTHY", FMT_RED},
    };

    for (size_t i = 0; s && i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(map[i].state, s))
            return map[i].color;
    return FMT_PLAIN;
}

void fmt_when(int64_t then_ms, int64_t now_ms, char *buf, size_t len)
{
    if (then_ms <= 0) {
        snprintf(buf, len, "-");
        return;
    }
    format_relative(then_ms, now_ms, buf, len);
}

void fmt_duration(int64_t ms, char *buf, size_t len)
{
    if (ms < 0) {
        snprintf(buf, len, "-");
        return;
    }
    format_duration(ms, buf, len);
}

void fmt_size(int64_t mb, char *buf, size_t len)
{
    if (mb <= 0) {
        snprintf(buf, len, "-");
        return;
    }
    format_size_mb(mb, buf, len);
}

int fmt_utf8_seq(const unsigned char *p, size_t left, uint32_t *cp)
{
    int n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
    unsigned char lo = 0x80, hi = 0xbf;
    if (p[0] < 0xc2 || p[0] > 0xf4 || left < (size_t)n)
        return 0;
    if (p[0] == 0xe0)
        lo = 0xa0;
    else if (p[0] == 0xed)
        hi = 0x9f;
    else if (p[0] == 0xf0)
        lo = 0x90;
    else if (p[0] == 0xf4)
        hi = 0x8f;
    if (p[1] < lo || p[1] > hi)
        return 0;
    *cp = p[0] & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if (i > 1 && (p[i] & 0xc0) != 0x80)
            return 0;
        *cp = *cp << 6 | (p[i] & 0x3f);
    }
    return n;
}

/* Code points a terminal acts on or that reorder what is shown: the C1 controls (U+009B
 * is CSI on many terminals) and the bidirectional embeddings, overrides and isolates. */
static bool code_point_unsafe(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

bool fmt_is_plain(const char *s, bool keep_lines)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p < 0x20 || *p >= 0x7f) && !(keep_lines && (*p == '\n' || *p == '\t')))
            return false;
    return true;
}

char *fmt_safe(const char *s, bool keep_lines)
{
    size_t len = strlen(s);
    char *out = malloc(len * 4 + 1), *o = out;
    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        uint32_t cp = 0;
        int n = *p < 0x80 ? 1 : fmt_utf8_seq(p, len - (size_t)(p - (const unsigned char *)s), &cp);
        if (*p == '\n' || *p == '\t') {
            if (keep_lines)
                *o++ = (char)*p;
            else
                o += sprintf(o, "\\%c", *p == '\n' ? 'n' : 't');
            p++;
        } else if (*p < 0x20 || *p == 0x7f || n == 0) {
            o += sprintf(o, "\\x%02x", *p);
            p++;
        } else if (n > 1 && code_point_unsafe(cp)) {
            o += sprintf(o, "\\u%04x", (unsigned)cp);
            p += n;
        } else {
            memcpy(o, p, (size_t)n);
            o += n;
            p += n;
        }
    }
    *o = '\0';
    return out;
}
