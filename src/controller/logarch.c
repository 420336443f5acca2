/*
 * logarch.c - finished jobs' logs moved to an archive pool (logarch.h, docs/storage.md
 * "Job logs").
 *
 * Every storage.log_archive.every docketd walks STATE_DIR/logs. A stream file whose job
 * ended at least `after` ago, whose output is complete and which has not grown for
 * `after` either is copied, gzip-compressed, to POOL/docket-logs/K/NAME.gz (K = the job's
 * id / 1000): into a temporary file, fsynced, dropped from the page cache, read back and
 * checked (the same bytes and SHA-256 as the source, the source unchanged), then renamed
 * into place. Only then is the pointer (pool, path, sizes, SHA-256) written to the store.
 * The local copy goes at a later pass, once the pointer is committed and the archived
 * file is still there: a docketd that stops at any point loses nothing (a pass redoes a
 * copy whose pointer never made it, over the same name). Every directory under the pool
 * is reached from the pool's descriptor without following links, and one that is not
 * docketd's own, or that others may write in, is refused.
 *
 * A full pool (ENOSPC, EDQUOT) ends the pass with the file being copied removed, its log
 * kept here; the pool is then reported full to the storage_full alert rules until a pass
 * writes again. Each pass that did anything is audited (storage.log_archive).
 *
 * This runs in docketd's loop, so a pass copies at most LOGARCH_PASS_BYTES and the rest
 * waits for the next tick. Reads of an archived stream keep one decompressor open so that
 * a reader going through the log in order does not start it over at every chunk.
 */
#define _GNU_SOURCE
#include "controller/logarch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "controller/config.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/logs.h"
#include "controller/loop.h"
#include "controller/storage.h"
#include "protocol/storage.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

enum {
    LOGARCH_PASS_BYTES = 256 << 20, /* copied in one pass (one turn of the loop) */
    LOGARCH_BUF = 64 << 10,
};

static const char archive_dir[] = "docket-logs";

struct ctl_logarch {
    int64_t next_ms; /* the next pass */
    bool full;       /* the last pass stopped on a full pool */
    char full_pool[STORAGE_POOL_NAME_MAX];
    char full_msg[160];
    char last_failure[200]; /* the last pass's failure, audited once while it repeats */
    /* the stream being read in order: its decompressor and where it stands */
    gzFile rd;
    uint64_t rd_job;
    int rd_run, rd_stream;
    int64_t rd_pos;
};

/* What one pass did: audited, logged. */
struct pass {
    int64_t files, bytes, stored_bytes; /* archived now */
    int64_t dropped, freed_bytes;       /* local copies removed (archived earlier) */
    int64_t failed;
    int64_t budget;
    bool stop; /* the pool is full or unusable: no more this pass */
    char message[200];
};

static struct ctl_logarch *la_of(struct ctl *c)
{
    if (!c->logarch)
        c->logarch = xnonnull(calloc(1, sizeof(*c->logarch)), "log archive");
    return c->logarch;
}

static void reader_close(struct ctl_logarch *la)
{
    if (la->rd)
        gzclose_r(la->rd);
    la->rd = NULL;
}

void ctl_logarch_free(struct ctl *c)
{
    if (!c->logarch)
        return;
    reader_close(c->logarch);
    free(c->logarch);
    c->logarch = NULL;
}

/* ---- paths under the pool ------------------------------------------------------------ */

/* A directory of the archive opened (made when `make`) from dirfd without following a
 * link; one not docketd's or writable by others is refused (EPERM). */
static int open_dir_at(int dirfd, const char *name, bool make)
{
    if (make && mkdirat(dirfd, name, 0750) < 0 && errno != EEXIST)
        return -errno;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat sb;
    if (fstat(fd, &sb) < 0 || sb.st_uid != geteuid() || (sb.st_mode & 0022)) {
        close(fd);
        return -EPERM;
    }
    return fd;
}

