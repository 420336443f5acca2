/*
 * caches.h - what caches.c (floor 1) gives the files that keep caches: the ledger of
 * their checks under sched_verify_memos() (enum sched_cache in sched.h).
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_CACHES_H
#define DOCKET_CORE_CACHES_H

#include "core/types.h"

/* Should a hit of cache c be computed again? (verification on, no difference found yet)
 * Inline: it is asked at every hit, in the walk's inner loops too. */
static inline bool cache_verifying(const struct sched *s, enum sched_cache c)
{
    return s->verify_memos && !s->cache_wrong[c];
}
/* A hit of cache c for job `job` was computed again: `same` when both answers agree. */
void cache_verified(struct sched *s, enum sched_cache c, uint64_t job, bool same);
/* Input i alone ended a quiet proof, and the service that followed changed something. */
void cache_quiet_witness(struct sched *s, enum sched_quiet_input i);
/* What a difference found by cache c's check means, for sched_check(). */
const char *cache_wrong_means(enum sched_cache c);

#endif
