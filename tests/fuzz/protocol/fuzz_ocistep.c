/*
 * fuzz_ocistep.c - libFuzzer harness for a container step's request (protocol/ocistep.h),
 * the line a task of `srun --container-image` sends its node's supervisor (root): any
 * bytes as a request. Invariants: an accepted request has an image that parses, a
 * command, NULL-terminated lists of the counts it says, every variable NAME=VALUE, and
 * every mount that parses; a refusal says why and holds nothing; nothing leaks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/ocistep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_list(const char **v, int n)
{
    for (int i = 0; i < n; i++)
        if (!v[i])
            abort();
    if (v[n])
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct proto_oci_step s;
    struct proto_error e = {0};
    if (proto_oci_step_parse((const char *)data, size, &s, &e) != 0) {
        if (!e.message[0] || s.doc || s.argv)
            abort();
        return 0;
    }
    struct proto_image_ref r;
    struct proto_mount m;
    if (!s.image || proto_image_ref_parse(s.image, "image", &r, &e) != 0 || s.argc < 1)
        abort();
    check_list(s.argv, s.argc);
    check_list(s.env, s.nenv);
    check_list(s.mounts, s.nmounts);
    for (int i = 0; i < s.nenv; i++)
        if (!strchr(s.env[i], '=') || s.env[i][0] == '=')
            abort();
    for (int i = 0; i < s.nmounts; i++)
        if (proto_mount_parse(s.mounts[i], "m", &m, &e) != 0)
            abort();
    if (s.workdir && !proto_container_path_ok(s.workdir))
        abort();
    proto_oci_step_release(&s);
    return 0;
}
