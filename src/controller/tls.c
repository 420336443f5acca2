/*
 * tls.c - HTTPS on docketd's TCP listener (docs/security.md "Network observer").
 *
 * Plain HTTP is served only where no one else can listen in: the Unix socket and TCP
 * on a loopback address. Any other TCP listener speaks TLS, with the certificate and key
 * of the configuration (tls_cert/tls_key) or, without them, a self-signed one docketd
 * makes at its first start (an EC P-256 key in STATE_DIR/tls.key, 0600, and
 * STATE_DIR/tls.crt). Agents and the CLI pin its public key: its fingerprint is logged at
 * start and given to admins with every join token. `tls: off` on a non-loopback address
 * is refused at start, so a token never crosses a network in clear by mistake.
 *
 * Each accepted TCP connection gets its own OpenSSL bufferevent (evhttp's bevcb). SIGHUP
 * reloads the certificate and key from their files (ctl_tls_reload): new connections get
 * the new ones, open ones keep theirs; a pair that does not load leaves the old in place
 * (docs/security.md "Rotating the TLS certificate").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent_ssl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/config.h"
#include "controller/conn.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/tls.h"
#include "protocol/tlspin.h"
#include "util/host.h"
#include "util/str.h"
#include "util/xalloc.h"

static void ssl_err(char *err, size_t errlen, const char *what)
{
    char detail[256];
    unsigned long e = ERR_get_error();
    ERR_error_string_n(e, detail, sizeof(detail));
    snprintf(err, errlen, "%s: %s", what, e ? detail : "unknown error");
    ERR_clear_error();
}

/* Write a certificate or a key as PEM to path through a fresh file of `mode` renamed over it. */
static int write_pem(const char *path, mode_t mode, X509 *cert, EVP_PKEY *key)
{
    char tmp[CTL_PATH_MAX + 16];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return -errno;
    }
    int ok =
        cert ? PEM_write_X509(f, cert) : PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    ok = ok == 1 && fflush(f) == 0 && fsync(fd) == 0;
    if (fclose(f) != 0 || !ok || rename(tmp, path) < 0) {
        unlink(tmp);
        return -EIO;
    }
    return 0;
}

/* The names a self-signed certificate answers to: loopback, this host's name and the
 * listen address (useful to clients that check names against --ca). */
static int add_names(X509 *x, const char *listen_host)
{
    char san[1024], hn[256] = "";
    gethostname(hn, sizeof(hn) - 1);
    int n = snprintf(san, sizeof(san), "DNS:localhost,IP:127.0.0.1,IP:::1");
    if (hn[0] && str_is_name(hn))
        n += snprintf(san + n, sizeof(san) - (size_t)n, ",DNS:%s", hn);
    struct in6_addr a;
    if (listen_host[0] && strcmp(listen_host, "localhost") && strcmp(listen_host, hn) &&
        !host_is_loopback(listen_host) && strcmp(listen_host, "0.0.0.0") &&
        strcmp(listen_host, "::")) {
        bool ip =
            inet_pton(AF_INET, listen_host, &a) == 1 || inet_pton(AF_INET6, listen_host, &a) == 1;
        if (ip || str_is_name(listen_host))
            snprintf(san + n, sizeof(san) - (size_t)n, ",%s:%s", ip ? "IP" : "DNS", listen_host);
    }
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, san);
    int ok = ext && X509_add_ext(x, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok ? 0 : -EINVAL;
}

/* First start without a configured certificate: a fresh P-256 key and a self-signed
 * certificate for ten years (clients pin its key, not a chain). */
