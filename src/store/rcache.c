/*
 * rcache.c - answers of the store's hottest reads kept between requests (store_int.h
 * "Read cache"): a token by its hash, a user's memberships and default project, the head of
 * the audit chain. An answer is kept with the write clock of when it was read and is true
 * while no table its statement reads has been written since (db.h: the statement layer
 * reads the tables from the SQL, so no caller lists what a cached answer depends on, and a
 * new statement that writes one of them voids it without anyone remembering to). One
 * connection writes a docketd's database (the leader's), so its own writes are all there
 * is to see; a ROLLBACK or a new connection counts as writing every table. A read-only
 * store (another process writes) keeps nothing.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/store_int.h"

enum { RCACHE_BUCKETS = 1024, RCACHE_MAX = 8192 };

struct rcache_entry {
    struct rcache_entry *next;
    enum store_stmt_id stmt;
    uint64_t clock; /* db_write_clock when it was read */
    size_t len;
    char *key;
    unsigned char val[]; /* len bytes */
};

struct store_rcache {
    struct rcache_entry *bucket[RCACHE_BUCKETS];
    size_t n;
};

static size_t bucket_of(enum store_stmt_id stmt, const char *key)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)stmt; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return (size_t)(h % RCACHE_BUCKETS);
}

void store_rcache_clear(struct store *st)
{
    struct store_rcache *c = st->rcache;
    if (!c)
        return;
    for (size_t b = 0; b < RCACHE_BUCKETS; b++)
        for (struct rcache_entry *e = c->bucket[b], *next; e; e = next) {
            next = e->next;
            free(e->key);
            free(e);
        }
    free(c);
    st->rcache = NULL;
}

/* The entry's link (so it can be unlinked), NULL when there is none. */
static struct rcache_entry **find(struct store_rcache *c, enum store_stmt_id stmt, const char *key)
{
    for (struct rcache_entry **p = &c->bucket[bucket_of(stmt, key)]; *p; p = &(*p)->next)
        if ((*p)->stmt == stmt && strcmp((*p)->key, key) == 0)
            return p;
    return NULL;
}

static void unlink_entry(struct store_rcache *c, struct rcache_entry **p)
{
    struct rcache_entry *e = *p;
    *p = e->next;
    free(e->key);
    free(e);
    c->n--;
}

bool store_rcache_get(struct store *st, enum store_stmt_id stmt, const char *key, const void **val,
                      size_t *len)
{
    struct store_rcache *c = st->rcache;
    struct rcache_entry **p = c && !st->no_rcache ? find(c, stmt, key) : NULL;
    if (!p)
        return false;
    uint64_t reads = db_stmt_reads(store_stmt(st, stmt));
    if (!db_unchanged_since(st->db, reads, (*p)->clock)) {
        unlink_entry(c, p);
        return false;
    }
    *val = (*p)->val;
    *len = (*p)->len;
    return true;
}

void store_rcache_put(struct store *st, enum store_stmt_id stmt, const char *key, const void *val,
                      size_t len)
{
    if (st->no_rcache)
        return;
    if (st->rcache && st->rcache->n >= RCACHE_MAX)
        store_rcache_clear(st); /* many users at once: start again rather than track age */
    if (!st->rcache && !(st->rcache = calloc(1, sizeof(*st->rcache))))
        return;
    struct store_rcache *c = st->rcache;
    struct rcache_entry **p = find(c, stmt, key);
    if (p)
        unlink_entry(c, p);
    struct rcache_entry *e = malloc(sizeof(*e) + (len ? len : 1));
    char *k = strdup(key);
    if (!e || !k) {
        free(e);
        free(k);
        return; /* not kept: the next read goes to the database */
    }
    *e = (struct rcache_entry){NULL, stmt, db_write_clock(st->db), len, k};
    if (len)
        memcpy(e->val, val, len);
    size_t b = bucket_of(stmt, key);
    e->next = c->bucket[b];
    c->bucket[b] = e;
    c->n++;
}
