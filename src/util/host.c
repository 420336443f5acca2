/*
 * host.c - whether a host stays on this machine (host.h).
 */
#include "util/host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

bool host_is_loopback(const char *host)
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
