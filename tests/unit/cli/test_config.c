/* test_config.c - unit tests of how docket finds docketd (src/cli/client.c): the config
 * file's key=value lines, the precedence of DOCKET_URL / DOCKET_TOKEN over it, the
 * default socket, bad URLs, and query escaping. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/client.h"

static char dir[64];

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/docket-cli-test-XXXXXX");
    assert_non_null(mkdtemp(dir));
    setenv("XDG_CONFIG_HOME", dir, 1);
    unsetenv("DOCKET_URL");
    unsetenv("DOCKET_TOKEN");
    unsetenv("DOCKET_PARTITION_MAP");
    return 0;
}

static int teardown(void **state)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/docket/config", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/docket", dir);
    rmdir(path);
    rmdir(dir);
    return 0;
}

static void write_config(const char *text)
{
    char path[128];
    FILE *f;

    snprintf(path, sizeof(path), "%s/docket", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/docket/config", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, 0600);
}

static void parse_keys(void **state)
{
    struct client_config cfg;
    char err[256];
    const char *text = "# docket config\n"
                       "url = http://10.0.0.1:8420\n"
                       "\n"
                       "token=dkt_abc\n"
                       "partition_map=gpu=normal\n"
                       "partition.debug = exploration\n";

    memset(&cfg, 0, sizeof(cfg));
    assert_int_equal(client_config_parse(&cfg, text, "cfg", err, sizeof(err)), 0);
    assert_string_equal(cfg.url, "http://10.0.0.1:8420");
    assert_string_equal(cfg.token, "dkt_abc");
    assert_string_equal(cfg.partition_map, "gpu=normal,debug=exploration");
    assert_string_equal(cfg.source, "cfg");
}

static void parse_errors_name_the_line(void **state)
{
    struct client_config cfg;
    char err[256];

    memset(&cfg, 0, sizeof(cfg));
    assert_int_equal(client_config_parse(&cfg, "url=x\nnonsense\n", "f", err, sizeof(err)),
                     -EINVAL);
    assert_string_equal(err, "f:2: want key=value, not 'nonsense'");
    assert_int_equal(client_config_parse(&cfg, "colour=yes\n", "f", err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "f:1: unknown key 'colour' (url, token, ca, fingerprint, "
                             "partition_map, partition.NAME)");
}

static void default_is_the_socket(void **state)
{
    struct client_config cfg;
    char err[256];

    assert_int_equal(client_config_load(&cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.url, "unix:/run/docket/docketd.sock");
    assert_string_equal(cfg.source, "default");
    assert_string_equal(cfg.token, "");
}

static void file_then_environment(void **state)
{
    struct client_config cfg;
    char err[256];

    write_config("url=http://10.0.0.1:8420\ntoken=from-file\n");
    assert_int_equal(client_config_load(&cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.url, "http://10.0.0.1:8420");
    assert_string_equal(cfg.token, "from-file");
    assert_non_null(strstr(cfg.source, "/docket/config"));

    setenv("DOCKET_TOKEN", "from-env", 1);
    assert_int_equal(client_config_load(&cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.url, "http://10.0.0.1:8420"); /* the file's url kept */
    assert_string_equal(cfg.token, "from-env");

    setenv("DOCKET_URL", "unix:/tmp/d.sock", 1);
    setenv("DOCKET_PARTITION_MAP", "gpu=high", 1);
    assert_int_equal(client_config_load(&cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.url, "unix:/tmp/d.sock");
    assert_string_equal(cfg.source, "DOCKET_URL");
    assert_string_equal(cfg.partition_map, "gpu=high");
}

static void broken_file_is_an_error(void **state)
{
    struct client_config cfg;
    char err[256];

    write_config("url http://x\n");
    assert_int_equal(client_config_load(&cfg, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "docket/config:1: want key=value"));
}

static void urls(void **state)
{
    static const char *const good[] = {"http://127.0.0.1:8420", "http://localhost:1/",
                                       "https://docket.example:443", "unix:/run/d.sock"};
    static const char *const bad[] = {"ftp://x", "127.0.0.1:8420", "unix:relative", "http://a b",
                                      "http://x/?q"};
    struct client_config cfg;
    char err[256];

    memset(&cfg, 0, sizeof(cfg));
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct client *c;
        snprintf(cfg.url, sizeof(cfg.url), "%s", good[i]);
        c = client_create(&cfg, err, sizeof(err));
        if (!c)
            fail_msg("client_create('%s') refused: %s", good[i], err);
        client_destroy(c);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct client *c;
        snprintf(cfg.url, sizeof(cfg.url), "%s", bad[i]);
        c = client_create(&cfg, err, sizeof(err));
        if (c)
            fail_msg("client_create('%s') accepted", bad[i]);
        assert_non_null(strstr(err, "bad url"));
    }
}

static void token_cannot_inject_headers(void **state)
{
    struct client_config cfg;
    char err[256];

    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.url, sizeof(cfg.url), "http://127.0.0.1:1");
    snprintf(cfg.token, sizeof(cfg.token), "dkt_x\r\nX-Admin: yes");
    assert_null(client_create(&cfg, err, sizeof(err)));
    assert_non_null(strstr(err, "holds characters a token cannot have"));
    snprintf(cfg.token, sizeof(cfg.token), "dkt_ok");
    client_destroy(client_create(&cfg, err, sizeof(err)));
}

static void unreachable_says_what_to_do(void **state)
{
    struct client_config cfg;
    struct client_reply r;
    struct client *c;
    char err[512];

    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.url, sizeof(cfg.url), "unix:%s/none.sock", dir);
    snprintf(cfg.source, sizeof(cfg.source), "DOCKET_URL");
    c = client_create(&cfg, err, sizeof(err));
    assert_non_null(c);
    assert_int_equal(client_request(c, "GET", "/healthz", NULL, NULL, 0, 0, &r, err, sizeof(err)),
                     -EIO);
    assert_non_null(strstr(err, "cannot reach docketd at unix:"));
    assert_non_null(strstr(err, "no such socket"));
    assert_non_null(strstr(err, "start it with `docketd --state-dir DIR`, or set DOCKET_URL"));
    client_destroy(c);
}

static void escaping(void **state)
{
    char buf[32];

    assert_int_equal(client_escape("RUNNING,PENDING", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "RUNNING,PENDING");
    assert_int_equal(client_escape("a b&c=d/é", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "a%20b%26c%3Dd%2F%C3%A9");
    assert_int_equal(client_escape("0123456789", buf, 10), -ENAMETOOLONG);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(parse_keys),
        T(parse_errors_name_the_line),
        T(default_is_the_socket),
        T(file_then_environment),
        T(broken_file_is_an_error),
        T(urls),
        T(token_cannot_inject_headers),
        T(unreachable_says_what_to_do),
        T(escaping),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
