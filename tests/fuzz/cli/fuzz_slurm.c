/*
 * fuzz_slurm.c - libFuzzer harness of the Slurm readers of src/cli: host lists
 * (scontrol show hostnames), sacct -S times (a leading T), job ids as scancel and squeue
 * read them (a leading J: ID, ID_IDX, ID_[LIST]; an accepted one's index list is tried
 * and its pieces folded back), and sbatch's command line
 * (spec_sbatch_args, then spec_slurm_finish) from NUL-separated words. Checks, beyond memory
 * safety: a refused command line says why; an accepted one yields a "slurm" object whose task
 * counts are positive and whose per-node resources are consistent with them.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/slurm.h"
#include "cli/spec.h"

static void job_id(const char *s)
{
    int64_t id, idx[64];
    char list[256], out[64];
    size_t n = 0;
    if (slurm_jobid_parse(s, &id, list, sizeof(list)) < 0)
        return;
    if (id < 1 || strlen(list) >= sizeof(list))
        abort();
    for (int64_t i = 0; i < 64; i++)
        if (slurm_index_in(list, i))
            idx[n++] = 63 - i;
    slurm_index_ranges(idx, n, out, sizeof(out));
    if (strlen(out) >= sizeof(out) || (n && !out[0]))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void hostlist(const char *s)
{
    FILE *f = fopen("/dev/null", "w");
    if (f) {
        slurm_expand_hostlist(s, f);
        fclose(f);
    }
}

static void sbatch_line(char *buf, size_t size)
{
    char *words[64];
    int n = 0, stop = 0;
    char err[512] = "";
    json_t *spec = json_object();
    struct spec_env env = {"gpu=normal", NULL, NULL, false};

    for (size_t i = 0; i < size && n < 64;) {
        words[n++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    if (spec_sbatch_args(spec, words, n, &env, &stop, err, sizeof(err)) < 0) {
        if (!err[0] || strlen(err) >= sizeof(err))
            abort();
    } else {
        if (stop < 0 || stop > n)
            abort();
        if (spec_slurm_finish(spec, err, sizeof(err)) == 0) {
            json_t *sl = json_object_get(spec, "slurm");
            if (!json_is_object(sl) || json_integer_value(json_object_get(sl, "ntasks")) < 1 ||
                json_integer_value(json_object_get(sl, "ntasks_per_node")) < 1 ||
                json_object_get(spec, "__slurm"))
                abort();
            json_t *cpus = json_object_get(spec, "cpus");
            if (cpus && json_integer_value(cpus) <
                            json_integer_value(json_object_get(sl, "ntasks_per_node")))
                abort();
        } else if (!err[0]) {
            abort();
        }
    }
    json_decref(spec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    int64_t t;
    if (size && data[0] == 'J')
        job_id(buf + 1);
    else if (size && data[0] == 'H')
        hostlist(buf + 1);
    else if (size && data[0] == 'T')
        (void)slurm_time_parse(buf + 1, 1764579600000LL, &t); /* sacct -S */
    else
        sbatch_line(buf, size);
    free(buf);
    return 0;
}
