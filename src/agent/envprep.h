/*
 * envprep.h - a template's prepare script built once per node and version
 * (docs/environments.md "Warm environments"), shared by the two that build it: a job's
 * supervisor (supwarm.c, the first job of a version on a node) and docket-node's warm
 * orders (warm.c, ahead of any job). STATE_DIR/envs/NAME@VERSION holds what it built,
 * NAME@VERSION.log its output, NAME@VERSION.lock is held while it builds, `.ready` inside
 * says it finished. Implemented in supwarm.c.
 */
#ifndef DOCKET_AGENT_ENVPREP_H
#define DOCKET_AGENT_ENVPREP_H

#include <stdbool.h>
#include <stddef.h>

struct env_prep {
    const char *state_dir;       /* the agent's state directory */
    const char *key;             /* NAME@VERSION */
    const char *script;          /* the prepare script; NULL: nothing to build */
    int log_fd;                  /* a failed build's log end is copied here, or -1 */
    void (*building)(void *arg); /* before a build starts (not when already built) */
    void (*in_child)(void *arg); /* in the script's process before it runs: a cgroup */
    bool (*stopped)(void *arg);  /* asked while it runs: true kills it */
    void *arg;
};

/* Build it when it is not built yet, waiting for one being built: its directory into dir
 * ("" without a script). 0, or -errno with the reason in err. */
int env_prepare(const struct env_prep *p, char *dir, size_t dirlen, char *err, size_t errlen);

#endif
