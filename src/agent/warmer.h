/*
 * warmer.h - what the agent's warmer.c owns (docs/environments.md "Warm environments"):
 * the templates docketd asked this node to make warm before any job needs them (the
 * heartbeat reply's `warm`, protocol/warm.h). Each is made warm in a child process, one
 * after the other, outside every job (no job's cgroup, no job's time): its prepare script
 * built into STATE_DIR/envs/NAME@VERSION (envprep.h) and its image unpacked into the image
 * cache (imgcache.h), both exactly where a job of that version looks first. Its state
 * (warming, ready, failed with the reason, evicted) goes in every heartbeat; a ready one
 * whose image the cache evicted since, or whose directory is gone, is reported evicted.
 * The agent holds no policy: it warms what it is told, nothing else.
 */
#ifndef DOCKET_AGENT_WARMER_H
#define DOCKET_AGENT_WARMER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol/warm.h"

struct agent;

/* The orders of a heartbeat reply: new ones queued, a newer `gen` of a finished one
 * queued again. */
void ag_warm_take(struct agent *a, const struct warm_order *orders, size_t n);
/* Start the next queued one when none runs. */
void ag_warm_tick(struct agent *a);
/* A child reaped: true when it was the warmer's (its result is read). */
bool ag_warm_reaped(struct agent *a, pid_t pid, int status);
/* The heartbeat's `warm`: a new reference, NULL when nothing was asked. */
void *ag_warm_report_json(struct agent *a);
/* The long poll to ask for while a template is being made warm (its end is reported
 * soon). */
int64_t ag_warm_wait_ms(const struct agent *a, int64_t wait_ms);
void ag_warm_free(struct agent *a);

/* The child's work, for one order (also what the unit test runs): 0 and the image's
 * digest (or ""), or -1 and the reason. */
int ag_warm_do(const char *state_dir, int64_t image_cache_max, const struct warm_order *o,
               char *digest, size_t dlen, char *why, size_t wlen);

#endif
