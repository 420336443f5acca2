/* test_imgcache.c - unit tests of the node's image cache (agent/imgcache.h) without an
 * unpack: a layout's tag resolved to its manifest digest (and every malformed index
 * refused), and eviction at the cap, least recently used first, never the image kept
 * nor one a job holds (its shared lock). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/imgcache.h"
#include "agent/supervisor.h"

static char root[64];

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/docket-imgcache.XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return sup_remove_tree(root) == 0 ? 0 : -1;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *const D1 =
    "sha256:1111111111111111111111111111111111111111111111111111111111111111";

static void layout_digest(void **state)
{
    (void)state;
    char path[256], digest[80], err[256], index[512];
    snprintf(path, sizeof(path), "%s/layout", root);
    mkdir(path, 0755);
    snprintf(index, sizeof(index), "%s/index.json", path);
    char doc[1024];
    snprintf(doc, sizeof(doc),
             "{\"schemaVersion\": 2, \"manifests\": [{\"digest\": \"sha256:zz\", \"annotations\":"
             " {\"org.opencontainers.image.ref.name\": \"bad\"}}, {\"digest\": \"%s\","
             " \"annotations\": {\"org.opencontainers.image.ref.name\": \"v1\"}}]}",
             D1);
    put(index, doc);
    assert_int_equal(img_layout_digest(path, "v1", digest, sizeof(digest), err, sizeof(err)), 0);
    assert_string_equal(digest, D1);
    /* a digest that is not sha256 and 64 hex digits is never used as a name */
    assert_int_not_equal(img_layout_digest(path, "bad", digest, sizeof(digest), err, sizeof(err)),
                         0);
    assert_int_not_equal(img_layout_digest(path, "v2", digest, sizeof(digest), err, sizeof(err)),
                         0);
    assert_non_null(strstr(err, "no manifest has that tag ('v2')"));
    put(index, "not json");
    assert_int_not_equal(img_layout_digest(path, "v1", digest, sizeof(digest), err, sizeof(err)),
                         0);
    assert_non_null(strstr(err, "not JSON"));
    unlink(index);
    mkfifo(index, 0644); /* never waited on */
    assert_int_not_equal(img_layout_digest(path, "v1", digest, sizeof(digest), err, sizeof(err)),
                         0);
}

/* An unpacked image NAME of `size` bytes, last used `age` seconds ago. */
static void cached(const char *hex, long long size, int age)
{
    char dir[512], ready[600], text[32];
    snprintf(dir, sizeof(dir), "%s/sha256-%s", root, hex);
    mkdir(dir, 0755);
    snprintf(ready, sizeof(ready), "%s/rootfs", dir);
    mkdir(ready, 0755);
    snprintf(ready, sizeof(ready), "%s/.ready", dir);
    snprintf(text, sizeof(text), "%lld\n", size);
    put(ready, text);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age;
    t[1] = t[0];
    utimensat(AT_FDCWD, ready, t, 0);
}

static bool present(const char *hex)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/sha256-%s/rootfs", root, hex);
    return access(dir, F_OK) == 0;
}

static void eviction(void **state)
{
    (void)state;
    char a[65], b[65], c[65], d[65];
    memset(a, 'a', 64), memset(b, 'b', 64), memset(c, 'c', 64), memset(d, 'd', 64);
    a[64] = b[64] = c[64] = d[64] = '\0';
    cached(a, 1000, 400); /* the oldest, but held by a job */
    cached(b, 1000, 300);
    cached(c, 1000, 200);
    cached(d, 1000, 100); /* the one just used: kept */
    char inuse[512], keep[80];
    snprintf(inuse, sizeof(inuse), "%s/sha256-%s.inuse", root, a);
    int held = open(inuse, O_RDWR | O_CREAT, 0600);
    assert_true(held >= 0 && flock(held, LOCK_SH) == 0);
    snprintf(keep, sizeof(keep), "sha256:%s", d);
    struct img_cache cache = {root, 2000};
    assert_int_equal(img_evict(&cache, keep), 2000);
    assert_true(present(a)); /* in use */
    assert_false(present(b));
    assert_false(present(c));
    assert_true(present(d));
    /* released: the next eviction may take it, but not below the cap */
    close(held);
    cache.max_bytes = 1000;
    assert_int_equal(img_evict(&cache, keep), 1000);
    assert_false(present(a));
    assert_true(present(d));
    /* no cap: nothing goes */
    cache.max_bytes = 0;
    assert_int_equal(img_evict(&cache, NULL), 1000);
    assert_true(present(d));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(layout_digest, setup, teardown),
        cmocka_unit_test_setup_teardown(eviction, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
