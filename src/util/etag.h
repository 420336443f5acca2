/*
 * etag.h - the entity tags of docketd's polled lists (docs/api.md "Conditional
 * requests"): the one writer of a tag and the one reader of an If-None-Match header.
 * A tag is W/"EPOCH-VERSION-SALT" in hex: the process's epoch (a restart never reuses a
 * tag), the version of what the list shows (a counter bumped on every change, never a
 * hash of the body), and a salt that hashes who asks and what they asked for. Pure
 * string code.
 */
#ifndef DOCKET_UTIL_ETAG_H
#define DOCKET_UTIL_ETAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ETAG_TEXTLEN 64 /* W/"" + three 16-digit hex numbers + 2 dashes + NUL, rounded up */
/* The longest If-None-Match header read: longer ones match nothing (a 200, never a 304). */
#define ETAG_HEADER_MAX 4096

/* W/"e-v-s" into out (at least ETAG_TEXTLEN). */
void etag_format(char *out, size_t len, uint64_t epoch, uint64_t version, uint64_t salt);
/* FNV-1a of s (NULL: nothing) continued from h; start with ETAG_HASH_SEED. A separator
 * byte follows s, so ("ab","c") and ("a","bc") differ. */
#define ETAG_HASH_SEED UINT64_C(14695981039346656037)
uint64_t etag_hash(uint64_t h, const char *s);
/* Does the If-None-Match header `inm` (a comma-separated list of tags, each weak or
 * strong, or "*") name `tag`? Weak comparison (RFC 9110 13.1.2): W/ is ignored on both
 * sides. A malformed list matches nothing from the first bad item on. */
bool etag_match(const char *inm, const char *tag);

#endif
