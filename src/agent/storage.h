/*
 * storage.h - what the agent's storage.c owns (docs/storage.md): the file system work
 * for the pools and project areas docketd names in its heartbeat reply. The checks of a
 * pool (its path, mount point, file system type, a probe written and removed, latency,
 * size), the areas (directory POOL/projects/PROJECT, root's, the project's group, mode
 * 2770), their quotas (ext4 project quota: project id = the group's gid, hard block
 * limit through quotactl; else accounting by a scan) and their usage. All of it runs in a
 * child process of the agent, so a hung file system never holds the agent's loop.
 */
#ifndef DOCKET_AGENT_STORAGE_H
#define DOCKET_AGENT_STORAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol/storage.h"

struct agent;

/* Check every pool and keep every area of `cfg` (the work of the child): `out` gets one
 * state per pool and per area, its gen cfg's. `node` names the probe file. */
void stor_check(const struct storage_config *cfg, const char *node, struct storage_report *out);

/* Pieces, for the tests. */
const char *stor_fstype_name(long magic); /* "ext4", "xfs", "nfs" ...; NULL when unknown */
/* Bytes allocated under dir (st_blocks, each inode once, no symlink followed, not past
 * the file system); -errno on failure. */
int64_t stor_scan_bytes(const char *dir);
/* 1 when path is a mount point, 0 when not, -errno. */
int stor_is_mount_point(const char *path);

/* The agent's side (agent.c, agent_http.c): a new configuration from docketd, the check
 * started when due (from the tick), a child reaped (true when it was the check), the
 * heartbeat's report and health. */
void ag_storage_config(struct agent *a, struct storage_config *cfg); /* takes cfg's areas */
void ag_storage_tick(struct agent *a, int64_t now_mono);
bool ag_storage_reaped(struct agent *a, pid_t pid, int status);
/* The heartbeat's `storage` (a new reference), NULL when docketd told nothing yet. */
void *ag_storage_report_json(struct agent *a);
/* false (and the first failing pool in msg) when a pool's check fails. */
bool ag_storage_healthy(struct agent *a, char *msg, size_t len);
void ag_storage_free(struct agent *a);

#endif
