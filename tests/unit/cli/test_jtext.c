/* test_jtext.c - unit tests of the one-pass JSON reader of docket queue (src/cli/jtext.c):
 * it refuses what jansson refuses, decodes strings as jansson does, and lays compact
 * text out byte for byte as json_dumps(JSON_INDENT(2)) does, or says it cannot. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli/jtext.h"

/* What json_dumps(JSON_INDENT(2)) writes of `text`, nested `depth` deep as jtext_indent
 * lays it (each line after the first indented by 2 * depth). */
static char *jansson_indent(const char *text, int depth)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    assert_non_null(v);
    char *made = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    json_decref(v);
    assert_non_null(made);
    struct dbuf b;
    dbuf_init(&b, 0);
    for (const char *p = made; *p; p++) {
        dbuf_append(&b, p, 1);
        for (int i = 0; *p == '\n' && i < depth; i++)
            dbuf_puts(&b, "  ");
    }
    free(made);
    return dbuf_detach(&b, NULL);
}

/* jansson's compact text of `text` */
static char *compact(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    assert_non_null(v);
    char *made = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    assert_non_null(made);
    return made;
}

static void laid_out_as_jansson_does(void **state)
{
    (void)state;
    static const char *const docs[] = {
        "{\"jobs\":[{\"id\":1,\"name\":\"a\"},{\"id\":2}]}",
        "{\"a\":[],\"b\":{},\"c\":[[],{}],\"d\":[1,[2,[3]]],\"e\":null,\"f\":true,\"g\":false}",
        "{\"s\":\"q\\\"uo\\\\te\\/ \\b\\f\\n\\r\\t \\u0001 \\u001f \\u007f é \\u00e9 "
        "\\ud83d\\ude00\"}",
        "{\"n\":[0,-1,9223372036854775807,-9223372036854775808,123456789012345678]}",
        "{\"r\":[0.5,1.0,-0.0,0.1,1e300,1.5e-7,2.5E+10,100.25,1e22,123456789.125,3.0e-320]}",
        "[{\"allocation\":[{\"node\":\"n1\",\"gpus\":[0,1],\"cpus\":1,\"mem_mb\":0}]}]",
        "\"just a string\"",
        "42",
        "{\"deep\":{\"deeper\":{\"deepest\":[{\"x\":[]}]}}}",
        "{\"name\":\"name\xc2\x9b"
        "2J\xe2\x80\xae"
        "exe\",\"k\\u00e9y\":1}",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        char *text = compact(docs[i]);
        for (int depth = 0; depth <= 3; depth++) {
            struct dbuf out;
            dbuf_init(&out, 0);
            dbuf_puts(&out, "<");
            int rc = jtext_indent(text, strlen(text), depth, &out);
            assert_int_equal(rc, 0);
            char *want = jansson_indent(docs[i], depth);
            if (strcmp(out.data + 1, want) != 0)
                fail_msg("doc %zu depth %d:\n%s\nwant\n%s", i, depth, out.data + 1, want);
            free(want);
            dbuf_release(&out);
        }
        free(text);
    }
}

/* Text jansson would write otherwise, or not read at all: refused, out as it was. */
static void refuses_what_it_would_write_otherwise(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{\"a\": 1}",          /* white space */
        " 1",                  /* white space */
        "\"\\/\"",             /* an escape jansson does not write */
        "\"\\u00e9\"",         /* the same */
        "\"\\u001f\"",         /* lower case hex */
        "\"\\u000a\"",         /* \n has its short form */
        "\"\\u0000\"",         /* NUL: jansson does not read it */
        "1.50",                /* "%.17g" writes 1.5 */
        "1E5",                 /* written 100000.0 */
        "1e+20",               /* written 1e20 */
        "-0",                  /* written 0 */
        "{\"a\":1,\"a\":2}",   /* a key twice */
        "\"\xff\"",            /* not UTF-8 */
        "\"\xed\xa0\x80\"",    /* a surrogate in UTF-8 */
        "[1,]",                /* not JSON */
        "{\"a\":1}x",          /* something after */
        "9223372036854775808", /* past int64 */
        "1e400",               /* past a double */
        "tru",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct dbuf out;
        dbuf_init(&out, 0);
        dbuf_puts(&out, "kept");
        if (jtext_indent(texts[i], strlen(texts[i]), 2, &out) != -EPROTO)
            fail_msg("took %s", texts[i]);
        assert_string_equal(out.data, "kept");
        dbuf_release(&out);
    }
}

