/* test_steplink.c - unit tests of srun's step link (src/cli/steplink.h) and the frames in
 * it (srun.h): over a socketpair, with the step host's end in a child process, the right
 * key gives a link both ways; a wrong key, a peer without TLS, or a server that answers
 * with anything but the key's handshake is refused before a byte of payload moves; frames
 * that TLS decrypted together are all seen (step_link_pending); a frame longer than the
 * reader's buffer is refused. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/srun.h"
#include "cli/steplink.h"

enum { HOST_OK = 0, HOST_REFUSED = 3, HOST_BROKEN = 4 };

/* The step host's end, in a child: accept with `key`, then echo one frame back as FR_OUT.
 * Its exit status says how it went. */
static pid_t host(int fd, const char *key)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    struct step_link l;
    char err[512], buf[64];
    int type;
    uint32_t task, len;
    if (step_link_accept(&l, fd, key, err, sizeof(err)) < 0)
        _exit(HOST_REFUSED);
    if (srun_frame_read(&l, &type, &task, buf, sizeof(buf), &len) != 1 ||
        srun_frame_send(&l, FR_OUT, task, buf, len) < 0)
        _exit(HOST_BROKEN);
    step_link_close(&l);
    _exit(HOST_OK);
}

static int host_status(pid_t pid)
{
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void psk_is_the_keys(void **state)
{
    (void)state;
    unsigned char a[32], b[32], c[32];
    assert_int_equal(step_link_psk("key-one", a), 0);
    assert_int_equal(step_link_psk("key-one", b), 0);
    assert_int_equal(step_link_psk("key-two", c), 0);
    assert_memory_equal(a, b, 32);
    assert_memory_not_equal(a, c, 32);
}

static void right_key_links_both_ways(void **state)
{
    (void)state;
    int sv[2];
    struct step_link l;
    char err[512], buf[64];
    int type;
    uint32_t task, len;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_t pid = host(sv[1], "the-job-key");
    close(sv[1]);
    assert_int_equal(step_link_connect(&l, sv[0], "the-job-key", err, sizeof(err)), 0);
    assert_int_equal(srun_frame_send(&l, FR_SIGNAL, 7, "ping", 4), 0);
    assert_int_equal(srun_frame_read(&l, &type, &task, buf, sizeof(buf), &len), 1);
    assert_int_equal(type, FR_OUT);
    assert_int_equal(task, 7);
    assert_int_equal(len, 4);
    assert_memory_equal(buf, "ping", 4);
    /* the host closed its end: an end, not an error */
    assert_int_equal(srun_frame_read(&l, &type, &task, buf, sizeof(buf), &len), 0);
    step_link_close(&l);
    assert_int_equal(host_status(pid), HOST_OK);
}

static void wrong_key_is_refused_at_both_ends(void **state)
{
    (void)state;
    int sv[2];
    struct step_link l;
    char err[512];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_t pid = host(sv[1], "the-job-key");
    close(sv[1]);
    assert_int_equal(step_link_connect(&l, sv[0], "a-guessed-key", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "handshake failed"));
    assert_int_equal(host_status(pid), HOST_REFUSED);
}

/* What the old srun sent first: a request line with the key in it, in the clear. */
static void plain_client_gets_nothing(void **state)
{
    (void)state;
    int sv[2];
    char got[4096];
    const char line[] = "{\"key\":\"the-job-key\",\"argv\":[\"env\"]}\n";
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_t pid = host(sv[1], "the-job-key");
    close(sv[1]);
    assert_int_equal(write(sv[0], line, sizeof(line) - 1), (ssize_t)(sizeof(line) - 1));
    ssize_t n, total = 0;
    while ((n = read(sv[0], got + total, sizeof(got) - (size_t)total)) > 0)
        total += n;
    close(sv[0]);
    assert_int_equal(host_status(pid), HOST_REFUSED);
    /* at most a TLS alert record: never a frame */
    assert_true(total == 0 || got[0] == 0x15);
}

/* A listener without the key, as a squatter would be: srun refuses it, and what reached
 * it holds neither the key nor anything derived in the clear from it. */
static void server_without_key_is_refused(void **state)
{
    (void)state;
    int sv[2];
    struct step_link l;
    char err[512], seen[8192];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_t pid = fork();
    if (pid == 0) { /* reads what srun sends, answers like the old host, and records it */
        close(sv[0]);
        ssize_t n = read(sv[1], seen, sizeof(seen));
        unsigned char frame[13] = {FR_EXIT, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 0};
        ssize_t w = write(sv[1], frame, sizeof(frame));
        (void)w;
        _exit(n > 0 && !memmem(seen, (size_t)n, "the-job-key", 11) ? 0 : 1);
    }
    close(sv[1]);
    assert_int_equal(step_link_connect(&l, sv[0], "the-job-key", err, sizeof(err)), -1);
    assert_int_equal(host_status(pid), 0);
}

/* Several frames in one TLS record: poll() sees none after the first is read, the link's
 * pending count does. */
static void frames_decrypted_together_are_pending(void **state)
{
    (void)state;
    int sv[2];
    struct step_link l;
    char err[512], buf[64];
    int type;
    uint32_t task, len;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        struct step_link h;
        unsigned char three[3 * 10];
        for (int i = 0; i < 3; i++) {
            unsigned char *f = three + 10 * i;
            uint32_t t = htonl((uint32_t)i), n = htonl(1);
            f[0] = FR_OUT;
            memcpy(f + 1, &t, 4);
            memcpy(f + 5, &n, 4);
            f[9] = (unsigned char)('a' + i);
        }
        if (step_link_accept(&h, sv[1], "k", err, sizeof(err)) < 0 ||
            step_link_send(&h, three, sizeof(three)) < 0)
            _exit(1);
        step_link_close(&h);
        _exit(0);
    }
    close(sv[1]);
    assert_int_equal(step_link_connect(&l, sv[0], "k", err, sizeof(err)), 0);
    assert_int_equal(srun_frame_read(&l, &type, &task, buf, sizeof(buf), &len), 1);
    assert_true(step_link_pending(&l));
    for (uint32_t i = 1; i < 3; i++) {
        assert_int_equal(srun_frame_read(&l, &type, &task, buf, sizeof(buf), &len), 1);
        assert_int_equal(task, i);
        assert_int_equal(buf[0], 'a' + (int)i);
    }
    step_link_close(&l);
    assert_int_equal(host_status(pid), 0);
}

static void oversized_frame_is_refused(void **state)
{
    (void)state;
    int sv[2];
    struct step_link l;
    char buf[8];
    int type;
    uint32_t task, len, big = htonl(9);
    unsigned char h[9] = {FR_OUT, 0, 0, 0, 0};
    memcpy(h + 5, &big, 4);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(write(sv[1], h, sizeof(h)), (ssize_t)sizeof(h));
    assert_int_equal(write(sv[1], "123456789", 9), 9);
    step_link_plain(&l, sv[0]);
    assert_int_equal(srun_frame_read(&l, &type, &task, buf, sizeof(buf), &len), -1);
    close(sv[1]);
    step_link_close(&l);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(psk_is_the_keys),
        cmocka_unit_test(right_key_links_both_ways),
        cmocka_unit_test(wrong_key_is_refused_at_both_ends),
        cmocka_unit_test(plain_client_gets_nothing),
        cmocka_unit_test(server_without_key_is_refused),
        cmocka_unit_test(frames_decrypted_together_are_pending),
        cmocka_unit_test(oversized_frame_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
