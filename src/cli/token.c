/*
 * token.c - `docket token`: create API tokens for people (POST /v1/tokens) and join
 * tokens for agents (POST /v1/join-tokens). Admin only. The token goes to stdout alone
 * so scripts can capture it; what it is goes to stderr.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli/cli.h"
#include "util/parse.h"
#include "util/str.h"

const char cmd_token_usage[] =
    "usage: docket token create --user NAME [--role member|admin] [--ttl 90d] [--json]\n"
    "       docket token join [--ttl 1h] [--json]\n"
    "\n"
    "create: an API token for a person (DOCKET_TOKEN). join: a one-time token with\n"
    "which a new docket-node registers; when docketd serves TLS, the fingerprint of\n"
    "its key follows on stderr (docket-node --controller-fingerprint). Only the\n"
    "token's hash is stored by docketd: it is printed once.\n";

enum { T_USER = 1, T_ROLE, T_TTL };

static const struct opt_def token_opts[] = {
    {T_USER, 'u', "user", OPT_VALUE}, {T_ROLE, 0, "role", OPT_VALUE},
    {T_TTL, 0, "ttl", OPT_VALUE},     CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

int cmd_token(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    json_t *body = json_object(), *reply = NULL;
    const char *sub;
    bool join;
    int rc = cli_parse_args(c, argc, argv, token_opts, 1, &a);
    int64_t ms;

    if (rc != CLI_CONTINUE)
        goto out;
    sub = a.npos ? a.pos[0] : "";
    join = !strcmp(sub, "join");
    if (!join && strcmp(sub, "create")) {
        rc = cli_usage_error(c, "create or join? (docket token create --user NAME)");
        goto out;
    }
    for (int i = 0; i < a.nopts; i++) {
        const char *v = a.vals[i];
        if (a.ids[i] == T_TTL && (parse_duration_ms(v, &ms) < 0 || ms <= 0)) {
            rc = cli_usage_error(c, "--ttl: bad duration '%.40s' (e.g. 90d)", v);
            goto out;
        }
        if ((a.ids[i] == T_USER && !str_is_name(v)) ||
            (a.ids[i] == T_ROLE && strcmp(v, "member") && strcmp(v, "admin") &&
             strcmp(v, "operator") && strcmp(v, "lead"))) {
            rc = cli_usage_error(c, "bad %s '%.40s'", a.ids[i] == T_USER ? "user" : "role", v);
            goto out;
        }
        if (join && a.ids[i] != T_TTL) {
            rc = cli_usage_error(c, "a join token takes only --ttl");
            goto out;
        }
        json_object_set_new(body,
                            a.ids[i] == T_USER   ? "user"
                            : a.ids[i] == T_ROLE ? "role"
                                                 : "ttl",
                            json_string(v));
    }
    if (!join && !json_object_get(body, "user")) {
        rc = cli_usage_error(c, "whose token? (--user NAME)");
        goto out;
    }
    if ((rc = cli_call(c, "POST", join ? "/v1/join-tokens" : "/v1/tokens", body, &reply)))
        goto out;
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
                    jstr(reply, "controller_fingerprint"), jstr(reply, "controller_fingerprint"),
                    jstr(reply, "controller_fingerprint"));
        if (!join)
            fprintf(stderr, "token for %s (%s), expires %s; it is not shown again\n",
                    jstr(reply, "user"), jstr(reply, "role"), exp);
    }
out:
    json_decref(body);
    json_decref(reply);
    return rc;
}
