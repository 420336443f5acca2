/*
 * fuzz_srun.c - libFuzzer harness of srun's two readers in src/cli: the step host's
 * request (srun_request_read on whatever JSON the bytes hold) and the frames that flow
 * back (srun_frame_read from a pipe holding the bytes, as a plain link: what the TLS link
 * delivers once decrypted), srun's command line (srun_parse_args on the bytes split into
 * words, inside a job of three nodes) and its -o/-e filename patterns. The handshake's own
 * harness is fuzz_steplink.c. Checks, beyond memory safety: an accepted request has an argv of
 * strings and this node's tasks inside the step; a frame is never longer than the buffer it was
 * read into; a settled step has a command, 1..3 distinct job nodes and at least one task per
 * node; an expanded pattern is a string that fits.
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

static void command_line(const uint8_t *data, size_t size)
{
    char buf[1024], *argv[65];
    int argc = 1;
    if (size >= sizeof(buf))
        return;
    memcpy(buf, data, size);
    buf[size] = '\0';
    argv[0] = "srun";
    for (char *w = strtok(buf, " \n"); w && argc < 64; w = strtok(NULL, " \n"))
        argv[argc++] = w;
    argv[argc] = NULL;
    struct srun_env env = {3, 5, 2, 1, 0, "a,b[1-2]", "9"};
    static struct step st;
    struct srun_parse p = {.st = &st};
    char err[512];
    memset(&st, 0, sizeof(st));
    if (srun_parse_args(argc, argv, &env, &p, err, sizeof(err)) != 0)
        return;
    if (!st.argv || !st.argv[0] || st.nodes < 1 || st.nodes > 3 || st.ntasks < st.nodes)
        abort();
    for (int k = 0; k < st.nodes; k++)
        for (int j = 0; j < k; j++)
            if (st.job_node[k] < 0 || st.job_node[k] > 2 || st.job_node[k] == st.job_node[j])
                abort();
}

static void pattern(const uint8_t *data, size_t size)
{
    char pat[512], out[64];
    struct srun_names n = {"12", "0", NULL, "3", "node", "user", "name"};
    if (size >= sizeof(pat))
        return;
    memcpy(pat, data, size);
    pat[size] = '\0';
    if (srun_pattern(pat, &n, 5, 1, out, sizeof(out)) == 0 && strlen(out) >= sizeof(out))
        abort();
    (void)srun_pattern_per_node(pat);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    request(data, size);
    frames(data, size);
    command_line(data, size);
    pattern(data, size);
    return 0;
}
