/*
 * stream.h - what stream.c owns: long replies sent in slices, one per loop turn, and the
 * paged lists built on them (docs/api.md "Lists").
 */
#ifndef DOCKET_CONTROLLER_STREAM_H
#define DOCKET_CONTROLLER_STREAM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctl;
struct ctl_req;
struct evbuffer;
struct evhttp_request;

/* A page ends at `limit` rows or past CTL_LIST_PAGE_BYTES of JSON, whichever comes first;
 * it is sent in slices of at most CTL_LIST_SLICE_ROWS rows or about CTL_LIST_SLICE_BYTES,
 * one per loop turn. */
#define CTL_LIST_PAGE_BYTES  ((size_t)4 << 20)
#define CTL_LIST_SLICE_BYTES ((size_t)128 << 10)
#define CTL_LIST_SLICE_ROWS  256

/* A long reply (status 200, of content_type) sent in slices, one per loop turn, each made
 * when the client has taken the previous one. fill appends the next slice to out and sets
 * *done with the last; a negative return cuts the reply short. free_fn(arg) at the end
 * (also when the client leaves). */
struct ctl_stream;
typedef int (*ctl_stream_fill)(void *arg, struct evbuffer *out, bool *done);
typedef void (*ctl_stream_free)(void *arg);
void ctl_stream_start(struct ctl *c, struct evhttp_request *req, const char *content_type,
                      ctl_stream_fill fill, ctl_stream_free free_fn, void *arg);
void ctl_stream_stop_all(struct ctl *c);
/* A paged list on top of a stream: {"KEY": [rows], "next": "CURSOR"} with at most `limit`
 * rows and `max_bytes` of JSON (a page always has its first row, however long), "next"
 * only when the page was cut. Rows are read by fetch(l, arg, after, max_rows) one slice a
 * loop turn: it reads at most max_rows rows past the cursor `after` (0: the start) and
 * hands each to ctl_list_row (text) or ctl_list_row_json (stolen), stopping when they
 * return 1 (the slice or the page is full) and returning that 1, or 0 at the end of what
 * it read (more may follow when it handed max_rows rows), CTL_LIST_MORE when it skipped
 * rows and more may follow, or < 0 on an error. One cursor per row, an int64 the rows are
 * ordered by. free_fn(arg) at the end. */
#define CTL_LIST_MORE 2
struct ctl_list;
typedef int (*ctl_list_fetch)(struct ctl_list *l, void *arg, int64_t after, int max_rows);
int ctl_list_row(struct ctl_list *l, const char *text, size_t n, int64_t cursor);
int ctl_list_row_json(struct ctl_list *l, json_t *row, int64_t cursor);
/* The paging parameters of r's query: limit (1..10000; *limit holds the default), after,
 * max_bytes (1 KiB .. CTL_LIST_PAGE_BYTES). 0, or -EINVAL after answering 400. */
int ctl_list_params(struct ctl_req *r, int64_t *limit, int64_t *after, size_t *max_bytes);
void ctl_list_start(struct ctl *c, struct evhttp_request *req, const char *key, int64_t limit,
                    int64_t after, size_t max_bytes, ctl_list_fetch fetch, ctl_stream_free free_fn,
                    void *arg);

#endif
