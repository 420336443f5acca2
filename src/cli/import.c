/*
 * import.c - `docket import slurm --conf slurm.conf [--gres gres.conf] [--sacctmgr DUMP]
 * [--qos QOS] [--cluster] [-o FILE]`: a Slurm site's configuration read (slurmsite.c)
 * into a policy document for `docket apply -f`, and what could not be mapped printed on
 * stderr, one line each, for the operator to review (docs/slurm.md "A site imports
 * itself"). Nothing is sent to docketd; --cluster only reads GET /v1/nodes for the GPU
 * types the nodes report.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/slurmsite.h"
#include "util/dbuf.h"

const char cmd_import_usage[] =
    "usage: docket import slurm --conf slurm.conf [--gres gres.conf] [--sacctmgr DUMP]\n"
    "                           [--qos QOS] [--cluster] [-o FILE]\n"
    "\n"
    "Write a policy file from a Slurm site: partitions and node features (slurm.conf),\n"
    "GPU types (gres.conf), accounts as projects with their limits and fair-share shares,\n"
    "users as members with their default accounts (`sacctmgr dump CLUSTER file=DUMP`),\n"
    "QOS as tiers (`sacctmgr show qos -P > QOS`). --cluster reads the GPU types the\n"
    "cluster's nodes report and writes gpu_aliases where Slurm's names differ. What cannot\n"
    "be mapped is printed on stderr. Review the file, then `docket apply -f FILE`.\n";

enum { I_CONF = 1, I_GRES, I_DUMP, I_QOS, I_OUT, I_CLUSTER };

static const struct opt_def import_opts[] = {
    {I_CONF, 0, "conf", OPT_VALUE},
    {I_GRES, 0, "gres", OPT_VALUE},
    {I_DUMP, 0, "sacctmgr", OPT_VALUE},
    {I_QOS, 0, "qos", OPT_VALUE},
    {I_OUT, 'o', "output", OPT_VALUE},
    {I_CLUSTER, 0, "cluster", OPT_NONE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

/* A site file's text (at most 64 MiB), or NULL after saying why. */
static char *slurp(struct cli *c, const char *path)
{
    FILE *f = fopen(path, "r");
    struct dbuf b;
    char chunk[8192];
    size_t n;

    if (!f) {
        cli_fail(c, "cannot read '%s': %s", path, strerror(errno));
        return NULL;
    }
    dbuf_init(&b, 64 << 20);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        dbuf_append(&b, chunk, n);
    fclose(f);
    if (b.failed) {
        dbuf_release(&b);
        cli_fail(c, "'%s' is larger than 64 MiB", path);
        return NULL;
    }
    dbuf_append(&b, "", 1);
    return b.data;
}

static int read_into(struct cli *c, json_t *site, const char *path,
                     void (*reader)(json_t *, const char *, json_t *), json_t *unmapped)
{
    char *text;
    if (!path)
        return 0;
    if (!(text = slurp(c, path)))
        return EXIT_FAIL;
    reader(site, text, unmapped);
    free(text);
    return 0;
}

/* --cluster: gpu_aliases from the types the registered nodes report. */
static int cluster_aliases(struct cli *c, const json_t *site, json_t *doc, json_t *unmapped)
{
    json_t *reply = NULL;
    int rc = cli_get_pages(c, "/v1/nodes", "nodes", 0, &reply);
    if (rc)
        return rc;
    json_t *aliases = slurm_site_aliases(site, json_object_get(reply, "nodes"), unmapped);
    if (json_object_size(aliases))
        json_object_set(doc, "gpu_aliases", aliases);
    json_decref(aliases);
    json_decref(reply);
    return 0;
}

int cmd_import(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    const char *path[I_CLUSTER + 1] = {0};
    bool cluster = false;
    int rc = cli_parse_args(c, argc, argv, import_opts, 1, &a);

    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 0; i < a.nopts; i++) {
        if (a.ids[i] == I_CLUSTER)
            cluster = true;
        else if (a.ids[i] >= I_CONF && a.ids[i] <= I_OUT)
            path[a.ids[i]] = a.vals[i];
    }
    if (a.npos != 1 || strcmp(a.pos[0], "slurm") != 0)
        return cli_usage_error(c, "what to import? (docket import slurm --conf slurm.conf)");
    if (!path[I_CONF])
        return cli_usage_error(c, "--conf slurm.conf is needed");
    json_t *site = slurm_site_new(), *unmapped = json_array(), *doc = NULL;
    rc = read_into(c, site, path[I_CONF], slurm_conf_read, unmapped);
    if (!rc)
        rc = read_into(c, site, path[I_GRES], slurm_gres_read, unmapped);
    if (!rc)
        rc = read_into(c, site, path[I_DUMP], slurm_sacctmgr_read, unmapped);
    if (!rc)
        rc = read_into(c, site, path[I_QOS], slurm_qos_read, unmapped);
    if (!rc) {
        doc = slurm_site_policy(site, unmapped);
        if (cluster)
            rc = cluster_aliases(c, site, doc, unmapped);
    }
    FILE *out = !rc && path[I_OUT] ? fopen(path[I_OUT], "w") : c->out;
    if (!rc && !out)
        rc = cli_fail(c, "cannot write '%s': %s", path[I_OUT], strerror(errno));
    if (!rc) {
        json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fputc('\n', out);
        if (out != c->out && fclose(out) != 0)
            rc = cli_fail(c, "cannot write '%s': %s", path[I_OUT], strerror(errno));
    }
    if (!rc) {
        size_t i;
        json_t *u;
        fprintf(stderr,
                "docket import: %zu partitions, %zu nodes, %zu projects, %zu users; %zu things "
                "not mapped%s\n",
                json_array_size(json_object_get(doc, "partitions")),
                json_object_size(json_object_get(site, "nodes")),
                json_array_size(json_object_get(doc, "projects")),
                json_array_size(json_object_get(site, "users")), json_array_size(unmapped),
                json_array_size(unmapped) ? ":" : "");
        json_array_foreach(unmapped, i, u) {
            fprintf(stderr, "  not mapped: %s\n", json_string_value(u));
        }
    }
    json_decref(doc);
    json_decref(site);
    json_decref(unmapped);
    return rc ? rc : EXIT_OK;
}
