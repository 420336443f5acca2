/*
 * imgcache.c - the node's cache of unpacked images (imgcache.h): the digest of a layout's
 * tag, the unpack by umoci (docker:// first copied by skopeo), the in-use locks, the
 * size cap and its least-recently-used eviction.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/imgcache.h"
#include "agent/sup_int.h"
#include "protocol/container.h"
#include "util/str.h"

enum { INDEX_MAX = 1 << 20 }; /* an index.json larger than this is not a layout's */

static void errf(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

/* "sha256:" and 64 lower-case hex digits: the only digests used as names here. */
static bool digest_ok(const char *d)
{
    return strlen(d) == 71 && strncmp(d, "sha256:", 7) == 0 &&
           strspn(d + 7, "0123456789abcdef") == 64;
}

int img_layout_digest(const char *layout, const char *tag, char *digest, size_t len, char *err,
                      size_t errlen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/index.json", layout);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size > INDEX_MAX) {
        int e = fd < 0 ? errno : EINVAL;
        errf(err, errlen, "image layout '%s': cannot read its index.json: %s", layout,
             fd < 0 ? strerror(e) : "not a regular file of at most 1 MiB");
        if (fd >= 0)
            close(fd);
        return -e;
    }
    json_error_t je;
    json_t *idx = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
    close(fd);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(idx, "manifests"), i, m) {
        const char *name = json_string_value(json_object_get(json_object_get(m, "annotations"),
                                                             "org.opencontainers.image.ref.name"));
        const char *d = json_string_value(json_object_get(m, "digest"));
        if (name && d && strcmp(name, tag) == 0 && digest_ok(d)) {
            str_copy(digest, len, d);
            json_decref(idx);
            return 0;
        }
    }
    errf(err, errlen, "image layout '%s': %s", layout,
         idx ? "no manifest has that tag" : "its index.json is not JSON");
    if (idx)
        snprintf(err + strlen(err), errlen - strlen(err), " ('%s')", tag);
    json_decref(idx);
    return -ENOENT;
}

/* The last `max` bytes of a log into fd. */
static void copy_tail(const char *path, int to, size_t max)
{
    int fd = to >= 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    lseek(fd, end > (off_t)max ? end - (off_t)max : 0, SEEK_SET);
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        if (write(to, buf, (size_t)n) != n)
            break;
    close(fd);
}

/* Run argv (a tool found on PATH), its output to log; its exit status, 128 + a signal,
 * or -errno. A stopped job kills it. */
static int run_tool(char *const argv[], const char *log, const struct img_hooks *h)
{
    int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out < 0)
        return -errno;
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        setsid();
        if (h->in_child)
            h->in_child(h->arg);
        int null = open("/dev/null", O_RDONLY);
        if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
            _exit(126);
        char *env[] = {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
                       "LANG=C.UTF-8", "HOME=/", NULL};
        execvpe(argv[0], argv, env);
        dprintf(2, "cannot execute %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(out);
    if (pid < 0)
        return -errno;
    return sup_wait_group(pid, 100, h->stopped, h->arg);
}

static int64_t tree_bytes;
static int add_size(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)path, (void)flag, (void)ftw;
    tree_bytes += (int64_t)sb->st_blocks * 512;
    return 0;
}

/* The disk a tree takes (its blocks; hard links counted at each name). */
static int64_t tree_size(const char *dir)
{
    tree_bytes = 0;
    nftw(dir, add_size, 32, FTW_PHYS | FTW_MOUNT);
    return tree_bytes;
}

/* A failed step: its log's end on the job's stderr, a message naming it. */
static int step_failed(const struct img_hooks *h, const char *log, const char *what, int rc,
                       char *err, size_t errlen)
{
    copy_tail(log, h->log_fd, 8192);
    if (rc == 127)
        errf(err, errlen, "%s: the tool is not installed on this node (exit 127)", what);
    else if (h->log_fd >= 0)
        errf(err, errlen, "%s failed (exit %d); its output is the job's stderr", what, rc);
    else /* no job: a warm order (warmer.c) */
        errf(err, errlen, "%s failed (exit %d); its output is in %s", what, rc, log);
    return -EIO;
}

