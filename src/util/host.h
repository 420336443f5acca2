/*
 * host.h - the one rule of where plain HTTP may go: whether a host stays on this machine.
 * docketd (its listener without TLS), docket-node (its controller URL) and docket (a token
 * over http://) all ask it.
 */
#ifndef DOCKET_UTIL_HOST_H
#define DOCKET_UTIL_HOST_H

#include <stdbool.h>

/* Whether a host name or address stays on this machine ("localhost", 127/8, ::1, and
 * 127/8 mapped into IPv6). A name other than "localhost", or a wildcard address, counts as
 * remote. */
bool host_is_loopback(const char *host);

#endif
