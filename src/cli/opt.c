/*
 * opt.c - the flag parser of docket's verbs and script directives (see opt.h).
 * Kept free of global state (unlike getopt) so one process can parse the command line
 * and then every #DOCKET line of a script, and so a fuzzer can drive it.
 */
#include "cli/opt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void opt_iter_init(struct opt_iter *it, int argc, char **argv, int first)
{
    it->argc = argc;
    it->argv = argv;
    it->index = first;
    it->sub = 0;
    it->dashdash = false;
}

const char *opt_name(const struct opt_def *defs, int id)
{
    static char buf[80];

    for (const struct opt_def *d = defs; d->id; d++) {
        if (d->id != id)
            continue;
        if (d->long_name)
            snprintf(buf, sizeof(buf), "--%s", d->long_name);
        else
            snprintf(buf, sizeof(buf), "-%c", d->short_name);
        return buf;
    }
    return "?";
}

/* Exact match first, then a unique prefix. NULL when unknown; *ambiguous set when two
 * long names share the prefix. */
static const struct opt_def *find_long(const struct opt_def *defs, const char *name, size_t n,
                                       bool *ambiguous)
{
    const struct opt_def *found = NULL;

    *ambiguous = false;
    for (const struct opt_def *d = defs; d->id; d++)
        if (d->long_name && strlen(d->long_name) == n && !strncmp(d->long_name, name, n))
            return d;
    for (const struct opt_def *d = defs; d->id; d++) {
        if (!d->long_name || strncmp(d->long_name, name, n))
            continue;
        if (found)
            *ambiguous = true;
        found = d;
    }
    return *ambiguous ? NULL : found;
}

static const struct opt_def *find_short(const struct opt_def *defs, char c)
{
    for (const struct opt_def *d = defs; d->id; d++)
        if (d->short_name && d->short_name == c)
            return d;
    return NULL;
}

static int next_long(struct opt_iter *it, const struct opt_def *defs, const char **value, char *err,
                     size_t errlen)
{
    const char *arg = it->argv[it->index++] + 2;
    const char *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    bool ambiguous;
    const struct opt_def *d = find_long(defs, arg, n, &ambiguous);

    if (!d) {
        snprintf(err, errlen, "%s option '--%.*s'", ambiguous ? "ambiguous" : "unknown",
                 (int)(n > 60 ? 60 : n), arg);
        return OPT_ERROR;
    }
    if (d->arg == OPT_NONE) {
        if (eq) {
            snprintf(err, errlen, "option '--%s' takes no value", d->long_name);
            return OPT_ERROR;
        }
        *value = NULL;
        return d->id;
    }
    if (eq) {
        *value = eq + 1;
        return d->id;
    }
    if (it->index >= it->argc) {
        snprintf(err, errlen, "option '--%s' needs a value", d->long_name);
        return OPT_ERROR;
    }
    *value = it->argv[it->index++];
    return d->id;
}

static int next_short(struct opt_iter *it, const struct opt_def *defs, const char **value,
                      char *err, size_t errlen)
{
    const char *arg = it->argv[it->index];
    char c = arg[it->sub];
    const struct opt_def *d = find_short(defs, c);

    if (!d) {
        if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
            snprintf(err, errlen, "unknown option '-%c'", c);
        else
            snprintf(err, errlen, "unknown option in '%.40s'", arg);
        it->sub = 0;
        it->index++;
        return OPT_ERROR;
    }
    it->sub++;
    if (d->arg == OPT_NONE) {
        if (!arg[it->sub]) {
            it->sub = 0;
            it->index++;
        }
        *value = NULL;
        return d->id;
    }
    /* a value: the rest of this word ("-g8") or the next word ("-g 8") */
    if (arg[it->sub]) {
        *value = arg + it->sub;
        it->sub = 0;
        it->index++;
        return d->id;
    }
    it->sub = 0;
    it->index++;
    if (it->index >= it->argc) {
        snprintf(err, errlen, "option '-%c' needs a value", c);
        return OPT_ERROR;
    }
    *value = it->argv[it->index++];
    return d->id;
}

int opt_next(struct opt_iter *it, const struct opt_def *defs, const char **value, char *err,
             size_t errlen)
{
    const char *arg;

    *value = NULL;
    if (it->sub)
        return next_short(it, defs, value, err, errlen);
    if (it->dashdash || it->index >= it->argc)
        return OPT_DONE;
    arg = it->argv[it->index];
    if (!strcmp(arg, "--")) {
        it->index++;
        it->dashdash = true;
        return OPT_DONE;
    }
    if (arg[0] != '-' || arg[1] == '\0') {
        *value = arg;
        it->index++;
        return OPT_POSITIONAL;
    }
    if (arg[1] == '-')
        return next_long(it, defs, value, err, errlen);
    it->sub = 1;
    return next_short(it, defs, value, err, errlen);
}

/* Words are written back to back into buf, each NUL-terminated; the output is never
 * longer than the input plus one byte, which is why buflen >= strlen(line) + 1 suffices. */
int opt_split_words(const char *line, char *buf, size_t buflen, char **words, int max)
{
    const char *p = line;
    char *o = buf;
    int n = 0;

    if (buflen < strlen(line) + 1)
        return -E2BIG;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p || *p == '#')
            return n;
        if (n >= max)
            return -E2BIG;
        words[n++] = o;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            if (*p == '\'' || *p == '"') {
                char q = *p++;
                while (*p && *p != q) {
                    if (q == '"' && *p == '\\' && p[1])
                        p++;
                    *o++ = *p++;
                }
                if (!*p)
                    return -EINVAL;
                p++;
            } else if (*p == '\\' && p[1]) {
                p++;
                *o++ = *p++;
            } else {
                *o++ = *p++;
            }
        }
        *o++ = '\0';
    }
}
