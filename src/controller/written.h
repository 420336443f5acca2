/*
 * written.h - what written.c owns: the jobs written since the disk last caught up (the
 * invariant is at the top of written.c).
 */
#ifndef DOCKET_CONTROLLER_WRITTEN_H
#define DOCKET_CONTROLLER_WRITTEN_H

#include <stdbool.h>
#include <stdint.h>

struct ctl;
struct store_job;

/* start: track every write of c->store from now on (before the first write that
 * matters: until then no job is durable); stop: forget. synced: every commit up to
 * `synced` is on disk. ctl_job_durable: nothing job j's row, spec or array marker hold is
 * ahead of the disk (false when tracking is off or docketd diverged). */
void ctl_written_start(struct ctl *c);
void ctl_written_stop(struct ctl *c);
void ctl_written_synced(struct ctl *c, uint64_t synced);
bool ctl_job_durable(const struct ctl *c, const struct store_job *j);

#endif
