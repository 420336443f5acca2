/*
 * secret.c - `docket secret set|list|rm`: a project's secrets (PUT, GET, DELETE
 * /v1/projects/NAME/secrets[/SECRET]). A value is read from stdin or a file, never from
 * the command line (where `ps` and shell histories would show it), and docketd never
 * shows it back: `list` gives names, who may receive them, who set them and when. A job
 * gets them with `docket submit --secret NAME` when its user or class is allowed.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "util/dbuf.h"
#include "util/str.h"

const char cmd_secret_usage[] =
    "usage: docket secret set PROJECT NAME [--from-file FILE] [--allow WHO]... [--json]\n"
    "       docket secret list PROJECT [--json]\n"
    "       docket secret rm PROJECT NAME [--json]\n"
    "\n"
    "A project's secrets, encrypted by docketd and given to the jobs that name them\n"
    "(docket submit --secret NAME) as the environment variable NAME. set reads the value\n"
    "from stdin (one trailing newline dropped) or from --from-file FILE (as is); it is\n"
    "never an argument. list shows names, never values. The project's lead or an admin\n"
    "manages them.\n"
    "\n"
    "Who receives one: the project's leads (and admins), and those --allow names, once\n"
    "each: members (every member of the project), user:NAME, class:NAME (jobs of that\n"
    "class). A job naming a secret it may not receive is refused at submit. Without\n"
    "--allow, set keeps the secret's list (a new one: leads only); --allow none clears it.\n";

enum { S_FROM_FILE = 1, S_ALLOW, MAX_VALUE = 65536 };

static const struct opt_def secret_opts[] = {
    {S_FROM_FILE, 0, "from-file", OPT_VALUE},
    {S_ALLOW, 0, "allow", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

/* The value from FILE (as is) or stdin (one trailing newline dropped, as `echo` adds). */
static int read_value(struct cli *c, const char *file, struct dbuf *b)
{
    FILE *f = file ? fopen(file, "r") : stdin;
    char chunk[4096];
    size_t n;
    struct termios old, quiet;
    bool tty = !file && tcgetattr(STDIN_FILENO, &old) == 0;
    if (!f)
        return cli_fail(c, "cannot read '%s': %s", file, strerror(errno));
    if (tty) { /* typed at a terminal: not echoed */
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
        fprintf(stderr, "value (not shown; end with Enter, then Ctrl-D): ");
    }
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        dbuf_append(b, chunk, n);
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fputc('\n', stderr);
    }
    if (file)
        fclose(f);
    if (!file && b->len && b->data[b->len - 1] == '\n')
        b->data[--b->len] = '\0';
    if (b->failed)
        return cli_fail(c, "the value is larger than %d bytes", MAX_VALUE);
    if (b->len == 0)
        return cli_fail(c, "the value is empty: give it on stdin or with --from-file FILE");
    if (strlen(b->data) != b->len)
        return cli_fail(c, "the value holds a NUL byte, which no environment variable can");
    return 0;
}

static int list(struct cli *c, const char *project)
{
    static const char *const h[] = {"NAME", "FOR", "SET BY", "SET"};
    char path[256], esc[200];
    json_t *reply = NULL, *s;
    size_t i;
    if (client_escape(project, esc, sizeof(esc)) < 0)
        return cli_usage_error(c, "project name too long");
    snprintf(path, sizeof(path), "/v1/projects/%s/secrets", esc);
    int rc = cli_call(c, "GET", path, NULL, &reply);
    if (rc)
        return rc;
    if (c->json) {
        cli_print_json(c, reply);
    } else if (json_array_size(json_object_get(reply, "secrets")) == 0) {
        fprintf(c->out, "project %s has no secrets\n", project);
    } else {
        struct table *t = table_create(h, 4);
        json_array_foreach(json_object_get(reply, "secrets"), i, s) {
            char when[32];
            struct dbuf who;
            size_t k;
            json_t *w;
            dbuf_init(&who, 4096);
            dbuf_printf(&who, "leads");
            json_array_foreach(json_object_get(s, "allow"), k, w)
                dbuf_printf(&who, ",%s", json_string_value(w) ? json_string_value(w) : "?");
            fmt_when(jint(s, "set_ms", 0), c->now_ms, when, sizeof(when));
            table_row(t);
            table_cell(t, FMT_PLAIN, "%s", jstr(s, "name"));
            table_cell(t, FMT_PLAIN, "%s", who.data);
            dbuf_release(&who);
            table_cell(t, FMT_PLAIN, "%s", jstr(s, "set_by"));
            table_cell(t, FMT_PLAIN, "%s", when);
        }
        table_print(t, c->out, c->width, c->color);
        table_destroy(t);
    }
    json_decref(reply);
    return EXIT_OK;
}