/* jscan_skip takes exactly what json_loads(JSON_DECODE_ANY) takes */
static void reads_what_jansson_reads(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{}",
        "[]",
        "{\"a\":[1,2,{\"b\":null}]}",
        " [ 1 , 2 ] ",
        "\"\\ud83d\\ude00\"",
        "\"\\u0000\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "01",
        "1.",
        "-",
        "1e",
        "1e400",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775809",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\"1}",
        "{1:2}",
        "\"\x01\"",
        "\"\xff\"",
        "\"\xc0\xaf\"",
        "\"\xf4\x90\x80\x80\"",
        "nul",
        "true",
        "[true false]",
        "\"\\x\"",
        "\"abc",
        "[",
        "{\"a\":{\"b\":[[[]]]}}",
        "-0",
        "0.5e-3",
        "\"\\u12\"",
        "\"\xe2\x82\xac\"",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        json_error_t e;
        json_t *v = json_loads(texts[i], JSON_DECODE_ANY, &e);
        struct jscan s;
        jscan_init(&s, texts[i], strlen(texts[i]));
        bool ours = jscan_skip(&s) == 0 && jscan_peek(&s) == -1;
        if (ours != (v != NULL))
            fail_msg("%s: jscan %s, jansson %s", texts[i], ours ? "took" : "refused",
                     v ? "took" : "refused");
        json_decref(v);
    }
}

static void strings_and_numbers_decoded(void **state)
{
    (void)state;
    const char *text = "{\"k\":\"a\\\"b\\\\c\\/d\\n\\u00e9\\ud83d\\ude00\",\"n\":-12,\"r\":2.9,"
                       "\"big\":1e30,\"x\":[1,{\"y\":2}]}";
    struct jscan s;
    struct dbuf key, val;
    bool first = true, integer;
    int64_t v;

    dbuf_init(&key, 0);
    dbuf_init(&val, 0);
    jscan_init(&s, text, strlen(text));
    assert_true(jscan_take(&s, '{'));
    assert_int_equal(jscan_member(&s, &first, &key), 1);
    assert_string_equal(key.data, "k");
    assert_int_equal(jscan_string(&s, &val), 0);
    assert_string_equal(val.data, "a\"b\\c/d\n\xc3\xa9\xf0\x9f\x98\x80");
    assert_int_equal(jscan_member(&s, &first, &key), 1);
    assert_string_equal(key.data, "n");
    assert_int_equal(jscan_number(&s, &v, &integer), 0);
    assert_true(integer);
    assert_int_equal(v, -12);
    assert_int_equal(jscan_member(&s, &first, &key), 1);
    assert_int_equal(jscan_number(&s, &v, &integer), 0);
    assert_false(integer);
    assert_int_equal(v, 2); /* cut, as jint cuts a real */
    assert_int_equal(jscan_member(&s, &first, &key), 1);
    assert_int_equal(jscan_number(&s, &v, &integer), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(jscan_member(&s, &first, &key), 1);
    assert_string_equal(key.data, "x");
    assert_int_equal(jscan_skip(&s), 0);
    assert_int_equal(jscan_member(&s, &first, &key), 0); /* the '}' */
    assert_int_equal(jscan_peek(&s), -1);
    dbuf_release(&key);
    dbuf_release(&val);
}

static void nesting_is_bounded(void **state)
{
    (void)state;
    char deep[2 * JTEXT_DEPTH + 8];
    size_t n = 0;
    for (int i = 0; i < JTEXT_DEPTH + 2; i++)
        deep[n++] = '[';
    for (int i = 0; i < JTEXT_DEPTH + 2; i++)
        deep[n++] = ']';
    struct jscan s;
    jscan_init(&s, deep, n);
    assert_int_equal(jscan_skip(&s), -EPROTO);
    struct dbuf out;
    dbuf_init(&out, 0);
    assert_int_equal(jtext_indent(deep, n, 0, &out), -EPROTO);
    assert_int_equal(out.len, 0);
    dbuf_release(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(laid_out_as_jansson_does),
        cmocka_unit_test(refuses_what_it_would_write_otherwise),
        cmocka_unit_test(reads_what_jansson_reads),
        cmocka_unit_test(strings_and_numbers_decoded),
        cmocka_unit_test(nesting_is_bounded),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
