/*
 * admin.c - `docket admin`: what an operator runs against docketd as a whole. Today one
 * verb, `docket admin backup` (GET /v1/admin/backup, docs/operations.md "Back up and
 * restore the state"): the database's snapshot written to FILE.part (0600) as it
 * arrives, never held in memory, its size and SHA-256 compared with what docketd
 * announced, and only then renamed to FILE; with `-o -` it goes to stdout.
 *
 * The SHA-256 is OpenSSL's, loaded with dlopen only here (libcrypto.so.3), for the same
 * reason libcurl is (http.h): every other verb starts without it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/http.h"
#include "util/str.h"

const char cmd_admin_usage[] =
    "usage: docket admin backup [-o FILE|-] [--json]\n"
    "\n"
    "backup: a consistent copy of docketd's database, made while docketd runs (an admin\n"
    "token, or the Unix socket). It goes to FILE.part (mode 0600: it holds token hashes,\n"
    "sealed secrets and the audit trail), its size and SHA-256 are checked against what\n"
    "docketd sent, and only then is it renamed to FILE (default\n"
    "docket-backup-YYYYMMDD-HHMMSS.db in this directory, UTC; .pgdump, pg_dump's custom\n"
    "format, from a docketd on PostgreSQL); -o - writes it to stdout.\n"
    "Progress is shown on a terminal. --json prints {file, bytes, sha256, schema}.\n"
    "Restore it with `docketd --restore FILE` while docketd is stopped\n"
    "(docs/operations.md \"Back up and restore the state\").\n";

enum { A_OUT = 1 };

static const struct opt_def admin_opts[] = {
    {A_OUT, 'o', "output", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

/* A backup of a big database takes long to make before its first byte: docketd checks
 * it whole first. Ctrl-C stops it (and removes FILE.part). */
#define BACKUP_TIMEOUT_MS (24L * 3600 * 1000)

struct sha {
    void *dl;
    __typeof__(EVP_MD_CTX_new) *ctx_new;
    __typeof__(EVP_MD_CTX_free) *ctx_free;
    __typeof__(EVP_sha256) *sha256;
    __typeof__(EVP_DigestInit_ex) *init;
    __typeof__(EVP_DigestUpdate) *update;
    __typeof__(EVP_DigestFinal_ex) *final;
    EVP_MD_CTX *ctx;
};

static int sha_open(struct sha *s)
{
    memset(s, 0, sizeof(*s));
    if (!(s->dl = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL)))
        return -ENOENT;
    *(void **)&s->ctx_new = dlsym(s->dl, "EVP_MD_CTX_new");
    *(void **)&s->ctx_free = dlsym(s->dl, "EVP_MD_CTX_free");
    *(void **)&s->sha256 = dlsym(s->dl, "EVP_sha256");
    *(void **)&s->init = dlsym(s->dl, "EVP_DigestInit_ex");
    *(void **)&s->update = dlsym(s->dl, "EVP_DigestUpdate");
    *(void **)&s->final = dlsym(s->dl, "EVP_DigestFinal_ex");
    if (!s->ctx_new || !s->ctx_free || !s->sha256 || !s->init || !s->update || !s->final ||
        !(s->ctx = s->ctx_new()) || s->init(s->ctx, s->sha256(), NULL) != 1)
        return -ENOENT;
    return 0;
}

