/*
 * lifecycle.h - what the agent's lifecycle.c owns (docs/storage.md "Lifecycle rules"):
 * the lifecycle runs docketd hands this node (one rule on one project's area, as data:
 * the agent holds no policy), each carried out in a child process one after the other,
 * and their results reported in the heartbeat until docketd has them.
 *
 * The work (lc_execute) walks the area from its descriptor (openat/fstatat, no symbolic
 * link followed, never into another file system, at most LC_MAX_DEPTH directories deep),
 * and for each regular file the run finds due: a dry run lists it; a move copies it into
 * the project's area on the target pool (under a temporary name, throttled to the run's
 * rate, then checked: same size and SHA-256 read back from the disk), renames it into
 * place and only then removes the source; a delete removes it. A file that something
 * holds open (a write lease cannot be had, or is broken during the copy) or that changes
 * during the copy is left where it is; so is every file once the target is full.
 */
#ifndef DOCKET_AGENT_LIFECYCLE_H
#define DOCKET_AGENT_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol/lifecycle.h"

struct agent;

enum { LC_MAX_DEPTH = 128 }; /* directories deeper than this are left (and counted) */

/* Carry out run r (the child's work): out gets its counts, its list and its message. */
void lc_execute(const struct lifecycle_run *r, struct lifecycle_result *out);
/* For the tests: a file of this name has one byte of its copy changed before the copy is
 * checked (the system test's DOCKET_NODE_TEST_LC_CORRUPT), so the check must catch it. */
void lc_test_corrupt(const char *name);

/* The agent's side: the runs of a heartbeat reply taken (new ones queued), the next
 * started when none runs (from the tick), a child reaped (true when it was a run's), the
 * heartbeat's `lifecycle` (a new reference, NULL when none is held; the done runs in it
 * are marked sent), the heartbeat answered (the done runs it carried are dropped), and
 * the long poll to ask for while a run is under way. */
void ag_lifecycle_take(struct agent *a, const struct lifecycle_run *runs, size_t n);
void ag_lifecycle_tick(struct agent *a);
bool ag_lifecycle_reaped(struct agent *a, pid_t pid, int status);
void *ag_lifecycle_report_json(struct agent *a);
void ag_lifecycle_acked(struct agent *a);
int64_t ag_lifecycle_wait_ms(const struct agent *a, int64_t wait_ms);
void ag_lifecycle_free(struct agent *a);

#endif
