/*
 * audit.c - the audit log in SQLite (store.h "Audit", docs/security.md "Audit"): each row
 * hashed with the previous row's hash into a chain, its verification a bounded step at a
 * time, and the filtered list.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"
#include "util/dbuf.h"
#include "util/str.h"

/* Feed one field to the digest as "LENGTH:BYTES," (NULL as "-,"), so no two different
 * rows share a canonical text (the fields cannot run into each other). */
static void digest_field(EVP_MD_CTX *ctx, const char *v)
{
    char len[24];
    if (!v) {
        EVP_DigestUpdate(ctx, "-,", 2);
        return;
    }
    size_t n = strlen(v);
    int k = snprintf(len, sizeof(len), "%zu:", n);
    EVP_DigestUpdate(ctx, len, (size_t)k);
    EVP_DigestUpdate(ctx, v, n);
    EVP_DigestUpdate(ctx, ",", 1);
}

/* The hash of an audit row: SHA-256 over its canonical content (id, time, actor, action,
 * target, before, after, reason) and the previous row's hash. docs/security.md "Audit". */
static int audit_digest(const struct store_audit *a, const char *prev, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    char num[48];
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return -ENOMEM;
    }
    snprintf(num, sizeof(num), "%lld", (long long)a->id);
    digest_field(ctx, num);
    snprintf(num, sizeof(num), "%lld", (long long)a->time_ms);
    digest_field(ctx, num);
    digest_field(ctx, a->actor ? a->actor : "");
    digest_field(ctx, a->action ? a->action : "");
    digest_field(ctx, a->target ? a->target : "");
    digest_field(ctx, a->before);
    digest_field(ctx, a->after);
    digest_field(ctx, a->reason ? a->reason : "");
    digest_field(ctx, prev);
    int ok = EVP_DigestFinal_ex(ctx, md, &n) == 1 && n == 32;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return -EIO;
    for (unsigned int i = 0; i < n; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
    return 0;
}

/* The chain starts from this value (the first hashed row's prev_hash). */
static const char audit_genesis[] =
    "0000000000000000000000000000000000000000000000000000000000000000";

/* The chain's head: the last row's id (0 for none) and the hash a new row links to. */
struct audit_head {
    int64_t id;
    char hash[65];
};

/* The head from the read cache (kept by the last add) or the database. */
static int audit_head(struct store *st, int64_t *id, char prev[65])
{
    const void *val;
    size_t n;
    struct audit_head h = {0, ""};
    if (store_rcache_get(st, S_AUDIT_LAST, "", &val, &n) && n == sizeof(h)) {
        memcpy(&h, val, sizeof(h));
        *id = h.id;
        str_copy(prev, 65, h.hash);
        return 0;
    }
    struct db_stmt *s = store_stmt(st, S_AUDIT_LAST);
    int rc = db_step(s);
    *id = 0;
    str_copy(prev, 65, audit_genesis);
    if (rc == DB_ROW) {
        *id = db_column_int64(s, 0);
        const char *hh = db_column_text(s, 1);
        if (hh && hh[0]) /* a row from before the chain: start it here */
            str_copy(prev, 65, hh);
    }
    db_reset(s);
    if (rc != DB_ROW && rc != DB_DONE)
        return store_fail(st, "last audit row");
    h.id = *id;
    str_copy(h.hash, sizeof(h.hash), prev);
    store_rcache_put(st, S_AUDIT_LAST, "", &h, sizeof(h));
    return 0;
}

int store_audit_add(struct store *st, const struct store_audit *a)
{
    struct store_audit row = *a;
    char prev[65], hash[65];
    int rc = audit_head(st, &row.id, prev);
    if (rc < 0)
        return rc;
    row.id++;
    if ((rc = audit_digest(&row, prev, hash)) < 0)
        return rc;
    struct db_stmt *s = store_stmt(st, S_AUDIT_ADD);
    db_bind_int64(s, 1, row.id);
    db_bind_int64(s, 2, row.time_ms);
    store_bind_text(s, 3, row.actor ? row.actor : "");
    store_bind_text(s, 4, row.action ? row.action : "");
    store_bind_text(s, 5, row.target ? row.target : "");
    store_bind_text(s, 6, row.before);
    store_bind_text(s, 7, row.after);
    store_bind_text(s, 8, row.reason ? row.reason : "");
    store_bind_text(s, 9, prev);
    store_bind_text(s, 10, hash);
    rc = store_step_done(st, s, "add audit");
    if (rc == 0) { /* the new head, kept past this write of the audit table */
        struct audit_head h = {row.id, ""};
        str_copy(h.hash, sizeof(h.hash), hash);
        store_rcache_put(st, S_AUDIT_LAST, "", &h, sizeof(h));
    }
    return rc;
}

