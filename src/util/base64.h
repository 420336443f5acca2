/*
 * base64.h - the one base64 of Docket (RFC 4648, standard alphabet, padded): log chunks
 * from the agent to docketd (docs/api.md "Agent endpoints"). The decoder takes only the
 * canonical form the encoder writes: length a multiple of 4, no whitespace, '=' only at
 * the end, and the unused bits of the last group zero, so every text decodes to one byte
 * string and encodes back to itself.
 */
#ifndef DOCKET_UTIL_BASE64_H
#define DOCKET_UTIL_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Bytes needed to decode `len` characters (an upper bound). */
#define B64_DECODED_MAX(len) ((len) / 4 * 3)

/* Encode `len` bytes; a malloc'd NUL-terminated string (the caller frees), or NULL when
 * out of memory. */
char *b64_encode(const void *data, size_t len);

/* Decode the `len` characters at `s` into out[outlen]: the byte count, -EINVAL when `s`
 * is not canonical base64, -ENOSPC when out is too small. */
int64_t b64_decode(const char *s, size_t len, unsigned char *out, size_t outlen)
    __attribute__((warn_unused_result));

#endif
