/*
 * supnet.h - a job's network boundary on its node (docs/network.md), set up by the job's
 * supervisor before the job's first instruction and removed at its reclaim:
 *   - a network namespace of its own, docket-NODE-ID (ip netns), whose only link is a
 *     veth pair: eth0 inside, with the job's /32 address, and dkID on the node, which
 *     holds the link-local gateway 169.254.1.1 and a /32 route to the job (routed, no
 *     bridge: the node forwards);
 *   - nftables table `inet docket_ID` on the node: the job's traffic entering the node
 *     through dkID (forwarded or to the node itself) passes when it answers a connection,
 *     goes to a peer, the controller, a resolver or an allowed destination, and is
 *     otherwise refused and counted (counter `refused`);
 *   - a tbf qdisc on both ends of the veth when the job has a bandwidth cap.
 * The rules are exactly the start command's (protocol/network.h): the agent holds no
 * policy. Host names of the allow-list are resolved here, at apply.
 * The programs are ip and tc (iproute2) from PATH and nft from the node's --nft path.
 */
#ifndef DOCKET_AGENT_SUPNET_H
#define DOCKET_AGENT_SUPNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/network.h"
#include "util/dbuf.h"

/* The node-side facts the rules need besides the job's own. */
struct sup_net_node {
    const char *nft;   /* the nft program; "" = none */
    uint32_t ctl_addr; /* the controller's address as this node reaches it (0 = unknown) */
    int ctl_port;
};

/* One destination after resolution: a network and the ports (none = all). */
struct sup_net_dest {
    uint32_t net;
    int prefix;
    const uint16_t *ports;
    int nports;
};

/* The job's interface names and namespace: dkID, docket-NODE-ID. */
void sup_net_names(const char *node, uint64_t id, char *ifname, size_t iflen, char *ns,
                   size_t nslen);
/* The nftables ruleset of job `id` (text for `nft -f -`), from its resolved destinations. */
void sup_net_ruleset(struct dbuf *out, uint64_t id, const struct net_job *j,
                     const struct sup_net_node *node, const struct sup_net_dest *dests,
                     size_t ndests);
/* Whether this node can enforce a job's network boundary; why not in `why`. */
bool sup_net_can_enforce(const char *nft, char *why, size_t len);
/* Create the namespace, the veth pair, the rules and the cap of job `id` (anything left
 * by an earlier run is removed first). 0, or -errno with `err` naming the step. */
int sup_net_setup(const char *node_name, uint64_t id, const struct net_job *j,
                  const struct sup_net_node *node, char *err, size_t errlen);
/* Remove them (each part that exists); 0, or -errno with what is left in `err`. */
int sup_net_remove(const char *node_name, uint64_t id, const char *nft, char *err, size_t errlen);

/* The packets job `id`'s rules refused so far (its table's counter `refused`), or -1 when
 * the table is not there. */
int64_t sup_net_refused(uint64_t id, const char *nft);

#endif
