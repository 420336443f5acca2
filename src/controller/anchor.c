/*
 * anchor.c - the audit trail's head, published (anchor.h; docs/security.md "Audit").
 *
 * The hash chain shows a changed or removed row, but someone who can write the database
 * can also cut rows off its end, blank every hash (rows from before the chain are not
 * checked), or rebuild the chain from any row: what tells is a head kept outside the
 * database. So docketd publishes it whenever it changes: a log line (shipped off the host
 * by whoever collects logs), /metrics (scraped by Prometheus) and, with --audit-anchor, a
 * file written atomically (an anchor: id, hash and where the chain begins) that
 * `docket audit --verify --anchor FILE` checks, and that docketd's own verify uses.
 *
 * A head is read when the commit that wrote it is made (nothing else is written then) and
 * published only once that commit is on disk (the WAL sync), so a crash never leaves an
 * anchor ahead of the database. Before the file is replaced, the row
 * it anchors must still be there with its hash, and the chain must not begin later than it
 * said (one row read, at start and at each publish): a trail cut, blanked or re-chained
 * while docketd was stopped leaves the file as it was, as evidence, and says so
 * (audit_anchor_mismatch), rather than anchoring the tampered trail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/anchor.h"
#include "controller/ctl.h"
#include "util/clock.h"
#include "util/str.h"

#define ANCHOR_MAX_BYTES 4096

void ctl_anchor_dirty(struct ctl *c)
{
    c->audit_dirty = true;
}

/* The head as the store has it now (0, or -EIO logged). */
static int head_read(struct ctl *c, struct ctl_audit_head *h)
{
    memset(h, 0, sizeof(*h));
    h->chain_from = c->audit_head.chain_from; /* a hint: it does not move */
    if (store_audit_head(c->store, &h->id, h->hash, &h->chain_from) < 0) {
        log_warn("audit_head_failed", "error=\"%s\"", store_errmsg(c->store));
        return -EIO;
    }
    return 0;
}

static void publish(struct ctl *c, const struct ctl_audit_head *h);

void ctl_anchor_committed(struct ctl *c, uint64_t gen)
{
    if (c->audit_dirty && head_read(c, &c->audit_pending) == 0)
        c->audit_publish_gen = gen;
    c->audit_dirty = false;
}

void ctl_anchor_synced(struct ctl *c, uint64_t synced)
{
    if (c->audit_publish_gen && synced >= c->audit_publish_gen) {
        c->audit_publish_gen = 0;
        publish(c, &c->audit_pending);
    }
}

/* Write path atomically: a temporary file beside it, synced, then renamed over it. */
static int write_atomically(const char *path, const char *text)
{
    char tmp[CTL_PATH_MAX + 16];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -errno;
    size_t n = strlen(text);
    int rc = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0 ? 0 : -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

/* The anchor file still agrees with the trail? 0, or -EBADMSG after logging why. A file
 * that is not there, or cannot be read, is not held against the trail here (the verify
 * reports it). */
static int anchor_still_holds(struct ctl *c, const struct ctl_audit_head *now)
{
    struct audit_anchor old;
    char why[CTL_PATH_MAX + 160], hash[65];
    if (ctl_anchor_read(c, &old, why, sizeof(why)) != 1)
        return 0;
    int rc = store_audit_row_hash(c->store, old.id, hash);
    if (rc < 0)
        return 0;
    const char *bad = rc == 0                            ? "its row is gone"
                      : strcmp(hash, old.hash) != 0      ? "its row's hash differs"
                      : now->chain_from > old.chain_from ? "the chain begins later"
                                                         : NULL;
    if (!bad)
        return 0;
    log_error("audit_anchor_mismatch",
              "path=%s anchored_id=%lld why=\"%s\" action=\"kept as it was: run docket audit "
              "--verify, restore the database from a backup and compare\"",
              c->cfg.audit_anchor, (long long)old.id, bad);
    return -EBADMSG;
}

void ctl_anchor_publish(struct ctl *c)
{
    struct ctl_audit_head h;
    if (head_read(c, &h) == 0)
        publish(c, &h);
}

static void publish(struct ctl *c, const struct ctl_audit_head *hp)
{
    struct ctl_audit_head h = *hp;
    if (h.id == c->audit_head.id && strcmp(h.hash, c->audit_head.hash) == 0)
        return; /* nothing new (or an empty trail) */
    c->audit_head = h;
    if (h.hash[0])
        log_info("audit_head", "id=%lld hash=%s chain_from=%lld", (long long)h.id, h.hash,
                 (long long)h.chain_from);
    /* (a trail whose last row has no hash is checked against the file too: blanked) */
    if (!c->cfg.audit_anchor[0] || anchor_still_holds(c, &h) < 0 || !h.hash[0])
        return;
    struct audit_anchor a = {h.id, "", h.chain_from, clock_now_ms()};
    str_copy(a.hash, sizeof(a.hash), h.hash);
    char *text = audit_anchor_text(&a);
    int rc = text ? write_atomically(c->cfg.audit_anchor, text) : -ENOMEM;
    free(text);
    if (rc < 0)
        log_warn("audit_anchor_failed", "path=%s error=\"%s\"", c->cfg.audit_anchor, strerror(-rc));
}

int ctl_anchor_read(struct ctl *c, struct audit_anchor *out, char *why, size_t len)
{
    if (!c->cfg.audit_anchor[0])
        return 0;
    FILE *f = fopen(c->cfg.audit_anchor, "re");
    if (!f && errno == ENOENT)
        return 0;
    if (!f) {
        snprintf(why, len, "cannot read the anchor %s: %s", c->cfg.audit_anchor, strerror(errno));
        return -EINVAL;
    }
    char buf[ANCHOR_MAX_BYTES];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    char bad[160];
    if (audit_anchor_parse(buf, n, out, bad, sizeof(bad)) < 0) {
        snprintf(why, len, "the anchor %s: %s", c->cfg.audit_anchor, bad);
        return -EINVAL;
    }
    return 1;
}
