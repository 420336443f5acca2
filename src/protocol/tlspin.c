/*
 * tlspin.c - a certificate's public-key pin (tlspin.h).
 */
#define _GNU_SOURCE
#include "protocol/tlspin.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <string.h>

bool proto_host_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (strcmp(host, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    return false;
}

int proto_tls_pin(X509 *cert, unsigned char out[FPR_LEN])
{
    unsigned char *der = NULL;
    unsigned int n = 0;
    X509_PUBKEY *pk = cert ? X509_get_X509_PUBKEY(cert) : NULL;
    int len = pk ? i2d_X509_PUBKEY(pk, &der) : -1;
    int ok =
        len > 0 && EVP_Digest(der, (size_t)len, out, &n, EVP_sha256(), NULL) == 1 && n == FPR_LEN;
    OPENSSL_free(der);
    return ok ? 0 : -EINVAL;
}