/* Check one row against the chain so far; fills v->why on the first break. */
static void verify_row(struct store_audit_check *v, const struct store_audit *a, const char *prev,
                       const char *hash, char *expect_prev)
{
    char want[65];
    if (!hash[0] && v->anchor_id && a->id >= v->anchor_from) {
        snprintf(v->why, sizeof(v->why),
                 "row %lld has no hash, but the anchor has the chain begin at row %lld (its "
                 "hashes were blanked)",
                 (long long)a->id, (long long)v->anchor_from);
    } else if (!hash[0]) {
        if (v->checked == 0) { /* before the chain began (schema < 4) */
            v->unchained++;
            return;
        }
        snprintf(v->why, sizeof(v->why), "row %lld has no hash inside the chain", (long long)a->id);
    } else if (v->anchor_id && a->id > v->anchor_id && !v->anchor_seen) {
        snprintf(v->why, sizeof(v->why), "row %lld, the anchored one, is gone",
                 (long long)v->anchor_id);
    } else if (strcmp(prev, expect_prev) != 0) {
        snprintf(v->why, sizeof(v->why),
                 "row %lld does not follow row %lld (a row was removed or changed before it)",
                 (long long)a->id, (long long)v->last_id);
    } else if (audit_digest(a, prev, want) < 0) {
        snprintf(v->why, sizeof(v->why), "row %lld: cannot compute its hash", (long long)a->id);
    } else if (strcmp(want, hash) != 0) {
        snprintf(v->why, sizeof(v->why), "row %lld was changed after it was written",
                 (long long)a->id);
    } else if (a->id == v->anchor_id && strcmp(hash, v->anchor_hash) != 0) {
        snprintf(v->why, sizeof(v->why),
                 "row %lld is not the one anchored (hash %.12s..., the anchor says %.12s...): "
                 "the chain was rebuilt",
                 (long long)a->id, hash, v->anchor_hash);
    }
    if (v->why[0]) {
        v->first_bad = a->id;
        return;
    }
    v->checked++;
    v->anchor_seen = v->anchor_seen || a->id == v->anchor_id;
    v->last_id = a->id;
    str_copy(expect_prev, 65, hash);
    str_copy(v->head, sizeof(v->head), hash);
}
/* An audit row whose first eight columns are id, time_ms, actor, action, target,
 * before_doc, after_doc, reason (its texts borrowed from the statement). */
static struct store_audit audit_row(struct db_stmt *s)
{
    return (struct store_audit){
        .id = db_column_int64(s, 0),
        .time_ms = db_column_int64(s, 1),
        .actor = (const char *)db_column_text(s, 2),
        .action = (const char *)db_column_text(s, 3),
        .target = (const char *)db_column_text(s, 4),
        .before = (const char *)db_column_text(s, 5),
        .after = (const char *)db_column_text(s, 6),
        .reason = (const char *)db_column_text(s, 7),
    };
}

void store_audit_verify_begin(struct store_audit_check *v)
{
    memset(v, 0, sizeof(*v));
    str_copy(v->expect, sizeof(v->expect), audit_genesis);
}

int store_audit_verify_step(struct store *st, const char *want_head, struct store_audit_check *v,
                            int max_rows)
{
    struct db_stmt *s = NULL;
    if (v->first_bad)
        return 0;
    if (store_prepare(st,
                      "SELECT id, time_ms, actor, action, target, before_doc, after_doc,"
                      " reason, prev_hash, hash FROM audit WHERE id > ?1 ORDER BY id"
                      " LIMIT ?2",
                      &s) < 0)
        return -EIO;
    db_bind_int64(s, 1, v->cursor);
    db_bind_int64(s, 2, max_rows);
    int step = DB_DONE, n = 0;
    while (!v->first_bad && (step = db_step(s)) == DB_ROW) {
        struct store_audit a = audit_row(s);
        const char *prev = (const char *)db_column_text(s, 8);
        const char *hash = (const char *)db_column_text(s, 9);
        verify_row(v, &a, prev ? prev : "", hash ? hash : "", v->expect);
        if (!v->first_bad && want_head && hash && strcmp(hash, want_head) == 0)
            v->head_found = true;
        v->cursor = a.id;
        n++;
    }
    int rc = v->first_bad || step == DB_DONE ? 0 : store_fail(st, "audit verify");
    db_finalize(s);
    if (rc < 0)
        return rc;
    if (!v->first_bad && n == max_rows)
        return 1;
    if (!v->first_bad && v->anchor_id && !v->anchor_seen) { /* the walk ended before it */
        v->first_bad = v->anchor_id;
        snprintf(v->why, sizeof(v->why),
                 "the trail ends at row %lld, before the anchored row %lld (rows were cut off "
                 "its end)",
                 (long long)v->cursor, (long long)v->anchor_id);
    }
    return 0;
}

