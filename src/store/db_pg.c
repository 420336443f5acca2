/*
 * db_pg.c - the statement layer on PostgreSQL through libpq (db.h). A statement's `?N`
 * become `$k` (numbered by first appearance, so a parameter the SQL lacks is simply not
 * sent, as SQLite ignores binding it); parameters go as text, blobs as binary bytea, each
 * declared by its C type (int8, text, bytea), so the server never guesses a narrower
 * type nor fails to guess one ("?1 IS NULL OR col = ?1"). A persistent
 * statement is prepared on the server at its first run (its integer parameters known by
 * then); another runs with PQexecParams, one round trip. Rows come back whole, as text.
 * SAVEPOINT, RELEASE and blind writes (db_mark_blind) inside a transaction wait, with the
 * parameters they were stepped with, and go in one pipeline with the next statement that
 * needs an answer: a submission's writes are one round trip, not one each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"

enum {
    PG_MAX_DEFERRED = 64,
    PG_MAX_PARAMS = 100,
    PG_MAX_BLOB_COLS = 16,
    OID_INT8 = 20,
    OID_TEXT = 25,
    OID_BYTEA = 17
};

struct pg_stmt;

/* A statement sent later, with the parameters it was stepped with (moved from it). */
struct pg_deferred {
    struct pg_stmt *s;
    char **vals; /* s->nparams of them, owned */
    int *lens, *fmts;
};

struct pg_db {
    struct db base;
    PGconn *c;
    char errmsg[512];
    int64_t changes;
    unsigned next_name;
    bool readonly;
    unsigned gen;                  /* connections made: server-side statements are per one */
    PGTransactionStatusType after; /* the transaction state after the last statement */
    /* SAVEPOINT, RELEASE and blind writes not sent yet: they go in one pipeline with the
     * next statement (a round trip each saved; their failure is that statement's) */
    struct pg_deferred deferred[PG_MAX_DEFERRED];
    int ndeferred;
    /* a blind write failed: every statement fails now but a whole ROLLBACK (db.h) */
    bool write_failed;
    char failed[600];
};

struct pg_stmt {
    struct db_stmt base;
    char *sql;     /* with $k */
    char name[24]; /* server-side name, "" for a one-off statement */
    bool prepared; /* on the server already (of connection `gen`) */
    unsigned gen;
    bool deferrable;                  /* SAVEPOINT x, RELEASE x: no parameters, no rows */
    bool blind;                       /* a blind write (db_mark_blind) */
    bool rollback;                    /* ROLLBACK (whole): what ends a failed blind write */
    bool queued;                      /* stepped, waiting in the connection's deferred list */
    int nparams;                      /* distinct parameters */
    unsigned char map[PG_MAX_PARAMS]; /* ?N -> k (1-based); 0: not in the SQL */
    char *vals[PG_MAX_PARAMS];
    int lens[PG_MAX_PARAMS], fmts[PG_MAX_PARAMS];
    unsigned types[PG_MAX_PARAMS];
    PGresult *res; /* after the run: its rows */
    int row, nrows;
    /* the current row's bytea columns, decoded on first read: valid to the next step */
    unsigned char *blob[PG_MAX_BLOB_COLS];
    size_t blob_len[PG_MAX_BLOB_COLS];
};

static struct pg_db *conn(struct db *db)
{
    return (struct pg_db *)db;
}

static struct pg_stmt *st_of(struct db_stmt *s)
{
    return (struct pg_stmt *)s;
}

/* Keep libpq's message, one line (it ends in a newline). */
static int keep_error(struct pg_db *c, const char *msg)
{
    snprintf(c->errmsg, sizeof(c->errmsg), "%s", msg && msg[0] ? msg : "PostgreSQL error");
    size_t n = strlen(c->errmsg);
    while (n > 0 && (c->errmsg[n - 1] == '\n' || c->errmsg[n - 1] == ' '))
        c->errmsg[--n] = '\0';
    for (char *p = c->errmsg; *p; p++) /* libpq's hint on a line of its own: one line */
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    return -EIO;
}

/* A failed result's message, or the connection's when the result has none (one made
 * here for a pipeline that broke, or none at all). */
