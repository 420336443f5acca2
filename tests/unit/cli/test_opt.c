/* test_opt.c - unit tests of the flag parser of docket's verbs (src/cli/opt.c): every
 * spelling of a flag, "--", errors, and the word splitter used on script lines. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cli/opt.h"

enum { A_GPUS = 1, A_NAME, A_HOLD, A_JSON, A_FOLLOW, A_GPU_TYPE };

static const struct opt_def defs[] = {
    {A_GPUS, 'g', "gpus", OPT_VALUE},
    {A_NAME, 0, "name", OPT_VALUE},
    {A_HOLD, 'H', "hold", OPT_NONE},
    {A_JSON, 'j', "json", OPT_NONE},
    {A_FOLLOW, 'f', "follow", OPT_NONE},
    {A_GPU_TYPE, 0, "gpu-type", OPT_VALUE},
    {0, 0, NULL, OPT_NONE},
};

struct run {
    int ids[16];
    const char *vals[16];
    int n;
    char err[128];
    struct opt_iter it;
};

/* Parse argv (NULL-terminated list) until OPT_DONE or OPT_ERROR. */
static void parse(struct run *r, char **argv)
{
    int argc = 0, id;
    const char *v;

    while (argv[argc])
        argc++;
    memset(r, 0, sizeof(*r));
    opt_iter_init(&r->it, argc, argv, 0);
    do {
        id = opt_next(&r->it, defs, &v, r->err, sizeof(r->err));
        r->ids[r->n] = id;
        r->vals[r->n++] = v;
    } while (id != OPT_DONE && id != OPT_ERROR && r->n < 16);
}

static void long_with_space_and_equals(void **state)
{
    char *argv[] = {"--gpus", "8", "--name=resnet", NULL};
    struct run r;

    parse(&r, argv);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.ids[0], A_GPUS);
    assert_string_equal(r.vals[0], "8");
    assert_int_equal(r.ids[1], A_NAME);
    assert_string_equal(r.vals[1], "resnet");
    assert_int_equal(r.ids[2], OPT_DONE);
}

static void short_attached_and_detached(void **state)
{
    char *argv[] = {"-g8", "-g", "4", NULL};
    struct run r;

    parse(&r, argv);
    assert_int_equal(r.ids[0], A_GPUS);
    assert_string_equal(r.vals[0], "8");
    assert_int_equal(r.ids[1], A_GPUS);
    assert_string_equal(r.vals[1], "4");
    assert_int_equal(r.ids[2], OPT_DONE);
}

static void short_cluster(void **state)
{
    char *argv[] = {"-fjg2", NULL};
    struct run r;

    parse(&r, argv);
    assert_int_equal(r.ids[0], A_FOLLOW);
    assert_int_equal(r.ids[1], A_JSON);
    assert_int_equal(r.ids[2], A_GPUS);
    assert_string_equal(r.vals[2], "2");
    assert_int_equal(r.ids[3], OPT_DONE);
}

static void dashdash_ends_flags(void **state)
{
    char *argv[] = {"--hold", "--", "python", "--gpus", "3", NULL};
    struct run r;

    parse(&r, argv);
    assert_int_equal(r.ids[0], A_HOLD);
    assert_int_equal(r.ids[1], OPT_DONE);
    assert_true(r.it.dashdash);
    assert_int_equal(r.it.index, 2);
    assert_string_equal(r.it.argv[r.it.index], "python");
}

static void positionals_interleave(void **state)
{
    char *argv[] = {"12", "--json", "-", "13", NULL};
    struct run r;

    parse(&r, argv);
    assert_int_equal(r.ids[0], OPT_POSITIONAL);
    assert_string_equal(r.vals[0], "12");
    assert_int_equal(r.ids[1], A_JSON);
    assert_int_equal(r.ids[2], OPT_POSITIONAL);
    assert_string_equal(r.vals[2], "-");
    assert_int_equal(r.ids[3], OPT_POSITIONAL);
    assert_int_equal(r.ids[4], OPT_DONE);
}

static void unknown_long_is_named(void **state)
{
    char *argv[] = {"--gpuz", "8", NULL};
    struct run r;

    parse(&r, argv);
    assert_int_equal(r.ids[0], OPT_ERROR);
    assert_string_equal(r.err, "unknown option '--gpuz'");
}

