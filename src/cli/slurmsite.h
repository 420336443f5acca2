/*
 * slurmsite.h - the readers of a Slurm site's files for `docket import slurm` (import.c,
 * docs/slurm.md "A site imports itself"), and the policy document made from what they
 * read. One reader per format: slurm.conf (NodeName, PartitionName and the global keys),
 * gres.conf (the GPU types of nodes), a `sacctmgr dump` (accounts, users, their limits
 * and shares) and `sacctmgr show qos -P` (QOS priorities, preemption, limits).
 *
 * Each reader adds what it understood to one JSON object, the site ("nodes", "partitions",
 * "accounts", "users", "qos", "globals"), and one line per thing it could not map to
 * `unmapped` (an array of strings), naming the file's line. None fails on content: a site
 * file is read as far as it goes, and what is left out is said. Pure: text in, JSON out.
 */
#ifndef DOCKET_CLI_SLURMSITE_H
#define DOCKET_CLI_SLURMSITE_H

#include <jansson.h>

/* A new, empty site. */
json_t *slurm_site_new(void);
void slurm_conf_read(json_t *site, const char *text, json_t *unmapped);
void slurm_gres_read(json_t *site, const char *text, json_t *unmapped);
void slurm_sacctmgr_read(json_t *site, const char *text, json_t *unmapped);
void slurm_qos_read(json_t *site, const char *text, json_t *unmapped);
/* Slurm's time ("2-00:00:00", "1:30:00", "90" minutes, "UNLIMITED") in seconds: 0 for
 * unlimited, -1 when it does not read. */
long long slurm_time_secs(const char *s);

/* gpu_aliases from the GPU types of gres.conf/slurm.conf to those the cluster's nodes of
 * the same names report (`nodes`: GET /v1/nodes's list), where they differ beyond case. */
json_t *slurm_site_aliases(const json_t *site, const json_t *nodes, json_t *unmapped);

/* The policy document of the site (a new reference): tiers from the QOS, partitions,
 * node_labels (features and partition membership), groups and projects with their
 * members and default accounts. What it cannot express goes to `unmapped`. */
json_t *slurm_site_policy(const json_t *site, json_t *unmapped);

#endif