static const char *result_error(struct pg_db *c, const PGresult *r)
{
    const char *m = r ? PQresultErrorMessage(r) : "";
    return m && m[0] ? m : PQerrorMessage(c->c);
}

static void p_close(struct db *db)
{
    PQfinish(conn(db)->c);
    free(db);
}

static const char *p_errmsg(struct db *db)
{
    return conn(db)->errmsg;
}

/* Count the rows an INSERT, UPDATE or DELETE changed, as sqlite3_changes does. */
static void note_changes(struct pg_db *c, PGresult *r)
{
    const char *tag = PQcmdStatus(r);
    if (strncmp(tag, "INSERT", 6) == 0 || strncmp(tag, "UPDATE", 6) == 0 ||
        strncmp(tag, "DELETE", 6) == 0)
        c->changes = strtoll(PQcmdTuples(r), NULL, 10);
}

static PGresult *execute(struct pg_db *c, struct pg_stmt *s, const char *sql);

static int p_exec(struct db *db, const char *sql)
{
    struct pg_db *c = conn(db);
    if (c->write_failed && strcmp(sql, "ROLLBACK") != 0)
        return keep_error(c, c->failed);
    PGresult *r = execute(c, NULL, sql);
    ExecStatusType st = PQresultStatus(r);
    int rc = 0;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
        note_changes(c, r);
        c->write_failed = c->write_failed && strcmp(sql, "ROLLBACK") != 0;
    } else
        rc = keep_error(c, c->write_failed ? c->failed : result_error(c, r));
    PQclear(r);
    return rc;
}

static int64_t p_changes(struct db *db)
{
    return conn(db)->changes;
}

