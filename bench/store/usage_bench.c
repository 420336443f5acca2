/*
 * usage_bench.c - bytes of usage samples per job-hour in the store (docs/monitoring.md
 * "Storage"; figures in bench/RESULTS.md "Usage samples"). Feeds JOBS jobs x HOURS hours
 * of samples every INTERVAL seconds (2 GPUs each, every figure known) through
 * store_usage_add with the loop's pruning (a slice per simulated second, as docketd's
 * tick), then measures the database file (VACUUMed, so pages hold only live rows) at
 * three points: while the raw hour is kept, once only minutes and summaries remain, and
 * once only summaries remain (past 7 days). Usage: usage_bench [JOBS [HOURS [INTERVAL]]]
 */
#define _GNU_SOURCE
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "util/parse.h"

static char path[128];

/* Bytes of the usage tables and their indexes, from SQLite's dbstat after a VACUUM (pages
 * then hold only live rows): the store is closed, measured and reopened. */
static long long usage_bytes(struct store **st)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    char err[256];
    long long n = -1;
    store_close(*st);
    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE); VACUUM;", NULL, NULL, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "SELECT sum(pgsize - unused) FROM dbstat WHERE name LIKE 'usage%'"
                           " OR name LIKE 'sqlite_autoindex_usage%'",
                           -1, &s, NULL) != SQLITE_OK) {
        fprintf(stderr, "measure: %s\n", sqlite3_errmsg(db));
        exit(1);
    }
    if (sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    if (!(*st = store_open(path, err, sizeof(err)))) {
        fprintf(stderr, "reopen: %s\n", err);
        exit(1);
    }
    return n;
}

static void prune_all(struct store *st, int64_t now)
{
    if (store_begin(st) < 0)
        exit(1);
    while (store_usage_prune(st, now, 500) > 0)
        ;
    if (store_commit(st) < 0)
        exit(1);
}

int main(int argc, char **argv)
{
    int jobs = 20, hours = 2, interval = 10;
    char dir[] = "/tmp/usage-bench.XXXXXX", err[256];
    if ((argc > 1 && parse_int(argv[1], 1, 100000, &jobs) < 0) ||
        (argc > 2 && parse_int(argv[2], 1, 24 * 30, &hours) < 0) ||
        (argc > 3 && parse_int(argv[3], 1, 3600, &interval) < 0) || !mkdtemp(dir)) {
        fprintf(stderr, "usage: usage_bench [JOBS [HOURS [INTERVAL_S]]]\n");
        return 2;
    }
    snprintf(path, sizeof(path), "%s/docket.db", dir);
    struct store *st = store_open(path, err, sizeof(err));
    if (!st) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int64_t t0 = 1800000000000LL, t = t0, end = t0 + (int64_t)hours * 3600000;
    long long samples = 0;
    for (; t < end; t += (int64_t)interval * 1000) {
        if (store_begin(st) < 0)
            return 1;
        for (int j = 1; j <= jobs; j++) {
            struct store_usage_point p = {.job = (uint64_t)j, .run = 1, .time_ms = t};
            int64_t k = (t - t0) / 1000;
            snprintf(p.node, sizeof(p.node), "gpu%03d", j % 97);
            p.cpu_ms = k * 3900 + j;
            p.mem_bytes = ((int64_t)24 << 30) + k * 4096;
            p.mem_peak_bytes = ((int64_t)26 << 30) + j;
            p.io_read_bytes = k * 1048576;
            p.io_write_bytes = k * 65536;
            p.gpu_util = (int)((k + j) % 100);
            p.gpu_mem_mb = 2 * 70000 + k % 1000;
            p.gpu_power_mw = 2 * 350000 + (k % 50) * 1000;
            p.gpu_temp_c = 60 + (int)(k % 20);
            p.gpu_errors = 0;
            if (store_usage_add(st, &p, "nvml", 5, NULL) < 0) {
                fprintf(stderr, "add: %s\n", store_errmsg(st));
                return 1;
            }
            samples++;
        }
        if (store_usage_prune(st, t, 500) < 0 || store_commit(st) < 0)
            return 1;
    }
    double jh = (double)jobs * hours;
    int64_t raw, mins, sums;
    long long b1 = usage_bytes(&st);
    if (store_usage_counts(st, &raw, &mins, &sums) < 0)
        return 1;
    printf("jobs=%d hours=%d interval=%ds samples=%lld\n", jobs, hours, interval, samples);
    printf("with raw hour:   raw=%lld minutes=%lld summaries=%lld bytes=%lld bytes/job-hour=%.0f\n",
           (long long)raw, (long long)mins, (long long)sums, b1, (double)b1 / jh);
    prune_all(st, t + STORE_USAGE_RAW_KEEP_MS); /* an hour later: the raw rows go */
    long long b2 = usage_bytes(&st);
    if (store_usage_counts(st, &raw, &mins, &sums) < 0)
        return 1;
    printf("minutes (7 d):   raw=%lld minutes=%lld summaries=%lld bytes=%lld bytes/job-hour=%.0f\n",
           (long long)raw, (long long)mins, (long long)sums, b2, (double)b2 / jh);
    prune_all(st, t + STORE_USAGE_MINUTE_KEEP_MS + 1); /* past 7 days: summaries only */
    long long b3 = usage_bytes(&st);
    if (store_usage_counts(st, &raw, &mins, &sums) < 0)
        return 1;
    printf("summaries only:  raw=%lld minutes=%lld summaries=%lld bytes=%lld bytes/job=%.0f\n",
           (long long)raw, (long long)mins, (long long)sums, b3, (double)b3 / jobs);
    printf("per running job: its raw hour %.0f bytes (at %ds), minutes %.0f bytes/hour for 7 d,"
           " then %.0f bytes forever\n",
           (double)(b1 - b2) / jobs, interval, (double)(b2 - b3) / jh, (double)b3 / jobs);
    store_close(st);
    const char *sfx[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char p[160];
        snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
        unlink(p);
    }
    rmdir(dir);
    return 0;
}
