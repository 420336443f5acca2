/*
 * idem.c - the Idempotency-Key of POST /v1/jobs (idem.h; docs/api.md "Retrying a
 * submission"). A client that lost a submission's reply (its controller killed, the
 * connection cut after the body left) sends the same request again with the same key;
 * the key is stored in the submission's own transaction, so either both the jobs and the
 * key exist, or neither, and the repeat finds out which. The key is the user's: another
 * user's same key is another key.
 */
#include "controller/idem.h"

#include <errno.h>
#include <event2/http.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/jobs.h"
#include "protocol/error.h"
#include "store/store.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/str.h"

enum { IDEM_PRUNE_EVERY_MS = 60000, IDEM_PRUNE_SLICE = 2000 };

/* 1 to 128 printable ASCII characters (space included), nothing else: the key is echoed
 * in errors and logs, and must mean the same bytes to every client and both engines. */
static bool key_ok(const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n > CTL_IDEM_KEY_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e)
            return false;
    return true;
}

static int body_sha(const char *body, size_t len, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(body ? body : "", body ? len : 0, md, &n, EVP_sha256(), NULL) != 1 || n != 32)
        return -ENOMEM;
    for (unsigned int i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* The reply the first request had, from the rows as they are now: {"job": JOB}, or
 * {"array_id", "jobs": [...]} (JOBs without script and env, as the 201 had), with 200.
 * A job purged since shows its id alone. */
static void replay(struct ctl_req *r, const struct store_submit_key *k)
{
    struct ctl *c = r->c;
    json_t *jobs = json_array();
    int authz = 0;
    for (int64_t i = 0; authz == 0 && i < (k->is_array ? k->tasks : 1); i++) {
        struct store_job row;
        uint64_t id = k->first_id + (uint64_t)i;
        int rc = store_job_get(c->store, id, &row);
        if (rc == -ENOENT) {
            json_array_append_new(jobs, json_pack("{s:I}", "id", (json_int_t)id));
            continue;
        }
        if (rc < 0) {
            json_decref(jobs);
            ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
            return;
        }
        /* the check the submission passed: its project's member, as itself */
        if (i == 0 && (authz = ctl_req_authorize(r, row.project, row.user)) < 0) {
            store_job_release(&row);
            break;
        }
        json_t *o = ctl_job_json_for(r, &row);
        if (k->is_array) {
            json_object_del(o, "script");
            json_object_del(o, "env");
        }
        json_array_append_new(jobs, o);
        store_job_release(&row);
    }
    if (authz < 0) { /* answered */
        json_decref(jobs);
        return;
    }
    if (!r->authorized) /* every job purged: the key is the caller's own all the same */
        r->authorized = true;
    log_info("submit_replayed", "user=%s first=%llu tasks=%lld", r->id.user,
             (unsigned long long)k->first_id, (long long)k->tasks);
    json_t *body = k->is_array
                       ? json_pack("{s:I,s:o}", "array_id", (json_int_t)k->first_id, "jobs", jobs)
                       : json_pack("{s:o}", "job",
                                   json_array_get(jobs, 0) ? json_incref(json_array_get(jobs, 0))
                                                           : json_object());
    if (!k->is_array)
        json_decref(jobs);
    evhttp_add_header(evhttp_request_get_output_headers(r->req), "Idempotent-Replayed", "true");
    ctl_reply_json(c, r->req, 200, body);
}

int ctl_idem_begin(struct ctl_req *r, struct ctl_idem *k)
{
    struct ctl *c = r->c;
    memset(k, 0, sizeof(*k));
    const char *v = evhttp_find_header(evhttp_request_get_input_headers(r->req), CTL_IDEM_HEADER);
    if (!v)
        return 0;
    if (!key_ok(v)) {
        ctl_reply_errorf(c, r->req, 400, CTL_IDEM_HEADER,
                         "an idempotency key is 1 to %d printable ASCII characters",
                         CTL_IDEM_KEY_MAX);
        return 1;
    }
    str_copy(k->key, sizeof(k->key), v);
    if (body_sha(r->body, r->body_len, k->body_sha) < 0) {
        ctl_reply_errorf(c, r->req, 500, NULL, "out of memory");
        return 1;
    }
    if (ctl_array_key_writing(c, r->id.user, k->key)) {
        struct proto_error e = {.status = 409, .code = "in_progress", .field = CTL_IDEM_HEADER};
        snprintf(e.message, sizeof(e.message),
                 "the submission with this key is still being written: send it again in a "
                 "few seconds");
        ctl_reply_error(c, r->req, &e);
        return 1;
    }
    struct store_submit_key got;
    int rc = store_submit_key_get(c->store, r->id.user, k->key,
                                  clock_now_ms() - c->cfg.idempotency_window_ms, &got);
    if (rc == -ENOENT)
        return 0;
    if (rc < 0) {
        ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
        return 1;
    }
    if (strcmp(got.body_sha, k->body_sha) != 0) {
        r->authorized = true; /* the caller's own key: it says no more than its own job id */
        ctl_reply_errorf(c, r->req, 409, CTL_IDEM_HEADER,
                         "this idempotency key was used for another request body (job %llu): "
                         "a new submission needs a new key",
                         (unsigned long long)got.first_id);
        return 1;
    }
    replay(r, &got);
    return 1;
}

int ctl_idem_record(struct ctl *c, const char *user, const struct ctl_idem *k, uint64_t first_id,
                    bool is_array, size_t tasks)
{
    if (!k->key[0])
        return 0;
    struct store_submit_key row;
    memset(&row, 0, sizeof(row));
    str_copy(row.user, sizeof(row.user), user);
    str_copy(row.key, sizeof(row.key), k->key);
    str_copy(row.body_sha, sizeof(row.body_sha), k->body_sha);
    row.first_id = first_id;
    row.is_array = is_array;
    row.tasks = (int64_t)tasks;
    row.created_ms = clock_now_ms();
    /* the key was free when the request began and the loop is one thread: EEXIST is a
     * bug, and fails the request like a failed write */
    return store_submit_key_put(c->store, &row, row.created_ms - c->cfg.idempotency_window_ms);
}

void ctl_idem_prune(struct ctl *c)
{
    int64_t now = clock_now_ms();
    if (now - c->idem_pruned_ms < IDEM_PRUNE_EVERY_MS)
        return;
    c->idem_pruned_ms = now;
    if (store_begin(c->store) < 0)
        return;
    int n = store_submit_key_prune(c->store, now - c->cfg.idempotency_window_ms, IDEM_PRUNE_SLICE);
    if (n < 0)
        log_warn("submit_key_prune_failed", "error=\"%s\"", store_errmsg(c->store));
    else if (n > 0)
        log_info("submit_keys_pruned", "keys=%d", n);
    if (n == IDEM_PRUNE_SLICE) /* more are due: the next tick (a second) takes more */
        c->idem_pruned_ms = 0;
    ctl_commit_soon(c);
}
