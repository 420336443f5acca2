/*
 * jtext.h - JSON text read in one pass, without building a tree (issue 40): the rows of
 * a long list are read where they lie in the reply, each member the caller wants taken
 * and the rest skipped, and --json's rows re-laid out as jansson would print them.
 *
 * The reader takes what json_loadb takes (RFC 8259, UTF-8 strings, no NUL in a string,
 * integers within int64, finite reals, nesting at most JTEXT_DEPTH deep, jansson's own
 * limit) and refuses the rest with -EPROTO, so a reply one refuses the other refuses too.
 */
#ifndef DOCKET_CLI_JTEXT_H
#define DOCKET_CLI_JTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/dbuf.h"

#define JTEXT_DEPTH 2048

struct jscan {
    const char *p, *end;
};

void jscan_init(struct jscan *s, const char *text, size_t n);
/* The next character past white space (not taken), or -1 at the end. */
int jscan_peek(struct jscan *s);
/* Take character c past white space: true when it was there. */
bool jscan_take(struct jscan *s, char c);
/* A string's value, decoded, appended to out with its NUL: 0 or -EPROTO. */
int jscan_string(struct jscan *s, struct dbuf *out);
/* A number: its value as jint() reads it (a real cut to an integer), *integer false for
 * a real. 0 or -EPROTO. */
int jscan_number(struct jscan *s, int64_t *v, bool *integer);
/* Skip one value of any kind, checking its syntax. 0 or -EPROTO. */
int jscan_skip(struct jscan *s);
/* Within an object, after '{' or a member: the next member's key into key (reset first,
 * NUL-terminated) and its ':' taken: 1; the object's '}' taken: 0; -EPROTO. *first is
 * true before the first member and is cleared. */
int jscan_member(struct jscan *s, bool *first, struct dbuf *key);

/* Append the value `text` (one value, as jansson writes it compact: no white space, keys
 * in the order given, strings and numbers as json_dumps writes them, no key twice in an
 * object) to out laid out as json_dumps(JSON_INDENT(2)) lays it out nested `depth` levels
 * deep. -EPROTO (out as it was) when the text is anything else: the caller then lets
 * jansson read and write it. */
int jtext_indent(const char *text, size_t n, int depth, struct dbuf *out);

#endif
