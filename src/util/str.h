/*
 * str.h - small string helpers that never overflow: copies that report truncation
 * instead of hiding it.
 */
#ifndef DOCKET_UTIL_STR_H
#define DOCKET_UTIL_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Copy src into dst[len] NUL-terminated. 0, or -ENAMETOOLONG when it did not fit
 * (dst then holds a truncated copy). */
int str_copy(char *dst, size_t len, const char *src);
bool str_has_prefix(const char *s, const char *prefix);
bool str_has_suffix(const char *s, const char *suffix);
/* Trim ASCII whitespace in place; returns s (moved past leading blanks). */
char *str_trim(char *s);
/* A name: 1..63 chars of [A-Za-z0-9._-], starting with an alphanumeric. */
bool str_is_name(const char *s);
/* A node label's value under `key`: a name, or for the key "features" (Slurm's node
 * features, docs/slurm.md "Features") a comma-separated list of names, 63 bytes at most. */
bool str_is_label_value(const char *key, const char *value);
/* Write s to f as HTML text: & < > " escaped (the simulator's and docket's pages). */
void str_html_write(FILE *f, const char *s);

#endif