/* The SHA-256 of the authfile's content into key's hash, so an image copied with a
 * job's credentials is never handed to a job without them (it copies its own, and the
 * registry decides). */
static uint64_t mix_credentials(uint64_t key, const char *authfile)
{
    unsigned char buf[65536], md[SHA256_DIGEST_LENGTH];
    int fd = open(authfile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
    if (fd >= 0)
        close(fd);
    SHA256(buf, n > 0 ? (size_t)n : 0, md);
    OPENSSL_cleanse(buf, sizeof buf);
    for (size_t i = 0; i < sizeof md; i++)
        key = (key ^ md[i]) * 1099511628211ULL;
    return key;
}

/* docker://NAME: copied once into layouts/KEY by skopeo (KEY a hash of the reference and
 * of the credentials it was copied with), then read as a layout. */
static int fetch_docker(const struct img_cache *c, const char *name, const struct img_hooks *h,
                        char *layout, size_t len, char *err, size_t errlen)
{
    uint64_t key = 1469598103934665603ULL; /* FNV-1a: a name, not a security boundary */
    for (const char *p = name; *p; p++)
        key = (key ^ (unsigned char)*p) * 1099511628211ULL;
    if (h->authfile)
        key = mix_credentials(key, h->authfile);
    char dir[PATH_MAX], tmp[PATH_MAX + 8], log[PATH_MAX + 8], src[PROTO_IMAGE_REF_MAX + 16],
        dst[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/layouts", c->dir);
    mkdir(dir, 0700);
    snprintf(layout, len, "%s/layouts/%016llx", c->dir, (unsigned long long)key);
    snprintf(tmp, sizeof tmp, "%s.tmp", layout);
    snprintf(log, sizeof log, "%s.log", layout);
    char index[PATH_MAX + 16];
    snprintf(index, sizeof index, "%s/index.json", layout);
    if (access(index, F_OK) == 0)
        return 0;
    sup_remove_tree(tmp);
    snprintf(src, sizeof src, "docker://%s", name);
    snprintf(dst, sizeof dst, "oci:%s:img", tmp);
    if (h->unpacking)
        h->unpacking(h->arg, src);
    char *argv[] = {"skopeo", "copy", "--quiet", src, dst, NULL, NULL, NULL};
    if (h->authfile) { /* the job's registry credentials (supoci.c), never on a command line */
        argv[3] = "--src-authfile";
        argv[4] = (char *)h->authfile;
        argv[5] = src;
        argv[6] = dst;
    }
    int rc = run_tool(argv, log, h);
    if (rc != 0)
        return step_failed(h, log, "skopeo copy", rc, err, errlen);
    if (rename(tmp, layout) < 0) {
        errf(err, errlen, "cannot keep the copied image '%s': %s", layout, strerror(errno));
        return -errno;
    }
    return 0;
}

/* A blob of the layout (digest "sha256:HEX", checked), parsed; NULL when unreadable. */
static json_t *load_blob(const char *layout, const char *digest)
{
    char path[PATH_MAX + 96];
    if (!digest || !digest_ok(digest))
        return NULL;
    snprintf(path, sizeof path, "%s/blobs/sha256/%s", layout, digest + 7);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    json_t *j = NULL;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size <= INDEX_MAX)
        j = json_loadfd(fd, 0, NULL);
    if (fd >= 0)
        close(fd);
    return j;
}

/* DIR/.env: the image's own variables (its config's Env, "KEY=VALUE" a line), which the
 * container gets under the job's (supoci.c). Missing ones are no error. */
static void write_image_env(const char *layout, const char *digest, const char *dir)
{
    json_t *manifest = load_blob(layout, digest);
    json_t *config = load_blob(
        layout, json_string_value(json_object_get(json_object_get(manifest, "config"), "digest")));
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/.env", dir);
    FILE *f = fopen(path, "we");
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(json_object_get(config, "config"), "Env"), i, v) {
        const char *kv = json_string_value(v);
        if (f && kv && strchr(kv, '=') && !strchr(kv, '\n'))
            fprintf(f, "%s\n", kv);
    }
    if (f)
        fclose(f);
    json_decref(config);
    json_decref(manifest);
}

