/*
 * policy.h - what policy.c (floor 0) gives the other files of the core: the policy's
 * validation, its lookups by name, and the error setter. Knows nothing of the model.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_POLICY_H
#define DOCKET_CORE_POLICY_H

#include "core/sched.h"

int policy_validate(const struct sched_policy *p, struct sched_error *err);

/* The parts of a policy, by what reads them (sched_set_policy voids exactly what read a
 * part that changed): */
enum policy_part {
    POLICY_TIERS = 1 << 0,    /* tiers: names, order, starvation bounds */
    POLICY_CLASSES = 1 << 1,  /* classes and the default class */
    POLICY_ORDER = 1 << 2,    /* ordering, fair-share and billing weights, multifactor */
    POLICY_ZONE = 1 << 3,     /* the reserved zone */
    POLICY_GUARDS = 1 << 4,   /* preemption on/off, min_runtime, max_preemptions */
    POLICY_BACKFILL = 1 << 5, /* backfill on/off and depth */
    POLICY_GROUPS = 1 << 6,   /* group bounds */
    POLICY_KNOBS = 1 << 7,    /* read afresh where used: caps (queue caps at submission too),
                                 signals, graces, delays,
                                 refresh periods; nothing derived keeps them */
};
/* Which parts differ between a and b (0: the same policy). Every field belongs to one part;
 * policy.c fails to build when the struct grows without this knowing it. */
unsigned policy_diff(const struct sched_policy *a, const struct sched_policy *b);
int policy_tier_find(const struct sched_policy *p, const char *name);
int policy_class_find(const struct sched_policy *p, const char *name);
double policy_gpu_weight(const struct sched_policy *p, const char *type);
int err_set(struct sched_error *err, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