static bool p_in_tx(struct db *db)
{
    struct pg_db *c = conn(db);
    if (c->ndeferred > 0) /* what is not sent yet goes first: the server's word is then whole */
        PQclear(execute(c, NULL, NULL));
    PGTransactionStatusType t = PQtransactionStatus(conn(db)->c);
    return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

/* ?N -> $k outside quotes; -EINVAL past PG_MAX_PARAMS. */
static int translate(struct pg_stmt *s, const char *sql)
{
    size_t len = strlen(sql);
    char *out = malloc(len * 2 + 1), *o = out;
    int last = 0;
    char quote = 0;
    if (!out)
        return -ENOMEM;
    for (const char *p = sql; *p;) {
        if (quote) {
            if (*p == quote)
                quote = 0;
            *o++ = *p++;
            continue;
        }
        if (*p == '\'' || *p == '"') {
            quote = *p;
            *o++ = *p++;
            continue;
        }
        if (*p != '?') {
            *o++ = *p++;
            continue;
        }
        p++;
        int n = 0;
        if (*p >= '0' && *p <= '9')
            for (; *p >= '0' && *p <= '9'; p++)
                n = n * 10 + (*p - '0');
        else
            n = last + 1; /* a bare ?: the next number, as SQLite counts */
        if (n <= 0 || n >= PG_MAX_PARAMS) {
            free(out);
            return -EINVAL;
        }
        last = n > last ? n : last;
        if (!s->map[n])
            s->map[n] = (unsigned char)++s->nparams;
        o += sprintf(o, "$%d", s->map[n]);
    }
    *o = '\0';
    s->sql = out;
    return 0;
}

static int p_prepare(struct db *db, const char *sql, bool persistent, struct db_stmt **out)
{
    struct pg_db *c = conn(db);
    struct pg_stmt *s = calloc(1, sizeof(*s));
    *out = NULL;
    if (!s)
        return keep_error(c, "out of memory");
    int rc = translate(s, sql);
    if (rc < 0) {
        free(s);
        return keep_error(c, rc == -ENOMEM ? "out of memory" : "too many parameters");
    }
    if (persistent)
        snprintf(s->name, sizeof(s->name), "d%u", ++c->next_name);
    /* not BEGIN: one that fails (the server away) must fail store_begin, so a request
     * between transactions fails alone and docketd serves on once the server is back */
    s->deferrable = persistent && s->nparams == 0 &&
                    (strncmp(sql, "SAVEPOINT ", 10) == 0 || strncmp(sql, "RELEASE ", 8) == 0);
    s->rollback = strcmp(sql, "ROLLBACK") == 0;
    s->base.db = db;
    *out = &s->base;
    return 0;
}

static void free_deferred(struct pg_deferred *d)
{
    for (int k = 0; d->vals && k < d->s->nparams; k++)
        free(d->vals[k]);
    free(d->vals);
    free(d->lens);
    free(d->fmts);
    *d = (struct pg_deferred){0};
}

/* Every deferred statement gone: sent, or never to be. */
static void drop_deferred(struct pg_db *c)
{
    for (int i = 0; i < c->ndeferred; i++)
        free_deferred(&c->deferred[i]);
    c->ndeferred = 0;
}

static void drop_row_state(struct pg_stmt *s)
{
    for (int i = 0; i < PG_MAX_BLOB_COLS; i++) {
        PQfreemem(s->blob[i]);
        s->blob[i] = NULL;
    }
}

static void p_reset(struct db_stmt *b)
{
    struct pg_stmt *s = st_of(b);
    drop_row_state(s);
    PQclear(s->res);
    s->res = NULL;
    s->row = s->nrows = 0;
    s->queued = false;
}

static void p_clear_bindings(struct db_stmt *b)
{
    struct pg_stmt *s = st_of(b);
    for (int k = 0; k < s->nparams; k++) {
        free(s->vals[k]);
        s->vals[k] = NULL;
        s->lens[k] = s->fmts[k] = 0;
    }
}

static void p_finalize(struct db_stmt *b)
{
    struct pg_stmt *s = st_of(b);
    struct pg_db *c = conn(b->db);
    int n = 0;
    for (int i = 0; i < c->ndeferred; i++) /* never sent now: the connection is closing */
        if (c->deferred[i].s != s)
            c->deferred[n++] = c->deferred[i];
        else
            free_deferred(&c->deferred[i]);
    c->ndeferred = n;
    p_reset(b);
    p_clear_bindings(b);
    if (s->prepared && s->gen == conn(b->db)->gen) {
        char sql[48];
        snprintf(sql, sizeof(sql), "DEALLOCATE %s", s->name);
        PQclear(PQexec(conn(b->db)->c, sql));
    }
    free(s->sql);
    free(s);
}

/* The slot of parameter ?i, or -1 when the SQL has none. */
static int slot(struct pg_stmt *s, int i)
{
    return i > 0 && i < PG_MAX_PARAMS && s->map[i] ? s->map[i] - 1 : -1;
}

static void put(struct pg_stmt *s, int i, char *v, int len, int fmt, unsigned type)
{
    int k = slot(s, i);
    if (k < 0) {
        free(v);
        return;
    }
    free(s->vals[k]);
    s->vals[k] = v;
    s->lens[k] = len;
    s->fmts[k] = fmt;
    if (!s->prepared && type)
        s->types[k] = type; /* fixed at the first run, when the server prepares it */
}

static void p_bind_int64(struct db_stmt *b, int i, int64_t v)
{
    char *t = malloc(24);
    if (t)
        snprintf(t, 24, "%" PRId64, v);
    put(st_of(b), i, t, 0, 0, OID_INT8);
}

static void p_bind_text(struct db_stmt *b, int i, const char *v)
{
    put(st_of(b), i, v ? strdup(v) : NULL, 0, 0, OID_TEXT);
}

static void p_bind_blob(struct db_stmt *b, int i, const void *v, size_t n)
{
    char *copy = malloc(n ? n : 1);
    if (copy && n)
        memcpy(copy, v, n);
    put(st_of(b), i, copy, (int)n, 1, OID_BYTEA);
}

static void p_bind_null(struct db_stmt *b, int i)
{
    put(st_of(b), i, NULL, 0, 0, 0);
}

/* Statement s prepared on this connection's server: NULL, or the failed result. */
static PGresult *prepared(struct pg_db *c, struct pg_stmt *s)
{
    if (!s->name[0] || (s->prepared && s->gen == c->gen))
        return NULL;
    PGresult *r = PQprepare(c->c, s->name, s->sql, s->nparams, s->types);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        return r;
    PQclear(r);
    s->prepared = true;
    s->gen = c->gen;
    return NULL;
}

/* The next result of a pipeline, past the NULL that ends the one before; NULL when the
 * connection has none to give (it broke). */
static PGresult *next_result(struct pg_db *c)
{
    for (int tries = 0; tries < 2; tries++) {
        PGresult *r = PQgetResult(c->c);
        if (r)
            return r;
        if (PQstatus(c->c) == CONNECTION_BAD)
            return NULL;
    }
    return NULL;
}

/* A blind write failed: nothing but a whole ROLLBACK may run on this transaction now. */
static void blind_failed(struct pg_db *c, const char *msg)
{
    c->write_failed = true;
    snprintf(c->failed, sizeof(c->failed), "an earlier write of this transaction failed: %s", msg);
}

/* The deferred statements, then s (when given), in one pipeline: one round trip. The
 * result is the first deferred statement's that failed, or s's (NULL without s, when all
 * went through). */
static PGresult *pipeline(struct pg_db *c, struct pg_stmt *s)
{
    PGresult *r = NULL;
    for (int i = 0; i < c->ndeferred && !r; i++)
        r = prepared(c, c->deferred[i].s);
    if (!r && s)
        r = prepared(c, s);
    if (r)
        return r;
    if (!PQenterPipelineMode(c->c))
        return PQmakeEmptyPGresult(c->c, PGRES_FATAL_ERROR);
    bool ok = true;
    for (int i = 0; i < c->ndeferred; i++) {
        const struct pg_deferred *d = &c->deferred[i];
        ok = ok && PQsendQueryPrepared(c->c, d->s->name, d->s->nparams,
                                       (const char *const *)d->vals, d->lens, d->fmts, 0);
    }
    if (s) {
        const char *const *vals = (const char *const *)s->vals;
        ok = ok &&
             (s->name[0] ? PQsendQueryPrepared(c->c, s->name, s->nparams, vals, s->lens, s->fmts, 0)
                         : PQsendQueryParams(c->c, s->sql, s->nparams, s->types, vals, s->lens,
                                             s->fmts, 0));
    }
    ok = ok && PQpipelineSync(c->c);
    PGresult *bad = NULL, *cur = NULL;
    int n = c->ndeferred + (s ? 1 : 0);
    for (int i = 0; ok && i < n; i++) {
        PGresult *x = next_result(c);
        if (!x) {
            ok = false;
            break;
        }
        if (s && i == n - 1)
            cur = x;
        else if (PQresultStatus(x) != PGRES_COMMAND_OK && !bad) {
            bad = x;
            if (c->deferred[i].s->blind)
                blind_failed(c, result_error(c, x));
        } else
            PQclear(x);
    }
    for (PGresult *x; ok && (x = next_result(c));) { /* to the sync */
        bool sync = PQresultStatus(x) == PGRES_PIPELINE_SYNC;
        PQclear(x);
        if (sync)
            break;
    }
    PQexitPipelineMode(c->c);
    if (!ok) {
        PQclear(bad);
        PQclear(cur);
        return PQmakeEmptyPGresult(c->c, PGRES_FATAL_ERROR);
    }
    if (bad) {
        PQclear(cur);
        return bad;
    }
    return cur;
}

/* One try: `sql` (several statements allowed, no parameters) or statement s, prepared on
 * the server first when it is persistent and not there yet; the deferred statements
 * first. */
static PGresult *attempt(struct pg_db *c, struct pg_stmt *s, const char *sql)
{
    if (c->ndeferred > 0) {
        PGresult *r = pipeline(c, s);
        if (s || r || !sql)
            return r;
    }
    if (!s)
        return PQexec(c->c, sql);
    const char *const *vals = (const char *const *)s->vals;
    if (!s->name[0])
        return PQexecParams(c->c, s->sql, s->nparams, s->types, vals, s->lens, s->fmts, 0);
    PGresult *failed = prepared(c, s);
    if (failed)
        return failed;
    return PQexecPrepared(c->c, s->name, s->nparams, vals, s->lens, s->fmts, 0);
}

static int session_setup(struct pg_db *c);

/* attempt(), and once more on a new connection when the server went away while this one
 * was between transactions (a restart of PostgreSQL): nothing of a transaction can be
 * lost then. A connection lost inside a transaction is an error: its commit fails, and
 * docketd stops to reload the truth. */
static PGresult *execute(struct pg_db *c, struct pg_stmt *s, const char *sql)
{
    PGTransactionStatusType before = c->after;
    PGresult *r = attempt(c, s, sql);
    ExecStatusType st = PQresultStatus(r);
    if ((!r && !s && !sql) || st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ||
        PQstatus(c->c) != CONNECTION_BAD || before != PQTRANS_IDLE) {
        c->after = PQtransactionStatus(c->c);
        drop_deferred(c); /* sent (or failed with the statement) */
        return r;
    }
    drop_deferred(c); /* none: they are only ever inside a transaction (not BEGIN) */
    PQreset(c->c);
    if (PQstatus(c->c) != CONNECTION_OK)
        return r; /* still away: the first error stands */
    c->gen++;
    c->after = PQTRANS_IDLE;
    db_touch_all(&c->base); /* what was read before may have changed while away */
    if (session_setup(c) < 0)
        return r;
    PQclear(r);
    r = attempt(c, s, sql);
    c->after = PQtransactionStatus(c->c);
    drop_deferred(c);
    return r;
}

/* Run the statement with its bindings; its rows (or none) wait in s->res. */
static int run(struct pg_stmt *s)
{
    struct pg_db *c = conn(s->base.db);
    if (c->write_failed && !s->rollback)
        return keep_error(c, c->failed);
    PGresult *r = execute(c, s, NULL);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        int rc = keep_error(c, c->write_failed ? c->failed : result_error(c, r));
        PQclear(r);
        return rc;
    }
    note_changes(c, r);
    if (s->rollback)
        c->write_failed = false;
    s->res = r;
    s->nrows = st == PGRES_TUPLES_OK ? PQntuples(r) : 0;
    s->row = -1;
    return 0;
}

