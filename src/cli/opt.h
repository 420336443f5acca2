/*
 * opt.h - the flag parser of every docket verb (and of #DOCKET / #SBATCH script lines).
 *
 * A verb describes its flags in a table of struct opt_def ending with a zeroed entry, then
 * pulls them one by one with opt_next(), as getopt_long would but without global state,
 * so it can be reused on script lines and fuzzed. Accepted spellings:
 *   -g 8   -g8   --gpus 8   --gpus=8   -fj (a cluster of flags without values)
 *   --     ends the flags; what follows is positional (it->dashdash is set)
 *   -      a lone dash is positional (stdin)
 * Long names may be abbreviated to any unambiguous prefix, as getopt_long allows.
 * Nothing is allocated; `value` points into argv.
 */
#ifndef DOCKET_CLI_OPT_H
#define DOCKET_CLI_OPT_H

#include <stdbool.h>
#include <stddef.h>

enum opt_arg { OPT_NONE, OPT_VALUE };

struct opt_def {
    int id;                /* > 0; returned by opt_next */
    char short_name;       /* 0 when none */
    const char *long_name; /* NULL when none; NULL id 0 ends the table */
    enum opt_arg arg;
};

enum {
    OPT_DONE = -1,       /* no more arguments, or "--" was consumed */
    OPT_ERROR = -2,      /* err holds "unknown option '--x'" or "option '--gpus' needs a value" */
    OPT_POSITIONAL = -3, /* *value is a non-flag argument; parsing may continue */
};

struct opt_iter {
    int argc;
    char **argv;
    int index;     /* next argv element to read */
    int sub;       /* inside a cluster "-abc": offset of the next letter, else 0 */
    bool dashdash; /* "--" was seen: argv[index..] are positional */
};

void opt_iter_init(struct opt_iter *it, int argc, char **argv, int first);
/* Returns an id from defs, OPT_POSITIONAL, OPT_DONE or OPT_ERROR (err filled). */
int opt_next(struct opt_iter *it, const struct opt_def *defs, const char **value, char *err,
             size_t errlen);
/* The spelling of option `id` for messages: "--gpus" (or "-g" when it has no long name). */
const char *opt_name(const struct opt_def *defs, int id);

/* Split a line into words as a shell would for simple cases: blanks separate words,
 * '...' and "..." quote, backslash escapes the next character; a '#' starting a word
 * begins a comment. Writes pointers into `buf` (a copy of the line, at least
 * strlen(line) + 1 bytes). Returns the number of words, or -EINVAL (unterminated quote)
 * or -E2BIG (more than max words). */
int opt_split_words(const char *line, char *buf, size_t buflen, char **words, int max);

#endif
