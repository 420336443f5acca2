/*
 * test_topo.c - topology-aware gangs (docs/scheduling.md §3, "Topology"): a class that
 * requires one switch never splits a gang across switches, now, in its reservation or in
 * its victims; best effort packs into the fewest switches; Slurm's --switches=1 asks the
 * same of one job; explain says how many nodes are free under the best switch.
 */
#include "helpers.h"

#include <stdlib.h>

/* The default policy with the training class placing gangs by `switch` in `mode`. */
static struct sched *mk_topo(enum sched_topo_mode mode)
{
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.classes[0].topo_mode = mode;
    snprintf(p.classes[0].topo_level, SCHED_NAME_MAX, "switch");
    return mk_sched_with(&p);
}

/* Nodes a0..a{na-1} under switch sw-a, then b0..b{nb-1} under sw-b: 8 H100 each. */
static void two_switches(struct sched *s, int na, int nb)
{
    char name[16];
    for (int i = 0; i < na; i++) {
        snprintf(name, sizeof(name), "a%d", i);
        add_node_l(s, name, "H100", 8, "switch", "sw-a");
    }
    for (int i = 0; i < nb; i++) {
        snprintf(name, sizeof(name), "b%d", i);
        add_node_l(s, name, "H100", 8, "switch", "sw-b");
    }
    add_project(s, "lab", "normal", 0, -1);
}

/* The switch of an allocation's node: its name's first letter. */
static char switch_of(struct sched *s, uint32_t node)
{
    return sched_node_name(s, node)[0];
}

static int switches_spanned(struct sched *s, const struct sched_alloc *a, int n)
{
    bool seen[26] = {false};
    int count = 0;
    for (int i = 0; i < n; i++) {
        int k = switch_of(s, a[i].node) - 'a';
        count += !seen[k];
        seen[k] = true;
    }
    return count;
}

/* A whole node's job on each named node, started and running, ending at `limit`. */
static void occupy(struct sched *s, uint64_t first_id, int count, int64_t limit, int64_t now)
{
    for (int i = 0; i < count; i++)
        submit(s, first_id + (uint64_t)i, "lab", NULL, "experiment", 8, 1, limit, now);
    struct cyc c = cycle(s, now);
    for (int i = 0; i < count; i++) {
        assert_non_null(find_dec(c, SCHED_D_START, first_id + (uint64_t)i));
        run(s, first_id + (uint64_t)i, now);
    }
}

static void check_ok(struct sched *s)
{
    struct sched_error err;
    if (sched_check(s, &err))
        fail_msg("sched_check: %s", err.message);
}

/* Nodes are placed best fit, the last added first among equals: the first job takes b3.
 * Without a rule a 4-node gang then takes b2, b1, b0 and a3, across the two switches; with
 * `required` it takes sw-a whole. */
static void test_required_never_splits(void **state)
{
    (void)state;
    for (int mode = SCHED_TOPO_NONE; mode <= SCHED_TOPO_REQUIRED; mode += 2) {
        struct sched *s = mk_topo((enum sched_topo_mode)mode);
        two_switches(s, 4, 4);
        occupy(s, 100, 1, HOUR, T0); /* b3 */
        submit(s, 1, "lab", NULL, "training", 8, 4, HOUR, T0 + 1);
        struct cyc c = cycle(s, T0 + 2);
        const struct sched_decision *d = find_dec(c, SCHED_D_START, 1);
        assert_non_null(d);
        assert_int_equal(d->nallocs, 4);
        int spanned = switches_spanned(s, d->allocs, d->nallocs);
        if (mode == SCHED_TOPO_REQUIRED) {
            assert_int_equal(spanned, 1);
            assert_int_equal(switch_of(s, d->allocs[0].node), 'a');
        } else {
            assert_int_equal(spanned, 2); /* what the rule is for */
        }
        check_ok(s);
        sched_destroy(s);
    }
}

/* Best effort packs into the fewest switches: with b3 busy, a 3-node gang takes sw-b's
 * three free nodes (the switch with the fewest that suffice: sw-a stays whole), a
 * 2-node one then sw-a; a 5-node one, with 5 free nodes over two switches, still starts,
 * where required would wait. */
