/*
 * services.c - `docket services [list|show NAME|create -f FILE|scale NAME N|rm NAME]`:
 * services that stay up (docs/services.md), through /v1/services. A spec file is YAML or
 * JSON (util/yamljson.c turns it into the JSON docketd reads; docketd validates it).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

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
    "       docket services endpoint NAME\n"
    "       docket services update NAME -f FILE [--wait] [--json]\n"
    "\n"
    "Services that stay up: REPLICAS jobs of class service, each restarted when it ends\n"
    "(after a backoff that doubles while it keeps failing; a replica restarting too often\n"
    "shows crash-loop). FILE (YAML or JSON) gives name, project, replicas, job (a job\n"
    "spec), probes and restart; docs/services.md has an example. list shows each service's\n"
    "replicas ready/desired, restarts, endpoint and last probe failure; show adds each\n"
    "replica's job, version, state, address and last probe failure. endpoint prints\n"
    "HOST:PORT, the service's stable address through the load balancer (docketd\n"
    "--lb-haproxy). update rolls the service to the spec of FILE one replica at a time,\n"
    "each new one ready before an old one goes; a new replica not ready within\n"
    "update.deadline rolls it back. --wait waits for the update's end (exit 1 when it\n"
    "was rolled back).\n";

enum { S_FILE = 1, S_WAIT };

static const struct opt_def services_opts[] = {
    {S_FILE, 'f', "file", OPT_VALUE},
    {S_WAIT, 0, "wait", OPT_NONE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

/* The newest probe failure of any replica of s, "" when none. */
static const char *last_failure(const json_t *s)
{
    const char *why = "";
    long long at = 0;
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(s, "instances"), i, r) {
        if (jint(r, "last_probe_failure_ms", 0) > at) {
            at = jint(r, "last_probe_failure_ms", 0);
            why = jstr(r, "last_probe_failure");
        }
    }
    return why;
}

static void print_table(struct cli *c, const json_t *list)
{
    static const char *const h[] = {"NAME",     "PROJECT", "STATE",    "READY",
                                    "RESTARTS", "OWNER",   "ENDPOINT", "LAST PROBE FAILURE"};
    struct table *t = table_create(h, 8);
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
        const char *ep = json_string_value(json_object_get(s, "endpoint"));
        table_cell(t, FMT_PLAIN, "%s", ep ? ep : "-");
        table_cell(t, FMT_PLAIN, "%s", last_failure(s));
    }
    table_print(t, c->out, c->width, c->color);
    table_destroy(t);
}

static void print_one(struct cli *c, const json_t *s)
{
    static const char *const h[] = {"REPLICA",  "JOB",     "VERSION",           "STATE",
                                    "RESTARTS", "ADDRESS", "LAST PROBE FAILURE"};
    fprintf(c->out, "service %s (project %s, owner %s): %s, %lld/%lld ready, %lld restarts\n",
            jstr(s, "name"), jstr(s, "project"), jstr(s, "user"), jstr(s, "state"),
            (long long)jint(s, "ready", 0), (long long)jint(s, "replicas", 0),
            (long long)jint(s, "restarts", 0));
    const char *ep = json_string_value(json_object_get(s, "endpoint"));
    if (ep)
        fprintf(c->out, "endpoint %s\n", ep);
    const json_t *u = json_object_get(s, "update");
    if (json_is_object(u))
        fprintf(c->out, "update to version %lld: %s%s%s\n", (long long)jint(u, "version", 0),
                jstr(u, "state"), jstr(u, "message")[0] ? ": " : "", jstr(u, "message"));
    struct table *t = table_create(h, 7);
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(s, "instances"), i, r) {
        table_row(t);
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(r, "slot", 0));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(r, "job", 0));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(r, "version", 0));
        table_cell(t, FMT_PLAIN, "%s", jstr(r, "state"));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(r, "restarts", 0));
        table_cell(t, FMT_PLAIN, "%s", jstr(r, "addr")[0] ? jstr(r, "addr") : "-");
        table_cell(t, FMT_PLAIN, "%s", jstr(r, "last_probe_failure"));
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

