/*
 * gen_trace.c - synthetic workload for docket-sim benchmarks, in the normalised CSV of
 * the shared traces. Deterministic: the same arguments give the same bytes.
 *
 *   gen_trace JOBS [SEED] [MEAN_INTERARRIVAL_S] [PROJECTS]
 *
 * Sizes follow Philly's mix (87 % 1 GPU, 5 % 8, 5 % 4, 2 % 2, 1 % 16); runtimes are
 * log-uniform between 20 s and 16 h; arrivals are Poisson (mean gap 6 s by default: about
 * 70 % of the 2816 GPUs of examples/sim/cluster-philly.yaml pooled); projects are Zipf-weighted
 * (named p00, p01 ...), 50 users. Built and run by bench/sim/run.sh.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t state;

static uint64_t next(void)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double unit(void)
{
    return ((double)(next() >> 11) + 0.5) / 9007199254740992.0;
}

static int gpus(void)
{
    double u = unit();

    return u < 0.87 ? 1 : u < 0.92 ? 8 : u < 0.97 ? 4 : u < 0.99 ? 2 : 16;
}

static long arg(const char *s, long min, long max, const char *what)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno || v < min || v > max) {
        fprintf(stderr, "gen_trace: %s: '%s' is not in %ld..%ld\n", what, s, min, max);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    long jobs, projects;
    double mean_ia, t = 0, wsum = 0, *w;

    if (argc < 2 || argc > 5) {
        fprintf(stderr, "usage: gen_trace JOBS [SEED] [MEAN_INTERARRIVAL_S] [PROJECTS]\n");
        return 2;
    }
    jobs = arg(argv[1], 1, 100000000, "jobs");
    state = argc > 2 ? (uint64_t)arg(argv[2], 0, INT32_MAX, "seed") : 1;
    mean_ia = argc > 3 ? (double)arg(argv[3], 1, 100000, "mean interarrival") : 6;
    projects = argc > 4 ? arg(argv[4], 1, 100, "projects") : 12;
    w = calloc((size_t)projects, sizeof(*w));
    if (!w)
        return 1;
    for (long p = 0; p < projects; p++)
        wsum += (w[p] = 1.0 / (double)(p + 1));
    printf("job_id,submit_s,runtime_s,gpus,cpus,mem_mb,nodes,project,user,status\n");
    for (long i = 0; i < jobs; i++) {
        /* one draw per statement: argument evaluation order is unspecified */
        double u = unit() * wsum, runtime;
        long p = 0;
        int g;
        uint64_t user;

        while (p < projects - 1 && u > w[p])
            u -= w[p++];
        t += -log(unit()) * mean_ia;
        runtime = floor(exp(log(20.0) + unit() * (log(57600.0) - log(20.0))));
        g = gpus();
        user = next() % 50;
        printf("s%ld,%.0f,%.0f,%d,,,,p%02ld,u%" PRIu64 ",completed\n", i, floor(t), runtime, g, p,
               user);
    }
    free(w);
    return ferror(stdout) ? 1 : 0;
}
