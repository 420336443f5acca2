/*
 * tlspin.c - a certificate's public-key pin (tlspin.h).
 */
#define _GNU_SOURCE
#include "protocol/tlspin.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <string.h>

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
