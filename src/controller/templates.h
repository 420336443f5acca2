/*
 * templates.h - the job environment templates docketd serves (docs/environments.md): the
 * current list, taken from the policy document (which the store keeps, so a restart
 * reads it back); GET /v1/templates and /v1/templates/NAME; the rule that a version, once
 * applied, never changes its content; one audit entry per template an apply changes; and
 * a job's template resolved at submit, its exact version and what it gives written into
 * the job's spec. The core knows nothing of templates.
 */
#ifndef DOCKET_CONTROLLER_TEMPLATES_H
#define DOCKET_CONTROLLER_TEMPLATES_H

#include <jansson.h>

#include "controller/ctl.h"
#include "protocol/proto.h"

struct ctl_req;

/* Keep a parsed policy's templates, when it has the section (they replace the list). */
void ctl_templates_take(struct ctl *c, const struct proto_policy *pp);
/* Add "templates" to a policy document: pp's when it has them, else the current ones. */
void ctl_templates_json(struct ctl *c, json_t *doc, const struct proto_policy *pp);
/* An apply may add versions and drop them, never change what one gives a job (its
 * variables, modules, setup, prepare): 409 naming the field. Owner, classes and defaults
 * may change. */
int ctl_templates_check(struct ctl *c, const struct proto_policy *pp, struct proto_error *e);
/* The audit entries of an apply (before it is taken): template.update per name whose
 * versions changed, before and after its list of versions. */
int ctl_templates_audit(struct ctl *c, const char *actor, const struct proto_policy *pp);
/* The job's template (its `template`, else its project's, class's or the site's default):
 * checked against its project, group and class, then written into the spec as
 * "template": "NAME@VERSION", its variables under the job's own in "env" and its modules,
 * setup and prepare script in "environment"; then the job's container (its image, else the
 * template's; the template's mounts and its own, each of its own checked against its
 * workdir and its project's storage areas) in "container". 0 (no template is fine), or
 * -EINVAL with e naming the field. */
int ctl_template_resolve(struct ctl *c, struct proto_jobspec *ps, const char *group,
                         struct proto_error *e);
void ctl_templates_stop(struct ctl *c);

void h_templates_list(struct ctl_req *r);
void h_template_show(struct ctl_req *r);

#endif