/* Unpack the image into D (cache lock held): D.tmp first, renamed whole when ready. */
static int unpack(const struct img_cache *c, const char *layout, const char *tag, const char *ref,
                  const char *digest, const char *d, const struct img_hooks *h, char *err,
                  size_t errlen)
{
    char tmp[PATH_MAX + 8], rootfs[PATH_MAX + 16], log[PATH_MAX + 8], image[PATH_MAX + 160],
        ready[PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", d);
    snprintf(rootfs, sizeof rootfs, "%s/rootfs", tmp);
    snprintf(log, sizeof log, "%s.log", d);
    snprintf(image, sizeof image, "%s:%s", layout, tag);
    sup_remove_tree(tmp); /* an unpack cut short (the node rebooted) starts over */
    sup_remove_tree(d);
    if (mkdir(tmp, 0755) < 0) {
        errf(err, errlen, "cannot make '%s': %s", tmp, strerror(errno));
        return -errno;
    }
    if (h->unpacking)
        h->unpacking(h->arg, ref);
    /* as root the files keep the image's owners; otherwise they are ours (--rootless) */
    char *argv[] = {"umoci", "raw", "unpack", "--image", image, rootfs, NULL, NULL};
    if (geteuid() != 0) {
        argv[3] = "--rootless";
        argv[4] = "--image";
        argv[5] = image;
        argv[6] = rootfs;
    }
    int rc = run_tool(argv, log, h);
    if (rc != 0) {
        sup_remove_tree(tmp);
        return step_failed(h, log, "unpacking the image (umoci raw unpack)", rc, err, errlen);
    }
    write_image_env(layout, digest, tmp);
    int64_t size = tree_size(tmp);
    snprintf(ready, sizeof ready, "%s/.ready", tmp);
    FILE *f = fopen(ready, "we");
    if (!f || fprintf(f, "%lld\n", (long long)size) < 0 || fclose(f) != 0 || rename(tmp, d) < 0) {
        errf(err, errlen, "cannot keep the unpacked image '%s': %s", d, strerror(errno));
        sup_remove_tree(tmp);
        return -EIO;
    }
    char count[PATH_MAX];
    snprintf(count, sizeof count, "%s/unpack.log", c->dir);
    FILE *u = fopen(count, "ae");
    if (u) {
        fprintf(u, "%lld %s %lld %s\n", (long long)time(NULL), digest, (long long)size, ref);
        fclose(u);
    }
    return 0;
}

/* The layout directory and tag of ref (docker:// copied first). */
static int locate(const struct img_cache *c, const char *ref, const struct img_hooks *h,
                  char *layout, size_t len, char *tag, size_t taglen, char *err, size_t errlen)
{
    struct proto_image_ref r;
    struct proto_error pe;
    if (proto_image_ref_parse(ref, "image", &r, &pe) < 0) {
        errf(err, errlen, "%s", pe.message);
        return -EINVAL;
    }
    if (r.kind == PROTO_IMAGE_OCI_LAYOUT) {
        str_copy(layout, len, r.path);
        str_copy(tag, taglen, r.tag);
        return 0;
    }
    str_copy(tag, taglen, "img");
    return fetch_docker(c, r.path, h, layout, len, err, errlen);
}

static int lock_cache(const struct img_cache *c)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/lock", c->dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0)
        while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
            ;
    return fd;
}

