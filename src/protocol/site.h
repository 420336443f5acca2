/*
 * site.h - the Slurm site's sections of the policy document (docs/slurm.md "A site's
 * partitions and GPU names"): `gpu_aliases` (the names a site's gres.conf and users give
 * GPU types, to the types the nodes report) and `partitions` (node sets by label, with
 * default and max time, default tier and class, the projects allowed, the default one).
 * Read by proto_policy_parse with the rest of the document, each error naming its field
 * ("partitions[1].max_time"); kept as normalised JSON (every key present, one order), so
 * the stored policy reads back the same. Nothing here holds state or applies a partition
 * to a job: the controller does (controller/site.c).
 */
#ifndef DOCKET_PROTOCOL_SITE_H
#define DOCKET_PROTOCOL_SITE_H

#include <jansson.h>
#include <stdbool.h>

#include "protocol/proto.h"

enum {
    PROTO_MAX_GPU_ALIASES = 256,
    PROTO_MAX_PARTITIONS = 128,
    PROTO_MAX_PARTITION_PROJECTS = 4096,
    PROTO_MAX_NODE_LABEL_NODES = 20000,
};

/* `gpu_aliases`: an object NAME -> GPU type; names are unique whatever their case. The
 * normalised copy (a new reference) in *out. */
int proto_gpu_aliases_parse(const json_t *v, json_t **out, struct proto_error *err) PROTO_WUR;
/* `partitions`: a list of {name, nodes: {LABEL: VALUE|"!VALUE"}, default_time, max_time,
 * tier, class, projects: [...], default: bool}; at most one default; a tier or class it
 * names must be among the policy's. The normalised list (a new reference) in *out. */
int proto_partitions_parse(const json_t *v, const struct sched_policy *p, json_t **out,
                           struct proto_error *err) PROTO_WUR;

/* `node_labels`: an object NODE -> {LABEL: VALUE} (at most SCHED_MAX_LABELS each; a
 * `features` value may be a list), the labels docketd gives those nodes: at apply to the
 * nodes it knows, at first registration to the others. The copy (a new reference) in *out. */
int proto_node_labels_parse(const json_t *v, json_t **out, struct proto_error *err) PROTO_WUR;

/* The GPU type `name` stands for under `aliases` (any case), or NULL. */
const char *proto_gpu_alias(const json_t *aliases, const char *name);
/* The partition called `name` in a normalised list, or with name NULL the default one;
 * NULL when none. */
const json_t *proto_partition_find(const json_t *partitions, const char *name);
/* Does project `project` may use partition `part` (no `projects` list: every project)? */
bool proto_partition_allows(const json_t *part, const char *project);

#endif
