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

/* Returns a new reference, or NULL with a message "line N: ..." in err (err may be NULL;
 * the one message without a line is "document larger than 4 MiB"). text need not be
 * NUL-terminated. An empty document is JSON null. Also refused: duplicate keys,
 * non-scalar keys, more than one document, tags other than !!str, integers outside
 * int64, leading-zero numbers stay strings ("007"). */
json_t *yaml_to_json(const char *text, size_t len, char *err, size_t errlen);
/* Reads a file; "cannot read 'path': ..." on I/O errors. */
json_t *yaml_file_to_json(const char *path, char *err, size_t errlen);

#endif
