/*
 * restore.h - what restore.c owns: docketd's start from its database (the core rebuilt
 * from the store), and the controller's node records made for the nodes the core knows.
 */
#ifndef DOCKET_CONTROLLER_RESTORE_H
#define DOCKET_CONTROLLER_RESTORE_H

#include <jansson.h>
#include <stddef.h>

struct ctl;
struct ctl_node;
struct sched_label;

int ctl_restore(struct ctl *c, char *err, size_t errlen);
/* Create (or return) the controller's record of a node the core already knows. */
struct ctl_node *ctl_node_attach(struct ctl *c, const char *name);
/* Fill core labels from a JSON object of strings; returns how many. */
int ctl_labels_from_json(const json_t *o, struct sched_label *out, int max);

#endif
