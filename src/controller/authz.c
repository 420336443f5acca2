/*
 * authz.c - who may do what (docs/security.md "Roles"): the one policy decision of
 * docketd. http.c's route table names the permission each route needs and resolves what
 * the request acts on (a job's project and owner, a project, a token's user); it then
 * calls ctl_authz_check, and handlers ask the finer questions (may this caller see a
 * job's env, release this hold, change these project fields) here too, never by looking
 * at roles themselves. Pure functions of the identity and the target: no store, no I/O.
 */
#include <errno.h>
#include <string.h>

#include "controller/authz.h"

static const char *const role_names[] = {
    [CTL_ROLE_NONE] = "member",
    [CTL_ROLE_VIEWER] = "viewer",
    [CTL_ROLE_OPERATOR] = "operator",
    [CTL_ROLE_ADMIN] = "admin",
};

static const char *const level_names[] = {
    [CTL_LEVEL_NONE] = "none",         [CTL_LEVEL_OWNER] = "owner", [CTL_LEVEL_LEAD] = "lead",
    [CTL_LEVEL_OPERATOR] = "operator", [CTL_LEVEL_ADMIN] = "admin",
};

static const char *const perm_names[] = {
    [CTL_P_PUBLIC] = "public",
    [CTL_P_READ] = "user",
    [CTL_P_SUBMIT] = "project-member",
    [CTL_P_JOB_PRIVATE] = "job-owner|project-lead|admin",
    [CTL_P_JOB_CONTROL] = "job-owner|project-lead|operator|admin",
    [CTL_P_PROJECT_LEAD] = "project-lead|admin",
    [CTL_P_AUDIT] = "viewer|operator|admin",
    [CTL_P_OPERATOR] = "operator|admin",
    [CTL_P_ADMIN] = "admin",
    [CTL_P_TOKEN_OWNER] = "token-owner|admin",
    [CTL_P_SELF] = "self|admin",
    [CTL_P_AGENT] = "node",
};

const char *ctl_role_name(enum ctl_role r)
{
    return (unsigned)r < sizeof(role_names) / sizeof(role_names[0]) ? role_names[r] : "?";
}

int ctl_role_parse(const char *s, enum ctl_role *out)
{
    for (size_t i = 0; s && i < sizeof(role_names) / sizeof(role_names[0]); i++)
        if (strcmp(s, role_names[i]) == 0) {
            *out = (enum ctl_role)i;
            return 0;
        }
    return -EINVAL;
}

const char *ctl_level_name(enum ctl_level l)
{
    return (unsigned)l < sizeof(level_names) / sizeof(level_names[0]) ? level_names[l] : "?";
}

enum ctl_level ctl_level_parse(const char *s)
{
    for (size_t i = 0; s && i < sizeof(level_names) / sizeof(level_names[0]); i++)
        if (strcmp(s, level_names[i]) == 0)
            return (enum ctl_level)i;
    return CTL_LEVEL_ADMIN; /* an unknown stored level: only an admin may lift it */
}

const char *ctl_perm_name(enum ctl_perm p)
{
    return (unsigned)p < sizeof(perm_names) / sizeof(perm_names[0]) ? perm_names[p] : "?";
}

static bool is_owner(const struct ctl_ident *id, const struct ctl_target *t)
{
    return t && t->owner && strcmp(t->owner, id->user) == 0;
}

static bool is_lead(const struct ctl_target *t)
{
    return t && t->prole == CTL_PROLE_LEAD;
}

enum ctl_level ctl_authz_level(const struct ctl_ident *id, const struct ctl_target *t)
{
    if (id->node)
        return CTL_LEVEL_NONE;
    if (id->role == CTL_ROLE_ADMIN)
        return CTL_LEVEL_ADMIN;
    if (id->role == CTL_ROLE_OPERATOR)
        return CTL_LEVEL_OPERATOR;
    if (is_lead(t))
        return CTL_LEVEL_LEAD;
    return is_owner(id, t) ? CTL_LEVEL_OWNER : CTL_LEVEL_NONE;
}

static int deny(struct proto_error *err, const struct ctl_ident *id, const char *what)
{
    return proto_errorf(err, 403, NULL, NULL, "user '%s' (%s) %s", id->user,
                        ctl_role_name(id->role), what);
}

