/*
 * token.c - `docket token`: API tokens for people (POST /v1/tokens, admin) and join
 * tokens for agents (POST /v1/join-tokens, operator); the caller's tokens, or everyone's
 * for an admin (GET /v1/tokens); revoking one (DELETE /v1/tokens/ID); a new token for
 * the built-in admin account that ends the old one (POST /v1/tokens/rotate-admin). A new
 * token goes to stdout alone so scripts can capture it; what it is goes to stderr.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli/cli.h"
#include "util/parse.h"
#include "util/str.h"

const char cmd_token_usage[] =
    "usage: docket token create --user NAME [--role member|viewer|operator|admin]\n"
    "                           [--expires 90d] [--json]\n"
    "       docket token join [--expires 1h] [--json]\n"
    "       docket token list [--user NAME] [--json]\n"
    "       docket token revoke ID\n"
    "       docket token rotate-admin [--expires 90d] [--json]\n"
    "\n"
    "create: an API token for a person (DOCKET_TOKEN); every token expires (docketd's\n"
    "token_ttl, 90 days unless set). join: a one-time token with which a new docket-node\n"
    "registers; when docketd serves TLS, the fingerprint of its key follows on stderr\n"
    "(docket-node --controller-fingerprint). list: your tokens (an admin sees every token,\n"
    "node and join ones too; PARENT: the token a console session was made from, which it\n"
    "ends with). revoke: the token stops working at once, and every token made from it.\n"
    "rotate-admin: a new token for the admin account, also written to docketd's\n"
    "admin.token; the old one stops working. docketd stores only a hash of each token: a\n"
    "new one is printed once.\n";

enum { T_USER = 1, T_ROLE, T_TTL };

static const struct opt_def token_opts[] = {
    {T_USER, 'u', "user", OPT_VALUE},
    {T_ROLE, 0, "role", OPT_VALUE},
    {T_TTL, 0, "ttl", OPT_VALUE},
    {T_TTL, 0, "expires", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

static bool known_role(const char *v)
{
    return !strcmp(v, "member") || !strcmp(v, "viewer") || !strcmp(v, "operator") ||
           !strcmp(v, "admin");
}

/* The flags of create, join and rotate-admin into body; EXIT_USAGE after a message. */
static int token_body(struct cli *c, const struct cli_args *a, const char *sub, json_t *body)
{
    bool create = !strcmp(sub, "create");
    int64_t ms;
    for (int i = 0; i < a->nopts; i++) {
        const char *v = a->vals[i];
        if (a->ids[i] == T_TTL && (parse_duration_ms(v, &ms) < 0 || ms <= 0))
            return cli_usage_error(c, "--expires: bad duration '%.40s' (e.g. 90d)", v);
        if (a->ids[i] == T_ROLE && !strcmp(v, "lead"))
            return cli_usage_error(c, "lead is a project role: docket projects members add "
                                      "PROJECT USER --role lead");
        if ((a->ids[i] == T_USER && !str_is_name(v)) || (a->ids[i] == T_ROLE && !known_role(v)))
            return cli_usage_error(c, "bad %s '%.40s'", a->ids[i] == T_USER ? "user" : "role", v);
        if (!create && a->ids[i] != T_TTL)
            return cli_usage_error(c, "%s takes only --expires", sub);
        json_object_set_new(body,
                            a->ids[i] == T_USER   ? "user"
                            : a->ids[i] == T_ROLE ? "role"
                                                  : "ttl",
                            json_string(v));
    }
    if (create && !json_object_get(body, "user"))
        return cli_usage_error(c, "whose token? (--user NAME)");
    return 0;
}

static int issue(struct cli *c, const struct cli_args *a, const char *sub)
{
    json_t *body = json_object(), *reply = NULL;
    bool join = !strcmp(sub, "join"), rotate = !strcmp(sub, "rotate-admin");
    const char *path = join ? "/v1/join-tokens" : rotate ? "/v1/tokens/rotate-admin" : "/v1/tokens";
    int rc = token_body(c, a, sub, body);

    if (rc == 0 && a->npos > 1)
        rc = cli_usage_error(c, "unexpected argument '%.40s'", a->pos[1]);
    if (rc == 0 && (rc = cli_call(c, "POST", path, body, &reply)) == 0) {
        if (c->json) {
            cli_print_json(c, reply);
        } else {
            char exp[32];
            fmt_when(jint(reply, "expires_ms", 0), c->now_ms, exp, sizeof(exp));
            fprintf(c->out, "%s\n", jstr(reply, join ? "join_token" : "token"));
            if (join && json_is_string(json_object_get(reply, "controller_fingerprint")))
                fprintf(stderr,
                        "controller fingerprint: %s\n"
                        "(docket-node --controller-fingerprint %s; docket --fingerprint %s)\n",
                        jstr(reply, "controller_fingerprint"),
                        jstr(reply, "controller_fingerprint"),
                        jstr(reply, "controller_fingerprint"));
            if (rotate)
                fprintf(stderr,
                        "new admin token %s, expires %s; %lld older admin token(s) revoked; "
                        "it is not shown again (docketd's admin.token has it)\n",
                        jstr(reply, "id"), exp, (long long)jint(reply, "revoked", 0));
            else if (!join)
                fprintf(stderr, "token for %s (%s), id %s, expires %s; it is not shown again\n",
                        jstr(reply, "user"), jstr(reply, "role"), jstr(reply, "id"), exp);
        }
    }
    json_decref(body);
    json_decref(reply);
    return rc;
}

