/*
 * budget.h - what budget.c owns: the connection budget's bookkeeping (docs/security.md
 * "The connection budget"): which connections are still unproven (no request with a
 * valid identity yet), in the order they opened, per peer and in all, and the one
 * decision of who must make room for a new connection. Plain data, no I/O and no clock:
 * conn.c does the closing, the unit test drives it alone.
 */
#ifndef DOCKET_CONTROLLER_BUDGET_H
#define DOCKET_CONTROLLER_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Who a connection comes from: a source address (IPv4 as IPv4-mapped IPv6, so one host is
 * one peer whichever family it used) or, on the Unix socket, a uid. */
struct budget_key {
    unsigned char kind; /* 'a' address, 'u' uid */
    unsigned char addr[16];
};

struct budget_peer;

/* One connection's record, kept inside the caller's own (intrusive). */
struct budget_slot {
    struct budget_peer *peer;          /* while unproven */
    struct budget_slot *prev, *next;   /* the unproven ones, oldest first */
    struct budget_slot *pprev, *pnext; /* the unproven ones of its peer, oldest first */
    uint64_t turn;                     /* the turn it was counted in */
    bool counted;                      /* open and counted */
    bool unproven;
};

struct conn_budget {
    size_t cap;      /* connections open at most */
    size_t reserve;  /* of those, never held by unproven ones */
    size_t per_peer; /* unproven connections of one peer at most */
    size_t open, unproven;
    uint64_t turn; /* budget_next_turn: a connection of this turn never gives way */
    struct budget_slot *oldest, *newest;
    struct budget_peer **buckets;
    size_t nbuckets, npeers;
};

/* Why a new connection cannot simply be counted. */
enum budget_verdict {
    BUDGET_ADMIT,     /* room: count it */
    BUDGET_SHED_PEER, /* its peer is at per_peer: its oldest unproven one of an earlier turn goes */
    BUDGET_SHED_POOL, /* unproven ones fill cap - reserve: the oldest unproven one goes */
    BUDGET_SHED_CAP,  /* cap open: the oldest unproven one goes */
    BUDGET_REFUSE,    /* cap open and every one proven: the new one is refused */
    BUDGET_REFUSE_FRESH, /* room only from connections of this turn: the new one is refused */
};

/* 0, or -ENOMEM. reserve is kept below cap (at most cap - 1). */
int budget_init(struct conn_budget *b, size_t cap, size_t reserve, size_t per_peer);
void budget_free(struct conn_budget *b);
/* A new turn of admissions: the connections counted before it have had their chance to
 * send a request (conn.c calls it once per loop turn that accepted any). */
void budget_next_turn(struct conn_budget *b);
/* What a new connection from key needs first; *victim is the connection to close for
 * the SHED verdicts (it leaves through budget_remove), else NULL. Ask again after each
 * close: a connection may need room on two counts. */
enum budget_verdict budget_victim(const struct conn_budget *b, const struct budget_key *key,
                                  struct budget_slot **victim);
/* Count s as open and unproven, from key. 0, or -ENOMEM (s is then not counted). */
int budget_add(struct conn_budget *b, const struct budget_key *key, struct budget_slot *s);
/* s carried a request with a valid identity: it no longer counts as unproven. */
void budget_prove(struct conn_budget *b, struct budget_slot *s);
/* s closed (any state; a slot not counted is left alone). */
void budget_remove(struct conn_budget *b, struct budget_slot *s);
/* The unproven connections of key's peer. */
size_t budget_peer_unproven(const struct conn_budget *b, const struct budget_key *key);

struct budget_key budget_key_addr(const struct sockaddr *sa, socklen_t len);
struct budget_key budget_key_uid(uid_t uid);
/* "127.0.0.2", "::1", "uid 1000", for a log line. */
void budget_key_str(const struct budget_key *key, char *buf, size_t len);
const char *budget_verdict_name(enum budget_verdict v);

#endif
