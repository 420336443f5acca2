/*
 * fingerprint.c - text form of a public-key pin (fingerprint.h).
 */
#include "util/fingerprint.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>

void fpr_format(const unsigned char d[FPR_LEN], char *out, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    char buf[FPR_TEXTLEN] = "sha256:";
    for (int i = 0; i < FPR_LEN; i++) {
        buf[7 + 2 * i] = hex[d[i] >> 4];
        buf[8 + 2 * i] = hex[d[i] & 15];
    }
    buf[7 + 2 * FPR_LEN] = '\0';
    snprintf(out, len, "%s", buf);
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

int fpr_parse(const char *s, unsigned char d[FPR_LEN])
{
    if (!s)
        return -EINVAL;
    if (strncasecmp(s, "sha256:", 7) == 0)
        s += 7;
    for (int i = 0; i < FPR_LEN; i++) {
        if (i > 0 && *s == ':')
            s++;
        int hi = hexval(s[0]), lo = hi < 0 ? -1 : hexval(s[1]);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        d[i] = (unsigned char)(hi << 4 | lo);
        s += 2;
    }
    return *s == '\0' ? 0 : -EINVAL;
}
