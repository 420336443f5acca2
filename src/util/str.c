/*
 * str.c - small string helpers that never overflow (see str.h). Copies report
 * truncation instead of hiding it; names follow the rule in str_is_name.
 */
#include "util/str.h"

#include <errno.h>
#include <string.h>

int str_copy(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src);

    if (len == 0)
        return -ENAMETOOLONG;
    if (n >= len) {
        memcpy(dst, src, len - 1);
        dst[len - 1] = '\0';
        return -ENAMETOOLONG;
    }
    memcpy(dst, src, n + 1);
    return 0;
}

bool str_has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool str_has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);

    return m <= n && memcmp(s + n - m, suffix, m) == 0;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

char *str_trim(char *s)
{
    size_t n;

    while (is_blank(*s))
        s++;
    n = strlen(s);
    while (n > 0 && is_blank(s[n - 1]))
        n--;
    s[n] = '\0';
    return s;
}

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool str_is_name(const char *s)
{
    size_t i;

    if (!is_alnum(s[0]))
        return false;
    for (i = 1; s[i] != '\0'; i++) {
        if (i >= 63)
            return false;
        if (!is_alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return false;
    }
    return true;
}

bool str_is_label_value(const char *key, const char *value)
{
    if (str_is_name(value))
        return true;
    if (strcmp(key, "features") != 0 || strlen(value) >= 64)
        return false;
    char item[64];
    for (const char *p = value;;) {
        size_t n = strcspn(p, ",");
        memcpy(item, p, n);
        item[n] = '\0';
        if (!str_is_name(item))
            return false;
        if (!p[n])
            return true;
        p += n + 1;
    }
}

void str_html_write(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}
