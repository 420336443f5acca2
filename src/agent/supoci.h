/*
 * supoci.h - a job in a container (docs/environments.md "Containers"), in its supervisor:
 * its image made ready in the node's cache (imgcache.h) and held while it runs, an OCI
 * bundle JOBDIR/oci written (config.json: the job's argv, env, user and groups, working
 * directory, mounts, only its GPUs' device nodes, no capabilities, no new privileges),
 * and the job's child exec'ing the OCI runtime (crun, from Debian) on it. The
 * container shares the job's cgroup (crun --cgroup-manager=disabled), PID and network
 * namespaces, so limits, accounting, reclaim and signals work as for a bare job.
 * Private to the supervisor; see sup_int.h.
 */
#ifndef DOCKET_AGENT_SUPOCI_H
#define DOCKET_AGENT_SUPOCI_H

#include <stdbool.h>
#include <stddef.h>

struct sup;
struct sup_config;
struct cg_exe;

/* Whether the job runs in a container (an image, and a command of its own: a Slurm
 * job's step host and holder on the other nodes stay on the node's system). */
bool sup_oci_wanted(const struct sup *s);
/* Before the job's state is first saved (so the agent reports "preparing image" while an
 * unpack runs): the runtime found, the image ready in the cache and held. 0, or -errno
 * with err (the failing step's output on the job's stderr). */
int sup_oci_image(struct sup *s, char *err, size_t errlen);
/* Before the spawn: the bundle written for argv and env. 0, or -errno with err. */
int sup_oci_bundle(struct sup *s, char *const *argv, char *const *env, char *err, size_t errlen);
/* In the job's child, as root, its descriptors set: a private mount namespace where the
 * runtime needs one, then exec the runtime. Returns only on failure (-errno). */
int sup_oci_exec(struct sup *s);
/* After the job: a runtime that failed before the job's process ran makes the exit a
 * launch failure with the runtime's message; 128+N from the runtime is signal N. */
void sup_oci_exit(struct sup *s);
/* The program file of the node's OCI runtime (the configured one), or -ENOENT. */
int sup_oci_runtime_file(const struct sup_config *c, struct cg_exe *out);
/* A step's task (supstep.c) is over: its image let go, its bundle removed. */
void sup_oci_done(struct sup *s);

#endif
