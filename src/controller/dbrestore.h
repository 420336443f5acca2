/*
 * dbrestore.h - what dbrestore.c owns: the state directory's lock (docketd.lock, held by
 * a running docketd) and `docketd --restore FILE`, which installs a backup as the
 * database of a stopped docketd (docs/operations.md "Back up and restore the state").
 */
#ifndef DOCKET_CONTROLLER_DBRESTORE_H
#define DOCKET_CONTROLLER_DBRESTORE_H

#include <stddef.h>

/* The lock file in the state directory. */
#define CTL_STATE_LOCK "docketd.lock"

/* Take STATE_DIR/docketd.lock (flock, exclusive, without waiting): docketd holds it for
 * its whole life, --restore while it swaps the files. The descriptor (keep it open), or
 * -EWOULDBLOCK when another process holds it, or another -errno; err says what to do. */
int ctl_state_lock(const char *state_dir, char *err, size_t errlen);
/* The same, waiting up to wait_ms for a docketd that is stopping to let it go (a
 * restart whose old process is still closing the database). */
int ctl_state_lock_wait(const char *state_dir, int wait_ms, char *err, size_t errlen);
/* docketd --restore FILE on state_dir: check FILE (store_backup_verify, on a copy),
 * refuse while a docketd runs there, move docket.db and its -wal and -shm into
 * before-restore-YYYYMMDD-HHMMSS/, install the copy 0600. Messages on stderr, the
 * result on stdout. The exit status: 0 done, 1 refused or failed (nothing changed). */
int ctl_restore_file(const char *state_dir, const char *file);
/* `docketd --db postgresql://... --restore FILE`: a pg_dump archive (`docket admin backup`
 * of a docketd on PostgreSQL) restored into that database in one transaction while no
 * docketd leads it; what it held before is kept in STATE_DIR/before-restore-*.pgdump
 * first. The exit status. */
int ctl_restore_pg(const char *state_dir, const char *uri, const char *file);

#endif
