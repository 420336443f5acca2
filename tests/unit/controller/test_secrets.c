/* test_secrets.c - unit tests of docketd's secret sealing (secrets.c): a sealed value
 * opens to itself; every changed byte (nonce, ciphertext, tag), another key, another
 * project or name fails with -EBADMSG (the GCM tag) and never yields garbage; nonces
 * are fresh per value; the key file is made 0600 at first start, and refused when
 * others may read it or when it is not 32 bytes. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/ctl.h"
#include "controller/secrets.h"

static const unsigned char key1[CTL_SECRET_KEY_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const unsigned char key2[CTL_SECRET_KEY_LEN] = {9, 8, 7, 6, 5, 4, 3, 2, 1};
static const char value[] = "AKIAIOSFODNN7EXAMPLE/wJalrXUtnFEMI";

struct sealed {
    unsigned char nonce[CTL_SECRET_NONCE_LEN];
    unsigned char data[sizeof(value) - 1 + CTL_SECRET_TAG_LEN];
};

static void seal(struct sealed *s, const unsigned char *key, const char *project, const char *name)
{
    assert_int_equal(
        ctl_secret_seal(key, project, name, value, sizeof(value) - 1, s->nonce, s->data), 0);
}

static int open_(const struct sealed *s, const unsigned char *key, const char *project,
                 const char *name, unsigned char *out)
{
    return ctl_secret_open(key, project, name, s->nonce, s->data, sizeof(s->data), out);
}

static void round_trip(void **state)
{
    struct sealed s;
    unsigned char out[sizeof(value)];
    (void)state;
    seal(&s, key1, "vision", "API_KEY");
    assert_null(memmem(s.data, sizeof(s.data), "AKIA", 4)); /* not in clear */
    assert_int_equal(open_(&s, key1, "vision", "API_KEY", out), (int)sizeof(value) - 1);
    assert_memory_equal(out, value, sizeof(value) - 1);
}

static void every_changed_byte_fails(void **state)
{
    struct sealed s, t;
    unsigned char out[sizeof(value)];
    (void)state;
    seal(&s, key1, "vision", "API_KEY");
    for (size_t i = 0; i < sizeof(s.data); i++) {
        t = s;
        t.data[i] ^= 0x01;
        assert_int_equal(open_(&t, key1, "vision", "API_KEY", out), -EBADMSG);
    }
    for (size_t i = 0; i < sizeof(s.nonce); i++) {
        t = s;
        t.nonce[i] ^= 0x80;
        assert_int_equal(open_(&t, key1, "vision", "API_KEY", out), -EBADMSG);
    }
    /* cut short: no tag left to check */
    assert_int_equal(
        ctl_secret_open(key1, "vision", "API_KEY", s.nonce, s.data, CTL_SECRET_TAG_LEN, out),
        -EBADMSG);
}

static void bound_to_key_project_and_name(void **state)
{
    struct sealed s;
    unsigned char out[sizeof(value)];
    (void)state;
    seal(&s, key1, "vision", "API_KEY");
    assert_int_equal(open_(&s, key2, "vision", "API_KEY", out), -EBADMSG);
    assert_int_equal(open_(&s, key1, "speech", "API_KEY", out), -EBADMSG);
    assert_int_equal(open_(&s, key1, "vision", "API_KEY2", out), -EBADMSG);
    /* the separator: ("vision", "API_KEY") is not ("visionAPI", "_KEY") */
    assert_int_equal(open_(&s, key1, "visionAPI", "_KEY", out), -EBADMSG);
}

static void fresh_nonce_each_time(void **state)
{
    struct sealed a, b;
    (void)state;
    seal(&a, key1, "vision", "API_KEY");
    seal(&b, key1, "vision", "API_KEY");
    assert_memory_not_equal(a.nonce, b.nonce, sizeof(a.nonce));
    assert_memory_not_equal(a.data, b.data, sizeof(a.data));
}

static void empty_and_oversized_refused(void **state)
{
    unsigned char nonce[CTL_SECRET_NONCE_LEN], out[64];
    (void)state;
    assert_int_equal(ctl_secret_seal(key1, "p", "N", "", 0, nonce, out), -EINVAL);
    assert_int_equal(ctl_secret_seal(key1, "p", "N", "x", CTL_SECRET_MAX + 1, nonce, out), -EINVAL);
}

static void key_file(void **state)
{
    static struct ctl c; /* large: not on the stack */
    char dir[] = "/tmp/docket-secrets-test.XXXXXX", path[128], err[512];
    struct stat st;
    (void)state;
    assert_non_null(mkdtemp(dir));
    memset(&c, 0, sizeof(c));
    snprintf(c.cfg.state_dir, sizeof(c.cfg.state_dir), "%s", dir);
    snprintf(path, sizeof(path), "%s/secrets.key", dir);
    /* first start: made, 0600, 32 bytes, loaded */
    assert_int_equal(ctl_secrets_start(&c, err, sizeof(err)), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_size, CTL_SECRET_KEY_LEN);
    assert_true(c.secret_key_loaded);
    unsigned char first[CTL_SECRET_KEY_LEN];
    memcpy(first, c.secret_key, sizeof(first));
    ctl_secrets_stop(&c);
    /* next start: the same key */
    assert_int_equal(ctl_secrets_start(&c, err, sizeof(err)), 0);
    assert_memory_equal(first, c.secret_key, sizeof(first));
    /* readable by the group: refused, saying what to do */
    assert_int_equal(chmod(path, 0640), 0);
    assert_int_equal(ctl_secrets_start(&c, err, sizeof(err)), -EPERM);
    assert_non_null(strstr(err, "chmod 600"));
    assert_false(c.secret_key_loaded);
    /* the wrong size: refused */
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(truncate(path, 16), 0);
    assert_int_equal(ctl_secrets_start(&c, err, sizeof(err)), -EINVAL);
    /* a configured path elsewhere is made there */
    char other[160];
    snprintf(other, sizeof(other), "%s/elsewhere.key", dir);
    snprintf(c.cfg.secrets_key, sizeof(c.cfg.secrets_key), "%s", other);
    assert_int_equal(ctl_secrets_start(&c, err, sizeof(err)), 0);
    assert_int_equal(stat(other, &st), 0);
    ctl_secrets_stop(&c);
    unlink(other);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(every_changed_byte_fails),
        cmocka_unit_test(bound_to_key_project_and_name),
        cmocka_unit_test(fresh_nonce_each_time),
        cmocka_unit_test(empty_and_oversized_refused),
        cmocka_unit_test(key_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