static void unknown_short_is_named(void **state)
{
    char *argv[] = {"-x", NULL};
    struct run r;

    parse(&r, argv);
    assert_int_equal(r.ids[0], OPT_ERROR);
    assert_string_equal(r.err, "unknown option '-x'");
}

static void missing_value(void **state)
{
    char *a1[] = {"--name", NULL};
    char *a2[] = {"-g", NULL};
    struct run r;

    parse(&r, a1);
    assert_int_equal(r.ids[0], OPT_ERROR);
    assert_string_equal(r.err, "option '--name' needs a value");
    parse(&r, a2);
    assert_int_equal(r.ids[0], OPT_ERROR);
    assert_string_equal(r.err, "option '-g' needs a value");
}

static void value_on_flag_refused(void **state)
{
    char *argv[] = {"--hold=yes", NULL};
    struct run r;

    parse(&r, argv);
    assert_int_equal(r.ids[0], OPT_ERROR);
    assert_string_equal(r.err, "option '--hold' takes no value");
}

static void prefixes(void **state)
{
    char *unique[] = {"--fol", "--na", "x", NULL};
    char *ambiguous[] = {"--gpu", "2", NULL}; /* exact "gpus"? no: gpus and gpu-type */
    char *exact[] = {"--gpus", "2", NULL};
    struct run r;

    parse(&r, unique);
    assert_int_equal(r.ids[0], A_FOLLOW);
    assert_int_equal(r.ids[1], A_NAME);
    assert_string_equal(r.vals[1], "x");
    parse(&r, ambiguous);
    assert_int_equal(r.ids[0], OPT_ERROR);
    assert_string_equal(r.err, "ambiguous option '--gpu'");
    parse(&r, exact);
    assert_int_equal(r.ids[0], A_GPUS);
}

static void value_may_look_like_a_flag(void **state)
{
    char *argv[] = {"--name", "--hold", NULL};
    struct run r;

    parse(&r, argv);
    assert_int_equal(r.ids[0], A_NAME);
    assert_string_equal(r.vals[0], "--hold");
    assert_int_equal(r.ids[1], OPT_DONE);
}

static void names_for_messages(void **state)
{
    assert_string_equal(opt_name(defs, A_GPUS), "--gpus");
    assert_string_equal(opt_name(defs, 99), "?");
}

static void split_plain_and_quoted(void **state)
{
    const char *line = "  --name 'my job'  --env \"A=b c\" x\\ y # comment --gpus 3";
    char buf[128];
    char *w[8];
    int n = opt_split_words(line, buf, sizeof(buf), w, 8);

    assert_int_equal(n, 5);
    assert_string_equal(w[0], "--name");
    assert_string_equal(w[1], "my job");
    assert_string_equal(w[2], "--env");
    assert_string_equal(w[3], "A=b c");
    assert_string_equal(w[4], "x y");
}

static void split_errors(void **state)
{
    char buf[64];
    char *w[2];

    assert_int_equal(opt_split_words("--name 'open", buf, sizeof(buf), w, 2), -EINVAL);
    assert_int_equal(opt_split_words("a b c", buf, sizeof(buf), w, 2), -E2BIG);
    assert_int_equal(opt_split_words("abcdef", buf, 3, w, 2), -E2BIG);
    assert_int_equal(opt_split_words("   ", buf, sizeof(buf), w, 2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(long_with_space_and_equals),
        cmocka_unit_test(short_attached_and_detached),
        cmocka_unit_test(short_cluster),
        cmocka_unit_test(dashdash_ends_flags),
        cmocka_unit_test(positionals_interleave),
        cmocka_unit_test(unknown_long_is_named),
        cmocka_unit_test(unknown_short_is_named),
        cmocka_unit_test(missing_value),
        cmocka_unit_test(value_on_flag_refused),
        cmocka_unit_test(prefixes),
        cmocka_unit_test(value_may_look_like_a_flag),
        cmocka_unit_test(names_for_messages),
        cmocka_unit_test(split_plain_and_quoted),
        cmocka_unit_test(split_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
