/*
 * anchor.h - what anchor.c owns: publishing the audit trail's head (docs/security.md
 * "Audit"): the log line audit_head, the /metrics gauge and info line, and the anchor file
 * (--audit-anchor FILE, written atomically); and reading that file back for a verify.
 */
#ifndef DOCKET_CONTROLLER_ANCHOR_H
#define DOCKET_CONTROLLER_ANCHOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/anchor.h"

struct ctl;

/* The head docketd published last (id 0: none yet). */
struct ctl_audit_head {
    int64_t id, chain_from;
    char hash[65];
};

/* An audit row was written in the open transaction: publish once its commit is on disk. */
void ctl_anchor_dirty(struct ctl *c);
/* The commit generation `gen` committed (it holds the rows ctl_anchor_dirty saw). */
void ctl_anchor_committed(struct ctl *c, uint64_t gen);
/* Commits up to `synced` are on disk: publish if one held audit rows. */
void ctl_anchor_synced(struct ctl *c, uint64_t synced);
/* Read the head from the store and publish it when it changed (also at start). */
void ctl_anchor_publish(struct ctl *c);
/* The anchor file's anchor: 1 when read, 0 when none is configured or the file is not
 * there yet, -EINVAL with why[] when it cannot be read or parsed. */
int ctl_anchor_read(struct ctl *c, struct audit_anchor *out, char *why, size_t len);

#endif