static void test_best_effort_packs(void **state)
{
    (void)state;
    struct sched *s = mk_topo(SCHED_TOPO_BEST_EFFORT);
    two_switches(s, 4, 4);
    occupy(s, 100, 1, HOUR, T0);
    submit(s, 1, "lab", NULL, "training", 8, 3, HOUR, T0 + 1);
    struct cyc c = cycle(s, T0 + 2);
    const struct sched_decision *d = find_dec(c, SCHED_D_START, 1);
    assert_non_null(d);
    assert_int_equal(switches_spanned(s, d->allocs, d->nallocs), 1);
    assert_int_equal(switch_of(s, d->allocs[0].node), 'b');
    run(s, 1, T0 + 2);
    submit(s, 2, "lab", NULL, "training", 4, 2, HOUR, T0 + 3);
    c = cycle(s, T0 + 4);
    d = find_dec(c, SCHED_D_START, 2);
    assert_non_null(d);
    assert_int_equal(switches_spanned(s, d->allocs, d->nallocs), 1);
    check_ok(s);
    sched_destroy(s);

    s = mk_topo(SCHED_TOPO_BEST_EFFORT);
    two_switches(s, 4, 4);
    occupy(s, 100, 3, HOUR, T0); /* b3, b2, b1: b0 and sw-a free */
    submit(s, 1, "lab", NULL, "training", 8, 5, HOUR, T0 + 1);
    c = cycle(s, T0 + 2);
    d = find_dec(c, SCHED_D_START, 1);
    assert_non_null(d);
    assert_int_equal(switches_spanned(s, d->allocs, d->nallocs), 2);
    check_ok(s);
    sched_destroy(s);
}

/* Required: 2 + 2 free nodes do not start a 3-node gang; it waits with Resources and
 * explain says so with the numbers (the first of equal switches in node order). */
static void test_required_waits_and_explains(void **state)
{
    (void)state;
    struct sched *s = mk_topo(SCHED_TOPO_REQUIRED);
    two_switches(s, 4, 4);
    occupy(s, 100, 8, 2 * HOUR, T0); /* 100..103 on b3..b0, 104..107 on a3..a0 */
    end(s, 100, SCHED_EXIT_CODE, 0, T0 + 1);
    end(s, 101, SCHED_EXIT_CODE, 0, T0 + 1);
    end(s, 104, SCHED_EXIT_CODE, 0, T0 + 1);
    end(s, 105, SCHED_EXIT_CODE, 0, T0 + 1);
    submit(s, 1, "lab", NULL, "training", 8, 3, HOUR, T0 + 3);
    struct cyc c = cycle(s, T0 + 4);
    assert_null(find_dec(c, SCHED_D_START, 1));
    assert_reason(s, 1, SCHED_R_RESOURCES);
    struct sched_explain x;
    assert_int_equal(sched_explain(s, 1, T0 + 5, &x), 0);
    assert_int_equal(x.topo_mode, SCHED_TOPO_REQUIRED);
    assert_string_equal(x.topo_level, "switch");
    assert_int_equal(x.topo_best_free, 2);
    assert_string_equal(x.topo_best_domain, "sw-a");
    if (!strstr(x.sentence, "waiting for 3 nodes under one switch: 2 free under sw-a"))
        fail_msg("explain said: %s", x.sentence);
    check_ok(s);
    sched_destroy(s);
}

/* The reservation is made on one switch: sw-a comes free whole at 90 min, sw-b half at
 * 30 min and half at 2 h. Without the rule the gang would be promised b1, b0 and two of
 * sw-a at 90 min; with it, sw-a at 90 min, so a 2-hour job may backfill onto b1 or b0 at
 * 30 min (it delays nobody), and the gang starts on sw-a whole. Best effort takes sw-a
 * too: one switch as early as any nodes. */
