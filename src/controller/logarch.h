/*
 * logarch.h - what logarch.c owns: finished jobs' logs moved out of docketd's state
 * directory into a storage pool (the policy's storage.log_archive; docs/storage.md "Job
 * logs"): when a log is due, the compressed and checked copy under POOL/docket-logs, the
 * pointer each archived stream keeps in the store, the local copy dropped only once that
 * pointer is committed, reads of an archived stream for logs.c, and the pool's state when
 * it filled up (a storage_full alert, nothing lost).
 */
#ifndef DOCKET_CONTROLLER_LOGARCH_H
#define DOCKET_CONTROLLER_LOGARCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ctl;

/* From the loop's one-second tick: a pass over the state directory's logs every
 * storage.log_archive.every. */
void ctl_logarch_tick(struct ctl *c);
/* The size of an archived stream of a run, or -1 when it is not archived (or unknown). */
int64_t ctl_logarch_size(struct ctl *c, uint64_t job, int run, int stream);
/* Up to n bytes of an archived stream from offset (decompressed): the count, or -errno;
 * *pool names the pool it was read from. */
ssize_t ctl_logarch_read(struct ctl *c, uint64_t job, int run, int stream, int64_t offset,
                         void *buf, size_t n, char *pool, size_t pool_len);
/* The job's archived streams, [{run, stream, pool, path, bytes, stored_bytes, sha256,
 * archived_ms}] (a new reference), NULL when none. */
json_t *ctl_logarch_job_json(struct ctl *c, uint64_t job);
/* While the archive pool is full: true with its alert key ("POOL:logs") and a sentence. */
bool ctl_logarch_full(struct ctl *c, char *key, size_t key_len, char *summary, size_t len);
void ctl_logarch_free(struct ctl *c);

#endif
