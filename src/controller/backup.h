/*
 * backup.h - what backup.c owns: GET /v1/admin/backup, one snapshot of the database made
 * on a thread of its own and streamed to the client (docs/api.md "Backup"), and the
 * temporary file it lives in while it is made.
 */
#ifndef DOCKET_CONTROLLER_BACKUP_H
#define DOCKET_CONTROLLER_BACKUP_H

struct ctl;
struct ctl_req;

/* The temporary file's name in the state directory (a crash may leave it: the next
 * start removes it, ctl_backup_init). */
#define CTL_BACKUP_TMP "backup.tmp"

void h_admin_backup(struct ctl_req *r);
/* At start, before the listeners: remove a temporary file a killed docketd left. */
void ctl_backup_init(struct ctl *c);
/* At shutdown: stop a backup being made (its client hears 503), wait for its thread and
 * remove its file. A backup being streamed ends with the streams (ctl_http_stop). */
void ctl_backup_stop(struct ctl *c);

#endif
