/*
 * tokens.c - API tokens in SQLite (store.h "Tokens"): stored by the SHA-256 of the
 * token, never the token; their kind (user, node, join), role, expiry and revocation, and
 * the token a derived one was made from (its parent: a revoke takes its descendants).
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"

/* Token kinds as stored (schema 3). */
static const char *const token_kind_names[] = {
    [STORE_TOKEN_USER] = "user", [STORE_TOKEN_NODE] = "node", [STORE_TOKEN_JOIN] = "join"};

static int token_kind_parse(const char *name)
{
    for (size_t i = 0; i < sizeof(token_kind_names) / sizeof(token_kind_names[0]); i++)
        if (strcmp(name, token_kind_names[i]) == 0)
            return (int)i;
    return -1;
}

void store_token_hash(const char *token, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    static const char hex[] = "0123456789abcdef";
    EVP_Digest(token, strlen(token), md, &n, EVP_sha256(), NULL);
    for (unsigned int i = 0; i < n && i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}

int store_token_put(struct store *st, const struct store_token *t)
{
    if ((int)t->kind < 0 ||
        (size_t)t->kind >= sizeof(token_kind_names) / sizeof(token_kind_names[0]))
        return -EINVAL;
    struct db_stmt *s = store_stmt(st, S_TOKEN_PUT);
    store_bind_text(s, 1, t->hash);
    store_bind_text(s, 2, token_kind_names[t->kind]);
    store_bind_text(s, 3, t->user);
    store_bind_text(s, 4, t->role);
    db_bind_int64(s, 5, t->created_ms);
    db_bind_int64(s, 6, t->expires_ms);
    store_bind_text(s, 7, t->parent);
    return store_step_done(st, s, "put token");
}

/* Fill `out` from a row of TOKEN_COLS (store.c). -EIO for a kind this docketd does not know. */
static int token_row(struct store *st, struct db_stmt *s, struct store_token *out)
{
    memset(out, 0, sizeof(*out));
    store_col_copy(s, 0, out->hash, sizeof(out->hash));
    const char *kind = db_column_text(s, 1);
    int k = token_kind_parse(kind ? (const char *)kind : "");
    if (k < 0) { /* never a credential of unknown power */
        char m[64];
        snprintf(m, sizeof(m), "token: unknown kind '%.16s'", kind ? (const char *)kind : "");
        store_set_errmsg(st, m);
        return -EIO;
    }
    out->kind = (enum store_token_kind)k;
    store_col_copy(s, 2, out->user, sizeof(out->user));
    store_col_copy(s, 3, out->role, sizeof(out->role));
    out->created_ms = db_column_int64(s, 4);
    out->expires_ms = db_column_int64(s, 5);
    out->revoked_ms = db_column_int64(s, 6);
    store_col_copy(s, 7, out->parent, sizeof(out->parent));
    memcpy(out->id, out->hash, STORE_TOKEN_ID_LEN);
    out->id[STORE_TOKEN_ID_LEN] = '\0';
    return 0;
}

static int token_get_read(struct store *st, const char *hash, struct store_token *out);

/* Every request with a token asks this: a token found is kept in the read cache (one not
 * found is not: a stranger's guesses would only fill it). */
int store_token_get(struct store *st, const char *hash, struct store_token *out)
{
    const void *val;
    size_t n;
    if (store_rcache_get(st, S_TOKEN_GET, hash, &val, &n) && n == sizeof(*out)) {
        memcpy(out, val, sizeof(*out));
        return 0;
    }
    int rc = token_get_read(st, hash, out);
    if (rc == 0)
        store_rcache_put(st, S_TOKEN_GET, hash, out, sizeof(*out));
    return rc;
}

static int token_get_read(struct store *st, const char *hash, struct store_token *out)
{
    struct db_stmt *s = store_stmt(st, S_TOKEN_GET);
    store_bind_text(s, 1, hash);
    int rc = db_step(s), trc = 0;
    if (rc == DB_ROW)
        trc = token_row(st, s, out);
    db_reset(s);
    db_clear_bindings(s);
    if (trc < 0)
        return trc;
    return rc == DB_ROW ? 0 : rc == DB_DONE ? -ENOENT : store_fail(st, "get token");
}

int store_token_list(struct store *st, const char *user, const char *id, store_token_cb cb,
                     void *arg)
{
    struct db_stmt *s = store_stmt(st, S_TOKEN_LIST);
    store_bind_text(s, 1, user);
    store_bind_text(s, 2, id);
    int step, rc = 0;
    while ((step = db_step(s)) == DB_ROW) {
        struct store_token t;
        if ((rc = token_row(st, s, &t)) < 0 || (rc = cb(arg, &t)) != 0)
            break;
    }
    if (rc == 0 && step != DB_DONE)
        rc = store_fail(st, "list tokens");
    db_reset(s);
    db_clear_bindings(s);
    return rc;
}

/* Revoke the tokens derived from `hash`, however deep: the number revoked, or < 0. */
static int revoke_descendants(struct store *st, const char *hash, int64_t now_ms)
{
    struct db_stmt *s = store_stmt(st, S_TOKEN_REVOKE_DESC);
    store_bind_text(s, 1, hash);
    db_bind_int64(s, 2, now_ms);
    int rc = store_step_done(st, s, "revoke derived tokens");
    return rc < 0 ? rc : (int)db_changes(store_db(st));
}

int store_token_revoke(struct store *st, const char *hash, int64_t now_ms)
{
    struct db_stmt *s = store_stmt(st, S_TOKEN_REVOKE);
    store_bind_text(s, 1, hash);
    db_bind_int64(s, 2, now_ms);
    int rc = store_step_done(st, s, "revoke token");
    if (rc == 0 && db_changes(store_db(st)) == 0)
        return -ENOENT;
    return rc < 0 ? rc : revoke_descendants(st, hash, now_ms);
}

int store_token_delete_user(struct store *st, enum store_token_kind kind, const char *user)
{
    if ((int)kind < 0 || (size_t)kind >= sizeof(token_kind_names) / sizeof(token_kind_names[0]))
        return -EINVAL;
    struct db_stmt *s = store_stmt(st, S_TOKEN_DEL_USER);
    store_bind_text(s, 1, token_kind_names[kind]);
    store_bind_text(s, 2, user);
    return store_step_done(st, s, "delete tokens");
}

int store_token_live(struct store *st, enum store_token_kind kind, const char *user, int64_t now_ms)
{
    if ((int)kind < 0 || (size_t)kind >= sizeof(token_kind_names) / sizeof(token_kind_names[0]))
        return -EINVAL;
    struct db_stmt *s = store_stmt(st, S_TOKEN_LIVE);
    store_bind_text(s, 1, token_kind_names[kind]);
    store_bind_text(s, 2, user);
    db_bind_int64(s, 3, now_ms);
    int rc = db_step(s), n = rc == DB_ROW ? db_column_int(s, 0) : 0;
    db_reset(s);
    db_clear_bindings(s);
    return rc == DB_ROW ? n > 0 : store_fail(st, "count tokens");
}

static int token_role_stmt(struct store *st, enum store_stmt_id id, enum store_token_kind kind,
                           const char *user, const char *role, const char *to)
{
    if ((int)kind < 0 || (size_t)kind >= sizeof(token_kind_names) / sizeof(token_kind_names[0]))
        return -EINVAL;
    struct db_stmt *s = store_stmt(st, id);
    store_bind_text(s, 1, token_kind_names[kind]);
    store_bind_text(s, 2, user);
    store_bind_text(s, 3, role);
    if (to)
        store_bind_text(s, 4, to);
    return store_step_done(st, s, "update tokens");
}

int store_token_delete_role(struct store *st, enum store_token_kind kind, const char *user,
                            const char *role)
{
    return token_role_stmt(st, S_TOKEN_DEL_ROLE, kind, user, role, NULL);
}

int store_token_set_role(struct store *st, enum store_token_kind kind, const char *user,
                         const char *from, const char *to)
{
    return token_role_stmt(st, S_TOKEN_SET_ROLE, kind, user, from, to);
}
