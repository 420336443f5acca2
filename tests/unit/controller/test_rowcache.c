/* test_rowcache.c - unit tests of the list's row cache (rowcache.c, docs/controller.md
 * "The list's row cache"): a row is served only for the exact key it was made from (one
 * byte more, less or different is a miss, so is a key that is a prefix of it); a put
 * replaces a job's row; rows of different jobs never mix, through collisions and growth;
 * past its bytes the cache empties instead of growing; a row bigger than the whole cache
 * is never kept; job id 0 and a NULL cache are no rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "controller/rowcache.h"

static const char *get(struct ctl_rowcache *rc, uint64_t id, const char *key)
{
    size_t n = 0;
    const char *t = ctl_rowcache_get(rc, id, key, strlen(key), &n);
    if (t)
        assert_int_equal(n, strlen(t));
    return t;
}

static void put(struct ctl_rowcache *rc, uint64_t id, const char *key, const char *text)
{
    ctl_rowcache_put(rc, id, key, strlen(key), text, strlen(text));
}

static void only_the_exact_key_answers(void **state)
{
    (void)state;
    struct ctl_rowcache *rc = ctl_rowcache_create(1 << 20);
    put(rc, 7, "PENDING|Priority", "{\"id\":7}");
    assert_string_equal(get(rc, 7, "PENDING|Priority"), "{\"id\":7}");
    assert_null(get(rc, 7, "PENDING|Resources"));  /* a byte differs */
    assert_null(get(rc, 7, "PENDING|Priority|x")); /* longer */
    assert_null(get(rc, 7, "PENDING|Priorit"));    /* a prefix of it */
    assert_null(get(rc, 7, ""));
    assert_null(get(rc, 8, "PENDING|Priority")); /* another job */
    /* keys are bytes, NULs included */
    ctl_rowcache_put(rc, 9, "a\0b", 3, "x", 1);
    size_t n;
    assert_non_null(ctl_rowcache_get(rc, 9, "a\0b", 3, &n));
    assert_null(ctl_rowcache_get(rc, 9, "a\0c", 3, &n));
    ctl_rowcache_free(rc);
}

static void a_put_replaces_the_jobs_row(void **state)
{
    (void)state;
    struct ctl_rowcache *rc = ctl_rowcache_create(1 << 20);
    put(rc, 7, "v1", "{\"state\":\"PENDING\"}");
    put(rc, 7, "v2", "{\"state\":\"RUNNING\"}");
    assert_null(get(rc, 7, "v1"));
    assert_string_equal(get(rc, 7, "v2"), "{\"state\":\"RUNNING\"}");
    assert_int_equal(ctl_rowcache_rows(rc), 1);
    size_t one = ctl_rowcache_bytes(rc);
    put(rc, 7, "v3", "{\"state\":\"COMPLETED\",\"exit\":0}");
    assert_true(ctl_rowcache_bytes(rc) > one); /* the old row's bytes were given back */
    assert_true(ctl_rowcache_bytes(rc) < 2 * one + 64);
    ctl_rowcache_free(rc);
}

static void many_jobs_never_mix(void **state)
{
    (void)state;
    struct ctl_rowcache *rc = ctl_rowcache_create(64 << 20);
    char key[32], text[64];
    /* ids that share low bits, and enough of them to grow the table several times */
    for (uint64_t i = 1; i <= 20000; i++) {
        uint64_t id = i % 2 ? i : i << 20;
        snprintf(key, sizeof(key), "k%llu", (unsigned long long)id);
        snprintf(text, sizeof(text), "{\"id\":%llu}", (unsigned long long)id);
        put(rc, id, key, text);
    }
    assert_int_equal(ctl_rowcache_rows(rc), 20000);
    for (uint64_t i = 1; i <= 20000; i++) {
        uint64_t id = i % 2 ? i : i << 20;
        snprintf(key, sizeof(key), "k%llu", (unsigned long long)id);
        snprintf(text, sizeof(text), "{\"id\":%llu}", (unsigned long long)id);
        const char *t = get(rc, id, key);
        assert_non_null(t);
        assert_string_equal(t, text);
    }
    ctl_rowcache_clear(rc);
    assert_int_equal(ctl_rowcache_rows(rc), 0);
    assert_int_equal(ctl_rowcache_bytes(rc), 0);
    assert_null(get(rc, 1, "k1"));
    ctl_rowcache_free(rc);
}

static void past_its_bytes_it_empties(void **state)
{
    (void)state;
    struct ctl_rowcache *rc = ctl_rowcache_create(4096);
    char key[32], text[200];
    memset(text, 'x', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\0';
    for (uint64_t id = 1; id <= 100; id++) {
        snprintf(key, sizeof(key), "k%llu", (unsigned long long)id);
        put(rc, id, key, text);
        assert_true(ctl_rowcache_bytes(rc) <= 4096);
        assert_non_null(get(rc, id, key)); /* the row just put is always there */
    }
    assert_true(ctl_rowcache_rows(rc) < 100);
    /* a row bigger than the whole cache is made each time, never kept */
    char big[5000];
    memset(big, 'y', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    put(rc, 500, "big", big);
    assert_null(get(rc, 500, "big"));
    ctl_rowcache_free(rc);
}

static void no_id_no_cache(void **state)
{
    (void)state;
    struct ctl_rowcache *rc = ctl_rowcache_create(1 << 20);
    put(rc, 0, "k", "t");
    assert_null(get(rc, 0, "k"));
    assert_int_equal(ctl_rowcache_rows(rc), 0);
    size_t n;
    assert_null(ctl_rowcache_get(NULL, 1, "k", 1, &n));
    ctl_rowcache_put(NULL, 1, "k", 1, "t", 1);
    assert_int_equal(ctl_rowcache_rows(NULL), 0);
    ctl_rowcache_free(NULL);
    ctl_rowcache_free(rc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(only_the_exact_key_answers),
        cmocka_unit_test(a_put_replaces_the_jobs_row),
        cmocka_unit_test(many_jobs_never_mix),
        cmocka_unit_test(past_its_bytes_it_empties),
        cmocka_unit_test(no_id_no_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
