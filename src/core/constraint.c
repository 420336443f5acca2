/*
 * constraint.c - Slurm's --constraint grammar (floor 0): one recursive-descent reader that
 * both checks an expression and, given a node's labels, evaluates it. Owns nothing; the
 * expression is read afresh each time (the model caches the answer per node and selector
 * set, model.c node_matches_selset).
 *
 *   expr   := term ('|' term)*         OR
 *   term   := factor ('&' factor)*     AND, binding tighter than OR
 *   factor := atom ('*' COUNT)?        a node count (Slurm's `a*2`)
 *   atom   := NAME | '(' expr ')' | '[' expr ']'   brackets: a matching OR, outermost only
 */
#include "core/constraint.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum { FEAT_DEPTH_MAX = 16, FEAT_COUNT_MAX = 100000 };

struct reader {
    const char *start, *p;
    const struct sched_label *labels; /* NULL: check only */
    int nlabels;
    int depth;
    bool in_bracket;
    struct feat_shape shape;
    char *why;
    size_t whylen;
    bool failed;
};

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == ':' || c == '+' || c == '/';
}

static bool fail(struct reader *r, const char *what)
{
    if (!r->failed && r->why && r->whylen)
        snprintf(r->why, r->whylen, "%s at character %d of the constraint", what,
                 (int)(r->p - r->start) + 1);
    r->failed = true;
    return false;
}

/* An item of a comma-separated list equal to name (case included, as Slurm's features). */
static bool list_has(const char *list, const char *name, size_t len)
{
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == len && memcmp(p, name, len) == 0)
            return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

static bool has_n(const char *name, size_t len, const struct sched_label *labels, int nlabels)
{
    for (int i = 0; i < nlabels; i++) {
        if (strcmp(labels[i].key, "features") == 0 && list_has(labels[i].value, name, len))
            return true;
        if (strlen(labels[i].value) == len && memcmp(labels[i].value, name, len) == 0)
            return true;
    }
    return false;
}

bool feat_has(const char *name, const struct sched_label *labels, int nlabels)
{
    return has_n(name, strlen(name), labels, nlabels);
}

static bool read_or(struct reader *r);

static bool read_count(struct reader *r)
{
    r->p++; /* '*' */
    if (*r->p < '0' || *r->p > '9')
        return fail(r, "a count after '*' must be a number");
    long n = 0;
    while (*r->p >= '0' && *r->p <= '9') {
        n = n * 10 + (*r->p++ - '0');
        if (n > FEAT_COUNT_MAX)
            return fail(r, "the count is too large");
    }
    if (n == 0)
        return fail(r, "a count must be at least 1");
    r->shape.counts++;
    r->shape.top_count = (int)n; /* feat_parse keeps it only when it counts the whole */
    return true;
}

static bool read_group(struct reader *r, char close)
{
    if (++r->depth > FEAT_DEPTH_MAX)
        return fail(r, "the constraint nests too deep");
    r->p++;
    bool v = read_or(r);
    if (r->failed)
        return false;
    if (*r->p != close)
        return fail(r, close == ')' ? "expected ')'" : "expected ']'");
    r->p++;
    r->depth--;
    return v;
}

static bool read_factor(struct reader *r)
{
    bool v;
    if (*r->p == '(') {
        v = read_group(r, ')');
    } else if (*r->p == '[') {
        if (r->in_bracket || r->depth > 0)
            return fail(r, "a matching OR ('[...]') may only enclose the whole constraint");
        r->in_bracket = r->shape.alike = true;
        v = read_group(r, ']');
        r->in_bracket = false;
    } else if (name_char(*r->p)) {
        const char *name = r->p;
        while (name_char(*r->p))
            r->p++;
        size_t len = (size_t)(r->p - name);
        if (len >= SCHED_NAME_MAX)
            return fail(r, "a feature name is too long");
        v = r->labels && has_n(name, len, r->labels, r->nlabels);
    } else {
        return fail(r, *r->p ? "expected a feature name" : "the constraint ends too soon");
    }
    if (!r->failed && *r->p == '*')
        read_count(r);
    return r->failed ? false : v;
}

static bool read_and(struct reader *r)
{
    bool v = read_factor(r);
    while (!r->failed && *r->p == '&') {
        r->p++;
        v = read_factor(r) && v; /* no short cut: the rest is checked too */
    }
    return v;
}

static bool read_or(struct reader *r)
{
    bool v = read_and(r);
    while (!r->failed && *r->p == '|') {
        r->p++;
        v = read_and(r) || v;
    }
    return v;
}

static bool read_all(struct reader *r)
{
    bool v = read_or(r);
    if (r->failed)
        return false;
    if (*r->p)
        return fail(r, "unexpected character");
    return v;
}

/* The count ends the expression and applies to all of it: one factor, then '*N'. */
static bool whole_counted(const char *expr)
{
    const char *star = strrchr(expr, '*');
    if (!star || !star[1] || strspn(star + 1, "0123456789") != strlen(star + 1))
        return false;
    int depth = 0;
    for (const char *p = expr; p < star; p++) {
        if (*p == '(' || *p == '[')
            depth++;
        else if (*p == ')' || *p == ']')
            depth--;
        else if (depth == 0 && (*p == '&' || *p == '|' || *p == '*'))
            return false;
    }
    return true;
}

int feat_parse(const char *expr, struct feat_shape *shape, char *why, size_t whylen)
{
    struct reader r = {.start = expr, .p = expr, .why = why, .whylen = whylen};
    if (why && whylen)
        why[0] = '\0';
    read_all(&r);
    if (r.failed)
        return -EINVAL;
    if (r.shape.counts != 1 || !whole_counted(expr))
        r.shape.top_count = 0;
    if (shape)
        *shape = r.shape;
    return 0;
}

bool feat_match(const char *expr, const struct sched_label *labels, int nlabels)
{
    static const struct sched_label none;
    struct reader r = {.start = expr,
                       .p = expr,
                       .labels = labels ? labels : &none,
                       .nlabels = labels ? nlabels : 0};
    bool v = read_all(&r);
    return !r.failed && v;
}
