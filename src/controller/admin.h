/*
 * admin.h - what admin.c owns: the endpoints of nodes, projects, tiers, classes, the
 * policy, the audit log, tokens, members and join tokens, and the stored documents of
 * projects and of the policy.
 */
#ifndef DOCKET_CONTROLLER_ADMIN_H
#define DOCKET_CONTROLLER_ADMIN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/ctl.h"
#include "core/sched.h"
#include "protocol/error.h"
#include "store/store.h"

struct ctl_req;

/* GET /v1/audit/verify walks the chain this many rows a loop turn */
#define CTL_VERIFY_SLICE_ROWS 2048

void h_nodes_list(struct ctl_req *r);
void h_node_show(struct ctl_req *r);
void h_node_drain(struct ctl_req *r);
/* A silent node declared down: its jobs are lost at once, before their leases end. */
void h_node_down(struct ctl_req *r);
void h_node_resume(struct ctl_req *r);
void h_node_labels(struct ctl_req *r);
void h_projects_list(struct ctl_req *r);
void h_project_show(struct ctl_req *r);
void h_project_create(struct ctl_req *r);
void h_project_patch(struct ctl_req *r);
void h_project_boost(struct ctl_req *r);
void h_project_unboost(struct ctl_req *r);
void h_project_pause(struct ctl_req *r);
void h_project_resume(struct ctl_req *r);
void h_user_default_get(struct ctl_req *r);
void h_user_default_set(struct ctl_req *r);
void h_tiers(struct ctl_req *r);
void h_classes(struct ctl_req *r);
void h_class_patch(struct ctl_req *r);
void h_policy_get(struct ctl_req *r);
void h_policy_apply(struct ctl_req *r);
void h_audit(struct ctl_req *r);
void h_audit_verify(struct ctl_req *r);
void h_tokens(struct ctl_req *r);
void h_tokens_list(struct ctl_req *r);
void h_token_revoke(struct ctl_req *r);
void h_token_rotate_admin(struct ctl_req *r);
void h_members_list(struct ctl_req *r);
void h_member_add(struct ctl_req *r);
void h_member_remove(struct ctl_req *r);
void h_join_tokens(struct ctl_req *r);

/* Write STATE_DIR/admin.token (0600, atomically) with `tok`. 0 or -errno. */
int ctl_admin_token_write(struct ctl *c, const char *tok);
/* Save a project's stored document (spec + boost) from the core. */
int ctl_project_save(struct ctl *c, const char *name, const char *boost_reason) CTL_WUR;
json_t *ctl_project_json(struct ctl *c, const struct sched_project_view *v);
/* Remember the reason of a project's boost (restart). */
void ctl_project_boost_reason(struct ctl *c, const char *name, const char *reason);
/* Persist the current policy document. */
int ctl_policy_save(struct ctl *c) CTL_WUR;
/* How many ancestors a derived token may have (http.c walks them at each request). */
#define CTL_TOKEN_CHAIN_MAX 16
/* Issue a user token for t->user with t->role (both filled by the caller; t->parent too
 * for a derived token, and t->expires_ms its parent's expiry, else 0) that lives ttl_ms,
 * and never past that expiry: stored (its hash), audited as `actor`'s token.issue (with
 * the parent's id); the token text into tok. 0, or -1 with e filled. */
int ctl_token_issue(struct ctl *c, const char *actor, struct store_token *t, int64_t ttl_ms,
                    char *tok, size_t toklen, struct proto_error *e) CTL_WUR;
/* The reply to a new token: {"token", "id", "user", "role", "expires_ms"}. */
json_t *ctl_token_json(const char *tok, const struct store_token *t);
/* Random token "PREFIX" + 64 hex chars into out (>= 80 bytes). */
int ctl_random_token(const char *prefix, char *out, size_t len);

#endif
