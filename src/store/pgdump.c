/*
 * pgdump.c - the backup of a database kept in PostgreSQL, by PostgreSQL's own tools
 * (store.h "Backups"): pg_dump makes one consistent snapshot of a live database in its
 * custom format (one read-only transaction: docketd's writer never waits for it), and
 * pg_restore puts one back, in a single transaction, into a database no docketd leads.
 * The tools run as child processes with the URI's password in their environment
 * (PGPASSWORD), never on their command line, where any local user could read it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/db.h"
#include "store/store.h"
#include "store/store_int.h"
#include "util/str.h"

extern char **environ;

/* uri without its password (postgresql://user:pw@host/db, or ...?password=pw), the
 * password apart. */
static void split_password(const char *uri, char *clean, size_t len, char *pw, size_t pwlen)
{
    pw[0] = '\0';
    str_copy(clean, len, uri);
    char *auth = strstr(clean, "://");
    if (auth) {
        auth += 3;
        char *end = auth + strcspn(auth, "/?");
        char *at = NULL;
        for (char *p = auth; p < end; p++)
            if (*p == '@')
                at = p;
        char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
        if (colon) {
            snprintf(pw, pwlen, "%.*s", (int)(at - colon - 1), colon + 1);
            memmove(colon, at, strlen(at) + 1);
        }
    }
    char *q = strstr(clean, "password=");
    if (q && (q[-1] == '?' || q[-1] == '&')) {
        char *v = q + strlen("password="), *next = v + strcspn(v, "&");
        snprintf(pw, pwlen, "%.*s", (int)(next - v), v);
        if (*next == '&')
            next++;
        memmove(q, next, strlen(next) + 1);
    }
    size_t n = strlen(clean);
    if (n && (clean[n - 1] == '?' || clean[n - 1] == '&'))
        clean[n - 1] = '\0';
}

/* The environment for a tool: ours, with PGPASSWORD when the URI had a password. */
static char **tool_env(const char *pw, char *pwvar, size_t len)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof(*env));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "PGPASSWORD=", 11) != 0)
            env[k++] = environ[i];
    if (pw[0]) {
        snprintf(pwvar, len, "PGPASSWORD=%s", pw);
        env[k++] = pwvar;
    }
    return env;
}

/* Run argv (argv[0] found on PATH) to its end, its output to /dev/null and its errors to
 * errfile; `cancel`, once set, kills it. 0, or -EIO with err saying why. */
static int run_tool(char *const argv[], const char *pw, const char *errfile,
                    const atomic_bool *cancel, char *err, size_t errlen)
{
    char pwvar[512];
    char **env = tool_env(pw, pwvar, sizeof(pwvar));
    posix_spawn_file_actions_t fa;
    pid_t pid;
    if (!env) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    if (rc != 0) {
        snprintf(err, errlen, "cannot run %s: %s (Debian's postgresql-client has it)", argv[0],
                 strerror(rc));
        return -rc;
    }
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, cancel ? WNOHANG : 0);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            snprintf(err, errlen, "waiting for %s: %s", argv[0], strerror(errno));
            return -EIO;
        }
        if (cancel && atomic_load(cancel)) {
            kill(pid, SIGTERM);
            (void)waitpid(pid, &status, 0);
            snprintf(err, errlen, "%s stopped: the backup was abandoned", argv[0]);
            return -ECANCELED;
        }
        if (w == 0)
            usleep(20000);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char msg[300] = "";
    FILE *f = fopen(errfile, "r");
    if (f) {
        size_t n = fread(msg, 1, sizeof(msg) - 1, f);
        msg[n] = '\0';
        fclose(f);
    }
    msg[strcspn(msg, "\n")] = '\0';
    snprintf(err, errlen, "%s failed: %s", argv[0], msg[0] ? msg : "no message");
    return -EIO;
}

/* The schema version of the database at uri (a read-only connection of its own). */
static int schema_of(const char *uri, int *out, char *err, size_t errlen)
{
    struct store *st = store_open_readonly(uri, err, errlen);
    if (!st)
        return -EIO;
    *out = store_schema_version(st);
    store_close(st);
    return 0;
}

