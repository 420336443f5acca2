/*
 * container.h - the one reader of a job's container fields (docs/environments.md
 * "Containers"), shared by docketd (the submit body, the policy's templates), the agent
 * (the start command's "container") and the CLI (--image, --container-mounts):
 *   - an image reference: "oci-layout:/ABS/PATH[:TAG]" (an OCI image layout on a file
 *     system the nodes see) or "docker://NAME[:TAG|@DIGEST]" (a registry, through skopeo);
 *   - a mount: "SRC:DST[:ro|:rw]" or "PATH" (the same path on both sides), Pyxis's form;
 *     normalised to "SRC:DST" or "SRC:DST:ro".
 * Nothing here does I/O or decides what a site allows: docketd checks a mount's source
 * against the job's working directory and storage areas, the agent against the user's
 * rights on the node.
 */
#ifndef DOCKET_PROTOCOL_CONTAINER_H
#define DOCKET_PROTOCOL_CONTAINER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "protocol/error.h"

enum {
    PROTO_IMAGE_REF_MAX = 1024, /* bytes of a whole reference */
    PROTO_IMAGE_TAG_MAX = 128,  /* an OCI layout's tag (the OCI ref.name grammar) */
    PROTO_MOUNT_PATH_MAX = 1024,
    PROTO_MAX_MOUNTS = 32, /* mounts of one job (its template's and its own) */
};

enum proto_image_kind { PROTO_IMAGE_OCI_LAYOUT, PROTO_IMAGE_DOCKER };

struct proto_image_ref {
    enum proto_image_kind kind;
    char path[PROTO_IMAGE_REF_MAX]; /* the layout's directory, or docker://'s NAME[:TAG] */
    char tag[PROTO_IMAGE_TAG_MAX];  /* the layout's tag ("latest" when not given) */
};

struct proto_mount {
    char src[PROTO_MOUNT_PATH_MAX], dst[PROTO_MOUNT_PATH_MAX];
    bool ro;
};

/* Parse an image reference; errors name `field`. */
int proto_image_ref_parse(const char *s, const char *field, struct proto_image_ref *out,
                          struct proto_error *err) PROTO_WUR;
/* An absolute path without "." or ".." components, empty components, a trailing slash,
 * control bytes, ':' or ','. */
bool proto_container_path_ok(const char *p);
/* Parse one mount; errors name `field`. The destination may not be "/" nor lie under
 * /proc, /sys or /dev (the runtime's own). */
int proto_mount_parse(const char *s, const char *field, struct proto_mount *out,
                      struct proto_error *err) PROTO_WUR;
/* The normalised text of a mount into out. */
void proto_mount_text(const struct proto_mount *m, char *out, size_t len);
/* A list of mounts (JSON strings, or one string of them separated by commas as Pyxis's
 * --container-mounts): appended, normalised, to `out` (an array); at most
 * PROTO_MAX_MOUNTS in all. Errors name field[i]. */
int proto_mounts_parse(const json_t *v, const char *field, json_t *out,
                       struct proto_error *err) PROTO_WUR;

#endif
