/* test_ocistep.c - unit tests of a container step's request (protocol/ocistep.h): a whole
 * request read, PATH kept on request, and every bad shape refused naming its field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/ocistep.h"

static int parse(const char *text, struct proto_oci_step *s, struct proto_error *e)
{
    memset(e, 0, sizeof(*e));
    return proto_oci_step_parse(text, strlen(text), s, e);
}

static void whole_request(void **state)
{
    (void)state;
    struct proto_oci_step s;
    struct proto_error e;
    assert_int_equal(parse("{\"key\": \"k1\", \"image\": \"oci-layout:/img:bb\", \"mounts\": "
                           "[\"/w/in:/in:ro\"], \"workdir\": \"/in\", \"keep_env\": [\"A\", "
                           "\"PATH\"], \"argv\": [\"cat\", \"f\"], \"env\": [\"A=1\", \"B=\"], "
                           "\"cwd\": \"/w\"}",
                           &s, &e),
                     0);
    assert_string_equal(s.key, "k1");
    assert_string_equal(s.image, "oci-layout:/img:bb");
    assert_int_equal(s.nmounts, 1);
    assert_string_equal(s.mounts[0], "/w/in:/in:ro");
    assert_null(s.mounts[1]);
    assert_string_equal(s.workdir, "/in");
    assert_int_equal(s.argc, 2);
    assert_string_equal(s.argv[1], "f");
    assert_null(s.argv[2]);
    assert_int_equal(s.nenv, 2);
    assert_string_equal(s.env[1], "B=");
    assert_string_equal(s.cwd, "/w");
    assert_true(s.keep_path);
    proto_oci_step_release(&s);
    /* the least: an image and a command */
    assert_int_equal(parse("{\"image\": \"docker://busybox\", \"argv\": [\"true\"]}", &s, &e), 0);
    assert_null(s.key);
    assert_null(s.workdir);
    assert_int_equal(s.nmounts, 0);
    assert_non_null(s.env);
    assert_null(s.env[0]);
    assert_false(s.keep_path);
    proto_oci_step_release(&s);
}

static void refusals(void **state)
{
    (void)state;
    static const struct {
        const char *text, *field;
    } bad[] = {
        {"[]", ""},
        {"{\"image\": \"oci-layout:/img\"}", "argv"},
        {"{\"image\": \"oci-layout:/img\", \"argv\": []}", "argv"},
        {"{\"argv\": [\"true\"]}", "image"},
        {"{\"image\": \"/img\", \"argv\": [\"true\"]}", "--container-image"},
        {"{\"image\": \"oci-layout:/img\", \"argv\": [1]}", "argv"},
        {"{\"image\": \"oci-layout:/img\", \"argv\": [\"x\"], \"env\": [\"NOEQUALS\"]}", "env"},
        {"{\"image\": \"oci-layout:/img\", \"argv\": [\"x\"], \"env\": [\"=v\"]}", "env"},
        {"{\"image\": \"oci-layout:/img\", \"argv\": [\"x\"], \"mounts\": [\"/a:/proc/x\"]}",
         "--container-mounts"},
        {"{\"image\": \"oci-layout:/img\", \"argv\": [\"x\"], \"mounts\": [\"/a/../etc:/x\"]}",
         "--container-mounts"},
        {"{\"image\": \"oci-layout:/img\", \"argv\": [\"x\"], \"mounts\": \"/a:/b\"}", "mounts"},
        {"{\"image\": \"oci-layout:/img\", \"argv\": [\"x\"], \"workdir\": \"rel\"}", "workdir"},
        {"{\"image\": \"oci-layout:/img\", \"argv\": [\"x\"], \"key\": 7}", "key"},
        {"{\"image\": \"oci-layout:/img\", \"argv\": [\"x\"], \"cwd\": 5}", "cwd"},
        {"{\"image\": \"oci-layout:/img\", \"argv\": [\"x\"], \"cwd\": \"a\\u0000b\"}", ""},
        {"{\"image\": \"oci-layout:/img\", \"image\": \"oci-layout:/other\", \"argv\": [\"x\"]}",
         ""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct proto_oci_step s;
        struct proto_error e;
        assert_int_not_equal(parse(bad[i].text, &s, &e), 0);
        assert_string_equal(e.field, bad[i].field);
        assert_true(e.message[0] != '\0');
        assert_null(s.doc);
    }
    /* too many mounts, too long a request */
    char text[4096];
    int n = snprintf(text, sizeof(text),
                     "{\"image\": \"oci-layout:/i\", \"argv\": [\"x\"], "
                     "\"mounts\": [");
    for (int i = 0; i <= PROTO_MAX_MOUNTS; i++)
        n += snprintf(text + n, sizeof(text) - (size_t)n, "%s\"/m%d\"", i ? "," : "", i);
    snprintf(text + n, sizeof(text) - (size_t)n, "]}");
    struct proto_oci_step s;
    struct proto_error e;
    assert_int_not_equal(parse(text, &s, &e), 0);
    assert_string_equal(e.field, "mounts");
    assert_int_not_equal(proto_oci_step_parse("{}", PROTO_OCI_STEP_MAX + 1, &s, &e), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(whole_request),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
