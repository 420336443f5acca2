/*
 * help.c - `docket help [VERB]`: the list of verbs, or one verb's usage (the same text
 * as `docket VERB --help`).
 */
#include <string.h>

#include "cli/cli.h"

const char cmd_help_usage[] =
    "usage: docket help [VERB]\n"
    "\n"
    "The verbs of docket, or how to use one of them.\n";

int cmd_help(struct cli *c, int argc, char **argv)
{
    const struct cli_verb *v;

    if (argc > 2)
        return cli_usage_error(c, "one verb at a time");
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(cmd_help_usage, c->out);
        return EXIT_OK;
    }
    if (argc < 2) {
        fprintf(c->out, "usage: docket [--url URL] [--token TOKEN] VERB [ARGS...]\n\n"
                        "verbs (docket help VERB for one):\n");
        for (v = cli_verbs; v->name; v++)
            if (strcmp(v->name, "q"))
                fprintf(c->out, "  %-10s %s\n", v->name, v->summary);
        fprintf(c->out, "\nevery verb takes --json and --help; exit status 0 = done, "
                        "1 = refused or failed, 2 = bad usage\n");
        return EXIT_OK;
    }
    if (!(v = cli_find_verb(argv[1])))
        return cli_usage_error(c, "unknown verb '%.60s'", argv[1]);
    fputs(v->usage, c->out);
    return EXIT_OK;
}
