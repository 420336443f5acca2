/*
 * help.c - `docket help [VERB]`: the list of verbs, or one verb's usage (the same text
 * as `docket VERB --help`).
 */
#include <string.h>

#include "cli/cli.h"

const char cmd_help_usage[] = "usage: docket help [VERB] [--json]\n"
                              "\n"
                              "The verbs of docket, or how to use one of them.\n";

/* --json: the verbs with their summaries and usage, for tools. */
static int print_json(struct cli *c, const char *only)
{
    json_t *arr = json_array(), *o;

    for (const struct cli_verb *v = cli_verbs; v->name; v++)
        if (!only || !strcmp(v->name, only))
            json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "name", v->name, "summary",
                                                 v->summary, "usage", v->usage));
    if (only && !json_array_size(arr)) {
        json_decref(arr);
        return cli_usage_error(c, "unknown verb '%.60s'", only);
    }
    o = json_pack("{s:o}", "verbs", arr);
    cli_print_json(c, o);
    json_decref(o);
    return EXIT_OK;
}

int cmd_help(struct cli *c, int argc, char **argv)
{
    const struct cli_verb *v;
    struct cli_args a;
    int rc = cli_parse_args(c, argc, argv, NULL, 1, &a);
    const char *verb;

    if (rc != CLI_CONTINUE)
        return rc;
    verb = a.npos ? a.pos[0] : NULL;
    if (c->json)
        return print_json(c, verb);
    if (!verb) {
        fprintf(c->out, "usage: docket [--url URL] [--token TOKEN] VERB [ARGS...]\n\n"
                        "verbs (docket help VERB for one):\n");
        for (v = cli_verbs; v->name; v++)
            if (strcmp(v->name, "q"))
                fprintf(c->out, "  %-10s %s\n", v->name, v->summary);
        fprintf(c->out, "\nevery verb takes --json and --help; exit status 0 = done, "
                        "1 = refused or failed, 2 = bad usage\n");
        return EXIT_OK;
    }
    if (!(v = cli_find_verb(verb)))
        return cli_usage_error(c, "unknown verb '%.60s'", verb);
    fputs(v->usage, c->out);
    return EXIT_OK;
}
