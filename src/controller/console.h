/*
 * console.h - what console.c owns: the web console's page and assets (public, no data),
 * the one-time login of `docket console` (its pending codes are kept in struct ctl,
 * controller/ctl.h) and the caller's identity (docs/console.md).
 */
#ifndef DOCKET_CONTROLLER_CONSOLE_H
#define DOCKET_CONTROLLER_CONSOLE_H

#include <stdint.h>

#include "controller/authz.h"

struct ctl_req;

/* One-time login codes pending at once, how long one lives, and how long the session
 * token it is exchanged for lives. */
#define CTL_CONSOLE_CODES      16
#define CTL_CONSOLE_CODE_MS    60000
#define CTL_CONSOLE_SESSION_MS ((int64_t)12 * 3600 * 1000)

/* A login code `docket console` asked for (its hash, never the code); a used or expired
 * slot has hash[0] == 0. */
struct ctl_console_code {
    char hash[65];
    char user[64];
    enum ctl_role role;
    int64_t expires_ms;
    /* the token that asked for it ("" over the socket): the session token is
     * derived from it, dies with it and never outlives it */
    char parent[65];
};

void h_console_page(struct ctl_req *r);
void h_console_asset(struct ctl_req *r);
void h_console_code(struct ctl_req *r);
void h_console_session(struct ctl_req *r);
void h_whoami(struct ctl_req *r);

#endif
