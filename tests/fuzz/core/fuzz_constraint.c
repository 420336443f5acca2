/*
 * fuzz_constraint.c - libFuzzer harness for core/constraint.h, Slurm's --constraint
 * grammar: any input is read without a crash, a refusal says where, an expression that
 * does not parse matches no node, and one that parses gives the same answer twice.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/constraint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *expr = malloc(size + 1);
    if (!expr)
        return 0;
    memcpy(expr, data, size);
    expr[size] = '\0';
    struct sched_label labels[2];
    memset(labels, 0, sizeof(labels));
    strcpy(labels[0].key, "features");
    strcpy(labels[0].value, "a100,ib,gpu80g");
    strcpy(labels[1].key, "rack");
    strcpy(labels[1].value, "r1");
    struct feat_shape sh;
    char why[160];
    int rc = feat_parse(expr, &sh, why, sizeof(why));
    bool m = feat_match(expr, labels, 2);
    if (rc != 0) {
        check(strstr(why, "at character") != NULL);
        check(!m);
    } else {
        check(sh.counts >= 0 && sh.top_count >= 0);
        check(sh.top_count == 0 || sh.counts == 1);
        check(m == feat_match(expr, labels, 2));
    }
    free(expr);
    return 0;
}