/* Whether s may wait for the next statement: SAVEPOINT and RELEASE (only ever run inside
 * a transaction), a blind write inside one (outside, nothing would send it soon). */
static bool may_defer(struct pg_db *c, const struct pg_stmt *s)
{
    bool in_tx = c->after == PQTRANS_INTRANS || c->ndeferred > 0;
    return (s->deferrable || (s->blind && in_tx)) && c->ndeferred < PG_MAX_DEFERRED &&
           !c->write_failed && PQstatus(c->c) == CONNECTION_OK;
}

/* Queue s with its parameters, moved out of it (the caller clears its bindings next). */
static int defer(struct pg_db *c, struct pg_stmt *s)
{
    struct pg_deferred d = {s, NULL, NULL, NULL};
    if (s->nparams > 0) {
        d.vals = calloc((size_t)s->nparams, sizeof(*d.vals));
        d.lens = calloc((size_t)s->nparams, sizeof(*d.lens));
        d.fmts = calloc((size_t)s->nparams, sizeof(*d.fmts));
        if (!d.vals || !d.lens || !d.fmts) {
            free_deferred(&d);
            return -ENOMEM; /* run now instead */
        }
        for (int k = 0; k < s->nparams; k++) {
            d.vals[k] = s->vals[k];
            s->vals[k] = NULL;
            d.lens[k] = s->lens[k];
            d.fmts[k] = s->fmts[k];
        }
    }
    c->deferred[c->ndeferred++] = d;
    return 0;
}

