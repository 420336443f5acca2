/*
 * authz.h - what authz.c owns: roles, who is calling, what a request acts on, and the one
 * policy decision (docs/security.md "Roles"). Plain functions of their arguments: no
 * controller state.
 */
#ifndef DOCKET_CONTROLLER_AUTHZ_H
#define DOCKET_CONTROLLER_AUTHZ_H

#include <jansson.h>
#include <stdbool.h>

#include "core/sched.h"
#include "protocol/error.h"

/* A user's global role (a token's role; the owner of docketd on the Unix socket is
 * admin). CTL_ROLE_NONE is a plain user, stored as "member": what it may do comes from its
 * project roles. Ordered: a higher role may do what a lower one may. */
enum ctl_role { CTL_ROLE_NONE, CTL_ROLE_VIEWER, CTL_ROLE_OPERATOR, CTL_ROLE_ADMIN };
/* A user's role in one project (the members table). */
enum ctl_prole { CTL_PROLE_NONE, CTL_PROLE_MEMBER, CTL_PROLE_LEAD };
/* The level a caller acts at on one job (holds remember it; a release needs as much). */
enum ctl_level {
    CTL_LEVEL_NONE,
    CTL_LEVEL_OWNER,
    CTL_LEVEL_LEAD,
    CTL_LEVEL_OPERATOR,
    CTL_LEVEL_ADMIN
};

/* What a route needs (http.c's route table; docs/api.md shows it per route). */
enum ctl_perm {
    CTL_P_PUBLIC,       /* no credential (the handler checks any it needs: join token) */
    CTL_P_READ,         /* any user */
    CTL_P_SUBMIT,       /* a member or lead of the target project, admins */
    CTL_P_JOB_PRIVATE,  /* the job's owner, its project's leads, admins (logs) */
    CTL_P_JOB_CONTROL,  /* the job's owner, its project's leads, operators, admins */
    CTL_P_PROJECT_LEAD, /* the target project's leads, admins */
    CTL_P_AUDIT,        /* viewers, operators, admins */
    CTL_P_OPERATOR,     /* operators, admins */
    CTL_P_ADMIN,        /* admins */
    CTL_P_TOKEN_OWNER,  /* the token's user, admins */
    CTL_P_SELF,         /* the user named in the path, admins */
    CTL_P_AGENT,        /* node credentials, and only they */
};

/* Who is calling. */
struct ctl_ident {
    char user[64];
    enum ctl_role role;
    bool node;         /* an agent with its node credential */
    bool node_pending; /* ... a rotated one not used yet (agent.c) */
    char node_name[64];
    char token_id[16];   /* the bearer token's id ("" over the socket) */
    char token_hash[65]; /* ... its hash: the parent of the tokens derived from it */
};

/* What a request acts on, resolved before the check: the project (a job's, a project
 * route's, a submission's), the owner (a job's, a token's, a submission's user) and the
 * caller's role in that project. NULL/NONE where the route has none. */
struct ctl_target {
    const char *project;
    const char *owner;
    enum ctl_prole prole;
};

/* The one decision: 0, or -EPERM-like (<0) with err filled (403 naming what is missing). */
int ctl_authz_check(const struct ctl_ident *id, enum ctl_perm p, const struct ctl_target *t,
                    struct proto_error *err);
/* The level `id` acts at on a job with target t. */
enum ctl_level ctl_authz_level(const struct ctl_ident *id, const struct ctl_target *t);
/* May `id` see what is private to a job: its script, command, the values of its env, its
 * logs (its owner, its project's leads, admins)? Others see its state and resources. With
 * no owner and project in t (a report over many jobs): admins only. */
bool ctl_authz_sees_job_private(const struct ctl_ident *id, const struct ctl_target *t);
/* May `id` release a hold that `held_by` put at `held_at`? */
int ctl_authz_release(const struct ctl_ident *id, const struct ctl_target *t, const char *held_by,
                      enum ctl_level held_at, struct proto_error *err);
/* May `id` PATCH project t with `body`, giving `after`? Admins: anything; leads: the
 * per-user caps, within the project's limits, and the project's gpu_limit, within its
 * group's (`group_gpu_limit`: -1 when it has no group or the group no limit). */
int ctl_authz_project_patch(const struct ctl_ident *id, const struct ctl_target *t,
                            const json_t *body, const struct sched_project_spec *after,
                            int group_gpu_limit, struct proto_error *err);
/* May `id` add `user` to project t (or change its role there)? An admin: anyone. A lead:
 * only inside its project, so never a user who belongs to another project
 * (`member_elsewhere`) unless already a member of this one (`member_here`: a role change)
 * or the lead itself: a lead may not pull another project's member, and the jobs that
 * follow, into its own. 0, or 403 naming "user". */
int ctl_authz_member_add(const struct ctl_ident *id, const struct ctl_target *t, const char *user,
                         bool member_here, const char *member_elsewhere, struct proto_error *err);
/* May `id` make project t (`member`: t->owner, the user in the path, belongs to it) that
 * user's default project? The user itself for a project of its own, or an admin: no one
 * else points a user's jobs anywhere. 0, or 403. */
int ctl_authz_default_project(const struct ctl_ident *id, const struct ctl_target *t, bool member,
                              struct proto_error *err);
/* May the job that `id` submits into project t (t->owner: the job's user; t->prole: the
 * caller's role there) of class `job_class` receive the project's secret `name`, whose
 * policy is `allow` (an array of "members", "user:NAME", "class:NAME"; empty or NULL: the
 * project's leads only)? Admins and the project's leads: any; others: what `allow`
 * names. 0, or 403 naming `field` (the spec's secrets[i]). */
int ctl_authz_secret_use(const struct ctl_ident *id, const struct ctl_target *t,
                         const char *job_class, const char *name, const json_t *allow,
                         const char *field, struct proto_error *err);
/* The built-in admin account (the user of STATE_DIR/admin.token): no Unix login is it. */
#define CTL_ADMIN_ACCOUNT "admin"
/* Who a peer of the Unix socket is, from its uid (SO_PEERCRED) and that uid's login name
 * (NULL when it has none): an admin when the uid is root, docketd's own (`self_uid`) or
 * one of `admin_uids`, never by its name; its account is the login name, but a login
 * that names the built-in admin account from any other uid is "uidN", with no power of
 * that account (issue 33: a Unix user `admin` read the admin's jobs and revoked its
 * token). Fills id->user and id->role. */
void ctl_authz_socket_ident(unsigned uid, const char *login, unsigned self_uid,
                            const unsigned *admin_uids, int n_admin_uids, struct ctl_ident *id);
/* "lead" or "member" -> out; 400 naming "role" otherwise. */
int ctl_authz_member_role(const char *role, enum ctl_prole *out, struct proto_error *err);
const char *ctl_role_name(enum ctl_role r);
int ctl_role_parse(const char *s, enum ctl_role *out);
const char *ctl_level_name(enum ctl_level l);
enum ctl_level ctl_level_parse(const char *s); /* unknown: CTL_LEVEL_ADMIN */
const char *ctl_perm_name(enum ctl_perm p);

#endif
