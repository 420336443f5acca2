/*
 * base64.c - RFC 4648 base64, standard alphabet, padded (base64.h).
 */
#include "util/base64.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *b64_encode(const void *data, size_t len)
{
    const unsigned char *p = data;
    if (len > (SIZE_MAX - 1) / 4 * 3 - 2)
        return NULL;
    char *out = malloc(4 * ((len + 2) / 3) + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? alphabet[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

/* The value of one alphabet character, or -1. */
static int value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int64_t b64_decode(const char *s, size_t len, unsigned char *out, size_t outlen)
{
    if (len % 4)
        return -EINVAL;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        const unsigned char *g = (const unsigned char *)s + i;
        bool last = i + 4 == len;
        int pad = (g[3] == '=') + (g[3] == '=' && g[2] == '=');
        if (pad && !last)
            return -EINVAL; /* '=' only in the last group */
        int v[4];
        for (int k = 0; k < 4 - pad; k++)
            if ((v[k] = value(g[k])) < 0)
                return -EINVAL;
        for (int k = 4 - pad; k < 4; k++)
            v[k] = 0;
        if ((pad == 1 && (v[2] & 3)) || (pad == 2 && (v[1] & 15)))
            return -EINVAL; /* bits past the end must be zero (the canonical form) */
        uint32_t w =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        unsigned char bytes[3] = {(unsigned char)(w >> 16), (unsigned char)(w >> 8),
                                  (unsigned char)w};
        for (int k = 0; k < 3 - pad; k++) {
            if (o >= outlen)
                return -ENOSPC;
            out[o++] = bytes[k];
        }
    }
    return (int64_t)o;
}
