/*
 * main.c - the `docket` program: everything is in cli_main (cli.c) so the unit tests can
 * link the same code.
 */
#include "cli/cli.h"

int main(int argc, char **argv)
{
    return cli_main(argc, argv);
}
