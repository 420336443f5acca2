/*
 * ocistep.h - the one reader of a container step's request (docs/slurm.md "srun"): the
 * line of JSON a task of `srun --container-image` sends its node's supervisor
 * (src/cli/sruncontainer.c writes it, src/agent/supstep.c serves it):
 *   {"key": "...", "image": "oci-layout:/P:T", "mounts": ["SRC:DST[:ro]", ...],
 *    "workdir": "/in/the/container", "keep_env": ["NAME", ...], "argv": ["cmd", ...],
 *    "env": ["NAME=VALUE", ...], "cwd": "/the/task's/directory"}
 * Shapes only (types, counts, the image reference's and each mount's grammar, paths);
 * whether the key is the job's and a mount's source lies in the job's reach is the
 * supervisor's to decide.
 */
#ifndef DOCKET_PROTOCOL_OCISTEP_H
#define DOCKET_PROTOCOL_OCISTEP_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/container.h"
#include "protocol/error.h"

enum {
    PROTO_OCI_STEP_MAX = 1 << 20,   /* bytes of a whole request */
    PROTO_OCI_STEP_WORDS = 4096,    /* words of argv, variables of env, names of keep_env */
    PROTO_OCI_STEP_KEY_MAX = 128,   /* bytes of the step key */
    PROTO_OCI_STEP_PATH_MAX = 4096, /* bytes of cwd */
};

struct proto_oci_step {
    json_t *doc;                             /* owns every string below */
    const char *key, *image, *workdir, *cwd; /* workdir, cwd: NULL when not given */
    const char **argv, **env, **mounts;      /* NULL-terminated */
    int argc, nenv, nmounts;
    bool keep_path; /* "PATH" is among keep_env */
};

/* Parse `len` bytes of request; errors name the field. 0 (release it after), or -EINVAL
 * / -ENOMEM with e filled and nothing held. */
int proto_oci_step_parse(const char *text, size_t len, struct proto_oci_step *out,
                         struct proto_error *e) PROTO_WUR;
void proto_oci_step_release(struct proto_oci_step *s);

#endif