static int make_self_signed(const char *cert_path, const char *key_path, const char *listen_host,
                            char *err, size_t errlen)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    uint64_t serial = 0;
    int rc = -EIO;
    if (!key || !x || RAND_bytes((unsigned char *)&serial, sizeof(serial)) != 1) {
        ssl_err(err, errlen, "cannot make a TLS key");
        goto out;
    }
    X509_NAME *name = X509_get_subject_name(x);
    if (X509_set_version(x, 2) != 1 ||
        ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), serial >> 1) != 1 ||
        !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
        !X509_gmtime_adj(X509_getm_notAfter(x), (long)3650 * 86400) ||
        X509_set_pubkey(x, key) != 1 ||
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"docketd", -1,
                                   -1, 0) != 1 ||
        X509_set_issuer_name(x, name) != 1 || add_names(x, listen_host) < 0 ||
        X509_sign(x, key, EVP_sha256()) == 0) {
        ssl_err(err, errlen, "cannot make a self-signed certificate");
        goto out;
    }
    /* the certificate first: a key on disk means both are there */
    const char *failed = NULL;
    if ((rc = write_pem(cert_path, 0644, x, NULL)) < 0)
        failed = cert_path;
    else if ((rc = write_pem(key_path, 0600, NULL, key)) < 0)
        failed = key_path;
    if (failed) {
        snprintf(err, errlen, "cannot write %s: %s", failed, strerror(-rc));
        goto out;
    }
    log_info("tls_certificate_made", "cert=%s key=%s", cert_path, key_path);
    rc = 0;
out:
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}

static int check_key_mode(const char *path, bool own, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        snprintf(err, errlen, "TLS key '%s': %s", path, strerror(errno));
        return -errno;
    }
    /* docketd's own key is 0600; a key of the configuration may be shared with a group
     * (ssl-cert), never with everyone */
    if (st.st_mode & (own ? 077 : 007)) {
        snprintf(err, errlen, "TLS key '%s' is readable by %s (mode %04o): chmod %s %s", path,
                 own ? "others" : "everyone", (unsigned)(st.st_mode & 07777), own ? "600" : "o-rwx",
                 path);
        return -EPERM;
    }
    return 0;
}

/* Where the certificate and key are: the configuration's, or docketd's own. */
static void tls_paths(const struct ctl *c, char cert[CTL_PATH_MAX + 16],
                      char key[CTL_PATH_MAX + 16])
{
    const struct ctl_config *cfg = &c->cfg;
    bool own = !cfg->tls_cert[0];
    snprintf(cert, CTL_PATH_MAX + 16, own ? "%s/tls.crt" : "%s",
             own ? cfg->state_dir : cfg->tls_cert);
    snprintf(key, CTL_PATH_MAX + 16, own ? "%s/tls.key" : "%s",
             own ? cfg->state_dir : cfg->tls_key);
}

/* A server context from the certificate and key files as they are now (start, and
 * SIGHUP: ctl_tls_reload); its public-key pin into c->tls_fingerprint. */
static int load_ctx(struct ctl *c, SSL_CTX **out, char *err, size_t errlen)
{
    char cert[CTL_PATH_MAX + 16], key[CTL_PATH_MAX + 16];
    tls_paths(c, cert, key);
    int rc = check_key_mode(key, !c->cfg.tls_cert[0], err, errlen);
    if (rc < 0)
        return rc;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
        ssl_err(err, errlen, "cannot set up TLS");
        SSL_CTX_free(ctx);
        return -EIO;
    }
    unsigned char pin[FPR_LEN];
    const char *what = NULL;
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
        what = "cannot load the TLS certificate";
    else if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
        what = "cannot load the TLS key";
    else if (SSL_CTX_check_private_key(ctx) != 1)
        what = "the TLS key does not match the certificate";
    else if (proto_tls_pin(SSL_CTX_get0_certificate(ctx), pin) < 0)
        what = "the TLS certificate has no usable public key";
    if (what) {
        char detail[512];
        ssl_err(detail, sizeof(detail), what);
        snprintf(err, errlen, "%s (%s, %s)", detail, cert, key);
        SSL_CTX_free(ctx);
        return -EINVAL;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    fpr_format(pin, c->tls_fingerprint, sizeof(c->tls_fingerprint));
    *out = ctx;
    return 0;
}

