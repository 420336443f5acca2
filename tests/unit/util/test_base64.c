/* test_base64.c - unit tests of util/base64.h: RFC 4648's test vectors both ways, the
 * canonical form only (no whitespace, padding only at the end, zero trailing bits), a
 * buffer too small, bytes of every value. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/base64.h"

static int64_t dec(const char *s, unsigned char *out, size_t outlen)
{
    return b64_decode(s, strlen(s), out, outlen);
}

static void rfc4648_vectors(void **state)
{
    static const char *const cases[][2] = {{"", ""},
                                           {"f", "Zg=="},
                                           {"fo", "Zm8="},
                                           {"foo", "Zm9v"},
                                           {"foob", "Zm9vYg=="},
                                           {"fooba", "Zm9vYmE="},
                                           {"foobar", "Zm9vYmFy"}};
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *enc = b64_encode(cases[i][0], strlen(cases[i][0]));
        assert_non_null(enc);
        assert_string_equal(enc, cases[i][1]);
        unsigned char out[16];
        int64_t n = dec(enc, out, sizeof(out));
        assert_int_equal(n, (int64_t)strlen(cases[i][0]));
        assert_memory_equal(out, cases[i][0], (size_t)n);
        free(enc);
    }
}

static void every_byte_round_trips(void **state)
{
    unsigned char in[256], out[256];
    (void)state;
    for (int i = 0; i < 256; i++)
        in[i] = (unsigned char)(255 - i);
    for (size_t len = 0; len <= sizeof(in); len += 1 + len / 3) {
        char *enc = b64_encode(in, len);
        assert_non_null(enc);
        assert_int_equal(strlen(enc), 4 * ((len + 2) / 3));
        assert_int_equal(b64_decode(enc, strlen(enc), out, sizeof(out)), (int64_t)len);
        assert_memory_equal(out, in, len);
        free(enc);
    }
}

static void refuses_what_is_not_canonical(void **state)
{
    unsigned char out[16];
    (void)state;
    assert_int_equal(dec("Zm9", out, sizeof(out)), -EINVAL);      /* length */
    assert_int_equal(dec("Zm=v", out, sizeof(out)), -EINVAL);     /* '=' inside a group */
    assert_int_equal(dec("Zg==Zm9v", out, sizeof(out)), -EINVAL); /* '=' before the end */
    assert_int_equal(dec("Z!9v", out, sizeof(out)), -EINVAL);     /* not the alphabet */
    assert_int_equal(dec("Zm9v\n", out, sizeof(out)), -EINVAL);   /* whitespace */
    assert_int_equal(dec("Zm 9", out, sizeof(out)), -EINVAL);
    assert_int_equal(dec("Zh==", out, sizeof(out)), -EINVAL); /* trailing bits set */
    assert_int_equal(dec("Zm9=", out, sizeof(out)), -EINVAL);
    assert_int_equal(dec("====", out, sizeof(out)), -EINVAL);
    assert_int_equal(dec("A===", out, sizeof(out)), -EINVAL);
    assert_int_equal(dec("Zm-_", out, sizeof(out)), -EINVAL); /* the URL alphabet */
    /* a NUL inside the given length is a character like any other: refused */
    assert_int_equal(b64_decode("Zm\0v", 4, out, sizeof(out)), -EINVAL);
}

static void too_small_a_buffer(void **state)
{
    unsigned char out[5];
    (void)state;
    assert_int_equal(dec("Zm9vYmFy", out, sizeof(out)), -ENOSPC);
    assert_int_equal(dec("Zm9vYmE=", out, sizeof(out)), 5);
    assert_int_equal(B64_DECODED_MAX(8), 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc4648_vectors),
        cmocka_unit_test(every_byte_round_trips),
        cmocka_unit_test(refuses_what_is_not_canonical),
        cmocka_unit_test(too_small_a_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
