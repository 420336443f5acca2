/*
 * anchor.h - the audit anchor (docs/security.md "Audit"): where the audit trail's hash
 * chain stood when docketd last published it, as docketd writes it (--audit-anchor FILE)
 * and as `docket audit --verify --anchor FILE` and docketd read it back. One format, one
 * reader (audit_anchor_parse) and one writer (audit_anchor_text): a JSON object
 * {"id": N, "hash": "64 hex", "chain_from": M, "time_ms": T}. In util so that the CLI,
 * which links neither protocol nor libcrypto, reads it with the same code as docketd.
 */
#ifndef DOCKET_UTIL_ANCHOR_H
#define DOCKET_UTIL_ANCHOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct audit_anchor {
    int64_t id;         /* the last audit row then (>= 1) */
    char hash[65];      /* its hash: 64 lowercase hex digits */
    int64_t chain_from; /* the first row with a hash then (1 .. id); rows before it predate
                           the chain (schema < 5) */
    int64_t time_ms;    /* when it was written (information only) */
};

/* 0, or -EINVAL with why[] saying what is wrong. Unknown fields are refused. */
int audit_anchor_parse(const char *text, size_t len, struct audit_anchor *out, char *why,
                       size_t wlen);
/* The file's text (malloc'd, a newline at the end), or NULL without memory. */
char *audit_anchor_text(const struct audit_anchor *a);
/* Is s a hash as the audit writes it: 64 lowercase hex digits? */
bool audit_hash_valid(const char *s);

#endif
