/*
 * budget.c - the connection budget's bookkeeping (budget.h; the design is docs/security.md
 * "The connection budget").
 *
 * Every connection starts unproven: nothing it sent has shown a valid identity yet. It is
 * proven by its first request that carries one (a user token, a node credential, or a peer
 * on the Unix socket). Unproven connections are the only ones a slowloris can make, so they
 * are the only ones ever made to give way:
 *
 *  - one peer holds at most per_peer unproven connections of earlier loop turns: its next
 *    one closes its oldest (a burst within one turn, many agents behind one proxy, is
 *    held only by the limits below);
 *  - unproven connections hold at most cap - reserve slots: the next one closes the
 *    oldest unproven one, so the reserve is always free for proven connections;
 *  - at cap, a new connection closes the oldest unproven one, and is refused only when
 *    every open connection is proven.
 *
 * So a new connection is not refused because of unproven ones: it takes the slot of the
 * one that has been waiting longest, which a client that sends its request at once has
 * long passed. Only a connection counted in an earlier turn gives way: one accepted in
 * this turn has not had the loop turn in which its request is read, so a burst of new
 * connections cannot push out a client accepted just before it; a new connection that
 * finds room only among this turn's is refused instead (a flood of more connections in
 * one loop turn than the unproven pool holds). Peers are kept in a hash table only while
 * they have unproven connections.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/budget.h"

struct budget_peer {
    struct budget_key key;
    size_t unproven;
    struct budget_slot *oldest, *newest;
    struct budget_peer *next; /* in its bucket */
};

#define FIRST_BUCKETS 256

int budget_init(struct conn_budget *b, size_t cap, size_t reserve, size_t per_peer)
{
    memset(b, 0, sizeof(*b));
    b->cap = cap ? cap : 1;
    b->reserve = reserve < b->cap ? reserve : b->cap - 1;
    b->per_peer = per_peer ? per_peer : 1;
    b->buckets = calloc(FIRST_BUCKETS, sizeof(*b->buckets));
    if (!b->buckets)
        return -ENOMEM;
    b->nbuckets = FIRST_BUCKETS;
    return 0;
}

