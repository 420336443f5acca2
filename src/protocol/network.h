/*
 * network.h - the JSON shapes of job network boundaries (docs/network.md), one reader each:
 *   - the `network:` section of the policy document: whether jobs get a network namespace
 *     of their own, the classes that keep the node's network, the resolvers and the
 *     controller every job may reach, and per group or project egress allow-lists and a
 *     bandwidth cap;
 *   - a start command's `network` object: what docketd tells one agent to enforce for one
 *     job (its address, the addresses of its peers, the allow-list merged for its group and
 *     project, the cap). The agent holds no policy: it applies exactly this.
 * Addresses are IPv4, kept in host byte order. Nothing here holds state or does I/O.
 * Depends on jansson and libc only, so the agent links it without the core.
 */
#ifndef DOCKET_PROTOCOL_NETWORK_H
#define DOCKET_PROTOCOL_NETWORK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/error.h"

enum {
    NET_NAME_MAX = 64,      /* groups, projects, classes */
    NET_TO_MAX = 254,       /* an allow entry's target: CIDR, address or host name */
    NET_MAX_PORTS = 16,     /* ports of one allow entry (none = every port) */
    NET_MAX_ALLOW = 32,     /* allow entries of one rule */
    NET_MAX_JOB_ALLOW = 64, /* allow entries of one job (its group's and project's) */
    NET_MAX_RULES = 256,    /* rules of a policy */
    NET_MAX_HOST_CLASSES = 16,
    NET_MAX_DNS = 4,
    NET_MAX_PEERS = 4096, /* addresses a job may reach as its group's */
    NET_MAX_RATE_MBIT = 1000000,
};

struct net_allow {
    char to[NET_TO_MAX + 1]; /* "10.1.0.0/16", "10.1.2.3" or "pypi.org" (resolved at apply) */
    uint16_t ports[NET_MAX_PORTS];
    int nports;
};

/* One rule: for a group's jobs or a project's (exactly one of the two names is set). */
struct net_rule {
    char group[NET_NAME_MAX], project[NET_NAME_MAX];
    struct net_allow allow[NET_MAX_ALLOW];
    int nallow;
    int64_t rate_mbit; /* 0 = no cap */
};

/* The policy's `network:` section. */
struct net_policy {
    bool isolate;    /* jobs get a namespace each; false = the node's network (as before) */
    bool controller; /* jobs may reach docketd (default true) */
    char host_classes[NET_MAX_HOST_CLASSES][NET_NAME_MAX];
    int nhost_classes;
    uint32_t dns[NET_MAX_DNS];
    int ndns;
    struct net_rule rules[NET_MAX_RULES];
    int nrules;
};

/* Defaults: no isolation, the controller reachable, no rules. */
void net_policy_defaults(struct net_policy *p);
/* Parse the `network` object (replaces `out` whole); errors name "network.rules[1].allow". */
int net_policy_parse(const json_t *v, struct net_policy *out, struct proto_error *err) PROTO_WUR;
/* The section back (a new reference), read back exactly by net_policy_parse. */
json_t *net_policy_json(const struct net_policy *p);
bool net_policy_host_class(const struct net_policy *p, const char *class_name);

/* ---- docketd -> agent: a start command's `network` ----------------------------------- */

struct net_job {
    uint32_t addr;    /* the job's address in its node's job range */
    char policy[160]; /* what it runs under, for people: "group g, project p" */
    uint32_t *peers;  /* owned: its group's jobs (its own ranks among them) */
    size_t npeers;
    struct net_allow allow[NET_MAX_JOB_ALLOW];
    int nallow;
    uint32_t dns[NET_MAX_DNS];
    int ndns;
    bool controller; /* the agent allows its own controller's address and port */
    int64_t rate_mbit;
};

int net_job_parse(const json_t *v, struct net_job *out, struct proto_error *err) PROTO_WUR;
json_t *net_job_json(const struct net_job *j);
void net_job_release(struct net_job *j);

/* ---- addresses ------------------------------------------------------------------------ */

/* "a.b.c.d" -> host order; false when not one. */
bool net_addr_parse(const char *s, uint32_t *out);
void net_addr_text(uint32_t a, char *out, size_t len); /* len >= 16 */
/* "a.b.c.d/n" (or an address: /32) -> network and prefix; false when not one or when
 * host bits are set. */
bool net_cidr_parse(const char *s, uint32_t *net, int *prefix);
/* A host name as the allow-list takes it: letters, digits, '-' and '.', not an address. */
bool net_host_name_ok(const char *s);

#endif