/* The users' permissions; the caller has a user identity (not a node). */
static int check_user(const struct ctl_ident *id, enum ctl_perm p, const struct ctl_target *t,
                      struct proto_error *err)
{
    bool admin = id->role == CTL_ROLE_ADMIN, op = id->role == CTL_ROLE_OPERATOR;
    const char *proj = t && t->project ? t->project : "?";
    switch (p) {
    case CTL_P_READ:
        return 0;
    case CTL_P_SUBMIT:
        if (t && t->owner && !is_owner(id, t) && !admin)
            return proto_errorf(err, 403, NULL, "user", "only admins may submit on behalf of '%s'",
                                t->owner);
        if (admin || (t && t->prole != CTL_PROLE_NONE))
            return 0;
        return proto_errorf(err, 403, NULL, "project",
                            "user '%s' is not a member of project '%s': a lead of the project "
                            "adds members (docket projects members add %s %s)",
                            id->user, proj, proj, id->user);
    case CTL_P_JOB_PRIVATE:
        if (admin || is_owner(id, t) || is_lead(t))
            return 0;
        return deny(err, id,
                    "may not read this job: only its owner, its project's leads and "
                    "admins may");
    case CTL_P_JOB_CONTROL:
        if (admin || op || is_owner(id, t) || is_lead(t))
            return 0;
        return deny(err, id, "does not own this job and is not a lead of its project");
    case CTL_P_PROJECT_LEAD:
        if (admin || is_lead(t))
            return 0;
        return proto_errorf(err, 403, NULL, NULL,
                            "user '%s' is not a lead of project '%s' (nor an admin)", id->user,
                            proj);
    case CTL_P_AUDIT:
        if (admin || op || id->role == CTL_ROLE_VIEWER)
            return 0;
        return deny(err, id, "may not read the audit trail (viewer, operator or admin may)");
    case CTL_P_OPERATOR:
        if (admin || op)
            return 0;
        return deny(err, id, "is not an operator or admin");
    case CTL_P_ADMIN:
        return admin ? 0 : deny(err, id, "is not an admin");
    case CTL_P_TOKEN_OWNER:
        if (admin || is_owner(id, t))
            return 0;
        return deny(err, id, "may manage only its own tokens");
    case CTL_P_SELF:
        if (admin || is_owner(id, t))
            return 0;
        return deny(err, id, "may read only its own settings");
    default:
        return deny(err, id, "may not call this");
    }
}

int ctl_authz_check(const struct ctl_ident *id, enum ctl_perm p, const struct ctl_target *t,
                    struct proto_error *err)
{
    if (p == CTL_P_PUBLIC)
        return 0;
    if (p == CTL_P_AGENT)
        return id->node ? 0 : proto_errorf(err, 403, NULL, NULL, "only agents may call this");
    if (id->node) /* a node credential reaches the agent routes only */
        return proto_errorf(err, 403, NULL, NULL,
                            "a node credential may only call agent endpoints");
    return check_user(id, p, t, err);
}

bool ctl_authz_sees_job_private(const struct ctl_ident *id, const struct ctl_target *t)
{
    return !id->node && (id->role == CTL_ROLE_ADMIN || is_owner(id, t) || is_lead(t));
}

int ctl_authz_release(const struct ctl_ident *id, const struct ctl_target *t, const char *held_by,
                      enum ctl_level held_at, struct proto_error *err)
{
    enum ctl_level mine = ctl_authz_level(id, t);
    if (mine >= held_at)
        return 0;
    return proto_errorf(err, 403, NULL, NULL,
                        "job held by %s '%s': only a%s %s or above may release it",
                        ctl_level_name(held_at), held_by, held_at == CTL_LEVEL_ADMIN ? "n" : "",
                        ctl_level_name(held_at));
}

int ctl_authz_member_add(const struct ctl_ident *id, const struct ctl_target *t, const char *user,
                         bool member_here, const char *member_elsewhere, struct proto_error *err)
{
    if (id->role == CTL_ROLE_ADMIN)
        return 0;
    if (!is_lead(t))
        return check_user(id, CTL_P_PROJECT_LEAD, t, err);
    if (member_here || !member_elsewhere || strcmp(user, id->user) == 0)
        return 0;
    return proto_errorf(err, 403, NULL, "user",
                        "user '%s' is a member of project '%s': a lead adds only users of no "
                        "other project; an admin adds '%s' to '%s' (docket projects members add "
                        "%s %s, as an admin)",
                        user, member_elsewhere, user, t->project, t->project, user);
}

int ctl_authz_default_project(const struct ctl_ident *id, const struct ctl_target *t, bool member,
                              struct proto_error *err)
{
    if (id->role == CTL_ROLE_ADMIN)
        return 0;
    if (!is_owner(id, t))
        return deny(err, id, "may set only its own default project (an admin sets anyone's)");
    if (member || !t->project)
        return 0;
    return proto_errorf(err, 403, NULL, "project",
                        "user '%s' is not a member of project '%s': a default project must be "
                        "one of yours",
                        id->user, t->project);
}

/* Does one entry of a secret's allow list admit the job of `user` in `job_class`? */
static bool allow_entry_admits(const char *entry, const char *user, const char *job_class)
{
    if (strcmp(entry, "members") == 0)
        return true; /* the job's user is a member: its submission was checked for that */
    if (strncmp(entry, "user:", 5) == 0)
        return user && strcmp(entry + 5, user) == 0;
    if (strncmp(entry, "class:", 6) == 0)
        return job_class && strcmp(entry + 6, job_class) == 0;
    return false; /* an entry this docketd does not know admits no one */
}

