/*
 * container.c - image references and mounts of a job's container (container.h).
 */
#include <stdio.h>
#include <string.h>

#include "protocol/container.h"
#include "util/str.h"

bool proto_container_path_ok(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n >= PROTO_MOUNT_PATH_MAX || p[0] != '/' || (n > 1 && p[n - 1] == '/'))
        return false;
    for (const char *c = p; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == ':' || *c == ',')
            return false;
    /* every component: not empty, not "." nor ".." (a path says where it goes) */
    for (const char *c = p + 1; n > 1 && *c;) {
        size_t k = strcspn(c, "/");
        if (k == 0 || (k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        c += k + (c[k] == '/');
    }
    return true;
}

/* An OCI layout's tag: [A-Za-z0-9_][A-Za-z0-9._-]* (at most 127 bytes). */
static bool tag_ok(const char *t)
{
    size_t n = strlen(t);
    if (n == 0 || n >= PROTO_IMAGE_TAG_MAX || *t == '.' || *t == '-')
        return false;
    return strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* A registry reference as skopeo takes it: host, path, tag or digest; one argv word. */
static bool docker_name_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && *s != '-' && *s != '/' &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/:@-") == n;
}

int proto_image_ref_parse(const char *s, const char *field, struct proto_image_ref *out,
                          struct proto_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!s || strlen(s) >= PROTO_IMAGE_REF_MAX)
        return proto_errorf(err, 400, NULL, field, "%s must be at most %d bytes", field,
                            PROTO_IMAGE_REF_MAX - 1);
    if (str_has_prefix(s, "docker://")) {
        out->kind = PROTO_IMAGE_DOCKER;
        if (!docker_name_ok(s + 9))
            return proto_errorf(err, 400, NULL, field,
                                "%s: '%.80s' is not a registry reference (docker://HOST/NAME:TAG)",
                                field, s);
        str_copy(out->path, sizeof(out->path), s + 9);
        return 0;
    }
    if (!str_has_prefix(s, "oci-layout:"))
        return proto_errorf(err, 400, NULL, field,
                            "%s: '%.80s' is neither oci-layout:/PATH[:TAG] nor docker://NAME",
                            field, s);
    out->kind = PROTO_IMAGE_OCI_LAYOUT;
    const char *p = s + 11, *colon = strchr(p, ':');
    size_t plen = colon ? (size_t)(colon - p) : strlen(p);
    char path[PROTO_IMAGE_REF_MAX];
    memcpy(path, p, plen);
    path[plen] = '\0';
    if (!proto_container_path_ok(path))
        return proto_errorf(err, 400, NULL, field,
                            "%s: the layout's directory must be an absolute path without '..'",
                            field);
    const char *tag = colon ? colon + 1 : "latest";
    if (!tag_ok(tag))
        return proto_errorf(err, 400, NULL, field, "%s: '%.80s' is not an image tag", field, tag);
    str_copy(out->path, sizeof(out->path), path);
    str_copy(out->tag, sizeof(out->tag), tag);
    return 0;
}

/* The runtime makes these itself; a job's mount over them could hide its devices. */
static bool reserved_destination(const char *d)
{
    static const char *const under[] = {"/proc", "/sys", "/dev"};
    if (strcmp(d, "/") == 0)
        return true;
    for (size_t i = 0; i < sizeof(under) / sizeof(under[0]); i++) {
        size_t n = strlen(under[i]);
        if (strncmp(d, under[i], n) == 0 && (d[n] == '\0' || d[n] == '/'))
            return true;
    }
    return false;
}

int proto_mount_parse(const char *s, const char *field, struct proto_mount *out,
                      struct proto_error *err)
{
    memset(out, 0, sizeof(*out));
    char buf[3 * PROTO_MOUNT_PATH_MAX];
    if (!s || str_copy(buf, sizeof(buf), s) < 0)
        return proto_errorf(err, 400, NULL, field, "%s is too long", field);
    char *parts[4] = {buf, NULL, NULL, NULL};
    int n = 1;
    for (char *c = buf; *c && n < 4; c++)
        if (*c == ':') {
            *c = '\0';
            parts[n++] = c + 1;
        }
    const char *opt = n == 3 ? parts[2] : "rw";
    if (n == 4 || (strcmp(opt, "ro") != 0 && strcmp(opt, "rw") != 0))
        return proto_errorf(err, 400, NULL, field,
                            "%s: '%.80s' is not SRC:DST[:ro|:rw] or one path", field, s);
    const char *dst = n >= 2 ? parts[1] : parts[0];
    if (!proto_container_path_ok(parts[0]) || !proto_container_path_ok(dst))
        return proto_errorf(err, 400, NULL, field,
                            "%s: '%.80s': both sides must be absolute paths without '..'", field,
                            s);
    if (reserved_destination(dst))
        return proto_errorf(err, 400, NULL, field,
                            "%s: '%.80s': the container's /, /proc, /sys and /dev are the "
                            "runtime's",
                            field, dst);
    str_copy(out->src, sizeof(out->src), parts[0]);
    str_copy(out->dst, sizeof(out->dst), dst);
    out->ro = strcmp(opt, "ro") == 0;
    return 0;
}

void proto_mount_text(const struct proto_mount *m, char *out, size_t len)
{
    snprintf(out, len, "%s:%s%s", m->src, m->dst, m->ro ? ":ro" : "");
}

static int add_mount(const char *s, const char *field, size_t i, json_t *out,
                     struct proto_error *err)
{
    char f[96], text[3 * PROTO_MOUNT_PATH_MAX];
    snprintf(f, sizeof(f), "%s[%zu]", field, i);
    if (json_array_size(out) >= PROTO_MAX_MOUNTS)
        return proto_errorf(err, 400, NULL, field, "%s: at most %d mounts", field,
                            PROTO_MAX_MOUNTS);
    struct proto_mount m;
    int rc = proto_mount_parse(s, f, &m, err);
    if (rc < 0)
        return rc;
    proto_mount_text(&m, text, sizeof(text));
    json_array_append_new(out, json_string(text));
    return 0;
}

int proto_mounts_parse(const json_t *v, const char *field, json_t *out, struct proto_error *err)
{
    if (json_is_string(v)) { /* Pyxis's one argument: mounts separated by commas */
        char buf[PROTO_MAX_MOUNTS * 2 * PROTO_MOUNT_PATH_MAX];
        if (strlen(json_string_value(v)) != json_string_length(v) ||
            str_copy(buf, sizeof(buf), json_string_value(v)) < 0)
            return proto_errorf(err, 400, NULL, field, "%s is too long", field);
        size_t i = 0;
        for (char *t = buf, *comma; t; t = comma ? comma + 1 : NULL) {
            comma = strchr(t, ',');
            if (comma)
                *comma = '\0';
            int rc = add_mount(t, field, i++, out, err);
            if (rc < 0)
                return rc;
        }
        return 0;
    }
    if (!json_is_array(v))
        return proto_errorf(err, 400, NULL, field, "%s must be a list of SRC:DST[:ro] strings",
                            field);
    size_t i;
    const json_t *x;
    json_array_foreach(v, i, x) {
        if (!json_is_string(x) || strlen(json_string_value(x)) != json_string_length(x))
            return proto_errorf(err, 400, NULL, field, "%s[%zu] must be a string", field, i);
        int rc = add_mount(json_string_value(x), field, i, out, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}
