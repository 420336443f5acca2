/*
 * fingerprint.h - the text form of a TLS public-key pin: "sha256:" and the 64 lowercase
 * hex digits of the SHA-256 of the certificate's SubjectPublicKeyInfo (DER), the same key
 * curl's --pinnedpubkey takes (in base64 there). docketd prints it, docket-node and the
 * CLI read it; this is the one reader and writer of that text. Pure string code: the
 * digest itself is computed by whoever holds the certificate (OpenSSL).
 */
#ifndef DOCKET_UTIL_FINGERPRINT_H
#define DOCKET_UTIL_FINGERPRINT_H

#include <stddef.h>

#define FPR_LEN     32 /* bytes of a SHA-256 */
#define FPR_TEXTLEN 72 /* "sha256:" + 64 hex + NUL, rounded up */

/* "sha256:<hex>" of the 32 bytes into out (at least FPR_TEXTLEN). */
void fpr_format(const unsigned char d[FPR_LEN], char *out, size_t len);
/* Parse a pin as users paste it: an optional "sha256:" prefix (any case), then 32 bytes
 * of hex, upper or lower case, optionally separated by ':' (openssl's form). 0, or
 * -EINVAL for anything else. */
int fpr_parse(const char *s, unsigned char d[FPR_LEN]);

#endif
