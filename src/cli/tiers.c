/*
 * tiers.c - `docket tiers`: the policy's priority tiers, highest first, with their
 * starvation guard (GET /v1/tiers). Changed with `docket apply -f`.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli/cli.h"

const char cmd_tiers_usage[] =
    "usage: docket tiers [--json]\n"
    "\n"
    "The priority tiers, highest first. Tiers order the queue strictly; a job pending\n"
    "longer than its tier's starve_after gets a reservation (the starvation guard).\n";

int cmd_tiers(struct cli *c, int argc, char **argv)
{
    static const char *const h[] = {"RANK", "TIER", "STARVE AFTER"};
    json_t *reply = NULL, *tier;
    struct table *t;
    size_t i;
    int rc = cli_get_json(c, argc, argv, "/v1/tiers", &reply);

    if (rc || !reply)
        return rc;
    if ((t = table_create(h, 3))) {
        json_array_foreach(json_object_get(reply, "tiers"), i, tier) {
            char starve[32];
            int64_t s = jint(tier, "starve_after_ms", 0);
            fmt_duration(s, starve, sizeof(starve));
            table_row(t);
            table_cell(t, FMT_PLAIN, "%lld", (long long)jint(tier, "rank", (int64_t)i));
            table_cell(t, FMT_PLAIN, "%s", jstr(tier, "name"));
            table_cell(t, FMT_PLAIN, "%s", s > 0 ? starve : "never");
        }
        table_print(t, c->out, c->width, c->color);
        table_destroy(t);
    }
    json_decref(reply);
    return EXIT_OK;
}
