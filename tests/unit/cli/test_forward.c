/*
 * test_forward.c - what `docket console`'s forward lets through to the Unix socket
 * (console_forward_passes, src/cli/console.c): the page, its files, /healthz and the code
 * exchange without a token; the API only with an Authorization header; nothing with
 * another Host (DNS rebinding) or a malformed head.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/cli.h"

#define HOST "127.0.0.1:4242"

static void t_public_without_token(void **state)
{
    (void)state;
    assert_true(console_forward_passes("GET / HTTP/1.1\r\nHost: " HOST "\r\n\r\n", HOST));
    assert_true(
        console_forward_passes("GET /console/app.js HTTP/1.1\r\nHost: " HOST "\r\n\r\n", HOST));
    assert_true(console_forward_passes("GET /healthz HTTP/1.1\r\nHost: " HOST "\r\n\r\n", HOST));
    assert_true(console_forward_passes(
        "POST /v1/console/session HTTP/1.1\r\nHost: " HOST "\r\nContent-Length: 2\r\n\r\n", HOST));
}

static void t_api_needs_a_token(void **state)
{
    (void)state;
    assert_false(console_forward_passes("GET /v1/jobs HTTP/1.1\r\nHost: " HOST "\r\n\r\n", HOST));
    assert_false(
        console_forward_passes("POST /v1/console/codes HTTP/1.1\r\nHost: " HOST "\r\n\r\n", HOST));
    assert_false(console_forward_passes(
        "POST /v1/nodes/a/drain HTTP/1.1\r\nHost: " HOST "\r\nX-Authorization: x\r\n\r\n", HOST));
    /* the path is read without its query: "/?x=/v1/jobs" is the page */
    assert_true(
        console_forward_passes("GET /?x=/v1/jobs HTTP/1.1\r\nHost: " HOST "\r\n\r\n", HOST));
    assert_false(
        console_forward_passes("GET /v1/jobs?x=/ HTTP/1.1\r\nHost: " HOST "\r\n\r\n", HOST));
    assert_true(console_forward_passes(
        "GET /v1/jobs HTTP/1.1\r\nHost: " HOST "\r\nauthorization: Bearer x\r\n\r\n", HOST));
}

static void t_other_host_or_junk(void **state)
{
    (void)state;
    assert_false(console_forward_passes("GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n", HOST));
    assert_false(console_forward_passes("GET / HTTP/1.1\r\nHost: 127.0.0.1:42420\r\n\r\n", HOST));
    assert_false(console_forward_passes("GET / HTTP/1.1\r\n\r\n", HOST));
    assert_false(console_forward_passes("", HOST));
    assert_false(console_forward_passes("GET\r\n\r\n", HOST));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_public_without_token),
        cmocka_unit_test(t_api_needs_a_token),
        cmocka_unit_test(t_other_host_or_junk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
