/*
 * fuzz_container.c - libFuzzer harness for a job's container fields (protocol/container.h):
 * any bytes as an image reference and as a mount; any JSON as a mount list.
 * Invariants: an accepted reference has an absolute layout path or a registry name; an
 * accepted mount, written back, reads back the same; every refusal says why; nothing
 * leaks or crashes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/container.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void refused(const struct proto_error *e)
{
    if (!e->message[0])
        abort();
}

static void check_text(const char *s)
{
    struct proto_image_ref r;
    struct proto_error e = {0};
    if (proto_image_ref_parse(s, "image", &r, &e) != 0)
        refused(&e);
    else if (r.kind == PROTO_IMAGE_OCI_LAYOUT ? !proto_container_path_ok(r.path) || !r.tag[0]
                                              : !r.path[0])
        abort();
    static struct proto_mount m, n;
    static char text[3 * PROTO_MOUNT_PATH_MAX];
    memset(&e, 0, sizeof(e));
    if (proto_mount_parse(s, "m", &m, &e) != 0) {
        refused(&e);
        return;
    }
    proto_mount_text(&m, text, sizeof(text));
    if (proto_mount_parse(text, "m", &n, &e) != 0 || strcmp(m.src, n.src) != 0 ||
        strcmp(m.dst, n.dst) != 0 || m.ro != n.ro)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    check_text(s);
    free(s);
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!j)
        return 0;
    json_t *out = json_array();
    struct proto_error e = {0};
    if (proto_mounts_parse(j, "mounts", out, &e) != 0)
        refused(&e);
    else if (json_array_size(out) > PROTO_MAX_MOUNTS)
        abort();
    json_decref(out);
    json_decref(j);
    return 0;
}