static void sha_hex(struct sha *s, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    out[0] = '\0';
    if (s->final(s->ctx, md, &n) == 1)
        for (unsigned int i = 0; i < n && i < 32; i++)
            snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void sha_close(struct sha *s)
{
    if (s->ctx)
        s->ctx_free(s->ctx);
    if (s->dl)
        dlclose(s->dl);
}

/* The download: where its bytes go and what they add up to. */
struct dl {
    int fd;
    int err; /* errno of a failed write */
    int64_t bytes, shown;
    bool progress;
    struct sha sha;
};

static int put(void *arg, const char *p, size_t n)
{
    struct dl *d = arg;
    d->sha.update(d->sha.ctx, p, n);
    d->bytes += (int64_t)n;
    for (size_t off = 0; off < n;) {
        ssize_t w = write(d->fd, p + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            d->err = errno;
            return -ECANCELED;
        }
        off += (size_t)w;
    }
    if (d->progress && d->bytes - d->shown >= (1 << 20)) {
        d->shown = d->bytes;
        fprintf(stderr, "\rbackup: %.1f MiB received", (double)d->bytes / (1 << 20));
    }
    return 0;
}

/* The part file Ctrl-C removes (a signal handler may only unlink). */
static char part_path[4096];

static void on_interrupt(int sig)
{
    if (part_path[0])
        unlink(part_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void default_name(char *out, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    char stamp[32];
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    snprintf(out, len, "docket-backup-%s.db", stamp);
}

static int sync_parent(const char *file)
{
    char copy[4096];
    str_copy(copy, sizeof(copy), file);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

/* Did what arrived match what docketd announced? EXIT_OK, or EXIT_FAIL with a message. */
static int check_arrived(struct cli *c, const struct client_reply *r, struct dl *d, char sha[65])
{
    sha_hex(&d->sha, sha);
    if (r->backup_bytes < 0 || !r->backup_sha256[0])
        return cli_fail(c, "docketd sent no size or SHA-256 with the backup: is it older than "
                           "this docket? Upgrade docketd, or back up with sqlite3 "
                           "(docs/operations.md)");
    if (d->bytes != r->backup_bytes)
        return cli_fail(c,
                        "the backup arrived short: %lld of %lld bytes (docketd stopped or "
                        "the connection broke); run `docket admin backup` again",
                        (long long)d->bytes, (long long)r->backup_bytes);
    if (strcmp(sha, r->backup_sha256) != 0)
        return cli_fail(c,
                        "the backup arrived damaged: SHA-256 %s, docketd sent %s; run "
                        "`docket admin backup` again",
                        sha, r->backup_sha256);
    return EXIT_OK;
}

static int finish(struct cli *c, const char *file, const struct dl *d, const char *sha, int schema,
                  bool to_stdout)
{
    if (c->json && !to_stdout) {
        json_t *o = json_pack("{s:s,s:I,s:s,s:i}", "file", file, "bytes", (json_int_t)d->bytes,
                              "sha256", sha, "schema", schema);
        cli_print_json(c, o);
        json_decref(o);
        return EXIT_OK;
    }
    fprintf(to_stdout ? stderr : c->out, "%s%s: %lld bytes, schema %d, sha256 %s\n",
            to_stdout ? "backup: " : "wrote ", file, (long long)d->bytes, schema, sha);
    if (!to_stdout)
        fprintf(c->out, "restore it with `docketd --restore %s` while docketd is stopped\n", file);
    return EXIT_OK;
}

static int backup(struct cli *c, const char *out)
{
    char file[4000], err[1024], sha[65];
    struct client_reply r = {0};
    struct dl d = {.fd = -1};
    bool to_stdout = out && !strcmp(out, "-");
    int rc;
    if (to_stdout && isatty(STDOUT_FILENO))
        return cli_usage_error(c, "the backup is a binary file: -o FILE, or redirect stdout");
    if (out && !to_stdout)
        str_copy(file, sizeof(file), out);
    else if (!out)
        default_name(file, sizeof(file));
    else
        str_copy(file, sizeof(file), "stdout");
    if (sha_open(&d.sha) < 0) {
        sha_close(&d.sha);
        return cli_fail(c, "docket admin backup needs OpenSSL's libcrypto.so.3 to check the "
                           "copy (apt-get install libssl3)");
    }
    if (!to_stdout && access(file, F_OK) == 0) {
        sha_close(&d.sha);
        return cli_fail(c, "'%s' exists: choose another name with -o FILE", file);
    }
    if (to_stdout) {
        d.fd = STDOUT_FILENO;
    } else {
        snprintf(part_path, sizeof(part_path), "%s.part", file);
        d.fd = open(part_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (d.fd < 0) {
            rc = errno;
            part_path[0] = '\0';
            sha_close(&d.sha);
            return cli_fail(c, "cannot create '%s.part': %s%s", file, strerror(rc),
                            rc == EEXIST ? " (a backup that stopped half-way left it: remove it)"
                                         : "");
        }
        signal(SIGINT, on_interrupt);
        signal(SIGTERM, on_interrupt);
    }
    d.progress = !c->json && isatty(STDERR_FILENO);
    if (!c->client && !(c->client = client_create(&c->cfg, err, sizeof(err))))
        rc = cli_fail(c, "%s", err);
    else if (client_download(c->client, "/v1/admin/backup", BACKUP_TIMEOUT_MS,
                             &(struct http_sink){put, &d}, &r, err, sizeof(err)) < 0)
        rc = d.err ? cli_fail(c, "cannot write '%s': %s", to_stdout ? "stdout" : part_path,
                              strerror(d.err))
                   : cli_fail(c, "%s", err);
    else if (r.status < 200 || r.status > 299)
        rc = cli_report_error(c, &r);
    else
        rc = check_arrived(c, &r, &d, sha);
    if (d.progress && d.shown)
        fputc('\n', stderr);
    if (rc == EXIT_OK && !to_stdout && (fsync(d.fd) < 0 || close(d.fd) < 0)) {
        rc = cli_fail(c, "cannot write '%s': %s", part_path, strerror(errno));
        d.fd = -1;
    }
    if (!to_stdout && d.fd >= 0 && rc != EXIT_OK)
        close(d.fd);
    if (rc == EXIT_OK && !out && r.backup_pg_dump) /* the default name says what it is */
        snprintf(file + strlen(file) - 3, 8, ".pgdump");
    if (rc == EXIT_OK && !to_stdout && access(file, F_OK) == 0)
        rc = cli_fail(c, "'%s' exists: choose another name with -o FILE", file);
    if (rc == EXIT_OK && !to_stdout && (rename(part_path, file) < 0 || sync_parent(file) < 0))
        rc = cli_fail(c, "cannot rename '%s' to '%s': %s", part_path, file, strerror(errno));
    if (rc != EXIT_OK && !to_stdout)
        unlink(part_path);
    part_path[0] = '\0';
    if (rc == EXIT_OK)
        rc = finish(c, file, &d, sha, r.schema, to_stdout);
    if (r.status)
        client_reply_release(&r);
    sha_close(&d.sha);
    return rc;
}

int cmd_admin(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse_args(c, argc, argv, admin_opts, 1, &a);
    const char *out = NULL;
    if (rc != CLI_CONTINUE)
        return rc;
    if (!a.npos || strcmp(a.pos[0], "backup") != 0)
        return cli_usage_error(c, "which task? (docket admin backup [-o FILE])");
    for (int i = 0; i < a.nopts; i++)
        if (a.ids[i] == A_OUT)
            out = a.vals[i];
    if (out && !out[0])
        return cli_usage_error(c, "-o needs a file name (or - for stdout)");
    return backup(c, out);
}
