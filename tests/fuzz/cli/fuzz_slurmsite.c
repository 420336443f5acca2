/*
 * fuzz_slurmsite.c - libFuzzer harness for cli/slurmsite.h, the readers of a Slurm site's
 * files for `docket import slurm`: the input's first byte picks slurm.conf, gres.conf, a
 * sacctmgr dump or a QOS table, the rest is the file; then the policy is made from what
 * was read. Nothing may crash or leak, every note is a string, and the policy an object.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/slurmsite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    json_t *site = slurm_site_new(), *unmapped = json_array();
    static void (*const readers[])(json_t *, const char *, json_t *) = {
        slurm_conf_read, slurm_gres_read, slurm_sacctmgr_read, slurm_qos_read};
    readers[data[0] % 4](site, text, unmapped);
    json_t *doc = slurm_site_policy(site, unmapped);
    if (!json_is_object(doc))
        abort();
    for (size_t i = 0; i < json_array_size(unmapped); i++)
        if (!json_is_string(json_array_get(unmapped, i)))
            abort();
    (void)slurm_time_secs(text);
    json_decref(doc);
    json_decref(site);
    json_decref(unmapped);
    free(text);
    return 0;
}
