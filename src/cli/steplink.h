/*
 * steplink.h - the link between srun and a step host (srun.c, srunhost.c): TLS 1.3 over
 * TCP with an external pre-shared key derived from the job's step key (DOCKET_STEP_KEY).
 * Each side proves that it holds the key in the handshake, before a byte of the request
 * (the command, the environment, the job's secrets) goes out, and everything after is
 * encrypted; the key exchange is (EC)DHE under the PSK, so a recorded link stays closed
 * even to one who later learns the key. A peer without the key gets a failed handshake
 * and nothing else; a server that offers a certificate instead of the key is refused.
 *
 * OpenSSL's libssl is loaded with dlopen when a step first needs it: the CLI's start must
 * not pay for TLS (http.h says why), and most docket commands never run a step.
 */
#ifndef DOCKET_CLI_STEPLINK_H
#define DOCKET_CLI_STEPLINK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum { STEP_HANDSHAKE_TIMEOUT_S = 10 };

struct step_link {
    int fd;    /* the connected socket, owned; -1 when closed */
    void *ssl; /* its TLS session (SSL *), or NULL for a plain link (tests only) */
};

/* Make a link over the connected socket `fd` (which the link then owns; closed on
 * failure), as srun (connect) or as the step host (accept), with the job's key. The
 * handshake has STEP_HANDSHAKE_TIMEOUT_S. 0, or -1 with a message in err. */
int step_link_connect(struct step_link *l, int fd, const char *key, char *err, size_t errlen);
int step_link_accept(struct step_link *l, int fd, const char *key, char *err, size_t errlen);

/* A link without TLS over `fd`: for the unit tests and the fuzz harness of the frames
 * that travel inside the link. srun and the step host never make one. */
void step_link_plain(struct step_link *l, int fd);

/* Send all n bytes: 0, or -1 (the link broke). */
int step_link_send(struct step_link *l, const void *p, size_t n);
/* Up to n bytes: how many (> 0), 0 at the peer's end, -1 on error. */
ssize_t step_link_recv(struct step_link *l, void *p, size_t n);
/* Bytes already decrypted and waiting: poll() on the socket would not see them. */
bool step_link_pending(const struct step_link *l);
void step_link_close(struct step_link *l);

/* The 32-byte PSK of a key (SHA-256 over a label and the key): exposed for the tests,
 * which check that two keys never share one. 0, or -1 when libssl cannot be loaded. */
int step_link_psk(const char *key, unsigned char out[32]);

#endif
