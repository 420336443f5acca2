/*
 * fuzz_script.c - libFuzzer harness of spec_parse_script (src/cli/script.c): any bytes as a
 * batch script with #DOCKET and #SBATCH lines. Checks, beyond memory safety: a refused
 * script leaves the spec untouched and says which line (or "#SBATCH lines:" for what the
 * lines say together); an accepted one yields only
 * members of the POST /v1/jobs body with the right JSON types.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count_warning(void *arg, const char *msg)
{
    (*(int *)arg)++;
    if (!msg || !msg[0] || strlen(msg) >= 600)
        abort();
}

static void check_types(const json_t *spec)
{
    static const char *const ints[] = {"gpus", "cpus", "mem", "nodes", "time_limit", "retries"};
    static const char *const strs[] = {"name",  "project", "tier",  "class",  "gpu_type", "output",
                                       "error", "workdir", "array", "signal", "grace",    "begin"};
    const char *key;
    json_t *v;

    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        if ((v = json_object_get(spec, ints[i])) &&
            (!json_is_integer(v) || json_integer_value(v) < 0))
            abort();
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        if ((v = json_object_get(spec, strs[i])) && !json_is_string(v))
            abort();
    json_object_foreach((json_t *)spec, key, v)
        if ((!strcmp(key, "deps") && !json_is_array(v)) ||
            (!strcmp(key, "slurm") && !json_is_object(v)) || !strcmp(key, "__slurm"))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *spec = json_object();
    int warnings = 0;
    struct spec_env env = {"gpu=normal,debug=exploration", count_warning, &warnings, false};
    char err[512] = "";

    if (spec_parse_script(spec, (const char *)data, size, &env, err, sizeof(err)) < 0) {
        if (json_object_size(spec) != 0 ||
            (strncmp(err, "line ", 5) && strncmp(err, "#SBATCH lines: ", 15)))
            abort();
    } else {
        check_types(spec);
        if (spec_finish(spec, err, sizeof(err)) == 0 && json_object_get(spec, "__gpus_total"))
            abort();
    }
    json_decref(spec);
    return 0;
}
