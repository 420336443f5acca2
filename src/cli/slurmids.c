/*
 * slurmids.c - Slurm's job ids as scancel, scontrol, squeue and sbatch --dependency read
 * them (slurm.h): ID, ARRAY_ID (every task of the array), ARRAY_ID_IDX (one task),
 * ARRAY_ID_[LIST] (those tasks); and an array's pending indices folded the way squeue
 * prints them (4-99). In docket an array's id is its first task's id, so ARRAY_ID alone
 * is asked of the API (GET /v1/jobs?array_id=) to tell an array from a plain job.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/slurm.h"
#include "util/parse.h"
#include "util/str.h"

int slurm_jobid_parse(const char *s, int64_t *id, char *idx, size_t len)
{
    char num[32];
    size_t n = strcspn(s, "_");
    idx[0] = '\0';
    if (n == 0 || n >= sizeof(num))
        return -EINVAL;
    memcpy(num, s, n);
    num[n] = '\0';
    if (parse_int64(num, 1, INT64_MAX, id) < 0)
        return -EINVAL;
    if (!s[n])
        return 0;
    const char *rest = s + n + 1;
    size_t rl = strlen(rest);
    if (rl >= 2 && rest[0] == '[' && rest[rl - 1] == ']') { /* _[1-3,5] */
        rest++;
        rl -= 2;
    }
    if (rl == 0 || rl >= len)
        return -EINVAL;
    memcpy(idx, rest, rl);
    idx[rl] = '\0';
    int64_t v;
    char check[64];
    /* every piece a number or a range A-B; a %N throttle (as squeue prints) is left out */
    char *save = NULL, *buf = strndupa(idx, strcspn(idx, "%"));
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(p, '-');
        if (dash)
            *dash = '\0';
        if (str_copy(check, sizeof(check), p) < 0 || parse_int64(check, 0, INT32_MAX, &v) < 0 ||
            (dash && parse_int64(dash + 1, v, INT32_MAX, &v) < 0))
            return -EINVAL;
    }
    idx[strcspn(idx, "%")] = '\0';
    return 0;
}

bool slurm_index_in(const char *list, int64_t index)
{
    char *save = NULL, *buf = strdupa(list);
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(p, '-');
        int64_t a, b;
        if (dash)
            *dash = '\0';
        if (parse_int64(p, 0, INT64_MAX, &a) < 0 ||
            parse_int64(dash ? dash + 1 : p, 0, INT64_MAX, &b) < 0)
            continue;
        if (index >= a && index <= b)
            return true;
    }
    return false;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void slurm_index_ranges(int64_t *idx, size_t n, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    qsort(idx, n, sizeof(*idx), cmp_i64);
    for (size_t i = 0; i < n && o < len;) {
        size_t j = i;
        while (j + 1 < n && idx[j + 1] <= idx[j] + 1)
            j++;
        int w = idx[j] > idx[i]
                    ? snprintf(out + o, len - o, "%s%lld-%lld", o ? "," : "", (long long)idx[i],
                               (long long)idx[j])
                    : snprintf(out + o, len - o, "%s%lld", o ? "," : "", (long long)idx[i]);
        if (w < 0 || (size_t)w >= len - o) { /* cut: the list ends with "..." */
            if (len > 4)
                memcpy(out + (o < len - 4 ? o : len - 4), "...", 4);
            return;
        }
        o += (size_t)w;
        i = j + 1;
    }
}

int slurm_jobids_resolve(struct cli *c, const char *word, bool active, json_t *ids)
{
    int64_t id;
    char idx[256], path[128];
    json_t *reply = NULL;
    if (slurm_jobid_parse(word, &id, idx, sizeof(idx)) < 0)
        return cli_usage_error(c,
                               "Invalid job id specified: %.60s (want ID, ARRAY_ID, "
                               "ARRAY_ID_INDEX or ARRAY_ID_[LIST])",
                               word);
    snprintf(path, sizeof(path), "/v1/jobs?array_id=%lld&state=%s&fields=id,array_index",
             (long long)id, active ? "active" : "all");
    int rc = cli_get_pages(c, path, "jobs", 0, &reply);
    if (rc) {
        json_decref(reply);
        return rc;
    }
    json_t *tasks = json_object_get(reply, "jobs");
    size_t before = json_array_size(ids);
    for (size_t i = 0; i < json_array_size(tasks); i++) {
        const json_t *t = json_array_get(tasks, i);
        if (!idx[0] || slurm_index_in(idx, jint(t, "array_index", -1)))
            json_array_append_new(ids, json_integer(jint(t, "id", 0)));
    }
    json_decref(reply);
    if (json_array_size(ids) > before)
        return 0;
    if (idx[0]) /* Slurm: "Invalid job id specified" for a task it does not have */
        return cli_fail(c, "Invalid job id specified: %s (no %s task of array %lld)", word,
                        active ? "active" : "such", (long long)id);
    json_array_append_new(ids, json_integer(id)); /* a plain job: the API says if it exists */
    return 0;
}
