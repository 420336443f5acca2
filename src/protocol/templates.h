/*
 * templates.h - the `templates` section of the policy document (docs/environments.md):
 * named, versioned job environments (variables, `module load` lines, a setup script, a
 * prepare script built once per node and version, an image and default mounts for a
 * container (protocol/container.h), the classes that may use one, whom it serves by
 * default), owned by the
 * site, a group or a project. Read by proto_policy_parse with the rest of the document and
 * validated whole, every error naming its field ("templates[1].env.PATH"); written back by
 * proto_templates_json. A job's reference to one ("torch", "torch@3") is read here too.
 *
 * Each template is kept as its normalised JSON object (every key present, in one order),
 * so two versions compare with json_equal and the stored policy reads back the same.
 * Nothing here holds state or decides who may use a template: the controller does
 * (controller/templates.c).
 */
#ifndef DOCKET_PROTOCOL_TEMPLATES_H
#define DOCKET_PROTOCOL_TEMPLATES_H

#include <jansson.h>
#include <stdbool.h>

#include "protocol/proto.h"

enum {
    PROTO_MAX_TEMPLATES = 256,
    PROTO_TEMPLATE_VERSION_MAX = 1000000,
    PROTO_TEMPLATE_MAX_ENV = 256,
    PROTO_TEMPLATE_MAX_MODULES = 32,
    PROTO_TEMPLATE_MODULE_MAX = 128, /* bytes of one module name */
    PROTO_TEMPLATE_SETUP_MAX = 64 * 1024,
    PROTO_TEMPLATE_MAX_DEFAULTS = 64,
    /* "name@version" */
    PROTO_TEMPLATE_REF_MAX = PROTO_NAME_MAX + 16,
};

struct proto_template {
    char name[PROTO_NAME_MAX];
    int version;
    json_t *doc; /* normalised: name, version, owner, description, env, modules, setup,
                  * prepare, classes, default_for, image, mounts, warm_on,
                  * registry_auth; owned */
};

struct proto_templates {
    struct proto_template *t; /* owned; n entries, in the document's order */
    size_t n;
};

/* Parse the section (a list); on error `out` is released. */
int proto_templates_parse(const json_t *v, struct proto_templates *out,
                          struct proto_error *err) PROTO_WUR;
/* The classes each template names must be among `classes` (the policy's, after the
 * document's own): refused naming the field otherwise. */
int proto_templates_check_classes(const struct proto_templates *ts,
                                  const struct sched_class_spec *classes, int nclasses,
                                  struct proto_error *err) PROTO_WUR;
void proto_templates_release(struct proto_templates *ts);
/* A deep copy (the controller keeps its own). */
void proto_templates_copy(struct proto_templates *dst, const struct proto_templates *src);
/* The section as a list of the normalised objects: a new reference. */
json_t *proto_templates_json(const struct proto_templates *ts);

/* "NAME" or "NAME@VERSION" (a job's `template` field): *version 0 when not given. */
int proto_template_ref_parse(const char *s, const char *field, char name[PROTO_NAME_MAX],
                             int *version, struct proto_error *err) PROTO_WUR;
/* The entry NAME@version, or NAME's highest version when version is 0; NULL if none. */
const struct proto_template *proto_template_find(const struct proto_templates *ts, const char *name,
                                                 int version);

#endif