/* The service's stable address (its load balancer frontend), printed alone. */
static int endpoint(struct cli *c, const char *path, const char *name)
{
    json_t *reply = NULL;
    int rc = cli_call(c, "GET", path, NULL, &reply);
    if (rc)
        return rc;
    const char *ep =
        json_string_value(json_object_get(json_object_get(reply, "service"), "endpoint"));
    if (ep)
        fprintf(c->out, "%s\n", ep);
    else
        rc = cli_fail(c, "service %s has no endpoint (docketd runs no load balancer: --lb-haproxy)",
                      name);
    json_decref(reply);
    return ep ? EXIT_OK : rc;
}

/* A rolling update: the new spec posted; with --wait, the service polled until the
 * update has ended (docs/services.md "Rolling updates"). */
static int update(struct cli *c, const char *path, const char *file, bool wait)
{
    char err[256], show[300];
    if (!file)
        return cli_usage_error(c, "update needs -f FILE (the new service spec, YAML or JSON)");
    json_t *spec = yaml_file_to_json(file, err, sizeof(err));
    if (!spec)
        return cli_fail(c, "%s: %s", file, err);
    if (!wait)
        return call_print(c, "POST", path, spec);
    json_t *reply = NULL;
    int rc = cli_call(c, "POST", path, spec, &reply);
    json_decref(spec);
    str_copy(show, sizeof(show), path);
    *strrchr(show, '/') = '\0';
    const char *state = "updating";
    while (rc == 0 && (!strcmp(state, "updating") || !strcmp(state, "rolling-back"))) {
        json_decref(reply);
        reply = NULL;
        nanosleep(&(struct timespec){.tv_nsec = 200000000}, NULL);
        rc = cli_call(c, "GET", show, NULL, &reply);
        const json_t *u = json_object_get(json_object_get(reply, "service"), "update");
        state = json_is_object(u) ? jstr(u, "state") : "done";
    }
    if (rc == 0) {
        if (c->json)
            cli_print_json(c, reply);
        else
            print_one(c, json_object_get(reply, "service"));
        if (strcmp(state, "rolled-back") == 0)
            rc = cli_fail(c, "the update was rolled back");
    }
    json_decref(reply);
    return rc;
}

int cmd_services(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    const char *file = NULL;
    bool wait = false;
    char path[300];
    int rc = cli_parse_args(c, argc, argv, services_opts, 3, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 0; i < a.nopts; i++)
        if (a.ids[i] == S_FILE)
            file = a.vals[i];
        else if (a.ids[i] == S_WAIT)
            wait = true;
    const char *sub = a.npos ? a.pos[0] : "list";
    if (!strcmp(sub, "update")) {
        if (a.npos != 2)
            return cli_usage_error(c, "usage: docket services update NAME -f FILE [--wait]");
        if ((rc = service_path(c, a.pos[1], "/update", path, sizeof(path))))
            return rc;
        return update(c, path, file, wait);
    }
    if (wait)
        return cli_usage_error(c, "--wait goes with update");
    if (!strcmp(sub, "create"))
        return a.npos == 1 ? create(c, file) : cli_usage_error(c, "create takes only -f FILE");
    if (file)
        return cli_usage_error(c, "-f FILE goes with create");
    if (!strcmp(sub, "list"))
        return a.npos <= 1 ? call_print(c, "GET", "/v1/services", NULL)
                           : cli_usage_error(c, "list takes no argument");
    bool show = !strcmp(sub, "show"), rm = !strcmp(sub, "rm"), scale = !strcmp(sub, "scale");
    bool ep = !strcmp(sub, "endpoint");
    if (!show && !rm && !scale && !ep)
        return cli_usage_error(
            c, "list, show, create, scale, rm, endpoint or update? (docket services list)");
    if (a.npos != (scale ? 3 : 2))
        return cli_usage_error(c, "usage: docket services %s NAME%s", sub,
                               scale ? " REPLICAS" : "");
    if ((rc = service_path(c, a.pos[1], scale ? "/scale" : "", path, sizeof(path))))
        return rc;
    if (show)
        return call_print(c, "GET", path, NULL);
    if (ep)
        return endpoint(c, path, a.pos[1]);
    if (rm)
        return call_print(c, "DELETE", path, NULL);
    int n;
    if (parse_int(a.pos[2], 0, 64, &n) < 0)
        return cli_usage_error(c, "REPLICAS must be a number from 0 to 64, not '%s'", a.pos[2]);
    return call_print(c, "POST", path, json_pack("{s:i}", "replicas", n));
}