static void print_tokens(struct cli *c, const json_t *tokens)
{
    /* PARENT: the token a derived one was made from (a console session's), which it
     * dies with: the chain, as the audit trail's token.issue entries record it */
    static const char *const h[] = {"ID",      "KIND",    "USER",  "ROLE",
                                    "CREATED", "EXPIRES", "STATE", "PARENT"};
    struct table *t = table_create(h, 8);
    size_t i;
    json_t *k;

    if (!t)
        return;
    json_array_foreach(tokens, i, k) {
        char created[32], expires[32];
        const char *state = jstr(k, "state");
        fmt_when(jint(k, "created_ms", 0), c->now_ms, created, sizeof(created));
        if (jint(k, "expires_ms", 0))
            fmt_when(jint(k, "expires_ms", 0), c->now_ms, expires, sizeof(expires));
        else
            snprintf(expires, sizeof(expires), "never");
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(k, "id"));
        table_cell(t, FMT_PLAIN, "%s", jstr(k, "kind"));
        table_cell(t, FMT_PLAIN, "%s", jstr(k, "user"));
        table_cell(t, FMT_PLAIN, "%s", jstr(k, "role"));
        table_cell(t, FMT_PLAIN, "%s", created);
        table_cell(t, FMT_PLAIN, "%s", expires);
        table_cell(t, !strcmp(state, "active") ? FMT_GREEN : FMT_YELLOW, "%s", state);
        const char *parent = jstr(k, "parent");
        table_cell(t, FMT_PLAIN, "%s", parent[0] ? parent : "-");
    }
    if (table_rows(t))
        table_print(t, c->out, c->width, c->color);
    else
        fprintf(c->out, "no tokens\n");
    table_destroy(t);
}

static int list(struct cli *c, const struct cli_args *a)
{
    char path[200] = "/v1/tokens", esc[160];
    json_t *reply = NULL;
    int rc;

    for (int i = 0; i < a->nopts; i++) {
        if (a->ids[i] != T_USER)
            return cli_usage_error(c, "list takes only --user");
        if (!str_is_name(a->vals[i]) || client_escape(a->vals[i], esc, sizeof(esc)) < 0)
            return cli_usage_error(c, "bad user '%.40s'", a->vals[i]);
        snprintf(path, sizeof(path), "/v1/tokens?user=%s", esc);
    }
    if (a->npos > 1)
        return cli_usage_error(c, "unexpected argument '%.40s'", a->pos[1]);
    if ((rc = cli_call(c, "GET", path, NULL, &reply)))
        return rc;
    if (c->json)
        cli_print_json(c, reply);
    else
        print_tokens(c, json_object_get(reply, "tokens"));
    json_decref(reply);
    return EXIT_OK;
}

static int revoke(struct cli *c, const struct cli_args *a)
{
    char path[200];
    json_t *reply = NULL;
    int rc;
    const char *id = a->npos == 2 ? a->pos[1] : "";
    size_t n = strlen(id);

    if (a->nopts)
        return cli_usage_error(c, "revoke takes only the token's ID");
    if (n != 12 || strspn(id, "0123456789abcdef") != n)
        return cli_usage_error(c, "which token? (docket token revoke ID; IDs: docket token list)");
    snprintf(path, sizeof(path), "/v1/tokens/%s", id);
    if ((rc = cli_call(c, "DELETE", path, NULL, &reply)))
        return rc;
    if (c->json)
        cli_print_json(c, reply);
    else
        fprintf(c->out, "revoked token %s of %s\n", jstr(reply, "id"), jstr(reply, "user"));
    json_decref(reply);
    return EXIT_OK;
}

int cmd_token(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse_args(c, argc, argv, token_opts, 2, &a);
    const char *sub;

    if (rc != CLI_CONTINUE)
        return rc;
    sub = a.npos ? a.pos[0] : "";
    if (!strcmp(sub, "create") || !strcmp(sub, "join") || !strcmp(sub, "rotate-admin"))
        return issue(c, &a, sub);
    if (!strcmp(sub, "list"))
        return list(c, &a);
    if (!strcmp(sub, "revoke"))
        return revoke(c, &a);
    return cli_usage_error(c, "create, join, list, revoke or rotate-admin? "
                              "(docket token create --user NAME)");
}
