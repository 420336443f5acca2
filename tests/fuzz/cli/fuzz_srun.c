/*
 * fuzz_srun.c - libFuzzer harness of srun's two readers in src/cli: the step host's
 * request (srun_request_read on whatever JSON the bytes hold) and the frames that flow
 * back (srun_frame_read from a pipe holding the bytes, as a plain link: what the TLS link
 * delivers once decrypted). The handshake's own harness is fuzz_steplink.c. Checks, beyond memory
 * safety: an accepted request has an argv of strings and this node's tasks inside the step; a frame
 * is never longer than the buffer it was read into.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/srun.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void request(const uint8_t *data, size_t size)
{
    json_t *req = json_loadb((const char *)data, size, 0, NULL);
    struct step st;
    if (req && srun_request_read(req, &st) == 0) {
        if (!st.argv || !st.argv[0] || st.local_n < 1 || st.first < 0 ||
            st.first + st.local_n > st.ntasks || st.node >= st.nodes)
            abort();
        free(st.argv);
    }
    json_decref(req);
}

static void frames(const uint8_t *data, size_t size)
{
    int p[2];
    char buf[256];
    if (size > 60000 || pipe(p) < 0)
        return;
    if (write(p[1], data, size) != (ssize_t)size) {
        close(p[0]);
        close(p[1]);
        return;
    }
    close(p[1]);
    int type;
    uint32_t task, len;
    struct step_link l;
    step_link_plain(&l, p[0]); /* the frames as they come out of the TLS link */
    while (srun_frame_read(&l, &type, &task, buf, sizeof(buf), &len) == 1)
        if (len > sizeof(buf))
            abort();
    close(p[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    request(data, size);
    frames(data, size);
    return 0;
}