static void reservation_on_one_switch(enum sched_topo_mode mode)
{
    struct sched *s = mk_topo(mode);
    struct sched_policy p = *sched_get_policy(s);
    p.preemption = false;
    struct sched_error err;
    assert_int_equal(sched_set_policy(s, &p, &err), 0);
    two_switches(s, 4, 4);
    occupy(s, 300, 2, 120 * MIN, T0); /* b3, b2 */
    occupy(s, 200, 2, 30 * MIN, T0);  /* b1, b0 */
    occupy(s, 100, 4, 90 * MIN, T0);  /* a3..a0 */
    submit(s, 1, "lab", NULL, "training", 8, 4, HOUR, T0 + 1);
    cycle(s, T0 + 2);
    struct sched_job_view v;
    assert_int_equal(sched_job_get(s, 1, &v), 0);
    int64_t grace = sched_get_policy(s)->default_grace_ms;
    assert_int_equal(v.reservation_ms, T0 + 90 * MIN + grace);
    check_ok(s);
    /* b1 and b0 free at 30 min: a 2-hour job there delays nobody */
    end(s, 200, SCHED_EXIT_CODE, 0, T0 + 30 * MIN);
    end(s, 201, SCHED_EXIT_CODE, 0, T0 + 30 * MIN);
    submit(s, 2, "lab", NULL, "experiment", 8, 1, 2 * HOUR, T0 + 30 * MIN);
    struct cyc c = cycle(s, T0 + 30 * MIN + 1);
    const struct sched_decision *d = find_dec(c, SCHED_D_START, 2);
    assert_non_null(d);
    assert_int_equal(switch_of(s, d->allocs[0].node), 'b');
    run(s, 2, T0 + 30 * MIN + 1);
    /* sw-a comes free: the gang starts there, whole */
    for (uint64_t id = 100; id < 104; id++)
        end(s, id, SCHED_EXIT_CODE, 0, T0 + 90 * MIN);
    c = cycle(s, T0 + 90 * MIN + grace);
    d = find_dec(c, SCHED_D_START, 1);
    assert_non_null(d);
    assert_int_equal(switches_spanned(s, d->allocs, d->nallocs), 1);
    assert_int_equal(switch_of(s, d->allocs[0].node), 'a');
    check_ok(s);
    sched_destroy(s);
}

static void test_reservation_on_one_switch(void **state)
{
    (void)state;
    reservation_on_one_switch(SCHED_TOPO_REQUIRED);
    reservation_on_one_switch(SCHED_TOPO_BEST_EFFORT);
}

/* Slurm's --switches=1 asks one job for one switch though its class has no rule; more
 * switches than one is best effort. */
static void test_switches_field(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    two_switches(s, 4, 4);
    occupy(s, 100, 1, HOUR, T0);
    struct sched_job_spec j;
    spec_fill(&j, 1, "lab", NULL, "training", 8, 4, HOUR, T0 + 1);
    j.switches = 1;
    struct sched_error err;
    assert_int_equal(sched_job_submit(s, &j, T0 + 1, &err), 0);
    struct cyc c = cycle(s, T0 + 2);
    const struct sched_decision *d = find_dec(c, SCHED_D_START, 1);
    assert_non_null(d);
    assert_int_equal(switches_spanned(s, d->allocs, d->nallocs), 1);
    spec_fill(&j, 2, "lab", NULL, "training", 8, 2, HOUR, T0 + 3);
    j.switches = -1;
    assert_int_equal(sched_job_submit(s, &j, T0 + 3, &err), -EINVAL);
    assert_string_equal(err.field, "switches");
    check_ok(s);
    sched_destroy(s);
}

/* A high gang that requires one switch preempts its victims under one switch: low jobs
 * fill every node, the youngest (the least work lost) on a0, b0 and b1, which a gang
 * without the rule would take; its three victims are all on one switch. */
static void test_preemption_on_one_switch(void **state)
{
    (void)state;
    struct sched *s = mk_topo(SCHED_TOPO_REQUIRED);
    two_switches(s, 4, 4);
    add_project(s, "vip", "high", 0, -1);
    occupy(s, 100, 8, 4 * HOUR, T0); /* 100..103 on b3..b0, 104..107 on a3..a0 */
    end(s, 102, SCHED_EXIT_CODE, 0, T0 + 5 * MIN);
    end(s, 103, SCHED_EXIT_CODE, 0, T0 + 5 * MIN);
    end(s, 107, SCHED_EXIT_CODE, 0, T0 + 5 * MIN);
    occupy(s, 200, 3, 4 * HOUR, T0 + 5 * MIN); /* a0, b0, b1 again, younger */
    submit(s, 1, "vip", "high", "training", 8, 3, HOUR, T0 + 20 * MIN);
    struct cyc c = cycle(s, T0 + 20 * MIN);
    int victims = 0;
    char sw = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (c.d[i].kind != SCHED_D_SIGNAL)
            continue;
        victims++;
        char here = switch_of(s, c.d[i].allocs[0].node);
        if (sw)
            assert_int_equal(here, sw);
        sw = here;
    }
    assert_int_equal(victims, 3);
    check_ok(s);
    sched_destroy(s);
}

