/*
 * yamljson.h - parse a YAML document (libyaml) into a jansson value, so every YAML input
 * (docketd.yaml, policy.yaml, cluster descriptions) is validated by the same JSON code.
 * Scalars become strings except plain (unquoted) integers, floats, true/false and null,
 * which become JSON numbers, booleans and null. Anchors/aliases are refused (no billion
 * laughs); depth is capped at 64 and size at 4 MiB.
 */
#ifndef DOCKET_UTIL_YAMLJSON_H
#define DOCKET_UTIL_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

/* Returns a new reference, or NULL with a message "line N: ..." in err. */
json_t *yaml_to_json(const char *text, size_t len, char *err, size_t errlen);
/* Reads a file; "cannot read 'path': ..." on I/O errors. */
json_t *yaml_file_to_json(const char *path, char *err, size_t errlen);

#endif
