/*
 * sync.h - what sync.c owns: the WAL fdatasync helper thread of the pipelined group
 * commit.
 */
#ifndef DOCKET_CONTROLLER_SYNC_H
#define DOCKET_CONTROLLER_SYNC_H

struct ctl;
struct ctl_sync;

int ctl_sync_start(struct ctl *c);
void ctl_sync_request(struct ctl *c);
void ctl_sync_stop(struct ctl *c);

#endif
