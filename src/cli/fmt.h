/*
 * fmt.h - what docket prints for people: aligned tables sized to the terminal, colour
 * (only on a terminal and never with NO_COLOR), relative times and sizes.
 *
 * A table owns copies of its cells. Columns are as wide as their widest cell; when the
 * table is wider than the terminal, the columns marked flexible shrink (cells cut with
 * "…"), the rightmost flexible column first, never below its header's width.
 */
#ifndef DOCKET_CLI_FMT_H
#define DOCKET_CLI_FMT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum fmt_color {
    FMT_PLAIN,
    FMT_RED,
    FMT_GREEN,
    FMT_YELLOW,
    FMT_BLUE,
    FMT_MAGENTA,
    FMT_CYAN,
    FMT_DIM,
    FMT_BOLD
};

enum table_col_flags { TABLE_RIGHT = 1 << 0, TABLE_FLEX = 1 << 1 };

struct table;

/* headers: ncols strings (copied). NULL on out of memory. */
struct table *table_create(const char *const *headers, int ncols);
void table_destroy(struct table *t);
void table_set_flags(struct table *t, int col, unsigned flags);
/* Start a new row; then table_cell() fills its cells left to right (missing ones are
 * empty, extra ones are dropped). 0 or -ENOMEM. */
int table_row(struct table *t);
int table_cell(struct table *t, enum fmt_color color, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int table_rows(const struct table *t);
/* Print with each column padded by two spaces. width <= 0: no limit. */
void table_print(const struct table *t, FILE *out, int width, bool color);

/* A copy of a string from the server (a job's name, command or script, a reason, a
 * message) that is safe to write to a terminal: control characters are escaped in sight,
 * never written raw. C0 controls and DEL as \xHH (ESC as \x1b), the C1 controls
 * (U+0080-U+009F) and the bidirectional overrides and isolates as \uHHHH, a byte that
 * is not UTF-8 as \xHH; newline and tab are kept when keep_lines, else written \n and
 * \t. malloc'd (NULL on out of memory). */
char *fmt_safe(const char *s, bool keep_lines);
/* True when fmt_safe(s, keep_lines) would be s unchanged because s is printable ASCII
 * (newline and tab too when keep_lines); false also for any byte past ASCII, which only
 * fmt_safe decides. A quick test that spares a copy for nearly every string. */
bool fmt_is_plain(const char *s, bool keep_lines);
/* The length of the UTF-8 sequence at p (2 to 4 bytes, at most `left`) with its code
 * point in *cp, or 0 when the bytes there are not one: a stray continuation, an overlong
 * form, a surrogate, past U+10FFFF, cut short (json_loadb refuses the same). p[0] is
 * past ASCII. */
int fmt_utf8_seq(const unsigned char *p, size_t left, uint32_t *cp);

/* Display width of a UTF-8 string (code points; no wide-character tables). */
int fmt_width(const char *s);
/* The terminal's columns when `fd` is a terminal, else $COLUMNS, else 0 (no limit). */
int fmt_term_width(int fd);
/* Whether to colour output on `fd`: a terminal, NO_COLOR unset or empty, TERM != dumb. */
bool fmt_use_color(int fd);
const char *fmt_color_on(enum fmt_color c); /* ANSI sequence */
const char *fmt_color_off(void);
/* The colour of a job or node state name ("RUNNING" green, "FAILED" red ...). */
enum fmt_color fmt_state_color(const char *state);

/* Whether `fd` takes UTF-8 drawing (sparklines): a terminal, TERM != dumb, and the
 * locale's variables (LC_ALL, else LC_CTYPE, else LANG) name UTF-8. */
bool fmt_use_utf8(int fd);
/* A sparkline of v[0..n-1] scaled to 0..max into buf: one cell per value, Unicode blocks
 * ("▁▂▃▄▅▆▇█") when utf8, else ASCII levels ("_.-=+*#@"); a value < 0 (unknown) is a
 * space. Cut to fit len (NUL-terminated). */
void fmt_spark(const double *v, int n, double max, bool utf8, char *buf, size_t len);

/* "3m ago" / "in ~2h" / "just now", or "-" when then_ms <= 0. */
void fmt_when(int64_t then_ms, int64_t now_ms, char *buf, size_t len);
/* "1h30m" from milliseconds, or "-" when ms < 0. */
void fmt_duration(int64_t ms, char *buf, size_t len);
/* "64G" from MiB, or "-" when mb <= 0. */
void fmt_size(int64_t mb, char *buf, size_t len);

#endif