int store_audit_row_hash(struct store *st, int64_t id, char hash[65])
{
    struct db_stmt *q = NULL;
    hash[0] = '\0';
    if (store_prepare(st, "SELECT hash FROM audit WHERE id = ?1", &q) < 0)
        return -EIO;
    db_bind_int64(q, 1, id);
    int rc = db_step(q);
    if (rc == DB_ROW) {
        const char *h = (const char *)db_column_text(q, 0);
        str_copy(hash, 65, h ? h : "");
    }
    rc = rc == DB_ROW ? 1 : rc == DB_DONE ? 0 : store_fail(st, "audit row");
    db_finalize(q);
    return rc;
}

int store_audit_head(struct store *st, int64_t *last_id, char last_hash[65], int64_t *chain_from)
{
    /* the head as store_audit_add keeps it (the read cache): genesis stands for a last row
     * without a hash, or none */
    int rc = audit_head(st, last_id, last_hash);
    if (rc < 0)
        return rc;
    if (strcmp(last_hash, audit_genesis) == 0)
        last_hash[0] = '\0';
    if (*chain_from > 0) /* known already: where a chain begins does not move */
        return 0;
    struct db_stmt *q = NULL;
    if (store_prepare(st,
                      "SELECT id FROM audit WHERE hash IS NOT NULL AND hash <> ''"
                      " ORDER BY id LIMIT 1",
                      &q) < 0)
        return -EIO;
    rc = db_step(q);
    if (rc == DB_ROW)
        *chain_from = db_column_int64(q, 0);
    rc = rc == DB_ROW || rc == DB_DONE ? 0 : store_fail(st, "audit chain start");
    db_finalize(q);
    return rc;
}

int store_audit_verify(struct store *st, const char *want_head, struct store_audit_check *v)
{
    int rc;
    store_audit_verify_begin(v);
    while ((rc = store_audit_verify_step(st, want_head, v, 4096)) == 1)
        ;
    return rc;
}

int store_audit_list(struct store *st, const struct store_audit_filter *f, store_audit_cb cb,
                     void *arg)
{
    struct dbuf sql;
    int np = 0, rc = 0;
    dbuf_init(&sql, 2048);
    dbuf_puts(&sql, "SELECT id, time_ms, actor, action, target, before_doc, after_doc, reason"
                    " FROM audit WHERE 1 = 1");
    store_add_text_filter(&sql, "actor", f->actor, &np);
    store_add_text_filter(&sql, "action", f->action, &np);
    store_add_text_filter(&sql, "target", f->target, &np);
    if (f->since_ms)
        dbuf_printf(&sql, " AND time_ms >= ?%d", ++np);
    if (f->after)
        dbuf_printf(&sql, " AND id > ?%d", ++np);
    dbuf_printf(&sql, " ORDER BY id LIMIT %d", f->limit > 0 ? f->limit : 100);
    struct db_stmt *s = NULL;
    if (sql.failed || store_prepare(st, sql.data, &s) < 0) {
        dbuf_release(&sql);
        return sql.failed ? -ENOMEM : -EIO;
    }
    dbuf_release(&sql);
    np = 0;
    const char *texts[] = {f->actor, f->action, f->target};
    for (size_t i = 0; i < 3; i++)
        if (texts[i])
            store_bind_text(s, ++np, texts[i]);
    if (f->since_ms)
        db_bind_int64(s, ++np, f->since_ms);
    if (f->after)
        db_bind_int64(s, ++np, f->after);
    int step;
    while ((step = db_step(s)) == DB_ROW) {
        struct store_audit a = audit_row(s);
        if ((rc = cb(arg, &a)))
            break;
    }
    if (!rc && step != DB_DONE)
        rc = store_fail(st, "list audit");
    db_finalize(s);
    return rc;
}
