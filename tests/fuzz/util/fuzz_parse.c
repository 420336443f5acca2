/*
 * fuzz_parse.c - libFuzzer harness for util/parse.h: the input, as a C string, goes to
 * every parse_* function; results are checked against the header's promises (outputs
 * untouched on error, ranges, array indices sorted and unique) and fed to the
 * formatters. A broken promise aborts, which libFuzzer reports as a crash.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/parse.h"
#include "util/str.h"

#define SENTINEL 0x5a5a5a5a

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int32_t indices[100000];

static void check(bool ok)
{
    if (!ok)
        abort();
}

static void check_rc(int rc)
{
    check(rc == 0 || rc == -EINVAL || rc == -ERANGE);
}

static void fuzz_numbers(const char *s)
{
    char buf[64];
    int64_t v = SENTINEL;
    int iv = SENTINEL, rc;
    bool b;

    rc = parse_duration_ms(s, &v);
    check_rc(rc);
    check(rc == 0 ? v >= 0 : v == SENTINEL);
    if (rc == 0)
        format_duration(v, buf, sizeof(buf));
    v = SENTINEL;
    rc = parse_size_mb(s, &v);
    check_rc(rc);
    check(rc == 0 ? v >= 0 : v == SENTINEL);
    if (rc == 0)
        format_size_mb(v, buf, sizeof(buf));
    v = SENTINEL;
    rc = parse_int64(s, -1000000, 1000000, &v);
    check_rc(rc);
    check(rc == 0 ? v >= -1000000 && v <= 1000000 : v == SENTINEL);
    if (rc == 0)
        format_relative(v * 1000, 0, buf, sizeof(buf));
    rc = parse_int(s, INT32_MIN, INT32_MAX, &iv);
    check_rc(rc);
    iv = SENTINEL;
    rc = parse_signal(s, &iv);
    check_rc(rc);
    check(rc == 0 ? iv >= 1 && iv <= 64 : iv == SENTINEL);
    if (rc == 0)
        check(signal_name(iv)[0] == 'S');
    rc = parse_bool(s, &b);
    check(rc == 0 || rc == -EINVAL);
}

static void fuzz_decls(const char *s)
{
    char type[64] = "?", key[64] = "?", value[64] = "?";
    int count = SENTINEL, rc;
    int64_t mem = SENTINEL;

    rc = parse_gpu_decl(s, &count, type, sizeof(type), &mem);
    check_rc(rc);
    if (rc == 0)
        check(count >= 0 && count <= 4096 && mem >= 0 && (!type[0] || str_is_name(type)));
    else
        check(count == SENTINEL && mem == SENTINEL && !strcmp(type, "?"));
    rc = parse_label(s, key, sizeof(key), value, sizeof(value));
    check_rc(rc);
    if (rc == 0)
        check(str_is_name(key) && value[0] && strlen(value) < 64);
    else
        check(!strcmp(key, "?") && !strcmp(value, "?"));
}

static void fuzz_array(const char *s)
{
    size_t count = 7, counted = 7, i;
    int limit = SENTINEL, rc, rc2;

    rc = parse_array_spec(s, indices, sizeof(indices) / sizeof(indices[0]), &count, &limit);
    check_rc(rc);
    if (rc != 0) {
        check(count == 7 && limit == SENTINEL);
        return;
    }
    check(count >= 1 && count <= 100000 && limit >= 0 && limit <= 100000);
    for (i = 0; i < count; i++)
        check(indices[i] >= 0 && (i == 0 || indices[i] > indices[i - 1]));
    rc2 = parse_array_spec(s, NULL, 0, &counted, NULL);
    check(rc2 == 0 && counted == count);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    fuzz_numbers(s);
    fuzz_decls(s);
    fuzz_array(s);
    free(s);
    return 0;
}
