/*
 * cli.h - what every verb of `docket` shares: the context, the dispatch table, the
 * helpers that call the API and report errors. One file per verb implements
 * `int cmd_VERB(struct cli *c, int argc, char **argv)` (argv[0] is the verb), returning
 * the process exit status:
 *   0  done
 *   1  the server refused, or a runtime error (docketd unreachable, I/O)
 *   2  usage error (bad flag or value): nothing was sent
 * docs/cli.md is the user's manual; docs/api.md is all the CLI may speak.
 */
#ifndef DOCKET_CLI_CLI_H
#define DOCKET_CLI_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/client.h"
#include "cli/fmt.h"
#include "cli/opt.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

struct cli {
    struct client_config cfg;
    struct client *client; /* created by the first cli_call */
    const char *verb;      /* for messages: "submit" */
    const char *usage;     /* the verb's help text */
    bool json;             /* --json: print the API's JSON, nothing else on stdout */
    bool color;
    int width; /* terminal columns, 0 = no limit */
    int64_t now_ms;
    FILE *out;
};

typedef int cli_fn(struct cli *c, int argc, char **argv);

struct cli_verb {
    const char *name;
    cli_fn *fn;
    const char *summary;
    const char *usage;
};

/* The dispatch table (cli.c), ending with a zeroed entry; aliases have the same fn. */
extern const struct cli_verb cli_verbs[];
const struct cli_verb *cli_find_verb(const char *name);
int cli_main(int argc, char **argv);

cli_fn cmd_submit, cmd_queue, cmd_show, cmd_cancel, cmd_hold, cmd_release, cmd_requeue, cmd_update,
    cmd_logs, cmd_explain, cmd_forecast, cmd_nodes, cmd_projects, cmd_tiers, cmd_classes,
    cmd_history, cmd_apply, cmd_top, cmd_token, cmd_audit, cmd_help, cmd_secret, cmd_console,
    cmd_alerts, cmd_report, cmd_admin, cmd_services, cmd_shell, cmd_attach, cmd_salloc,
    cmd_templates, cmd_storage, cmd_import;

extern const char cmd_submit_usage[], cmd_queue_usage[], cmd_show_usage[], cmd_cancel_usage[],
    cmd_hold_usage[], cmd_release_usage[], cmd_requeue_usage[], cmd_update_usage[],
    cmd_logs_usage[], cmd_explain_usage[], cmd_forecast_usage[], cmd_nodes_usage[],
    cmd_projects_usage[], cmd_tiers_usage[], cmd_classes_usage[], cmd_history_usage[],
    cmd_apply_usage[], cmd_top_usage[], cmd_token_usage[], cmd_audit_usage[], cmd_help_usage[],
    cmd_secret_usage[], cmd_console_usage[], cmd_alerts_usage[], cmd_report_usage[],
    cmd_admin_usage[], cmd_services_usage[], cmd_shell_usage[], cmd_attach_usage[],
    cmd_salloc_usage[], cmd_templates_usage[], cmd_storage_usage[], cmd_import_usage[];

/* shell.c: submit `spec` as an interactive session and attach this terminal to it (the
 * process's exit status); the same from salloc's (sbatch's) options and command. */
int shell_run(struct cli *c, json_t *spec);
int shell_slurm(struct cli *c, char **words, int n);

/* console.c: may the request whose head (request line and headers, ending "\r\n\r\n",
 * NUL-terminated) is `head` pass `docket console`'s forward to the Unix socket, whose own
 * address is `host` ("127.0.0.1:PORT")? Only when its Host is that address and it is a GET
 * of the page, its files or /healthz, the POST of a login code, or it carries an
 * Authorization header (docketd then checks the token, not the socket's user). */
bool console_forward_passes(const char *head, const char *host);

/* Send all n bytes of p on the socket fd (EINTR retried; no SIGPIPE). 0 or -1. */
int cli_send_all(int fd, const void *p, size_t n);

/* Options every verb accepts; verbs list them in their tables with these ids. */
enum { CO_JSON = 100, CO_HELP = 101 };
#define CLI_COMMON_OPTS                                                                            \
    {CO_JSON, 0, "json", OPT_NONE},                                                                \
    {                                                                                              \
        CO_HELP, 'h', "help", OPT_NONE                                                             \
    }

