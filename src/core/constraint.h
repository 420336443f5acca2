/*
 * constraint.h - what constraint.c (floor 0) gives the other files of the core: Slurm's
 * --constraint grammar, read and evaluated against a node's labels. A node's features are
 * the comma-separated items of its `features` label and the value of every label
 * (docs/slurm.md "Features"). Knows nothing of the model.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_CONSTRAINT_H
#define DOCKET_CORE_CONSTRAINT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/sched.h"

/* What a valid expression asks beyond "does this node match": */
struct feat_shape {
    int counts;    /* factors with a node count (`a*2`) */
    int top_count; /* the count of the whole expression (`a*2`, `[a|b]*2`), else 0 */
    bool alike;    /* a matching OR (`[a|b]`): every node the same alternative */
};

/* 0 when expr reads as Slurm's grammar (shape filled when not NULL); else -EINVAL with a
 * sentence naming the place in why. */
int feat_parse(const char *expr, struct feat_shape *shape, char *why, size_t whylen);

/* Does a node with these labels satisfy expr (counts and brackets read as plain ORs)?
 * False for an expression that does not parse. */
bool feat_match(const char *expr, const struct sched_label *labels, int nlabels);

/* Is `name` one of the node's features? */
bool feat_has(const char *name, const struct sched_label *labels, int nlabels);

#endif