/* Nodes without the level's label are one domain of their own: a cluster without
 * topology labels is one switch, and `required` changes nothing there. */
static void test_unlabelled_nodes_are_one_domain(void **state)
{
    (void)state;
    struct sched *s = mk_topo(SCHED_TOPO_REQUIRED);
    add_node(s, "n1", "H100", 8);
    add_node(s, "n2", "H100", 8);
    add_project(s, "lab", "normal", 0, -1);
    submit(s, 1, "lab", NULL, "training", 8, 2, HOUR, T0);
    struct cyc c = cycle(s, T0 + 1);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    check_ok(s);
    sched_destroy(s);
}

/* A policy apply that gives the class its rule re-shapes the pending gang: it no longer
 * starts across the switches. */
static void test_policy_change_reshapes(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    two_switches(s, 2, 2);
    occupy(s, 100, 2, HOUR, T0);             /* b1, b0 */
    end(s, 100, SCHED_EXIT_CODE, 0, T0 + 1); /* b1, a1, a0 free */
    struct sched_policy p = *sched_get_policy(s);
    p.preemption = false;
    struct sched_error err;
    assert_int_equal(sched_set_policy(s, &p, &err), 0);
    submit(s, 1, "lab", NULL, "training", 8, 3, HOUR, T0 + 2);
    p.classes[0].topo_mode = SCHED_TOPO_REQUIRED;
    assert_int_equal(sched_set_policy(s, &p, &err), 0);
    struct cyc c = cycle(s, T0 + 3);
    assert_null(find_dec(c, SCHED_D_START, 1)); /* 3 free nodes, at most 2 under one */
    assert_reason(s, 1, SCHED_R_RESOURCES);
    p.classes[0].topo_mode = SCHED_TOPO_BEST_EFFORT;
    assert_int_equal(sched_set_policy(s, &p, &err), 0);
    c = cycle(s, T0 + 4);
    assert_non_null(find_dec(c, SCHED_D_START, 1));
    check_ok(s);
    sched_destroy(s);
}

/* A gang that requires one switch larger than every switch can never run: refused at
 * submission naming the field (nodes for the class's rule, switches for Slurm's). */
static void test_too_big_for_any_switch_refused(void **state)
{
    (void)state;
    struct sched *s = mk_topo(SCHED_TOPO_REQUIRED);
    two_switches(s, 3, 2);
    struct sched_job_spec j;
    struct sched_error err;
    spec_fill(&j, 1, "lab", NULL, "training", 8, 4, HOUR, T0);
    assert_int_equal(sched_job_submit(s, &j, T0, &err), -EINVAL);
    assert_string_equal(err.field, "nodes");
    if (!strstr(err.message, "the most that could hold it under one are 3 (sw-a)"))
        fail_msg("said: %s", err.message);
    spec_fill(&j, 2, "lab", NULL, "experiment", 8, 3, HOUR, T0);
    j.switches = 1;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0); /* sw-a has 3 */
    spec_fill(&j, 3, "lab", NULL, "experiment", 8, 4, HOUR, T0);
    j.switches = 1;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), -EINVAL);
    assert_string_equal(err.field, "switches");
    j.switches = 2; /* best effort: 4 nodes over two switches */
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    check_ok(s);
    sched_destroy(s);
}

/* --switches=1@30m: the gang waits for one switch for 30 minutes after its submission,
 * then its class's rule (none here) applies and it starts across the switches. */
