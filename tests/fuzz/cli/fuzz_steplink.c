/*
 * fuzz_steplink.c - libFuzzer harness of the step host's side of srun's step link
 * (src/cli/steplink.c): whatever bytes a peer without the key sends first reach
 * step_link_accept, which runs OpenSSL's TLS 1.3 server over them with our PSK lookup
 * (find_session: the identity compared, the session made). Checks, beyond memory safety:
 * the handshake never succeeds (a link needs the job's key, which the bytes cannot prove:
 * the binder is an HMAC under it), and it always ends (the peer's end of the socket is
 * shut, so nothing waits for the handshake timeout). The seed (corpus/fuzz_steplink) is
 * a ClientHello srun sent under the key "k", the key used here: its binder verifies, so
 * the server goes on to its hello and waits for a Finished that fixed bytes cannot make
 * (it depends on the server's fresh key share).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/steplink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    int buf = 1 << 20;
    char err[512];
    struct step_link l;
    if (size > 60000 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return 0;
    signal(SIGPIPE, SIG_IGN); /* the server may answer into a closed end */
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    if (size && write(sv[0], data, size) != (ssize_t)size) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    shutdown(sv[0], SHUT_WR);
    if (step_link_accept(&l, sv[1], "k", err, sizeof(err)) == 0)
        abort(); /* a handshake without the key */
    close(sv[0]);
    return 0;
}
