/*
 * tlspin.h - the public-key pin of a certificate, shared by docketd (which prints its
 * own) and docket-node (which checks the controller's): SHA-256 over the DER of the
 * certificate's SubjectPublicKeyInfo. A pin survives a renewed certificate with the same
 * key, and it is what curl's --pinnedpubkey checks, so the CLI can pin it too. The text
 * form is util/fingerprint.h. (Where plain HTTP may go: util/host.h.)
 */
#ifndef DOCKET_PROTOCOL_TLSPIN_H
#define DOCKET_PROTOCOL_TLSPIN_H

#include <openssl/x509.h>
#include <stdbool.h>

#include "util/fingerprint.h"

/* 0, or -EINVAL when the certificate has no usable public key. */
int proto_tls_pin(X509 *cert, unsigned char out[FPR_LEN]);

#endif