int store_pg_backup_write(const char *uri, const char *dest, const atomic_bool *cancel,
                          struct store_backup_info *out, char *err, size_t errlen)
{
    char clean[1024], pw[256], errfile[4200];
    struct stat sb;
    int fd = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create '%s': %s", dest, strerror(errno));
        return -errno;
    }
    close(fd);
    split_password(uri, clean, sizeof(clean), pw, sizeof(pw));
    snprintf(errfile, sizeof(errfile), "%s.err", dest);
    int rc = schema_of(uri, &out->schema, err, errlen);
    char dbarg[1100], filearg[4200];
    snprintf(dbarg, sizeof(dbarg), "--dbname=%s", clean);
    snprintf(filearg, sizeof(filearg), "--file=%s", dest);
    char *dump[] = {"pg_dump", "--format=custom", "--no-owner", "--no-privileges", filearg, dbarg,
                    NULL};
    if (rc == 0)
        rc = run_tool(dump, pw, errfile, cancel, err, errlen);
    char *list[] = {"pg_restore", "--list", (char *)dest, NULL}; /* the archive reads whole */
    if (rc == 0)
        rc = run_tool(list, "", errfile, cancel, err, errlen);
    if (rc == 0 && stat(dest, &sb) < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot stat '%s': %s", dest, strerror(errno));
    }
    if (rc == 0)
        out->bytes = (int64_t)sb.st_size;
    (void)unlink(errfile);
    if (rc < 0)
        (void)unlink(dest);
    return rc;
}

bool store_backup_is_pg_dump(const char *path)
{
    char magic[5] = "";
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t n = fread(magic, 1, sizeof(magic), f);
    fclose(f);
    return n == sizeof(magic) && memcmp(magic, "PGDMP", 5) == 0;
}

/* Whether the database on db has docketd's schema (an empty one has nothing to set aside). */
static bool has_schema(struct db *db)
{
    struct db_stmt *s = NULL;
    int got = 0;
    if (db_prepare(db, "SELECT (to_regclass('schema_version') IS NOT NULL)::int", false, &s) == 0 &&
        db_step(s) == DB_ROW)
        got = db_column_int(s, 0);
    db_finalize(s);
    return got != 0;
}

/* Hold the leader's lock on a connection of our own: no docketd leads while it is held. */
static struct db *hold_leader_lock(const char *uri, char *err, size_t errlen)
{
    struct db *db = db_open(uri, false, err, errlen);
    struct db_stmt *s = NULL;
    if (!db)
        return NULL;
    int got = 0;
    if (db_prepare(db, "SELECT pg_try_advisory_lock(" STORE_LEADER_LOCK_KEY ")::int", false, &s) ==
            0 &&
        db_step(s) == DB_ROW)
        got = db_column_int(s, 0);
    else
        snprintf(err, errlen, "take the leader's lock: %s", db_errmsg(db));
    db_finalize(s);
    if (!got) {
        if (!err[0])
            snprintf(err, errlen,
                     "a docketd leads this database: stop every docketd on it "
                     "(standbys too), then restore");
        db_close(db);
        return NULL;
    }
    return db;
}

int store_pg_restore(const char *uri, const char *file, const char *aside, char *err, size_t errlen)
{
    char clean[1024], pw[256], errfile[4200], dbarg[1100], filearg[4200];
    struct store_backup_info before;
    err[0] = '\0';
    if (!store_backup_is_pg_dump(file)) {
        snprintf(err, errlen,
                 "'%s' is not a pg_dump archive (custom format): a backup of a "
                 "SQLite docketd restores with --db on a SQLite file",
                 file);
        return -EINVAL;
    }
    split_password(uri, clean, sizeof(clean), pw, sizeof(pw));
    snprintf(errfile, sizeof(errfile), "%s.err", aside);
    char *list[] = {"pg_restore", "--list", (char *)file, NULL};
    int rc = run_tool(list, "", errfile, NULL, err, errlen);
    struct db *lock = rc == 0 ? hold_leader_lock(uri, err, errlen) : NULL;
    if (rc == 0 && !lock)
        rc = -EBUSY;
    /* what the database holds now goes aside first, as a SQLite restore moves its file */
    if (rc == 0 && has_schema(lock))
        rc = store_pg_backup_write(uri, aside, NULL, &before, err, errlen);
    snprintf(dbarg, sizeof(dbarg), "--dbname=%s", clean);
    snprintf(filearg, sizeof(filearg), "%s", file);
    char *restore[] = {
        "pg_restore",           "--clean",         "--if-exists", "--no-owner", "--no-privileges",
        "--single-transaction", "--exit-on-error", dbarg,         filearg,      NULL};
    if (rc == 0)
        rc = run_tool(restore, pw, errfile, NULL, err, errlen);
    (void)unlink(errfile);
    db_close(lock);
    return rc;
}
