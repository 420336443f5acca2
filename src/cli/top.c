/*
 * top.c - `docket top`: a live view of the cluster, redrawn every few seconds: GPUs in
 * use per type, the nodes with their measured GPU utilisation, each GPU's latest usage
 * sample, the queue by tier (held jobs apart) and its head. Reads only GET /v1/nodes,
 * /v1/jobs and /v1/tiers. Off a terminal it prints one frame (for scripts).
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/jobs.h"
#include "util/clock.h"
#include "util/parse.h"

const char cmd_top_usage[] =
    "usage: docket top [-d SECONDS] [-n FRAMES] [--json]\n"
    "\n"
    "A live view: GPUs in use per type, nodes with their GPUs' mean utilisation, each\n"
    "GPU's latest usage sample (utilisation, memory, power, temperature, job), jobs\n"
    "per tier (running, pending, held) and the head of the queue, redrawn every 2\n"
    "seconds (-d) until Ctrl-C, or FRAMES times (-n). When stdout is not a terminal it\n"
    "prints one frame; --json prints one snapshot.\n";

enum { T_DELAY = 1, T_FRAMES };

static const struct opt_def top_opts[] = {
    {T_DELAY, 'd', "delay", OPT_VALUE},
    {T_FRAMES, 'n', "frames", OPT_VALUE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

struct gpu_sum {
    char type[64];
    int64_t used, total;
};

static void bar(struct cli *c, int64_t used, int64_t total)
{
    int w = 30, fill = total > 0 ? (int)(used * w / total) : 0;

    fputc('[', c->out);
    if (c->color)
        fputs(fmt_color_on(used * 10 >= total * 9 ? FMT_RED : FMT_GREEN), c->out);
    for (int i = 0; i < w; i++)
        fputs(i < fill ? "#" : (c->color ? "." : "-"), c->out);
    if (c->color)
        fputs(fmt_color_off(), c->out);
    fputc(']', c->out);
}

static void utilisation(struct cli *c, const json_t *nodes)
{
    struct gpu_sum sums[32];
    int n = 0;
    size_t i;
    json_t *node;

    json_array_foreach(nodes, i, node) {
        const char *type = jstr(node, "gpu_type");
        int k;
        if (jint(node, "gpus", 0) <= 0)
            continue;
        for (k = 0; k < n && strcmp(sums[k].type, type); k++)
            ;
        if (k == n) {
            if (n == 32)
                continue;
            snprintf(sums[n].type, sizeof(sums[n].type), "%s", type[0] ? type : "gpu");
            sums[n].used = sums[n].total = 0;
            n++;
        }
        sums[k].used += jint(node, "gpus_used", 0);
        sums[k].total += jint(node, "gpus", 0);
    }
    for (int k = 0; k < n; k++) {
        fprintf(c->out, "%-14s %4lld/%-4lld GPUs ", sums[k].type, (long long)sums[k].used,
                (long long)sums[k].total);
        bar(c, sums[k].used, sums[k].total);
        fprintf(c->out, " %3lld%%\n",
                (long long)(sums[k].total ? sums[k].used * 100 / sums[k].total : 0));
    }
    if (n == 0)
        fprintf(c->out, "no GPU nodes\n");
}

/* Tiers in policy order (highest first) as returned by GET /v1/tiers. */
static int tier_index(const json_t *tiers, const char *name)
{
    size_t i;
    json_t *t;

    json_array_foreach(tiers, i, t)
        if (!strcmp(jstr(t, "name"), name))
            return (int)i;
    return 1000;
}

/* The mean utilisation of a node's sampled GPUs into buf ("-" when none reported). */
static void node_util(const json_t *node, char *buf, size_t len)
{
    const json_t *gpus = json_object_get(json_object_get(node, "gpu_usage"), "gpus");
    int64_t sum = 0, n = 0;
    size_t i;
    json_t *g;

    json_array_foreach(gpus, i, g) {
        if (json_is_integer(json_object_get(g, "util"))) {
            sum += jint(g, "util", 0);
            n++;
        }
    }
    if (n)
        snprintf(buf, len, "%lld%%", (long long)(sum / n));
    else
        snprintf(buf, len, "-");
}

/* One row per sampled GPU (the first `max`): its latest utilisation, memory, power,
 * temperature and job. Returns the rows printed. */
