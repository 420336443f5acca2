/*
 * services.c - `docket services [list|show NAME|create -f FILE|scale NAME N|rm NAME]`:
 * services that stay up (docs/services.md), through /v1/services. A spec file is YAML or
 * JSON (util/yamljson.c turns it into the JSON docketd reads; docketd validates it).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/yamljson.h"

const char cmd_services_usage[] =
    "usage: docket services [list] [--json]\n"
    "       docket services show NAME [--json]\n"
    "       docket services create -f FILE [--json]\n"
    "       docket services scale NAME REPLICAS [--json]\n"
    "       docket services rm NAME [--json]\n"
    "\n"
    "Services that stay up: REPLICAS jobs of class service, each restarted when it ends\n"
    "(after a backoff that doubles while it keeps failing; a replica restarting too often\n"
    "shows crash-loop). FILE (YAML or JSON) gives name, project, replicas, job (a job\n"
    "spec), probes and restart; docs/services.md has an example. list shows each service's\n"
    "replicas ready/desired and restarts; show adds each replica's job and state.\n";

enum { S_FILE = 1 };

static const struct opt_def services_opts[] = {
    {S_FILE, 'f', "file", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

static void print_table(struct cli *c, const json_t *list)
{
    static const char *const h[] = {"NAME", "PROJECT", "STATE", "READY", "RESTARTS", "OWNER"};
    struct table *t = table_create(h, 6);
    size_t i;
    const json_t *s;
    json_array_foreach(list, i, s) {
        const char *st = jstr(s, "state");
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(s, "name"));
        table_cell(t, FMT_PLAIN, "%s", jstr(s, "project"));
        table_cell(t, !strcmp(st, "running") ? FMT_GREEN : FMT_YELLOW, "%s", st);
        table_cell(t, FMT_PLAIN, "%lld/%lld", (long long)jint(s, "ready", 0),
                   (long long)jint(s, "replicas", 0));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(s, "restarts", 0));
        table_cell(t, FMT_PLAIN, "%s", jstr(s, "user"));
    }
    table_print(t, c->out, c->width, c->color);
    table_destroy(t);
}

static void print_one(struct cli *c, const json_t *s)
{
    static const char *const h[] = {"REPLICA", "JOB", "STATE", "RESTARTS"};
    fprintf(c->out, "service %s (project %s, owner %s): %s, %lld/%lld ready, %lld restarts\n",
            jstr(s, "name"), jstr(s, "project"), jstr(s, "user"), jstr(s, "state"),
            (long long)jint(s, "ready", 0), (long long)jint(s, "replicas", 0),
            (long long)jint(s, "restarts", 0));
    struct table *t = table_create(h, 4);
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(s, "instances"), i, r) {
        table_row(t);
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(r, "slot", 0));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(r, "job", 0));
        table_cell(t, FMT_PLAIN, "%s", jstr(r, "state"));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(r, "restarts", 0));
    }
    table_print(t, c->out, c->width, c->color);
    table_destroy(t);
}

/* Call and print: the reply's "service" (or the list), or as --json. */
static int call_print(struct cli *c, const char *method, const char *path, json_t *body)
{
    json_t *reply = NULL;
    int rc = cli_call(c, method, path, body, &reply);
    json_decref(body);
    if (rc)
        return rc;
    if (c->json)
        cli_print_json(c, reply);
    else if (json_object_get(reply, "services"))
        json_array_size(json_object_get(reply, "services"))
            ? print_table(c, json_object_get(reply, "services"))
            : (void)fprintf(c->out, "no services\n");
    else if (json_object_get(reply, "service"))
        print_one(c, json_object_get(reply, "service"));
    else
        fprintf(c->out, "removed service %s\n", jstr(reply, "deleted"));
    json_decref(reply);
    return EXIT_OK;
}

static int service_path(struct cli *c, const char *name, const char *tail, char *out, size_t len)
{
    char esc[200];
    if (!str_is_name(name) || client_escape(name, esc, sizeof(esc)) < 0)
        return cli_usage_error(c, "'%s' is not a service name", name);
    snprintf(out, len, "/v1/services/%s%s", esc, tail);
    return 0;
}

static int create(struct cli *c, const char *file)
{
    char err[256];
    if (!file)
        return cli_usage_error(c, "create needs -f FILE (the service spec, YAML or JSON)");
    json_t *spec = yaml_file_to_json(file, err, sizeof(err));
    if (!spec)
        return cli_fail(c, "%s: %s", file, err);
    return call_print(c, "POST", "/v1/services", spec);
}

int cmd_services(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    const char *file = NULL;
    char path[300];
    int rc = cli_parse_args(c, argc, argv, services_opts, 3, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 0; i < a.nopts; i++)
        if (a.ids[i] == S_FILE)
            file = a.vals[i];
    const char *sub = a.npos ? a.pos[0] : "list";
    if (!strcmp(sub, "create"))
        return a.npos == 1 ? create(c, file) : cli_usage_error(c, "create takes only -f FILE");
    if (file)
        return cli_usage_error(c, "-f FILE goes with create");
    if (!strcmp(sub, "list"))
        return a.npos <= 1 ? call_print(c, "GET", "/v1/services", NULL)
                           : cli_usage_error(c, "list takes no argument");
    bool show = !strcmp(sub, "show"), rm = !strcmp(sub, "rm"), scale = !strcmp(sub, "scale");
    if (!show && !rm && !scale)
        return cli_usage_error(c, "list, show, create, scale or rm? (docket services list)");
    if (a.npos != (scale ? 3 : 2))
        return cli_usage_error(c, "usage: docket services %s NAME%s", sub,
                               scale ? " REPLICAS" : "");
    if ((rc = service_path(c, a.pos[1], scale ? "/scale" : "", path, sizeof(path))))
        return rc;
    if (show)
        return call_print(c, "GET", path, NULL);
    if (rm)
        return call_print(c, "DELETE", path, NULL);
    int n;
    if (parse_int(a.pos[2], 0, 64, &n) < 0)
        return cli_usage_error(c, "REPLICAS must be a number from 0 to 64, not '%s'", a.pos[2]);
    return call_print(c, "POST", path, json_pack("{s:i}", "replicas", n));
}
