/*
 * steplink.c - srun's link to a step host: TLS 1.3 with an external PSK derived from the
 * job's step key, libssl loaded with dlopen (see steplink.h). Both ends use one suite,
 * TLS_AES_128_GCM_SHA256, with (EC)DHE under the PSK; the server has no certificate, so
 * a client without the key cannot finish a handshake, and the client sets peer
 * verification with an empty trust store and checks that the PSK was used, so a server
 * without the key cannot pass for the step host with a certificate either.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/steplink.h"

static const char psk_identity[] = "docket-step-v1";
static const char psk_label[] = "docket srun step link v1";
static const unsigned char aes128gcm_sha256[2] = {0x13, 0x01};

/* libssl's entry points (libcrypto's come through the same handle: a dependency). */
#define SSL_FNS(X)                                                                                 \
    X(TLS_client_method)                                                                           \
    X(TLS_server_method)                                                                           \
    X(SSL_CTX_new)                                                                                 \
    X(SSL_CTX_free)                                                                                \
    X(SSL_CTX_ctrl)                                                                                \
    X(SSL_CTX_set_ciphersuites)                                                                    \
    X(SSL_CTX_set_options)                                                                         \
    X(SSL_CTX_set_verify)                                                                          \
    X(SSL_CTX_set_num_tickets)                                                                     \
    X(SSL_CTX_set_psk_find_session_callback)                                                       \
    X(SSL_CTX_set_psk_use_session_callback)                                                        \
    X(SSL_new)                                                                                     \
    X(SSL_free)                                                                                    \
    X(SSL_set_fd)                                                                                  \
    X(SSL_accept)                                                                                  \
    X(SSL_connect)                                                                                 \
    X(SSL_read)                                                                                    \
    X(SSL_write)                                                                                   \
    X(SSL_pending)                                                                                 \
    X(SSL_shutdown)                                                                                \
    X(SSL_get_error)                                                                               \
    X(SSL_session_reused)                                                                          \
    X(SSL_SESSION_new)                                                                             \
    X(SSL_SESSION_free)                                                                            \
    X(SSL_SESSION_set1_master_key)                                                                 \
    X(SSL_SESSION_set_cipher)                                                                      \
    X(SSL_SESSION_set_protocol_version)                                                            \
    X(SSL_CIPHER_find)                                                                             \
    X(EVP_Digest)                                                                                  \
    X(EVP_sha256)                                                                                  \
    X(ERR_get_error)                                                                               \
    X(ERR_error_string_n)                                                                          \
    X(ERR_clear_error)

#define SSL_FIELD(name) __typeof__(name) *name;
static struct {
    void *dl;
    SSL_FNS(SSL_FIELD)
} api;
#undef SSL_FIELD

static unsigned char psk[32]; /* one job's key per process */