/* The directory K of job `job` under POOL/docket-logs (made when `make`). */
static int shard_dir(const struct storage_pool *pool, uint64_t job, bool make, char *rel,
                     size_t rel_len)
{
    int root = open(pool->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return -errno;
    int top = open_dir_at(root, archive_dir, make);
    close(root);
    if (top < 0)
        return top;
    char k[24];
    snprintf(k, sizeof(k), "%llu", (unsigned long long)(job / 1000));
    int fd = open_dir_at(top, k, make);
    close(top);
    if (rel)
        snprintf(rel, rel_len, "%s/%s", archive_dir, k);
    return fd;
}

/* The archived file of a pointer opened for reading (O_NOFOLLOW on every step). */
static int open_archived(struct ctl *c, const struct store_log_archive *a)
{
    const struct storage_pool *pool = storage_pool_find(ctl_storage_policy(c), a->pool);
    const char *base = strrchr(a->path, '/');
    if (!pool || !base)
        return -ENOENT;
    int dir = shard_dir(pool, a->job, false, NULL, 0);
    if (dir < 0)
        return dir;
    int fd = openat(dir, base + 1, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int err = fd < 0 ? -errno : 0;
    close(dir);
    return fd < 0 ? err : fd;
}

/* ---- one stream archived ----------------------------------------------------------- */

static void hex(const unsigned char *d, unsigned n, char *out)
{
    for (unsigned i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static bool full_errno(int err)
{
    return err == ENOSPC || err == EDQUOT;
}

/* Compress src into fd: bytes read and their SHA-256; 0 or -errno. */
static int compress_into(int src, int fd, int64_t *bytes, char sha[65])
{
    gzFile gz = gzdopen(dup(fd), "wb6");
    if (!gz)
        return -ENOMEM;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    static char buf[LOGARCH_BUF];
    int err = 0;
    ssize_t got;
    *bytes = 0;
    while ((got = read(src, buf, sizeof(buf))) > 0) {
        EVP_DigestUpdate(md, buf, (size_t)got);
        *bytes += got;
        errno = 0;
        if (gzwrite(gz, buf, (unsigned)got) != (int)got) {
            int zerr;
            gzerror(gz, &zerr);
            err = zerr == Z_ERRNO && errno ? -errno : -EIO;
            break;
        }
    }
    if (got < 0 && !err)
        err = -errno;
    errno = 0;
    int zrc = gzclose_w(gz);
    if (!err && zrc != Z_OK)
        err = zrc == Z_ERRNO && errno ? -errno : -EIO;
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned dn = 0;
    EVP_DigestFinal_ex(md, d, &dn);
    EVP_MD_CTX_free(md);
    hex(d, dn, sha);
    return err;
}

/* Read the compressed file back from the disk: its bytes' count and SHA-256. */
static int check_copy(int fd, int64_t *bytes, char sha[65])
{
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    int rfd = dup(fd);
    /* the duplicate shares the offset, which the writes left at the end */
    gzFile gz = rfd >= 0 && lseek(rfd, 0, SEEK_SET) == 0 ? gzdopen(rfd, "rb") : NULL;
    if (!gz) {
        if (rfd >= 0)
            close(rfd);
        return -ENOMEM;
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    static char buf[LOGARCH_BUF];
    int got;
    *bytes = 0;
    while ((got = gzread(gz, buf, sizeof(buf))) > 0) {
        EVP_DigestUpdate(md, buf, (size_t)got);
        *bytes += got;
    }
    gzclose_r(gz);
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned dn = 0;
    EVP_DigestFinal_ex(md, d, &dn);
    EVP_MD_CTX_free(md);
    hex(d, dn, sha);
    return got < 0 ? -EIO : 0;
}

/* Copy the stream file `name` (open as src, stat sb) to DIR/NAME.gz and fill the pointer.
 * 0, or -errno with the partial copy removed. */
static int archive_one(int src, const struct stat *sb, int dir, const char *name,
                       struct store_log_archive *a)
{
    char tmp[300], final[300];
    snprintf(final, sizeof(final), "%s.gz", name);
    snprintf(tmp, sizeof(tmp), "%s.gz.tmp", name);
    unlinkat(dir, tmp, 0); /* a pass cut short left it */
    int fd = openat(dir, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
    if (fd < 0)
        return -errno;
    char sha[65] = "", back_sha[65] = "";
    int64_t back = -1;
    struct stat now, st;
    int err = compress_into(src, fd, &a->bytes, sha);
    if (!err && fsync(fd) < 0)
        err = -errno;
    if (!err)
        err = check_copy(fd, &back, back_sha);
    if (!err &&
        (back != a->bytes || strcmp(sha, back_sha) != 0 || fstat(src, &now) < 0 ||
         now.st_size != a->bytes || now.st_size != sb->st_size ||
         now.st_mtim.tv_sec != sb->st_mtim.tv_sec || now.st_mtim.tv_nsec != sb->st_mtim.tv_nsec))
        err = -EAGAIN; /* the copy differs, or the log changed under it */
    if (!err && fstat(fd, &st) < 0)
        err = -errno;
    close(fd);
    if (!err && renameat(dir, tmp, dir, final) < 0)
        err = -errno;
    if (!err && fsync(dir) < 0)
        err = -errno;
    if (err) {
        unlinkat(dir, tmp, 0);
        return err;
    }
    a->stored_bytes = st.st_size;
    str_copy(a->sha256, sizeof(a->sha256), sha);
    return 0;
}

/* ---- the pass -------------------------------------------------------------------------- */

/* "ID.RUN.stdout", "ID.RUN.stderr", or a log from before runs, "ID.stdout" (run 1). */
static bool parse_name(const char *name, uint64_t *job, int *run, int *stream)
{
    char *end;
    errno = 0;
    unsigned long long id = strtoull(name, &end, 10);
    if (errno || end == name || id == 0 || *end != '.')
        return false;
    *job = id;
    *run = 1;
    const char *rest = end + 1;
    if (rest[0] >= '1' && rest[0] <= '9') {
        long r = strtol(rest, &end, 10);
        if (*end != '.' || r <= 0 || r > 1000000)
            return false;
        *run = (int)r;
        rest = end + 1;
    }
    if (strcmp(rest, "stdout") == 0)
        *stream = 0;
    else if (strcmp(rest, "stderr") == 0)
        *stream = 1;
    else
        return false;
    return true;
}

/* Is this stream's log due: the job ended `after` ago, its output is all here and the
 * file last grew `after` ago? */
static bool due(struct ctl *c, uint64_t job, int run, int stream, const struct stat *sb,
                int64_t after, int64_t now)
{
    struct sched_job_view v;
    if (sched_job_get(c->sched, job, &v) == 0)
        return false; /* still in the core: not finished */
    struct store_job row;
    if (store_job_get(c->store, job, &row) < 0)
        return false; /* a file of no job docketd knows: not its to move */
    int64_t end = row.end_ms;
    store_job_release(&row);
    int64_t grew = (int64_t)sb->st_mtim.tv_sec * 1000 + sb->st_mtim.tv_nsec / 1000000;
    return end > 0 && end + after <= now && grew + after <= now &&
           ctl_log_complete(c, job, run, stream);
}

/* A stream archived at an earlier pass (its pointer committed since): the local copy
 * goes once the archived file is there with the size the pointer says. */
static void drop_local(struct ctl *c, struct pass *p, int logs, const char *name,
                       const struct stat *sb, const struct store_log_archive *a)
{
    int fd = open_archived(c, a);
    struct stat st;
    bool there = fd >= 0 && fstat(fd, &st) == 0 && st.st_size == a->stored_bytes;
    if (fd >= 0)
        close(fd);
    if (!there) {
        p->failed++;
        snprintf(p->message, sizeof(p->message), "%s/%s is missing from pool %s: kept here",
                 a->pool, a->path, a->pool);
        log_warn("log_archive_missing", "job=%llu run=%d stream=%d pool=%s path=%s",
                 (unsigned long long)a->job, a->run, a->stream, a->pool, a->path);
        return;
    }
    if (unlinkat(logs, name, 0) == 0) {
        p->dropped++;
        p->freed_bytes += sb->st_size;
    }
}

static void note_failure(struct ctl *c, struct pass *p, const char *pool, const char *name, int err)
{
    struct ctl_logarch *la = la_of(c);
    if (full_errno(-err)) {
        la->full = true;
        str_copy(la->full_pool, sizeof(la->full_pool), pool);
        snprintf(la->full_msg, sizeof(la->full_msg), "%s", strerror(-err));
        p->stop = true;
    } else if (err == -EPERM || err == -ENOENT || err == -ENOTDIR || err == -ELOOP) {
        p->stop = true; /* the pool's directory is missing or not docketd's: every file fails */
    }
    p->failed++;
    snprintf(p->message, sizeof(p->message), "%s: %s", name,
             err == -EPERM    ? "the archive's directory is not docketd's, or others may write "
                                "in it"
             : err == -EAGAIN ? "the copy did not read back the same, or the log changed"
                              : strerror(-err));
    log_warn("log_archive_failed", "file=%s pool=%s error=\"%s\"", name, pool, p->message);
}

static void one_file(struct ctl *c, struct pass *p, const struct storage_pool *pool, int64_t after,
                     int logs, const char *name)
{
    uint64_t job;
    int run, stream;
    struct stat sb;
    if (!parse_name(name, &job, &run, &stream) ||
        fstatat(logs, name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode))
        return;
    struct store_log_archive a;
    int rc = store_log_archive_get(c->store, job, run, stream, &a);
    if (rc == 0) {
        drop_local(c, p, logs, name, &sb, &a);
        return;
    }
    if (rc != -ENOENT || !due(c, job, run, stream, &sb, after, clock_now_ms()))
        return;
    int src = openat(logs, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (src < 0)
        return;
    a = (struct store_log_archive){.job = job, .run = run, .stream = stream};
    str_copy(a.pool, sizeof(a.pool), pool->name);
    char rel[64];
    int dir = shard_dir(pool, job, true, rel, sizeof(rel));
    int err = dir < 0 ? dir : archive_one(src, &sb, dir, name, &a);
    close(src);
    if (dir >= 0)
        close(dir);
    if (err) {
        note_failure(c, p, pool->name, name, err);
        return;
    }
    snprintf(a.path, sizeof(a.path), "%s/%s.gz", rel, name);
    a.archived_ms = clock_now_ms();
    rc = store_begin(c->store);
    if (rc == 0)
        rc = store_log_archive_put(c->store, &a);
    ctl_commit_soon(c);
    if (rc < 0) {
        log_error("store_failed", "what=log_archive error=\"%s\"", store_errmsg(c->store));
        p->stop = true;
        return;
    }
    la_of(c)->full = false;
    p->files++;
    p->bytes += a.bytes;
    p->stored_bytes += a.stored_bytes;
    p->budget -= a.bytes;
}

/* A pass that archived or dropped files is audited, and one that failed anew (a pool
 * that stays full is audited once, not at every pass). */
static void audit_pass(struct ctl *c, const char *pool, const struct pass *p)
{
    struct ctl_logarch *la = la_of(c);
    bool same_failure = p->failed && strcmp(p->message, la->last_failure) == 0;
    str_copy(la->last_failure, sizeof(la->last_failure), p->failed ? p->message : "");
    if (!p->files && !p->dropped && (!p->failed || same_failure))
        return;
    json_t *after = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "files", (json_int_t)p->files, "bytes",
                              (json_int_t)p->bytes, "stored_bytes", (json_int_t)p->stored_bytes,
                              "dropped", (json_int_t)p->dropped, "freed_bytes",
                              (json_int_t)p->freed_bytes, "failed", (json_int_t)p->failed);
    if (ctl_audit(c, "docketd", "storage.log_archive", pool, NULL, after,
                  p->message[0] ? p->message : NULL) < 0)
        log_error("store_failed", "what=log_archive_audit error=\"%s\"", store_errmsg(c->store));
    json_decref(after);
    log_info("log_archive_pass",
             "pool=%s files=%lld bytes=%lld stored=%lld dropped=%lld freed=%lld failed=%lld", pool,
             (long long)p->files, (long long)p->bytes, (long long)p->stored_bytes,
             (long long)p->dropped, (long long)p->freed_bytes, (long long)p->failed);
}

void ctl_logarch_tick(struct ctl *c)
{
    const struct storage_policy *sp = ctl_storage_policy(c);
    struct ctl_logarch *la = la_of(c);
    const struct storage_pool *pool = storage_pool_find(sp, sp->log_archive.pool);
    int64_t now = clock_now_ms();
    if (!pool) {
        la->full = false;
        return;
    }
    if (now < la->next_ms)
        return;
    char path[CTL_PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/logs", c->cfg.state_dir);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct pass p = {.budget = LOGARCH_PASS_BYTES};
    struct dirent *e;
    while (!p.stop && p.budget > 0 && (e = readdir(d)))
        one_file(c, &p, pool, sp->log_archive.after_ms, dirfd(d), e->d_name);
    closedir(d);
    /* a pass cut by its budget goes on at the next tick; one that dropped local copies
     * or archived some looks again at the next tick too (the pointers are committed by
     * then, so their local copies can go) */
    la->next_ms = p.budget <= 0 || (p.files && !p.stop) ? now : now + sp->log_archive.every_ms;
    audit_pass(c, pool->name, &p);
}

/* ---- reads ----------------------------------------------------------------------------- */

int64_t ctl_logarch_size(struct ctl *c, uint64_t job, int run, int stream)
{
    struct store_log_archive a;
    if (run <= 0 || store_log_archive_get(c->store, job, run, stream, &a) < 0)
        return -1;
    return a.bytes;
}

ssize_t ctl_logarch_read(struct ctl *c, uint64_t job, int run, int stream, int64_t offset,
                         void *buf, size_t n, char *pool, size_t pool_len)
{
    struct ctl_logarch *la = la_of(c);
    struct store_log_archive a;
    int rc = store_log_archive_get(c->store, job, run, stream, &a);
    if (rc < 0)
        return rc;
    str_copy(pool, pool_len, a.pool);
    bool same = la->rd && la->rd_job == job && la->rd_run == run && la->rd_stream == stream &&
                la->rd_pos <= offset;
    if (!same) {
        reader_close(la);
        int fd = open_archived(c, &a);
        if (fd < 0)
            return fd;
        la->rd = gzdopen(fd, "rb");
        if (!la->rd) {
            close(fd);
            return -ENOMEM;
        }
        la->rd_job = job;
        la->rd_run = run;
        la->rd_stream = stream;
        la->rd_pos = 0;
    }
    if (gzseek(la->rd, offset, SEEK_SET) != offset) {
        reader_close(la);
        return -EIO;
    }
    int got = gzread(la->rd, buf, (unsigned)n);
    if (got < 0) {
        reader_close(la);
        return -EIO;
    }
    la->rd_pos = offset + got;
    return got;
}

static int archive_json(void *arg, const struct store_log_archive *a)
{
    json_array_append_new(arg, json_pack("{s:i,s:s,s:s,s:s,s:I,s:I,s:s,s:I}", "run", a->run,
                                         "stream", a->stream ? "stderr" : "stdout", "pool", a->pool,
                                         "path", a->path, "bytes", (json_int_t)a->bytes,
                                         "stored_bytes", (json_int_t)a->stored_bytes, "sha256",
                                         a->sha256, "archived_ms", (json_int_t)a->archived_ms));
    return 0;
}

json_t *ctl_logarch_job_json(struct ctl *c, uint64_t job)
{
    json_t *list = json_array();
    if (store_log_archive_list(c->store, job, archive_json, list) < 0 ||
        json_array_size(list) == 0) {
        json_decref(list);
        return NULL;
    }
    return list;
}

bool ctl_logarch_full(struct ctl *c, char *key, size_t key_len, char *summary, size_t len)
{
    struct ctl_logarch *la = c->logarch;
    if (!la || !la->full)
        return false;
    snprintf(key, key_len, "%s:logs", la->full_pool);
    snprintf(summary, len,
             "storage pool %s is full (%s): finished jobs' logs stay in docketd's state "
             "directory until it has room",
             la->full_pool, la->full_msg);
    return true;
}