void budget_free(struct conn_budget *b)
{
    for (size_t i = 0; i < b->nbuckets; i++)
        for (struct budget_peer *p = b->buckets[i], *next; p; p = next) {
            next = p->next;
            free(p);
        }
    free(b->buckets);
    memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------------------------------ */
/* Peers                                                                                 */

static size_t key_hash(const struct budget_key *k)
{
    uint64_t h = 1469598103934665603ull ^ k->kind; /* FNV-1a */
    for (size_t i = 0; i < sizeof(k->addr); i++)
        h = (h ^ k->addr[i]) * 1099511628211ull;
    return (size_t)(h ^ (h >> 29));
}

static bool key_eq(const struct budget_key *a, const struct budget_key *b)
{
    return a->kind == b->kind && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

static struct budget_peer *peer_find(const struct conn_budget *b, const struct budget_key *k)
{
    struct budget_peer *p = b->buckets[key_hash(k) & (b->nbuckets - 1)];
    while (p && !key_eq(&p->key, k))
        p = p->next;
    return p;
}

/* Twice the buckets once there are more peers than buckets (best effort: without memory
 * the chains just grow). */
static void peers_grow(struct conn_budget *b)
{
    size_t n = b->nbuckets * 2;
    struct budget_peer **t = calloc(n, sizeof(*t));
    if (!t)
        return;
    for (size_t i = 0; i < b->nbuckets; i++)
        for (struct budget_peer *p = b->buckets[i], *next; p; p = next) {
            next = p->next;
            size_t h = key_hash(&p->key) & (n - 1);
            p->next = t[h];
            t[h] = p;
        }
    free(b->buckets);
    b->buckets = t;
    b->nbuckets = n;
}

static struct budget_peer *peer_get(struct conn_budget *b, const struct budget_key *k)
{
    struct budget_peer *p = peer_find(b, k);
    if (p)
        return p;
    if (b->npeers >= b->nbuckets)
        peers_grow(b);
    p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->key = *k;
    size_t h = key_hash(k) & (b->nbuckets - 1);
    p->next = b->buckets[h];
    b->buckets[h] = p;
    b->npeers++;
    return p;
}

static void peer_drop(struct conn_budget *b, struct budget_peer *p)
{
    struct budget_peer **pp = &b->buckets[key_hash(&p->key) & (b->nbuckets - 1)];
    while (*pp != p)
        pp = &(*pp)->next;
    *pp = p->next;
    b->npeers--;
    free(p);
}

/* ------------------------------------------------------------------------------------ */
/* Slots                                                                                 */

/* s leaves the unproven lists (its peer goes with its last one). */
static void unlist(struct conn_budget *b, struct budget_slot *s)
{
    struct budget_peer *p = s->peer;
    if (s->prev)
        s->prev->next = s->next;
    else
        b->oldest = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        b->newest = s->prev;
    if (s->pprev)
        s->pprev->pnext = s->pnext;
    else
        p->oldest = s->pnext;
    if (s->pnext)
        s->pnext->pprev = s->pprev;
    else
        p->newest = s->pprev;
    s->prev = s->next = s->pprev = s->pnext = NULL;
    s->peer = NULL;
    s->unproven = false;
    b->unproven--;
    if (--p->unproven == 0)
        peer_drop(b, p);
}

void budget_next_turn(struct conn_budget *b)
{
    b->turn++;
}

/* s may give way: counted before this turn (the oldest of a list is its earliest). */
static enum budget_verdict shed_or_refuse(const struct conn_budget *b, struct budget_slot *s,
                                          enum budget_verdict why, struct budget_slot **victim)
{
    if (s->turn >= b->turn)
        return BUDGET_REFUSE_FRESH;
    *victim = s;
    return why;
}

enum budget_verdict budget_victim(const struct conn_budget *b, const struct budget_key *key,
                                  struct budget_slot **victim)
{
    const struct budget_peer *p = peer_find(b, key);
    *victim = NULL;
    /* a peer's burst in one turn (agents behind one proxy or NAT reconnecting) is not
     * refused for its cap: only its connections of earlier turns give way to it */
    if (p && p->unproven >= b->per_peer && p->oldest->turn < b->turn) {
        *victim = p->oldest;
        return BUDGET_SHED_PEER;
    }
    if (b->unproven >= b->cap - b->reserve)
        return shed_or_refuse(b, b->oldest, BUDGET_SHED_POOL, victim);
    if (b->open >= b->cap)
        return b->oldest ? shed_or_refuse(b, b->oldest, BUDGET_SHED_CAP, victim) : BUDGET_REFUSE;
    return BUDGET_ADMIT;
}

int budget_add(struct conn_budget *b, const struct budget_key *key, struct budget_slot *s)
{
    memset(s, 0, sizeof(*s));
    struct budget_peer *p = peer_get(b, key);
    if (!p)
        return -ENOMEM;
    s->peer = p;
    s->prev = b->newest;
    if (b->newest)
        b->newest->next = s;
    else
        b->oldest = s;
    b->newest = s;
    s->pprev = p->newest;
    if (p->newest)
        p->newest->pnext = s;
    else
        p->oldest = s;
    p->newest = s;
    p->unproven++;
    b->unproven++;
    b->open++;
    s->turn = b->turn;
    s->counted = s->unproven = true;
    return 0;
}

void budget_prove(struct conn_budget *b, struct budget_slot *s)
{
    if (s->counted && s->unproven)
        unlist(b, s);
}

void budget_remove(struct conn_budget *b, struct budget_slot *s)
{
    if (!s->counted)
        return;
    if (s->unproven)
        unlist(b, s);
    s->counted = false;
    b->open--;
}

size_t budget_peer_unproven(const struct conn_budget *b, const struct budget_key *key)
{
    const struct budget_peer *p = peer_find(b, key);
    return p ? p->unproven : 0;
}

/* ------------------------------------------------------------------------------------ */
/* Keys                                                                                  */

struct budget_key budget_key_addr(const struct sockaddr *sa, socklen_t len)
{
    struct budget_key k;
    memset(&k, 0, sizeof(k));
    k.kind = 'a';
    if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        k.addr[10] = k.addr[11] = 0xff; /* ::ffff:a.b.c.d */
        memcpy(k.addr + 12, &in->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        memcpy(k.addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
    return k; /* anything else: one peer, all zeros */
}

struct budget_key budget_key_uid(uid_t uid)
{
    struct budget_key k;
    memset(&k, 0, sizeof(k));
    k.kind = 'u';
    memcpy(k.addr, &uid, sizeof(uid));
    return k;
}

void budget_key_str(const struct budget_key *key, char *buf, size_t len)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (key->kind == 'u') {
        uid_t uid;
        memcpy(&uid, key->addr, sizeof(uid));
        snprintf(buf, len, "uid %u", (unsigned)uid);
    } else if (memcmp(key->addr, mapped, sizeof(mapped)) == 0) {
        if (!inet_ntop(AF_INET, key->addr + 12, buf, (socklen_t)len))
            snprintf(buf, len, "?");
    } else if (!inet_ntop(AF_INET6, key->addr, buf, (socklen_t)len)) {
        snprintf(buf, len, "?");
    }
}

const char *budget_verdict_name(enum budget_verdict v)
{
    switch (v) {
    case BUDGET_ADMIT:
        return "admit";
    case BUDGET_SHED_PEER:
        return "peer_cap";
    case BUDGET_SHED_POOL:
        return "unproven_cap";
    case BUDGET_SHED_CAP:
        return "connection_cap";
    case BUDGET_REFUSE_FRESH:
        return "all_fresh";
    default:
        return "refuse";
    }
}