static int gpu_rows(struct cli *c, const json_t *nodes, int max)
{
    static const char *const h[] = {"NODE", "GPU", "JOB", "UTIL", "MEM", "POWER", "TEMP", "SOURCE"};
    struct table *t = table_create(h, 8);
    size_t i, k;
    json_t *n, *g;
    int rows = 0;

    if (!t)
        return 0;
    json_array_foreach(nodes, i, n) {
        const json_t *u = json_object_get(n, "gpu_usage");
        json_array_foreach(json_object_get(u, "gpus"), k, g) {
            char mem[32];
            if (rows++ >= max)
                continue;
            fmt_size(jint(g, "mem_used_mb", -1), mem, sizeof(mem));
            table_row(t);
            table_cell(t, FMT_PLAIN, "%s", jstr(n, "name"));
            table_cell(t, FMT_PLAIN, "%lld", (long long)jint(g, "index", 0));
            table_cell(t, FMT_PLAIN, "%lld", (long long)jint(g, "job", 0));
            if (json_is_integer(json_object_get(g, "util")))
                table_cell(t, jint(g, "util", 0) < 5 ? FMT_YELLOW : FMT_PLAIN, "%lld%%",
                           (long long)jint(g, "util", 0));
            else
                table_cell(t, FMT_DIM, "-");
            table_cell(t, FMT_PLAIN, "%s", mem);
            if (json_is_number(json_object_get(g, "power_w")))
                table_cell(t, FMT_PLAIN, "%.0fW", json_number_value(json_object_get(g, "power_w")));
            else
                table_cell(t, FMT_PLAIN, "-");
            if (json_is_integer(json_object_get(g, "temp_c")))
                table_cell(t, FMT_PLAIN, "%lldC", (long long)jint(g, "temp_c", 0));
            else
                table_cell(t, FMT_PLAIN, "-");
            table_cell(t, FMT_PLAIN, "%s", jstr(u, "source"));
        }
    }
    for (int col = 1; col < 7; col++)
        table_set_flags(t, col, TABLE_RIGHT);
    if (table_rows(t))
        table_print(t, c->out, c->width, c->color);
    if (rows > max)
        fprintf(c->out, "... and %d more GPUs (docket top --json)\n", rows - max);
    table_destroy(t);
    return rows < max ? rows : max;
}

/* One row per node (the first `max`), with its GPUs in use and their utilisation. */
static void node_rows(struct cli *c, const json_t *nodes, int max)
{
    static const char *const h[] = {"NODE", "STATE", "GPUS", "TYPE", "UTIL", "JOBS"};
    struct table *t = table_create(h, 6);
    size_t i;
    json_t *n;

    if (!t)
        return;
    json_array_foreach(nodes, i, n) {
        if ((int)i >= max)
            break;
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(n, "name"));
        table_cell(t, fmt_state_color(jstr(n, "state")), "%s", jstr(n, "state"));
        table_cell(t, FMT_PLAIN, "%lld/%lld", (long long)jint(n, "gpus_used", 0),
                   (long long)jint(n, "gpus", 0));
        table_cell(t, FMT_PLAIN, "%s", jstr(n, "gpu_type")[0] ? jstr(n, "gpu_type") : "-");
        char util[16];
        node_util(n, util, sizeof(util));
        table_cell(t, FMT_PLAIN, "%s", util);
        table_cell(t, FMT_PLAIN, "%zu", json_array_size(json_object_get(n, "jobs")));
    }
    if (table_rows(t))
        table_print(t, c->out, c->width, c->color);
    if ((int)json_array_size(nodes) > max)
        fprintf(c->out, "... and %zu more nodes (docket nodes)\n",
                json_array_size(nodes) - (size_t)max);
    table_destroy(t);
}