static int secret_do(struct cli *c, const struct cli_args *ap, const char *file, json_t *allow);

int cmd_secret(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    const char *file = NULL;
    json_t *allow = NULL; /* --allow, in order; NULL: not given */
    int rc = cli_parse_args(c, argc, argv, secret_opts, 3, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 0; i < a.nopts; i++) {
        if (a.ids[i] == S_FROM_FILE)
            file = a.vals[i];
        if (a.ids[i] == S_ALLOW && !allow)
            allow = json_array();
        if (a.ids[i] == S_ALLOW && strcmp(a.vals[i], "none") != 0)
            json_array_append_new(allow, json_string(a.vals[i]));
    }
    rc = secret_do(c, &a, file, allow);
    json_decref(allow);
    return rc;
}

/* set, list or rm, once the options are read. */
static int secret_do(struct cli *c, const struct cli_args *ap, const char *file, json_t *allow)
{
    const struct cli_args a = *ap;
    int rc;
    const char *sub = a.npos ? a.pos[0] : "";
    bool set = !strcmp(sub, "set"), rm = !strcmp(sub, "rm");
    if (!set && !rm && strcmp(sub, "list"))
        return cli_usage_error(c, "set, list or rm? (docket secret list PROJECT)");
    if (a.npos < 2 || !str_is_name(a.pos[1]))
        return cli_usage_error(c, "which project? (docket secret %s PROJECT%s)", sub,
                               set || rm ? " NAME" : "");
    if (!set && allow)
        return cli_usage_error(c, "--allow goes with set");
    if (!set && !rm) {
        if (a.npos != 2 || file)
            return cli_usage_error(c, "list takes only a project");
        return list(c, a.pos[1]);
    }
    if (a.npos != 3)
        return cli_usage_error(c, "which secret? (docket secret %s %s NAME)%s", sub, a.pos[1],
                               set ? "; the value comes on stdin, never as an argument" : "");
    if (rm && file)
        return cli_usage_error(c, "rm takes no --from-file");
    char path[512], pe[200], ne[300];
    if (client_escape(a.pos[1], pe, sizeof(pe)) < 0 || client_escape(a.pos[2], ne, sizeof(ne)) < 0)
        return cli_usage_error(c, "name too long");
    snprintf(path, sizeof(path), "/v1/projects/%s/secrets/%s", pe, ne);
    json_t *body = NULL, *reply = NULL;
    if (set) {
        struct dbuf b;
        dbuf_init(&b, MAX_VALUE);
        rc = read_value(c, file, &b);
        if (rc == 0)
            body = json_pack("{s:s%}", "value", b.data, b.len);
        if (body && allow)
            json_object_set(body, "allow", allow);
        memset(b.data, 0, b.len);
        dbuf_release(&b);
        if (rc)
            return rc;
        if (!body)
            return cli_fail(c, "the value is not valid UTF-8 text");
    }
    rc = cli_call(c, set ? "PUT" : "DELETE", path, body, &reply);
    json_decref(body);
    if (rc == 0) {
        if (c->json)
            cli_print_json(c, reply);
        else
            fprintf(c->out, "%s secret %s of project %s\n", set ? "set" : "removed", a.pos[2],
                    a.pos[1]);
    }
    json_decref(reply);
    return rc;
}