static void test_switches_wait_relaxes(void **state)
{
    (void)state;
    struct sched *s = mk_sched();
    two_switches(s, 2, 2);
    occupy(s, 100, 2, 4 * HOUR, T0); /* b1, b0 */
    struct sched_job_spec j;
    struct sched_error err;
    spec_fill(&j, 200, "lab", NULL, "experiment", 8, 1, 4 * HOUR, T0);
    snprintf(j.selectors[0].key, SCHED_NAME_MAX, "switch");
    snprintf(j.selectors[0].value, SCHED_NAME_MAX, "sw-a");
    j.nselectors = 1;
    assert_int_equal(sched_job_submit(s, &j, T0, &err), 0);
    assert_non_null(find_dec(cycle(s, T0), SCHED_D_START, 200)); /* a1 */
    run(s, 200, T0);
    end(s, 100, SCHED_EXIT_CODE, 0, T0 + 1); /* free: a0 under sw-a, b1 under sw-b */
    spec_fill(&j, 1, "lab", NULL, "experiment", 8, 2, HOUR, T0 + 10);
    j.switches = 1;
    j.switches_wait_ms = 30 * MIN;
    assert_int_equal(sched_job_submit(s, &j, T0 + 10, &err), 0);
    assert_null(find_dec(cycle(s, T0 + 11), SCHED_D_START, 1));
    assert_reason(s, 1, SCHED_R_RESOURCES);
    assert_true(sched_next_wakeup(s, T0 + 11) <= T0 + 10 + 30 * MIN);
    assert_null(find_dec(cycle(s, T0 + 10 + 30 * MIN - 1), SCHED_D_START, 1));
    check_ok(s);
    struct cyc c = cycle(s, T0 + 10 + 30 * MIN);
    const struct sched_decision *d = find_dec(c, SCHED_D_START, 1);
    assert_non_null(d);
    assert_int_equal(switches_spanned(s, d->allocs, d->nallocs), 2);
    check_ok(s);
    sched_destroy(s);
}

/* A hostile operator moves a node of a gang's reservation to the other switch: the
 * reservation, no longer under one switch, is made again under one, and sched_check()
 * agrees at every step. */
static void test_relabel_under_a_reservation(void **state)
{
    (void)state;
    struct sched *s = mk_topo(SCHED_TOPO_REQUIRED);
    struct sched_policy p = *sched_get_policy(s);
    p.preemption = false;
    struct sched_error err;
    assert_int_equal(sched_set_policy(s, &p, &err), 0);
    two_switches(s, 3, 3);
    occupy(s, 100, 6, HOUR, T0); /* 100..102 on b2..b0, 103..105 on a2..a0 */
    submit(s, 1, "lab", NULL, "training", 8, 3, HOUR, T0 + 1);
    cycle(s, T0 + 2);
    struct sched_job_view v;
    assert_int_equal(sched_job_get(s, 1, &v), 0);
    assert_true(v.reservation_ms > 0);
    check_ok(s);
    struct sched_label l;
    memset(&l, 0, sizeof(l));
    snprintf(l.key, sizeof(l.key), "switch");
    snprintf(l.value, sizeof(l.value), "sw-b");
    assert_int_equal(sched_node_set_labels(s, "a0", &l, 1, &err), 0); /* sw-a: 2 nodes left */
    check_ok(s);
    cycle(s, T0 + 3);
    check_ok(s);
    for (uint64_t id = 100; id < 106; id++)
        end(s, id, SCHED_EXIT_CODE, 0, T0 + 10 * MIN);
    struct cyc c = cycle(s, T0 + 10 * MIN);
    const struct sched_decision *d = find_dec(c, SCHED_D_START, 1);
    assert_non_null(d);
    for (int i = 0; i < d->nallocs; i++) /* sw-b now: b0, b1, b2 and a0 */
        assert_true(switch_of(s, d->allocs[i].node) == 'b' ||
                    strcmp(sched_node_name(s, d->allocs[i].node), "a0") == 0);
    check_ok(s);
    sched_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_required_never_splits),
        cmocka_unit_test(test_best_effort_packs),
        cmocka_unit_test(test_required_waits_and_explains),
        cmocka_unit_test(test_reservation_on_one_switch),
        cmocka_unit_test(test_switches_field),
        cmocka_unit_test(test_preemption_on_one_switch),
        cmocka_unit_test(test_unlabelled_nodes_are_one_domain),
        cmocka_unit_test(test_policy_change_reshapes),
        cmocka_unit_test(test_too_big_for_any_switch_refused),
        cmocka_unit_test(test_switches_wait_relaxes),
        cmocka_unit_test(test_relabel_under_a_reservation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