static void p_mark_blind(struct db_stmt *b)
{
    struct pg_stmt *s = st_of(b);
    s->blind = s->name[0] != '\0'; /* persistent only: prepared on the server */
}

static int p_step(struct db_stmt *b)
{
    struct pg_stmt *s = st_of(b);
    struct pg_db *c = conn(b->db);
    drop_row_state(s);
    if (s->queued)
        return DB_DONE;
    if (!s->res && may_defer(c, s) && defer(c, s) == 0) {
        s->queued = true;
        return DB_DONE;
    }
    if (!s->res && run(s) < 0)
        return DB_ERROR;
    if (s->row < s->nrows)
        s->row++;
    return s->row < s->nrows ? DB_ROW : DB_DONE;
}

static bool p_column_is_null(struct db_stmt *b, int i)
{
    struct pg_stmt *s = st_of(b);
    return !s->res || s->row >= s->nrows || i >= PQnfields(s->res) ||
           PQgetisnull(s->res, s->row, i);
}

static const char *p_column_text(struct db_stmt *b, int i)
{
    struct pg_stmt *s = st_of(b);
    return p_column_is_null(b, i) ? NULL : PQgetvalue(s->res, s->row, i);
}

static int64_t p_column_int64(struct db_stmt *b, int i)
{
    const char *v = p_column_text(b, i);
    if (!v)
        return 0;
    if (v[0] == 't' || v[0] == 'f') /* a boolean, where SQLite would give 1 or 0 */
        return v[0] == 't';
    return strtoll(v, NULL, 10);
}

