/*
 * ocistep.c - a container step's request read and checked (ocistep.h).
 */
#include "protocol/ocistep.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A list of at most `max` strings (each "NAME=VALUE" when kv) as a NULL-terminated
 * vector borrowing from the document; absent = empty. */
static int string_list(const json_t *doc, const char *field, int max, bool kv, const char ***out,
                       int *n, struct proto_error *e)
{
    const json_t *a = json_object_get(doc, field);
    *out = NULL;
    *n = 0;
    if (a && (!json_is_array(a) || json_array_size(a) > (size_t)max))
        return proto_errorf(e, 400, NULL, field, "%s must be a list of at most %d strings", field,
                            max);
    size_t size = a ? json_array_size(a) : 0;
    if (!(*out = calloc(size + 1, sizeof **out)))
        return proto_errorf(e, 500, NULL, field, "out of memory");
    for (size_t i = 0; i < size; i++) {
        const char *v = json_string_value(json_array_get(a, i));
        const char *eq = v ? strchr(v, '=') : NULL;
        if (!v || (kv && (!eq || eq == v))) {
            free(*out);
            *out = NULL;
            return proto_errorf(e, 400, NULL, field, "%s[%zu] must be a string%s", field, i,
                                kv ? " NAME=VALUE" : "");
        }
        (*out)[i] = v;
    }
    *n = (int)size;
    return 0;
}

/* An optional string field of at most max bytes. */
static int opt_string(const json_t *doc, const char *field, size_t max, const char **out,
                      struct proto_error *e)
{
    const json_t *v = json_object_get(doc, field);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) > max ||
        strlen(json_string_value(v)) != json_string_length(v))
        return proto_errorf(e, 400, NULL, field, "%s must be a string of at most %zu bytes", field,
                            max);
    *out = json_string_value(v);
    return 0;
}

static int check_fields(struct proto_oci_step *s, struct proto_error *e)
{
    struct proto_image_ref ref;
    struct proto_mount m;
    int rc = opt_string(s->doc, "key", PROTO_OCI_STEP_KEY_MAX, &s->key, e);
    if (rc == 0)
        rc = opt_string(s->doc, "image", PROTO_IMAGE_REF_MAX, &s->image, e);
    if (rc == 0)
        rc = opt_string(s->doc, "workdir", PROTO_MOUNT_PATH_MAX, &s->workdir, e);
    if (rc == 0)
        rc = opt_string(s->doc, "cwd", PROTO_OCI_STEP_PATH_MAX, &s->cwd, e);
    if (rc < 0)
        return rc;
    if (!s->image)
        return proto_errorf(e, 400, NULL, "image", "no image");
    if (proto_image_ref_parse(s->image, "--container-image", &ref, e) < 0)
        return -EINVAL;
    if (s->workdir && !proto_container_path_ok(s->workdir))
        return proto_errorf(e, 400, NULL, "workdir",
                            "--container-workdir '%.200s' is not an absolute path", s->workdir);
    if (s->argc < 1)
        return proto_errorf(e, 400, NULL, "argv", "no command");
    for (int i = 0; i < s->nmounts; i++)
        if (proto_mount_parse(s->mounts[i], "--container-mounts", &m, e) < 0)
            return -EINVAL;
    return 0;
}

int proto_oci_step_parse(const char *text, size_t len, struct proto_oci_step *out,
                         struct proto_error *e)
{
    const char **keep = NULL;
    int nkeep = 0;
    memset(out, 0, sizeof *out);
    if (len > PROTO_OCI_STEP_MAX)
        return proto_errorf(e, 413, NULL, NULL, "a request of more than %d bytes",
                            PROTO_OCI_STEP_MAX);
    out->doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(out->doc)) {
        json_decref(out->doc);
        out->doc = NULL;
        return proto_errorf(e, 400, NULL, NULL, "a request must be a JSON object");
    }
    int rc = string_list(out->doc, "argv", PROTO_OCI_STEP_WORDS, false, &out->argv, &out->argc, e);
    if (rc == 0)
        rc = string_list(out->doc, "env", PROTO_OCI_STEP_WORDS, true, &out->env, &out->nenv, e);
    if (rc == 0)
        rc = string_list(out->doc, "mounts", PROTO_MAX_MOUNTS, false, &out->mounts, &out->nmounts,
                         e);
    if (rc == 0)
        rc = string_list(out->doc, "keep_env", PROTO_OCI_STEP_WORDS, false, &keep, &nkeep, e);
    for (int i = 0; rc == 0 && i < nkeep; i++)
        out->keep_path = out->keep_path || strcmp(keep[i], "PATH") == 0;
    free(keep);
    if (rc == 0)
        rc = check_fields(out, e);
    if (rc < 0)
        proto_oci_step_release(out);
    return rc;
}

void proto_oci_step_release(struct proto_oci_step *s)
{
    free(s->argv);
    free(s->env);
    free(s->mounts);
    json_decref(s->doc);
    memset(s, 0, sizeof *s);
}
