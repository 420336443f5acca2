/*
 * idem.h - what idem.c owns: the Idempotency-Key of a submission (docs/api.md "Retrying a
 * submission"): the header read and checked, a repeat answered from what the first
 * request made (the core is told nothing twice), a changed body refused, the key written
 * with the jobs in their transaction, and keys past the window pruned.
 */
#ifndef DOCKET_CONTROLLER_IDEM_H
#define DOCKET_CONTROLLER_IDEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctl;
struct ctl_req;

#define CTL_IDEM_HEADER  "Idempotency-Key"
#define CTL_IDEM_KEY_MAX 128

/* A request's key ("" when it has none) and the SHA-256 of its body, in hex. */
struct ctl_idem {
    char key[CTL_IDEM_KEY_MAX + 1];
    char body_sha[65];
};

/* Read r's key into *k. 0: go on and submit (k->key "" when the request has none); 1: r
 * is answered already: the repeat's 200 with the jobs the key made, or 400 (a malformed
 * key), 409 (the key with another body, or still being written), 500. */
int ctl_idem_begin(struct ctl_req *r, struct ctl_idem *k);
/* Write k (nothing when it is "") for user's submission of `tasks` jobs from first_id, in
 * the caller's transaction: 0 or -errno, with the store's message. */
int ctl_idem_record(struct ctl *c, const char *user, const struct ctl_idem *k, uint64_t first_id,
                    bool is_array, size_t tasks);
/* Delete keys past idempotency_window, a bounded number a minute (the loop's tick). */
void ctl_idem_prune(struct ctl *c);

#endif
