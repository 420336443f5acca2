/*
 * warm.h - the shapes of warm environments between docketd and a node
 * (docs/environments.md "Warm environments"), one reader each, both sides:
 *   - an order, in the heartbeat reply's `warm`: make template NAME@VERSION warm on this
 *     node (its image unpacked into the image cache, its prepare script built), with
 *     everything the agent needs to do it and no policy;
 *   - a state, in the heartbeat's `warm`: where each template the node was asked to warm
 *     stands (warming, ready, failed with the reason, evicted by the image cache).
 * `gen` numbers the requests: a newer order than the state the node reports makes the
 * node try again (a failed or evicted template warmed once more).
 */
#ifndef DOCKET_PROTOCOL_WARM_H
#define DOCKET_PROTOCOL_WARM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/container.h"
#include "protocol/error.h"
#include "protocol/templates.h"

enum {
    WARM_AUTH_MAX = 65536, /* bytes of registry credentials */
    WARM_MAX = 64,         /* orders in one reply, states in one heartbeat */
    WARM_REASON_MAX = 512, /* bytes of a failure's reason */
};

enum warm_state_kind { WARM_WARMING, WARM_READY, WARM_FAILED, WARM_EVICTED };

struct warm_order {
    char tmpl[PROTO_TEMPLATE_REF_MAX]; /* NAME@VERSION */
    int64_t gen;
    char image[PROTO_IMAGE_REF_MAX]; /* "" = none */
    char *prepare;                   /* owned; NULL = none */
    /* owned; NULL = none: the registry's credentials for a docker:// image, the value of
     * the secret a project's template names (registry_auth), for skopeo only: never
     * logged or written anywhere but the authfile of the copy */
    char *auth;
};

struct warm_state {
    char tmpl[PROTO_TEMPLATE_REF_MAX];
    int64_t gen;
    enum warm_state_kind state;
    char reason[WARM_REASON_MAX]; /* "" unless failed or evicted */
};

const char *warm_state_name(enum warm_state_kind k);
int warm_state_kind_parse(const char *s, enum warm_state_kind *out);

json_t *warm_order_json(const struct warm_order *o);
json_t *warm_state_json(const struct warm_state *s);
/* The lists of at most WARM_MAX entries (field: "warm"); *out owned, orders freed with
 * warm_orders_free, states with free(). */
int warm_orders_parse(const json_t *v, struct warm_order **out, size_t *n,
                      struct proto_error *err) PROTO_WUR;
void warm_orders_free(struct warm_order *o, size_t n);
int warm_states_parse(const json_t *v, struct warm_state **out, size_t *n,
                      struct proto_error *err) PROTO_WUR;

/* Whether node `labels` (an object of strings) named `node` matches a selector: terms
 * separated by commas, KEY=VALUE a label every chosen node has, anything else a node name
 * (a shell pattern) of which one must match when any is given. NULL or "": every node. */
bool warm_selector_match(const char *selector, const char *node, const json_t *labels);

#endif
