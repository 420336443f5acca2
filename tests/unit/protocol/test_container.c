/* test_container.c - unit tests of a job's container fields (protocol/container.h): image
 * references of both kinds, mounts in Pyxis's form normalised, and every hostile shape
 * refused naming its field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/container.h"

static void image_refs(void **state)
{
    (void)state;
    struct proto_image_ref r;
    struct proto_error e;
    assert_int_equal(proto_image_ref_parse("oci-layout:/shared/img:torch-2.3", "image", &r, &e), 0);
    assert_int_equal(r.kind, PROTO_IMAGE_OCI_LAYOUT);
    assert_string_equal(r.path, "/shared/img");
    assert_string_equal(r.tag, "torch-2.3");
    assert_int_equal(proto_image_ref_parse("oci-layout:/shared/img", "image", &r, &e), 0);
    assert_string_equal(r.tag, "latest");
    assert_int_equal(
        proto_image_ref_parse("docker://nvcr.io/nvidia/pytorch:24.01-py3", "image", &r, &e), 0);
    assert_int_equal(r.kind, PROTO_IMAGE_DOCKER);
    assert_string_equal(r.path, "nvcr.io/nvidia/pytorch:24.01-py3");
    static const char *const bad[] = {
        "",
        "/shared/img:tag",           /* no scheme */
        "oci-layout:shared/img:tag", /* relative */
        "oci-layout:/a/../etc:tag",  /* .. */
        "oci-layout:/a//b:tag",      /* empty component */
        "oci-layout:/a/:tag",        /* trailing slash */
        "oci-layout:/a:",            /* empty tag */
        "oci-layout:/a:.hidden",     /* tag grammar */
        "oci-layout:/a:t/x",         /* tag grammar */
        "oci-layout:/a:b:c",         /* a colon in the tag */
        "docker://",                 /* nothing */
        "docker://-rm",              /* an option to skopeo */
        "docker://a b",              /* two words */
        "docker://a;rm -rf /",       /* shell */
        "oci-layout:/a\nb:tag",      /* control byte */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&e, 0, sizeof(e));
        if (proto_image_ref_parse(bad[i], "image", &r, &e) == 0)
            fail_msg("accepted '%s'", bad[i]);
        assert_string_equal(e.field, "image");
        assert_true(e.message[0] != '\0');
    }
}

static void mounts(void **state)
{
    (void)state;
    struct proto_mount m;
    struct proto_error e;
    char text[4096];
    assert_int_equal(proto_mount_parse("/data/x:/x:ro", "m", &m, &e), 0);
    assert_string_equal(m.src, "/data/x");
    assert_string_equal(m.dst, "/x");
    assert_true(m.ro);
    proto_mount_text(&m, text, sizeof(text));
    assert_string_equal(text, "/data/x:/x:ro");
    assert_int_equal(proto_mount_parse("/data/x", "m", &m, &e), 0); /* same path both sides */
    assert_string_equal(m.dst, "/data/x");
    assert_false(m.ro);
    assert_int_equal(proto_mount_parse("/a:/b:rw", "m", &m, &e), 0);
    proto_mount_text(&m, text, sizeof(text));
    assert_string_equal(text, "/a:/b");
    static const char *const bad[] = {
        "a:/b",         "/a:b",      "/a:/b:rx",        "/a:/b:ro:x", "/a:/",      "/a:/proc",
        "/a:/proc/sys", "/a:/sys/x", "/a:/dev/nvidia0", "/a/..:/b",   "/a:/b/./c", "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (proto_mount_parse(bad[i], "m", &m, &e) == 0)
            fail_msg("accepted mount '%s'", bad[i]);
    /* /devices is not /dev */
    assert_int_equal(proto_mount_parse("/a:/devices", "m", &m, &e), 0);
}

static void mount_lists(void **state)
{
    (void)state;
    struct proto_error e;
    json_t *out = json_array();
    json_t *in = json_pack("[s,s]", "/a:/b:ro", "/c");
    assert_int_equal(proto_mounts_parse(in, "mounts", out, &e), 0);
    json_decref(in);
    in = json_string("/d:/e,/f:/g:ro"); /* Pyxis's one argument */
    assert_int_equal(proto_mounts_parse(in, "mounts", out, &e), 0);
    json_decref(in);
    assert_int_equal(json_array_size(out), 4);
    assert_string_equal(json_string_value(json_array_get(out, 1)), "/c:/c");
    assert_string_equal(json_string_value(json_array_get(out, 3)), "/f:/g:ro");
    in = json_pack("[s,i]", "/a", 7);
    assert_int_not_equal(proto_mounts_parse(in, "mounts", out, &e), 0);
    assert_string_equal(e.field, "mounts");
    json_decref(in);
    in = json_pack("[s,s]", "/a", "/b:/proc");
    assert_int_not_equal(proto_mounts_parse(in, "mounts", out, &e), 0);
    assert_string_equal(e.field, "mounts[1]");
    json_decref(in);
    /* at most PROTO_MAX_MOUNTS in all */
    json_t *many = json_array(), *fresh = json_array();
    for (int i = 0; i <= PROTO_MAX_MOUNTS; i++) {
        char p[32];
        snprintf(p, sizeof(p), "/m%d", i);
        json_array_append_new(many, json_string(p));
    }
    assert_int_not_equal(proto_mounts_parse(many, "mounts", fresh, &e), 0);
    json_decref(many);
    json_decref(fresh);
    json_decref(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(image_refs),
        cmocka_unit_test(mounts),
        cmocka_unit_test(mount_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
