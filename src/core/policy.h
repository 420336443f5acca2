/*
 * policy.h - what policy.c (floor 0) gives the other files of the core: the policy's
 * validation, its lookups by name, and the error setter. Knows nothing of the model.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_POLICY_H
#define DOCKET_CORE_POLICY_H

#include "core/sched.h"

int policy_validate(const struct sched_policy *p, struct sched_error *err);
int policy_tier_find(const struct sched_policy *p, const char *name);
int policy_class_find(const struct sched_policy *p, const char *name);
double policy_gpu_weight(const struct sched_policy *p, const char *type);
int err_set(struct sched_error *err, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
