/*
 * fuzz_yaml.c - libFuzzer harness for util/yamljson.h: any bytes go to yaml_to_json.
 * Either a value comes back (serialised and freed, so ASan sees every node) or NULL
 * with a message that says where ("line N: ...") or that the input was too large.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/yamljson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    json_t *v = yaml_to_json((const char *)data, size, err, sizeof(err));
    char *text;

    if (!v) {
        if (strncmp(err, "line ", 5) != 0 && strncmp(err, "document larger", 15) != 0)
            abort();
        return 0;
    }
    text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!text)
        abort(); /* everything we build must serialise */
    free(text);
    json_decref(v);
    return 0;
}
