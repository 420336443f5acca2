/*
 * imgcache.h - the node's cache of unpacked container images (docs/environments.md
 * "Containers"), STATE_DIR/images, shared by every job of the node:
 *   sha256-HEX/rootfs   an image unpacked by `umoci raw unpack`, once per manifest digest
 *   sha256-HEX/.ready   written last: the tree's size in bytes; its mtime is the last use
 *   sha256-HEX.inuse    every job using the image holds a shared flock on it while it runs
 *                       (its supervisor, which outlives the agent); eviction takes it
 *                       exclusively or passes the image over
 *   sha256-HEX.log      the last unpack's output
 *   layouts/KEY         docker:// images copied by `skopeo copy` into an OCI layout, once
 *   lock                held exclusively while an image is unpacked or evicted
 *   unpack.log          one line per unpack (time, digest, reference)
 * When the unpacked images pass the size cap, the least recently used ones that no job
 * holds are removed, the one just used never.
 */
#ifndef DOCKET_AGENT_IMGCACHE_H
#define DOCKET_AGENT_IMGCACHE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct img_cache {
    const char *dir;   /* STATE_DIR/images (made when missing) */
    int64_t max_bytes; /* the cap on the unpacked images together, 0 = none */
};

/* What the cache asks of its caller while it works for a job. */
struct img_hooks {
    void (*unpacking)(void *arg, const char *ref); /* before an unpack: tell the job's owner */
    void (*in_child)(void *arg);                   /* in the unpack's process: cgroup etc. */
    bool (*stopped)(void *arg);                    /* the job was cancelled: stop the unpack */
    void *arg;
    int log_fd;           /* a failing step's output is copied here (the job's stderr), or -1 */
    const char *authfile; /* the registry's credentials for skopeo (--src-authfile), or NULL */
};

struct img_use {
    int fd; /* the shared lock on sha256-HEX.inuse, -1 = none */
    char digest[80];
    char rootfs[PATH_MAX];
};

/* Make `ref` (protocol/container.h) ready and hold it: u->rootfs is its tree. 0, or
 * -errno with a message in err (the failing step's output on hooks->log_fd). */
int img_acquire(const struct img_cache *c, const char *ref, const struct img_hooks *hooks,
                struct img_use *u, char *err, size_t errlen);
/* Let the image go (the process's end does as much). */
void img_release(struct img_use *u);
/* Remove the least recently used images no job holds until the rest fit the cap, never
 * `keep` (a digest, or NULL). The cache's lock must be held. Returns the bytes kept. */
int64_t img_evict(const struct img_cache *c, const char *keep);
/* The digest of an OCI layout's tag ("sha256:HEX") from LAYOUT/index.json. 0 or -errno. */
int img_layout_digest(const char *layout, const char *tag, char *digest, size_t len, char *err,
                      size_t errlen);

#endif
