/*
 * containers.c - see containers.h. The u64 map uses linear probing with tombstones and
 * doubles when three quarters full.
 */
#include "core/containers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY UINT64_MAX
#define TOMB  (UINT64_MAX - 1)

int grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, ncap * size);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

int u32vec_push(struct u32vec *vec, uint32_t x)
{
    if (vec->n == vec->cap) {
        uint32_t ncap = vec->cap ? vec->cap * 2 : 4;
        uint32_t *p = realloc(vec->v, ncap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        vec->v = p;
        vec->cap = ncap;
    }
    vec->v[vec->n++] = x;
    return 0;
}

void u32vec_remove_value(struct u32vec *vec, uint32_t x)
{
    for (uint32_t i = 0; i < vec->n; i++) {
        if (vec->v[i] == x) {
            vec->v[i] = vec->v[--vec->n];
            return;
        }
    }
}

void u32vec_release(struct u32vec *vec)
{
    free(vec->v);
    vec->v = NULL;
    vec->n = vec->cap = 0;
}

/* splitmix64 finaliser: cheap and well mixed for sequential ids */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return mix(h);
}

static int map_resize(struct u64map *m, size_t ncap)
{
    uint64_t *keys = malloc(ncap * sizeof(*keys));
    uint64_t *vals = malloc(ncap * sizeof(*vals));
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -ENOMEM;
    }
    for (size_t i = 0; i < ncap; i++)
        keys[i] = EMPTY;
    for (size_t i = 0; i < m->cap; i++) {
        uint64_t k = m->keys[i];
        if (k == EMPTY || k == TOMB)
            continue;
        size_t j = mix(k) & (ncap - 1);
        while (keys[j] != EMPTY)
            j = (j + 1) & (ncap - 1);
        keys[j] = k;
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = ncap;
    m->tombs = 0;
    return 0;
}

int u64map_put(struct u64map *m, uint64_t key, uint64_t val)
{
    if ((m->len + m->tombs + 1) * 4 > m->cap * 3) {
        size_t ncap = m->cap ? m->cap : 16;
        while ((m->len + 1) * 4 > ncap * 3 / 2)
            ncap *= 2;
        if (map_resize(m, ncap) < 0)
            return -ENOMEM;
    }
    size_t mask = m->cap - 1, i = mix(key) & mask;
    size_t tomb = SIZE_MAX;
    for (;;) {
        uint64_t k = m->keys[i];
        if (k == key) {
            m->vals[i] = val;
            return 0;
        }
        if (k == TOMB && tomb == SIZE_MAX)
            tomb = i;
        if (k == EMPTY)
            break;
        i = (i + 1) & mask;
    }
    if (tomb != SIZE_MAX) {
        i = tomb;
        m->tombs--;
    }
    m->keys[i] = key;
    m->vals[i] = val;
    m->len++;
    return 0;
}

bool u64map_get(const struct u64map *m, uint64_t key, uint64_t *val)
{
    if (!m->cap)
        return false;
    size_t mask = m->cap - 1, i = mix(key) & mask;
    for (;;) {
        uint64_t k = m->keys[i];
        if (k == key) {
            if (val)
                *val = m->vals[i];
            return true;
        }
        if (k == EMPTY)
            return false;
        i = (i + 1) & mask;
    }
}

bool u64map_del(struct u64map *m, uint64_t key)
{
    if (!m->cap)
        return false;
    size_t mask = m->cap - 1, i = mix(key) & mask;
    for (;;) {
        uint64_t k = m->keys[i];
        if (k == key) {
            m->keys[i] = TOMB;
            m->len--;
            m->tombs++;
            return true;
        }
        if (k == EMPTY)
            return false;
        i = (i + 1) & mask;
    }
}

void u64map_release(struct u64map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

size_t u64map_bytes(const struct u64map *m)
{
    return m->cap * 2 * sizeof(uint64_t);
}

/* String ids are looked up by hash; colliding strings take the next hash (h + 1 ...). */
static uint64_t str_hash(const char *s, uint64_t attempt)
{
    uint64_t h = hash_bytes(s, strlen(s), attempt);
    return h >= TOMB ? h - 2 : h;
}

uint32_t strtab_find(const struct strtab *t, const char *s)
{
    for (uint64_t attempt = 0;; attempt++) {
        uint64_t id;
        if (!u64map_get(&t->index, str_hash(s, attempt), &id))
            return 0;
        if (strcmp(t->strs[id - 1], s) == 0)
            return (uint32_t)id;
    }
}

uint32_t strtab_intern(struct strtab *t, const char *s)
{
    uint32_t id = strtab_find(t, s);
    if (id)
        return id;
    if (grow((void **)&t->strs, &t->cap, t->n + 1, sizeof(*t->strs)) < 0)
        return 0;
    size_t len = strlen(s) + 1;
    char *copy = malloc(len);
    if (!copy)
        return 0;
    memcpy(copy, s, len);
    uint64_t attempt = 0;
    while (u64map_get(&t->index, str_hash(s, attempt), NULL))
        attempt++;
    if (u64map_put(&t->index, str_hash(s, attempt), t->n + 1) < 0) {
        free(copy);
        return 0;
    }
    t->strs[t->n++] = copy;
    return (uint32_t)t->n;
}

const char *strtab_get(const struct strtab *t, uint32_t id)
{
    return id >= 1 && id <= t->n ? t->strs[id - 1] : "";
}

void strtab_release(struct strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->strs[i]);
    free(t->strs);
    u64map_release(&t->index);
    memset(t, 0, sizeof(*t));
}

size_t bounded_len(const char *s, size_t max)
{
    const char *end = memchr(s, 0, max);
    return end ? (size_t)(end - s) : max;
}