static void per_tier(struct cli *c, const json_t *jobs, const json_t *order)
{
    static const char *const h[] = {"TIER",    "RUNNING",     "GPUS RUNNING",
                                    "PENDING", "GPUS WANTED", "HELD"};
    struct table *t = table_create(h, 6);
    const char *tiers[16];
    int64_t v[16][5];
    int n = 0;
    size_t i;
    json_t *j;

    if (!t)
        return;
    memset(v, 0, sizeof(v));
    json_array_foreach(jobs, i, j) {
        const char *tier = jstr(j, "eff_tier")[0] ? jstr(j, "eff_tier") : jstr(j, "tier");
        const char *st = jstr(j, "state");
        int64_t g = jint(j, "gpus", 0) * jint(j, "nodes", 1);
        bool run = !strcmp(st, "RUNNING") || !strcmp(st, "STARTING") || !strcmp(st, "STOPPING");
        bool held = !strcmp(st, "HELD"); /* waits for a person, not for resources */
        int k;
        for (k = 0; k < n && strcmp(tiers[k], tier); k++)
            ;
        if (k == n) {
            if (n == 16)
                continue;
            tiers[n++] = tier;
        }
        if (held) {
            v[k][4]++;
            continue;
        }
        v[k][run ? 0 : 2]++;
        v[k][run ? 1 : 3] += g;
    }
    /* highest tier first (insertion sort: at most 16 tiers) */
    for (int k = 1; k < n; k++)
        for (int m = k; m > 0 && tier_index(order, tiers[m]) < tier_index(order, tiers[m - 1]);
             m--) {
            const char *tn = tiers[m];
            int64_t tv[5];
            memcpy(tv, v[m], sizeof(tv));
            tiers[m] = tiers[m - 1];
            memcpy(v[m], v[m - 1], sizeof(tv));
            tiers[m - 1] = tn;
            memcpy(v[m - 1], tv, sizeof(tv));
        }
    for (int k = 0; k < n; k++) {
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", tiers[k]);
        for (int m = 0; m < 5; m++)
            table_cell(t, FMT_PLAIN, "%lld", (long long)v[k][m]);
    }
    for (int k = 1; k < 6; k++)
        table_set_flags(t, k, TABLE_RIGHT);
    if (n)
        table_print(t, c->out, c->width, c->color);
    table_destroy(t);
}

static int rows_left(void)
{
    struct winsize ws;

    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row)
        return ws.ws_row;
    return 40;
}

static int frame(struct cli *c, bool clear)
{
    struct jobs_query q = {.state = "active", .limit = 10000};
    json_t *nodes = NULL, *jobs = NULL, *tiers = NULL, *head, *sorted;
    time_t now;
    char clock[16];
    int rc, room, nnodes;

    if ((rc = cli_get_pages(c, "/v1/nodes", "nodes", 0, &nodes)))
        return rc;
    if ((rc = jobs_fetch(c, &q, &jobs)) || (rc = cli_call(c, "GET", "/v1/tiers", NULL, &tiers))) {
        json_decref(nodes);
        json_decref(jobs);
        return rc;
    }
    if (c->json) {
        json_t *o = json_pack("{s:O?,s:O}", "nodes", json_object_get(nodes, "nodes"), "jobs", jobs);
        cli_print_json(c, o);
        json_decref(o);
        goto out;
    }
    now = time(NULL);
    strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&now));
    if (clear)
        fputs("\033[H\033[2J", c->out);
    fprintf(c->out, "docket top  %s  %s  (Ctrl-C quits)\n\n", c->cfg.url, clock);
    utilisation(c, json_object_get(nodes, "nodes"));
    fputc('\n', c->out);
    node_rows(c, json_object_get(nodes, "nodes"), 16);
    fputc('\n', c->out);
    int ngpu = gpu_rows(c, json_object_get(nodes, "nodes"), 16);
    if (ngpu)
        fputc('\n', c->out);
    per_tier(c, jobs, json_object_get(tiers, "tiers"));
    nnodes = (int)json_array_size(json_object_get(nodes, "nodes"));
    room = rows_left() - 18 - (nnodes < 16 ? nnodes : 16) - (ngpu ? ngpu + 2 : 0);
    if (room < 3)
        room = 3;
    sorted = jobs_queue_order(c, jobs);
    head = json_array();
    for (size_t i = 0; i < json_array_size(sorted) && (int)i < room; i++)
        json_array_append(head, json_array_get(sorted, i));
    json_decref(sorted);
    fputc('\n', c->out);
    jobs_print_queue(c, head);
    json_decref(head);
out:
    fflush(c->out);
    json_decref(nodes);
    json_decref(jobs);
    json_decref(tiers);
    return EXIT_OK;
}

int cmd_top(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    int delay = 2, frames = isatty(STDOUT_FILENO) ? -1 : 1;
    int rc = cli_parse_args(c, argc, argv, top_opts, 0, &a);

    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 0; i < a.nopts; i++) {
        if (a.ids[i] == T_DELAY && parse_int(a.vals[i], 1, 3600, &delay) < 0)
            return cli_usage_error(c, "-d: want seconds from 1 to 3600, not '%.40s'", a.vals[i]);
        if (a.ids[i] == T_FRAMES && parse_int(a.vals[i], 1, 1000000, &frames) < 0)
            return cli_usage_error(c, "-n: want a number of frames, not '%.40s'", a.vals[i]);
    }
    if (c->json)
        frames = 1;
    for (int f = 0; frames < 0 || f < frames; f++) {
        if (f)
            sleep((unsigned)delay);
        c->now_ms = clock_now_ms();
        if ((rc = frame(c, isatty(STDOUT_FILENO) && !c->json)))
            return rc;
    }
    return EXIT_OK;
}
