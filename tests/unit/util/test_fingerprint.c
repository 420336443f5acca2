/* test_fingerprint.c - unit tests of util/fingerprint.h: the text written is the text
 * read back, the forms users paste (prefix in any case, upper-case hex, openssl's
 * colons) are read, and anything else is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "util/fingerprint.h"

static void format_then_parse(void **state)
{
    unsigned char d[FPR_LEN], back[FPR_LEN];
    char text[FPR_TEXTLEN];
    (void)state;
    for (int i = 0; i < FPR_LEN; i++)
        d[i] = (unsigned char)(i * 37 + 5);
    fpr_format(d, text, sizeof(text));
    assert_int_equal(strlen(text), 7 + 64);
    assert_memory_equal(text, "sha256:052a4f74", 15);
    assert_int_equal(fpr_parse(text, back), 0);
    assert_memory_equal(back, d, FPR_LEN);
}

static void pasted_forms(void **state)
{
    static const char *const ok[] = {
        "sha256:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        "SHA256:000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        "00:01:02:03:04:05:06:07:08:09:0A:0B:0C:0D:0E:0F:10:11:12:13:14:15:16:17:18:19:1A:1B:"
        "1C:1D:1E:1F",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        unsigned char d[FPR_LEN];
        assert_int_equal(fpr_parse(ok[i], d), 0);
        for (int b = 0; b < FPR_LEN; b++)
            assert_int_equal(d[b], b);
    }
}

static void refused(void **state)
{
    static const char *const bad[] = {
        "",
        "sha256:",
        "sha1:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        "sha256:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e",     /* short */
        "sha256:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f00", /* long */
        "sha256:g00102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        "sha256: 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        ":000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        "00::01",
    };
    unsigned char d[FPR_LEN];
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(fpr_parse(bad[i], d), -EINVAL);
    assert_int_equal(fpr_parse(NULL, d), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(format_then_parse),
        cmocka_unit_test(pasted_forms),
        cmocka_unit_test(refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
