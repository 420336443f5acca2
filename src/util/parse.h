/*
 * parse.h - the parsers for what people type: durations, sizes, signals, integers,
 * GPU declarations, array ranges; and the formatters for what people read back.
 * Every parser takes a NUL-terminated string, returns 0 or -EINVAL/-ERANGE, and never
 * writes *out on error.
 */
#ifndef DOCKET_UTIL_PARSE_H
#define DOCKET_UTIL_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "90s", "15m", "4h", "7d", "1h30m", "250ms", "1w"; a bare integer is seconds.
 * "0" is 0. Units are lowercase, whole numbers only, each unit at most once and larger
 * units first ("30m1h" is -EINVAL). Negative (-ERANGE) and overflowing (-ERANGE) values
 * are refused. */
int parse_duration_ms(const char *s, int64_t *out_ms);
/* "512M", "32G", "1.5T", "64K" (binary units, case-insensitive, optional "B"/"iB");
 * a bare integer is MiB, a bare "B" suffix is bytes ("1048576B"). At most 9 decimals.
 * Result in MiB, rounded up. */
int parse_size_mb(const char *s, int64_t *out_mb);
/* "TERM", "SIGTERM", "USR1", "15" -> signal number (1..64). Names are case-insensitive. */
int parse_signal(const char *s, int *out_sig);
const char *signal_name(int sig); /* "SIGTERM"; "SIG?" when unknown */
/* Whole string must be a base-10 integer within [min, max]. */
int parse_int64(const char *s, int64_t min, int64_t max, int64_t *out);
int parse_int(const char *s, int min, int max, int *out);
int parse_bool(const char *s, bool *out); /* true/false/yes/no/on/off/1/0 */
/* "8xH100-80GB", "8", "2xA100:40G" -> count and type ("" when none); type_len >= 64.
 * Count 0..4096 (0 only without a type); the type follows str_is_name. *mem_mb is the
 * per-GPU memory after ':' (a parse_size_mb size), else the size that ends the type name
 * ("H100-80GB" -> 81920), else 0. type and mem_mb may be NULL. */
int parse_gpu_decl(const char *s, int *count, char *type, size_t type_len, int64_t *mem_mb);
/* "key=value" -> split into key/value buffers (each at least 64 bytes). The key follows
 * str_is_name; the value is 1..63 chars of [A-Za-z0-9._:/-]. -ERANGE if a buffer is
 * too small. */
int parse_label(const char *s, char *key, size_t klen, char *value, size_t vlen);

/* Job arrays: "0-99", "0-99%8", "1,3,5-9:2", "0-15%4". Fills up to max indices in
 * ascending order, sets *count and *limit (0 = none). At most 100000 indices.
 * Elements are N, N-M or N-M:STEP with 0 <= N <= M <= INT32_MAX; duplicates are merged.
 * More distinct indices than max is -ERANGE; indices NULL only counts. limit may be NULL;
 * -ENOMEM if the scratch array cannot be allocated. */
int parse_array_spec(const char *s, int32_t *indices, size_t max, size_t *count, int *limit);

/* "1h30m", "45s", "2d3h", "0s" (compact, two largest units, truncated; "250ms" under a
 * second; "-" before negative values). Output is truncated to len, always terminated. */
void format_duration(int64_t ms, char *buf, size_t len);
/* Relative to now: "3m ago", "in ~2h", "just now" (within 5 s); the largest whole unit. */
void format_relative(int64_t then_ms, int64_t now_ms, char *buf, size_t len);
/* "512M", "32G", "1.5T" from MiB (one decimal at most, rounded; units up to E). */
void format_size_mb(int64_t mb, char *buf, size_t len);

#endif
