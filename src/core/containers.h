/*
 * containers.h - the core's own small containers (it links with libc alone):
 * a growable u32 vector, an open-addressing u64 -> u64 map, and a string table that
 * interns names to dense ids. All return -ENOMEM instead of aborting.
 */
#ifndef DOCKET_CORE_CONTAINERS_H
#define DOCKET_CORE_CONTAINERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u32vec {
    uint32_t *v;
    uint32_t n, cap;
};

int u32vec_push(struct u32vec *vec, uint32_t x);
void u32vec_remove_value(struct u32vec *vec, uint32_t x); /* swap-remove first match */
void u32vec_release(struct u32vec *vec);

/* Grow *arr (element size `size`) so that it holds at least `need` elements. */
int grow(void **arr, size_t *cap, size_t need, size_t size);

/* Keys are any u64 except UINT64_MAX (the empty marker). */
struct u64map {
    uint64_t *keys;
    uint64_t *vals;
    size_t cap, len, tombs;
};

int u64map_put(struct u64map *m, uint64_t key, uint64_t val);
bool u64map_get(const struct u64map *m, uint64_t key, uint64_t *val);
bool u64map_del(struct u64map *m, uint64_t key);
void u64map_release(struct u64map *m);
size_t u64map_bytes(const struct u64map *m);

struct strtab {
    char **strs;
    size_t n, cap;
    struct u64map index; /* hash -> id, probing on collision by re-hashing */
};

/* Intern `s`; returns its id (>= 1) or 0 on out of memory. */
uint32_t strtab_intern(struct strtab *t, const char *s);
/* Id of `s` or 0 when not interned. */
uint32_t strtab_find(const struct strtab *t, const char *s);
const char *strtab_get(const struct strtab *t, uint32_t id);
void strtab_release(struct strtab *t);

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);
/* strlen bounded by max (strnlen is POSIX, the core is plain C17). */
size_t bounded_len(const char *s, size_t max);

#endif
