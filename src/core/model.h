/*
 * model.h - what model.c (floor 1, the bottom of the model) gives the other files of the
 * core: lookups and derived values of jobs, projects and nodes, the look bits, and the
 * decision queue. The model's data is types.h's.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_MODEL_H
#define DOCKET_CORE_MODEL_H

#include "core/types.h"

struct job *job_find(const struct sched *s, uint64_t id);
uint32_t job_slot(const struct sched *s, const struct job *j);
/* The look bits (struct sched): room for `slots` slots (-ENOMEM), and the bit of j's slot
 * set again from j (call after j's reservation or starving flag changed, or j was freed). */
int walk_look_grow(struct sched *s, size_t slots);
void walk_look_sync(struct sched *s, const struct job *j);
int job_eff_rank(const struct sched *s, const struct job *j);
int64_t job_expected_end(const struct sched *s, const struct job *j);
int64_t job_starve_at(const struct sched *s, const struct job *j); /* NEVER: no bound */
int64_t job_duration(const struct job *j);
double job_billing_rate(const struct sched *s, const struct job *j);
const struct sched_class_spec *job_class(const struct sched *s, const struct job *j);
bool job_preemptible_class(const struct sched *s, const struct job *j);
/* Does a outrank b in the queue order (key, then submit time, then id)? */
bool job_outranks(const struct sched *s, const struct job *a, const struct job *b);
const struct sched_alloc *job_alloc_on(const struct job *j, uint32_t node); /* or NULL */
int type_find(const struct sched *s, const char *name);
/* A job's GPU type: the node type of that name, else one that differs only in case
 * (gres.conf and users write `a100-80gb` for `A100-80GB`). */
int type_find_any_case(const struct sched *s, const char *name);
struct user_count *user_count_get(struct sched *s, uint32_t project, uint32_t user, bool create);
/* j joins (+1) or leaves (-1) the queue (pending or held): its project's count and its
 * user's in that project. */
void queued_count(struct sched *s, const struct job *j, int delta);
void project_accrue(struct sched *s, struct project *p, int64_t now);
void projects_accrue(struct sched *s, int64_t now);
bool node_matches_selset(const struct sched *s, const struct node *n, uint32_t selset);
/* The selector sets 1..63 node n matches (bit k: set k). */
uint64_t node_selsets(const struct sched *s, const struct node *n);
void profiles_refresh(struct sched *s);
/* The node's releases in time order with running totals (n->rel, n->nrel), refreshed
 * when its jobs changed; returns n. */
const struct node *node_releases(const struct sched *s, const struct node *n);
struct sched_decision *decision_push(struct sched *s, enum sched_decision_kind kind,
                                     const struct job *j);
void decision_attach_allocs(struct sched *s, struct sched_decision *d, const struct job *j);

#endif