int img_acquire(const struct img_cache *c, const char *ref, const struct img_hooks *h,
                struct img_use *u, char *err, size_t errlen)
{
    char layout[PATH_MAX], tag[PROTO_IMAGE_TAG_MAX], d[PATH_MAX], inuse[PATH_MAX + 8],
        ready[PATH_MAX + 16];
    u->fd = -1;
    if (mkdir(c->dir, 0700) < 0 && errno != EEXIST) {
        errf(err, errlen, "cannot make the image cache '%s': %s", c->dir, strerror(errno));
        return -errno;
    }
    int lock = -1, rc = locate(c, ref, h, layout, sizeof layout, tag, sizeof tag, err, errlen);
    if (rc == 0)
        rc = img_layout_digest(layout, tag, u->digest, sizeof u->digest, err, errlen);
    if (rc < 0)
        return rc;
    snprintf(d, sizeof d, "%s/sha256-%s", c->dir, u->digest + 7);
    snprintf(inuse, sizeof inuse, "%s.inuse", d);
    snprintf(ready, sizeof ready, "%s/.ready", d);
    snprintf(u->rootfs, sizeof u->rootfs, "%s/rootfs", d);
    /* held until the job ends: no eviction removes an image a job runs in (never
     * unlinked, so every holder locks the same file) */
    u->fd = open(inuse, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (u->fd < 0 || flock(u->fd, LOCK_SH) < 0) {
        errf(err, errlen, "cannot hold '%s': %s", inuse, strerror(errno));
        img_release(u);
        return -EIO;
    }
    if (access(ready, F_OK) == 0) { /* warm: the common case, no cache lock */
        utimensat(AT_FDCWD, ready, NULL, 0);
        return 0;
    }
    if ((lock = lock_cache(c)) < 0) {
        errf(err, errlen, "cannot lock the image cache '%s': %s", c->dir, strerror(errno));
        img_release(u);
        return -EIO;
    }
    rc = access(ready, F_OK) == 0 ? 0 : unpack(c, layout, tag, ref, u->digest, d, h, err, errlen);
    if (rc == 0) {
        utimensat(AT_FDCWD, ready, NULL, 0);
        img_evict(c, u->digest);
    }
    close(lock);
    if (rc < 0)
        img_release(u);
    return rc;
}

void img_release(struct img_use *u)
{
    if (u->fd >= 0)
        close(u->fd);
    u->fd = -1;
}

struct cached {
    char name[80]; /* sha256-HEX */
    int64_t size;
    struct timespec used;
};

static int by_use(const void *a, const void *b)
{
    const struct cached *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec)
        return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

/* Every unpacked image of the cache, least recently used first; their count. */
static size_t list_cached(const struct img_cache *c, struct cached **out)
{
    DIR *dir = opendir(c->dir);
    struct dirent *e;
    size_t n = 0, cap = 0;
    *out = NULL;
    while (dir && (e = readdir(dir))) {
        char ready[PATH_MAX];
        struct stat sb;
        if (strncmp(e->d_name, "sha256-", 7) != 0 || strlen(e->d_name) != 71)
            continue;
        snprintf(ready, sizeof ready, "%s/%s/.ready", c->dir, e->d_name);
        FILE *f = fopen(ready, "re");
        long long size = 0;
        if (!f)
            continue;
        if (fscanf(f, "%lld", &size) != 1)
            size = 0;
        fclose(f);
        if (stat(ready, &sb) < 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            struct cached *more = realloc(*out, cap * sizeof **out);
            if (!more)
                break;
            *out = more;
        }
        str_copy((*out)[n].name, sizeof(*out)[n].name, e->d_name);
        (*out)[n].size = size;
        (*out)[n].used = sb.st_mtim;
        n++;
    }
    if (dir)
        closedir(dir);
    if (n)
        qsort(*out, n, sizeof **out, by_use);
    return n;
}

int64_t img_evict(const struct img_cache *c, const char *keep)
{
    struct cached *all;
    size_t n = list_cached(c, &all);
    int64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += all[i].size;
    for (size_t i = 0; i < n && c->max_bytes > 0 && total > c->max_bytes; i++) {
        char path[PATH_MAX], inuse[PATH_MAX + 8];
        if (keep && strcmp(all[i].name + 7, keep + 7) == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", c->dir, all[i].name);
        snprintf(inuse, sizeof inuse, "%s.inuse", path);
        int fd = open(inuse, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) { /* a job runs in it */
            if (fd >= 0)
                close(fd);
            continue;
        }
        /* .ready goes first: a half-removed tree is never taken for an image */
        char ready[PATH_MAX + 8];
        snprintf(ready, sizeof ready, "%s/.ready", path);
        unlink(ready);
        sup_remove_tree(path);
        close(fd);
        total -= all[i].size;
        sup_log("image cache: evicted %s (%lld bytes), %lld bytes kept", all[i].name,
                (long long)all[i].size, (long long)total);
    }
    free(all);
    return total;
}