int ctl_authz_secret_use(const struct ctl_ident *id, const struct ctl_target *t,
                         const char *job_class, const char *name, const json_t *allow,
                         const char *field, struct proto_error *err)
{
    if (!id->node && (id->role == CTL_ROLE_ADMIN || is_lead(t)))
        return 0;
    const char *user = t && t->owner ? t->owner : id->user;
    size_t i;
    json_t *v;
    json_array_foreach(allow, i, v) {
        const char *entry = json_string_value(v);
        if (entry && allow_entry_admits(entry, user, job_class))
            return 0;
    }
    return proto_errorf(err, 403, NULL, field,
                        "secret '%s' of project '%s' is not for user '%s' in class '%s': a "
                        "lead of the project names who receives it (docket secret set %s %s "
                        "--allow user:%s)",
                        name, t && t->project ? t->project : "?", user, job_class ? job_class : "",
                        t && t->project ? t->project : "?", name, user);
}

void ctl_authz_socket_ident(unsigned uid, const char *login, unsigned self_uid,
                            const unsigned *admin_uids, int n_admin_uids, struct ctl_ident *id)
{
    bool admin = uid == 0 || uid == self_uid;
    for (int i = 0; i < n_admin_uids; i++)
        admin = admin || uid == admin_uids[i];
    id->role = admin ? CTL_ROLE_ADMIN : CTL_ROLE_NONE;
    bool named = login && login[0] && strlen(login) < sizeof(id->user);
    if (named && (admin || strcmp(login, CTL_ADMIN_ACCOUNT) != 0))
        snprintf(id->user, sizeof(id->user), "%s", login);
    else
        snprintf(id->user, sizeof(id->user), "uid%u", uid);
}

int ctl_authz_member_role(const char *role, enum ctl_prole *out, struct proto_error *err)
{
    if (role && strcmp(role, "lead") == 0)
        *out = CTL_PROLE_LEAD;
    else if (role && strcmp(role, "member") == 0)
        *out = CTL_PROLE_MEMBER;
    else
        return proto_errorf(err, 400, NULL, "role", "role must be \"lead\" or \"member\"");
    return 0;
}

/* What a lead may change in its own project (the rest is the admin's): the caps of each
 * user, within the project's own limits, and the project's GPU limit, within its group's
 * (DESIGN §2: a lead keeps its project's quotas within the group's). */
static const char *const lead_fields[] = {"user_max_running", "user_gpu_limit", "gpu_limit", NULL};

static int within(const char *field, int64_t v, int64_t cap, const char *capname,
                  struct proto_error *err)
{
    if (cap < 0 || (v >= 0 && v <= cap))
        return 0;
    return proto_errorf(err, 403, NULL, field,
                        "a lead may set %s only within the project's %s (%lld)", field, capname,
                        (long long)cap);
}

/* A lead's gpu_limit: a number within the group's limit; without a group limit to keep it
 * in, the project's limit is the admin's to set. */
static int lead_gpu_limit(const struct sched_project_spec *after, int group_gpu_limit,
                          struct proto_error *err)
{
    if (group_gpu_limit < 0)
        return proto_errorf(err, 403, NULL, "gpu_limit",
                            "project '%s' is in no group with a gpu_limit: its gpu_limit is set "
                            "by an admin",
                            after->name);
    if (after->gpu_limit < 0 || after->gpu_limit > group_gpu_limit)
        return proto_errorf(err, 403, NULL, "gpu_limit",
                            "a lead may set gpu_limit only within 0..%d, the gpu_limit of group "
                            "'%s'",
                            group_gpu_limit, after->group);
    return 0;
}

int ctl_authz_project_patch(const struct ctl_ident *id, const struct ctl_target *t,
                            const json_t *body, const struct sched_project_spec *after,
                            int group_gpu_limit, struct proto_error *err)
{
    if (id->role == CTL_ROLE_ADMIN)
        return 0;
    if (!is_lead(t))
        return check_user(id, CTL_P_PROJECT_LEAD, t, err);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v) {
        bool ok = false;
        for (int i = 0; lead_fields[i]; i++)
            ok = ok || strcmp(k, lead_fields[i]) == 0;
        if (!ok)
            return proto_errorf(err, 403, NULL, k,
                                "a project lead may change only user_max_running, "
                                "user_gpu_limit and gpu_limit; '%s' is set by an admin",
                                k);
    }
    if (json_object_get(body, "gpu_limit") && lead_gpu_limit(after, group_gpu_limit, err) < 0)
        return -1;
    /* the caps the lead sets now (one it leaves is bounded by the project's limit anyway) */
    int rc = 0;
    if (json_object_get(body, "user_gpu_limit"))
        rc = within("user_gpu_limit", after->user_gpu_limit, after->gpu_limit, "gpu_limit", err);
    if (rc == 0 && json_object_get(body, "user_max_running"))
        rc = within("user_max_running", after->user_max_running, after->max_running, "max_running",
                    err);
    return rc;
}