static int load_ssl(void)
{
    if (api.dl)
        return 0;
    void *dl = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        return -1;
#define SSL_LOAD(name)                                                                             \
    if (!(*(void **)(&api.name) = dlsym(dl, #name))) {                                             \
        dlclose(dl);                                                                               \
        memset(&api, 0, sizeof api);                                                               \
        return -1;                                                                                 \
    }
    SSL_FNS(SSL_LOAD)
#undef SSL_LOAD
    api.dl = dl;
    return 0;
}

int step_link_psk(const char *key, unsigned char out[32])
{
    unsigned char buf[512];
    size_t kl = strlen(key), ll = sizeof psk_label; /* the label's NUL separates them */
    unsigned int n = 0;
    if (load_ssl() < 0 || kl > sizeof buf - ll)
        return -1;
    memcpy(buf, psk_label, ll);
    memcpy(buf + ll, key, kl);
    int ok = api.EVP_Digest(buf, ll + kl, out, &n, api.EVP_sha256(), NULL);
    memset(buf, 0, sizeof buf);
    return ok == 1 && n == 32 ? 0 : -1;
}

/* A session that holds the PSK, as both callbacks hand one to OpenSSL (which frees it). */
static SSL_SESSION *psk_session(SSL *ssl)
{
    const SSL_CIPHER *c = api.SSL_CIPHER_find(ssl, aes128gcm_sha256);
    SSL_SESSION *s = c ? api.SSL_SESSION_new() : NULL;
    if (s && api.SSL_SESSION_set1_master_key(s, psk, sizeof psk) == 1 &&
        api.SSL_SESSION_set_cipher(s, c) == 1 &&
        api.SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION) == 1)
        return s;
    if (s)
        api.SSL_SESSION_free(s);
    return NULL;
}

static int use_session(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
                       SSL_SESSION **sess)
{
    (void)md; /* one suite, SHA-256, on both ends */
    *sess = psk_session(ssl);
    *id = (const unsigned char *)psk_identity;
    *idlen = sizeof psk_identity - 1;
    return *sess ? 1 : 0;
}

static int find_session(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess)
{
    *sess = NULL; /* an identity not ours: no PSK, and with no certificate no handshake */
    if (idlen == sizeof psk_identity - 1 && memcmp(id, psk_identity, idlen) == 0)
        *sess = psk_session(ssl);
    return 1;
}

static void ssl_error(const char *what, char *err, size_t errlen)
{
    char buf[256] = "";
    unsigned long e = api.ERR_get_error();
    if (e)
        api.ERR_error_string_n(e, buf, sizeof buf);
    snprintf(err, errlen, "%s%s%s", what, buf[0] ? ": " : "", buf);
    api.ERR_clear_error();
}

static void set_timeouts(int fd, int seconds)
{
    struct timeval tv = {seconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static SSL_CTX *make_ctx(bool server)
{
    SSL_CTX *ctx = api.SSL_CTX_new(server ? api.TLS_server_method() : api.TLS_client_method());
    if (!ctx)
        return NULL;
    if (api.SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_3_VERSION, NULL) != 1 ||
        api.SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256") != 1) {
        api.SSL_CTX_free(ctx);
        return NULL;
    }
    /* a peer's end without close_notify reads as an end: the frames say what was missed */
    api.SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_IGNORE_UNEXPECTED_EOF);
    api.SSL_CTX_set_num_tickets(ctx, 0);
    if (server) {
        api.SSL_CTX_set_psk_find_session_callback(ctx, find_session);
    } else {
        /* no trust store: a certificate, whatever it is, fails verification */
        api.SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        api.SSL_CTX_set_psk_use_session_callback(ctx, use_session);
    }
    return ctx;
}

static int handshake(struct step_link *l, int fd, const char *key, bool server, char *err,
                     size_t errlen)
{
    l->fd = -1;
    l->ssl = NULL;
    if (load_ssl() < 0) {
        snprintf(err, errlen, "the step link needs libssl.so.3 (OpenSSL 3): %s", dlerror());
        close(fd);
        return -1;
    }
    if (!key || !*key || step_link_psk(key, psk) < 0) {
        snprintf(err, errlen, "no step key (DOCKET_STEP_KEY)");
        close(fd);
        return -1;
    }
    SSL_CTX *ctx = make_ctx(server);
    SSL *ssl = ctx ? api.SSL_new(ctx) : NULL;
    if (ctx)
        api.SSL_CTX_free(ctx); /* the SSL holds its own reference */
    if (!ssl || api.SSL_set_fd(ssl, fd) != 1) {
        ssl_error("cannot set up TLS", err, errlen);
        if (ssl)
            api.SSL_free(ssl);
        close(fd);
        return -1;
    }
    set_timeouts(fd, STEP_HANDSHAKE_TIMEOUT_S);
    int rc = server ? api.SSL_accept(ssl) : api.SSL_connect(ssl);
    set_timeouts(fd, 0);
    if (rc != 1 || api.SSL_session_reused(ssl) != 1) {
        ssl_error(rc == 1 ? "the peer did not use the job's key"
                          : "TLS handshake failed (not this job's key?)",
                  err, errlen);
        api.SSL_free(ssl);
        close(fd);
        return -1;
    }
    l->fd = fd;
    l->ssl = ssl;
    return 0;
}

int step_link_connect(struct step_link *l, int fd, const char *key, char *err, size_t errlen)
{
    return handshake(l, fd, key, false, err, errlen);
}

int step_link_accept(struct step_link *l, int fd, const char *key, char *err, size_t errlen)
{
    return handshake(l, fd, key, true, err, errlen);
}

void step_link_plain(struct step_link *l, int fd)
{
    l->fd = fd;
    l->ssl = NULL;
}

int step_link_send(struct step_link *l, const void *p, size_t n)
{
    if (!l->ssl)
        return cli_send_all(l->fd, p, n);
    const char *b = p;
    while (n > 0) {
        int w = api.SSL_write(l->ssl, b, n > (1u << 30) ? 1 << 30 : (int)n);
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

ssize_t step_link_recv(struct step_link *l, void *p, size_t n)
{
    if (!l->ssl) {
        ssize_t r;
        while ((r = recv(l->fd, p, n, 0)) < 0 && errno == EINTR)
            ;
        return r;
    }
    for (;;) {
        int r = api.SSL_read(l->ssl, p, n > (1u << 30) ? 1 << 30 : (int)n);
        if (r > 0)
            return r;
        int e = api.SSL_get_error(l->ssl, r);
        if (e == SSL_ERROR_ZERO_RETURN)
            return 0;
        if (e == SSL_ERROR_SYSCALL && errno == EINTR)
            continue;
        return -1;
    }
}

bool step_link_pending(const struct step_link *l)
{
    return l->ssl && api.SSL_pending(l->ssl) > 0;
}

void step_link_close(struct step_link *l)
{
    if (l->ssl) {
        api.SSL_shutdown(l->ssl);
        api.SSL_free(l->ssl);
        l->ssl = NULL;
    }
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}
