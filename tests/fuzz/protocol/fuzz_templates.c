/* fuzz_templates.c - libFuzzer harness for the policy document's `templates` section and
 * a job's template reference (protocol/templates.h). The first byte picks: a reference
 * ("NAME@VERSION") parses to a name and version that write back to the same text, or is
 * refused naming its field; else the rest is a YAML or JSON `templates` list that either
 * parses, and then its written form parses back to the same list (so the stored policy
 * reads back), or is refused with a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/templates.h"
#include "util/yamljson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void reference(const char *s)
{
    char name[PROTO_NAME_MAX], back[PROTO_TEMPLATE_REF_MAX + 16];
    int version;
    struct proto_error e;
    if (proto_template_ref_parse(s, "template", name, &version, &e) < 0) {
        if (strcmp(e.field, "template") != 0)
            abort();
        return;
    }
    if (version)
        snprintf(back, sizeof(back), "%s@%d", name, version);
    else
        snprintf(back, sizeof(back), "%s", name);
    if (strcmp(back, s) != 0)
        abort();
}

static void section(const char *text, size_t len, bool yaml)
{
    char msg[200];
    json_error_t je;
    json_t *doc = yaml ? yaml_to_json(text, len, msg, sizeof(msg))
                       : json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return;
    struct proto_templates ts, again;
    struct proto_error e;
    if (proto_templates_parse(doc, &ts, &e) < 0) {
        if (!e.message[0])
            abort();
        json_decref(doc);
        return;
    }
    json_t *out = proto_templates_json(&ts);
    if (proto_templates_parse(out, &again, &e) < 0)
        abort(); /* the stored policy must read back */
    json_t *out2 = proto_templates_json(&again);
    if (!json_equal(out, out2))
        abort();
    for (size_t i = 0; i < ts.n; i++)
        if (proto_template_find(&ts, ts.t[i].name, ts.t[i].version) == NULL)
            abort();
    json_decref(out2);
    json_decref(out);
    proto_templates_release(&again);
    proto_templates_release(&ts);
    json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    if (data[0] % 3 == 0)
        reference(text);
    else
        section(text, size - 1, data[0] % 3 == 1);
    free(text);
    return 0;
}
