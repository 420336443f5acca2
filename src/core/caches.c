/*
 * caches.c - the ledger of the core's caches (floor 1): under sched_verify_memos() each
 * hit of a cache is computed again the slow way by the file that keeps the cache, and
 * recorded here, per kind (enum sched_cache): how many hits were checked, and the first
 * job whose two answers differed, which sched_check() then reports. A cache that forgot
 * an input gives, sooner or later in the property test, an answer the slow way does not;
 * and the property test fails while a kind's check never runs, so a cache cannot be
 * added without its check (docs/scheduling.md "What each cache reads").
 */
#include "core/caches.h"

struct cache_desc {
    const char *name;
    const char *wrong; /* what a difference means */
};

static const struct cache_desc caches[] = {
    [SCHED_CACHE_SHAPE_MEMO] = {"shape memo", "it skipped a search that finds victims"},
    [SCHED_CACHE_OWN_MEMO] = {"own memo", "it skipped a search that finds victims"},
    [SCHED_CACHE_VICTIM_GATE] = {"victim gate", "it skipped a search that finds victims"},
    [SCHED_CACHE_QUIET] = {"quiet proof", "serving the job changed something"},
    [SCHED_CACHE_PLACE_MEMO] = {"placement memo", "it answered unlike a full scan"},
    [SCHED_CACHE_RES_PRUNED] = {"pruned reservation search", "it chose unlike a full search"},
    [SCHED_CACHE_WALK_SKIP] = {"walk skip", "the job it skipped could start now"},
    [SCHED_CACHE_RES_USABLE] = {"reservation usable", "a node of the reservation is not usable"},
    [SCHED_CACHE_STATIC_REASON] = {"static reason", "a fresh look at the nodes says otherwise"},
    [SCHED_CACHE_PLAN_MEMO] = {"plan memo", "it chose unlike a full search"},
};
_Static_assert(sizeof(caches) / sizeof(caches[0]) == SCHED_CACHE_COUNT,
               "every enum sched_cache has its name and meaning here");

void cache_verified(struct sched *s, enum sched_cache c, uint64_t job, bool same)
{
    s->cache_checked[c]++;
    if (!same && !s->cache_wrong[c])
        s->cache_wrong[c] = job ? job : UINT64_MAX;
}

static const char *const quiet_inputs[] = {
    [SCHED_QI_SLOT] = "its job",   [SCHED_QI_EPOCH] = "memo epoch",
    [SCHED_QI_USAGE] = "usage",    [SCHED_QI_RECLAIM] = "reclaim epoch",
    [SCHED_QI_WAKE] = "wake time", [SCHED_QI_NODES] = "nodes and room",
};
_Static_assert(sizeof(quiet_inputs) / sizeof(quiet_inputs[0]) == SCHED_QI_COUNT,
               "every enum sched_quiet_input has its name here");

void cache_quiet_witness(struct sched *s, enum sched_quiet_input i)
{
    s->quiet_witness[i]++;
}

const char *sched_quiet_input_name(enum sched_quiet_input i)
{
    return (unsigned)i < SCHED_QI_COUNT ? quiet_inputs[i] : "?";
}

const char *cache_wrong_means(enum sched_cache c)
{
    return (unsigned)c < SCHED_CACHE_COUNT ? caches[c].wrong : "";
}

const char *sched_cache_name(enum sched_cache c)
{
    return (unsigned)c < SCHED_CACHE_COUNT ? caches[c].name : "?";
}

void sched_cache_checks(const struct sched *s, struct sched_cache_checks *out)
{
    for (int c = 0; c < SCHED_CACHE_COUNT; c++) {
        out->checked[c] = s->cache_checked[c];
        out->wrong[c] = s->cache_wrong[c];
    }
    for (int i = 0; i < SCHED_QI_COUNT; i++)
        out->quiet_witness[i] = s->quiet_witness[i];
}

void sched_verify_memos(struct sched *s, bool on)
{
    s->verify_memos = on;
}
