/*
 * spec_int.h - what the three files of the submission builder share (not for the rest of
 * the CLI): its limits, the setters and value readers of docket's flags (spec.c) that the
 * sbatch options reuse (sbatch.c), and the reader of an #SBATCH line's words (sbatch.c)
 * that the script reader calls (script.c). spec.h is the interface.
 */
#ifndef DOCKET_CLI_SPEC_INT_H
#define DOCKET_CLI_SPEC_INT_H

#include <jansson.h>
#include <stddef.h>

#include "cli/spec.h"

enum {
    MAX_GPUS_PER_NODE = 64,
    MAX_NODES = 512,
    MAX_WORDS = 64,
    MAX_LINE = 4096,
    MAX_TEXT = 1024,
    MAX_ARRAY = 100000
};

/* ---- spec.c: the small setters; each is 0, or -EINVAL with err naming `flag` */
json_t *spec_sub_object(json_t *spec, const char *key); /* spec[key], made an object */
/* "FLAG: WHAT 'VALUE' (HINT)" where WHAT may end with a " (hint)" of its own; -EINVAL. */
int spec_fail(char *err, size_t errlen, const char *flag, const char *what, const char *v);
int spec_set_name(json_t *spec, const char *key, const char *flag, const char *v, char *err,
                  size_t errlen);
int spec_set_text(json_t *spec, const char *key, const char *flag, const char *v, char *err,
                  size_t errlen);
int spec_set_int(json_t *spec, const char *key, const char *flag, const char *v, int min, int max,
                 char *err, size_t errlen);
/* Cut the next field off *cursor at any of `seps` (as strsep); NULL when none are left.
 * Empty fields are skipped. */
char *spec_next_field(char **cursor, const char *seps);

/* ---- spec.c: values with structure, as docket's flags read them */
/* "K=V", or "K" alone to pass this shell's value of K. */
int spec_set_env(json_t *spec, const char *v, char *err, size_t errlen);
/* The job's container (docs/environments.md "Containers"), Pyxis's options too: id is
 * SO_IMAGE (REF), SO_MOUNTS (SRC:DST[:ro], comma-separated), SO_CONTAINER_WORKDIR (a path
 * in the container) or SO_CONTAINER_ENV (NAME[,NAME]: these variables of this shell).
 * docketd checks them whole; here only their shape. */
int spec_set_container(json_t *spec, int id, const char *flag, const char *v, char *err,
                       size_t errlen);
/* Slurm syntax: "afterok:1:2,afterany:3"; replaces the spec's deps when all is good. */
int spec_set_dependency(json_t *spec, const char *v, const char *flag, char *err, size_t errlen);
int spec_set_array(json_t *spec, const char *v, const char *flag, char *err, size_t errlen);

/* ---- sbatch.c */
/* The words of one #SBATCH line, read as sbatch reads its command line. */
int spec_sbatch_words(json_t *spec, char **w, int n, const struct spec_env *env, char *err,
                      size_t errlen);

#endif