int ctl_tls_start(struct ctl *c, char *err, size_t errlen)
{
    const struct ctl_config *cfg = &c->cfg;
    char host[256];
    int port;
    if (!cfg->listen[0])
        return 0; /* no TCP listener */
    if (ctl_split_host_port(cfg->listen, host, sizeof(host), &port) < 0) {
        snprintf(err, errlen, "invalid listen address '%s' (HOST:PORT)", cfg->listen);
        return -EINVAL;
    }
    bool loopback = host_is_loopback(host);
    bool on =
        cfg->tls == CTL_TLS_ON || (cfg->tls == CTL_TLS_AUTO && (!loopback || cfg->tls_cert[0]));
    if (!on) {
        if (loopback)
            return 0;
        snprintf(err, errlen,
                 "refusing plain HTTP on '%s': it is not a loopback address, so tokens and "
                 "job environments would cross the network in clear; drop 'tls: off' (docketd "
                 "then makes a self-signed certificate), set tls_cert and tls_key, or listen "
                 "on 127.0.0.1",
                 cfg->listen);
        return -EPERM;
    }
    if (!cfg->tls_cert[0] != !cfg->tls_key[0]) {
        snprintf(err, errlen, "tls_cert and tls_key go together: set both or neither");
        return -EINVAL;
    }
    char cert[CTL_PATH_MAX + 16], key[CTL_PATH_MAX + 16];
    bool own = !cfg->tls_cert[0];
    tls_paths(c, cert, key);
    int rc;
    if (own && access(key, F_OK) != 0 && (rc = make_self_signed(cert, key, host, err, errlen)) < 0)
        return rc;
    SSL_CTX *ctx;
    if ((rc = load_ctx(c, &ctx, err, errlen)) < 0)
        return rc;
    c->tls_ctx = ctx;
    log_info("tls_ready", "cert=%s fingerprint=%s self_signed=%s", cert, c->tls_fingerprint,
             own ? "yes" : "no");
    return 0;
}

int ctl_tls_reload(struct ctl *c, char *err, size_t errlen)
{
    char old[sizeof(c->tls_fingerprint)];
    SSL_CTX *ctx;
    if (!c->tls_ctx) {
        snprintf(err, errlen, "docketd serves no TLS");
        return -ENOENT;
    }
    str_copy(old, sizeof(old), c->tls_fingerprint);
    int rc = load_ctx(c, &ctx, err, errlen);
    if (rc < 0)
        return rc; /* the old certificate stays */
    /* connections already open keep the old context (each SSL holds a reference) */
    SSL_CTX_free(c->tls_ctx);
    c->tls_ctx = ctx;
    log_info("tls_reloaded", "fingerprint=%s previous=%s", c->tls_fingerprint, old);
    return 0;
}

/* evhttp asks for each accepted connection's bufferevent through conn.c (which counts
 * it), and conn.c asks here on a TLS server. A NULL would make evhttp fall back to a plain
 * socket, so running out of memory stops docketd instead. */
struct bufferevent *ctl_tls_bev_new(struct ctl *c, struct event_base *base)
{
    SSL *ssl = xnonnull(SSL_new(c->tls_ctx), "TLS connection");
    return xnonnull(bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                   BEV_OPT_CLOSE_ON_FREE),
                    "TLS bufferevent");
}

bool ctl_tls_bev_is_tls(struct bufferevent *bev)
{
    return bufferevent_openssl_get_ssl(bev) != NULL;
}

void ctl_tls_attach(struct ctl *c, struct evhttp *h)
{
    if (c->tls_ctx) /* conn.c's bevcb, which counts the connection, makes it TLS */
        ctl_conn_server_tls(c, h);
}

void ctl_tls_stop(struct ctl *c)
{
    SSL_CTX_free(c->tls_ctx);
    c->tls_ctx = NULL;
}