/* Column i as bytes: bytea comes as text ("\x..."), decoded once per row; false for
 * NULL, or a column past PG_MAX_BLOB_COLS. */
static bool decode_blob(struct pg_stmt *s, int i)
{
    if (i < 0 || i >= PG_MAX_BLOB_COLS)
        return false;
    if (s->blob[i])
        return true;
    const char *v = p_column_text(&s->base, i);
    if (v)
        s->blob[i] = PQunescapeBytea((const unsigned char *)v, &s->blob_len[i]);
    return s->blob[i] != NULL;
}

static const void *p_column_blob(struct db_stmt *b, int i)
{
    struct pg_stmt *s = st_of(b);
    return decode_blob(s, i) ? s->blob[i] : NULL;
}

static size_t p_column_bytes(struct db_stmt *b, int i)
{
    struct pg_stmt *s = st_of(b);
    return decode_blob(s, i) ? s->blob_len[i] : 0;
}

static const struct db_ops pg_ops = {
    .close = p_close,
    .errmsg = p_errmsg,
    .exec = p_exec,
    .changes = p_changes,
    .in_tx = p_in_tx,
    .prepare = p_prepare,
    .mark_blind = p_mark_blind,
    .finalize = p_finalize,
    .reset = p_reset,
    .clear_bindings = p_clear_bindings,
    .step = p_step,
    .bind_int64 = p_bind_int64,
    .bind_text = p_bind_text,
    .bind_blob = p_bind_blob,
    .bind_null = p_bind_null,
    .column_int64 = p_column_int64,
    .column_text = p_column_text,
    .column_blob = p_column_blob,
    .column_bytes = p_column_bytes,
    .column_is_null = p_column_is_null,
};

/* The server's notices (e.g. "relation already exists, skipping") are not errors. */
static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

/* A new connection's settings: every commit durable before it returns (the server's
 * default, made sure of), and a read-only store refused any write by the server itself. */
static int session_setup(struct pg_db *c)
{
    static const char *const sql[] = {"SET synchronous_commit = on",
                                      "SET client_min_messages = warning",
                                      "SET default_transaction_read_only = on"};
    PQsetNoticeProcessor(c->c, quiet, NULL);
    for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]) - (c->readonly ? 0 : 1); i++) {
        PGresult *r = PQexec(c->c, sql[i]);
        int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : keep_error(c, PQerrorMessage(c->c));
        PQclear(r);
        if (rc < 0)
            return rc;
    }
    /* when this server started: pgsync.c tells a restart (and what it lost) from a flush */
    PGresult *r = PQexec(c->c, "SELECT (extract(epoch FROM pg_postmaster_start_time())"
                               " * 1000000)::bigint");
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
                 ? 0
                 : keep_error(c, PQerrorMessage(c->c));
    if (rc == 0)
        c->base.server_started = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return rc;
}

struct db *db_pg_open(const char *uri, bool readonly, char *err, size_t errlen)
{
    struct pg_db *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->base = (struct db){.ops = &pg_ops, .engine = DB_POSTGRES};
    c->c = PQconnectdb(uri);
    if (!c->c || PQstatus(c->c) != CONNECTION_OK) {
        keep_error(c, c->c ? PQerrorMessage(c->c) : "out of memory");
        snprintf(err, errlen, "cannot connect to PostgreSQL: %s", c->errmsg);
        p_close(&c->base);
        return NULL;
    }
    c->readonly = readonly;
    c->after = PQTRANS_IDLE;
    if (session_setup(c) < 0) {
        snprintf(err, errlen, "PostgreSQL: %s", c->errmsg);
        p_close(&c->base);
        return NULL;
    }
    return &c->base;
}