/* Handle CO_JSON / CO_HELP / OPT_ERROR for a verb's option loop: CLI_CONTINUE when the
 * loop goes on, else the exit status to return at once (EXIT_OK after printing help,
 * EXIT_USAGE after an error message). */
int cli_common(struct cli *c, int id, const char *err);
#define CLI_CONTINUE 256

/* Parse the arguments of a verb that takes only the common flags plus `extra` (may be
 * NULL; their ids and values are stored in ids[]/vals[] in order, at most 16) and
 * positional arguments (at most max, into pos[], count in *npos). Returns CLI_CONTINUE
 * or the exit status to return at once. */
struct cli_args {
    const char *pos[64];
    int npos;
    int ids[16];
    const char *vals[16];
    int nopts;
};
int cli_parse_args(struct cli *c, int argc, char **argv, const struct opt_def *opts, int max_pos,
                   struct cli_args *a);

/* "docket VERB: msg" + "see `docket help VERB`" on stderr; returns EXIT_USAGE. */
int cli_usage_error(struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "docket: msg" on stderr; returns EXIT_FAIL. */
int cli_fail(struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_warn(struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Call the API: body (borrowed, may be NULL) sent as JSON. On 2xx *reply gets the parsed
 * JSON (caller decrefs) and 0 is returned. Otherwise the error is printed with a hint of
 * what to do (and, with --json, the error object on stdout) and EXIT_FAIL returned. */
int cli_call(struct cli *c, const char *method, const char *path, json_t *body, json_t **reply);
/* POST /v1/jobs as cli_call, with a fresh random Idempotency-Key: a submission whose
 * outcome is unknown (a controller killed, a takeover) is sent again with the same key
 * and lands once (client_submit). */
int cli_submit_call(struct cli *c, json_t *spec, json_t **reply);
/* Print an error reply (status not 2xx) with a hint of what to do; with --json also the
 * error object on stdout. EXIT_FAIL. */
int cli_report_error(struct cli *c, const struct client_reply *r);
/* A list (docs/api.md "Lists"): GET path (its query, if any, kept) page after page,
 * following each page's "next" cursor, until `max` items (< 1: all) or the last page;
 * *list gets {key: [the pages' items]} (caller decrefs). 0, or cli_call's error (*list
 * NULL). */
int cli_get_pages(struct cli *c, const char *path, const char *key, long max, json_t **list);
/* The same list read without a tree (issue 40): fn is called with each item's JSON text
 * as it lies in the page (its syntax checked, jtext.h), in order; a non-zero return
 * stops with that status. 0, cli_call's error, or EXIT_FAIL for a page that is not JSON
 * (as json_loadb would refuse it). */
typedef int (*cli_item_fn)(void *arg, const char *item, size_t n);
int cli_each_item(struct cli *c, const char *path, const char *key, long max, cli_item_fn fn,
                  void *arg);
/* A GET whose failure is not the user's business (extra data for display): 0 with
 * *reply, or EXIT_FAIL having printed nothing. */
int cli_call_quiet(struct cli *c, const char *method, const char *path, json_t **reply);
/* The same with a raw body and content type, and a raw reply (for logs and apply). */
int cli_call_raw(struct cli *c, const char *method, const char *path, const char *ctype,
                 const char *body, size_t len, long timeout_ms, struct client_reply *r);

/* A verb that takes only the common flags and GETs `path`: with --json the reply is
 * printed and *reply is NULL; else *reply is the parsed reply for the verb to print.
 * Exit status. */
int cli_get_json(struct cli *c, int argc, char **argv, const char *path, json_t **reply);

/* Print a JSON value on stdout (indented), for --json. */
void cli_print_json(struct cli *c, const json_t *v);
/* Parse a job id ("915", "915_3" is not accepted). 0 or EXIT_USAGE after a message. */
int cli_job_id(struct cli *c, const char *s, int64_t *id);

/* Small readers of API objects: missing or mistyped members read as the default. */
const char *jstr(const json_t *o, const char *key); /* "" when absent */
int64_t jint(const json_t *o, const char *key, int64_t dflt);
bool jbool(const json_t *o, const char *key);

#endif
