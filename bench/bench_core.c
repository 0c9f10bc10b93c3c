/*
 * Core benchmark: ops/s and ns/op of the C engine through the binary
 * interface, median of several runs, next to the targets and the
 * figures quoted for the public C++ reference implementation.
 *
 *   bench_core [runs] [workload]      (default 5 runs, every workload)
 */
#define _POSIX_C_SOURCE 200809L
#include <futoin/core.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static FutoInAsyncTool* g_tool;

/* ---- Simple: create root, add one empty step, execute, run, free ---- */

static void empty_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)d;
    (void)a;
}

static size_t bench_simple(void)
{
    const size_t n = 1000000;
    for (size_t i = 0; i < n; ++i) {
        FutoInAsyncSteps* as = futoin_steps_new(g_tool);
        as->api->add(as, NULL, empty_step, NULL);
        as->api->execute(as, NULL, NULL);
        futoin_tool_run(g_tool);
        as->api->free(as);
    }
    return n;
}

/* ---- Parallel: flows waiting external, resumed with success(1) ---- */

static FutoInAsyncSteps** g_waiting;
static size_t g_nwaiting;

static const FutoInType k_i32 = {FTN_TYPE_INT32, NULL};

static void wait_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->waitExternal(bsi);
    g_waiting[g_nwaiting++] = bsi;
}

static void resume(FutoInAsyncSteps* bsi)
{
    FutoInArgs args;
    memset(&args, 0, sizeof(args));
    args.arg0.type = &k_i32;
    args.arg0.i32 = 1;
    bsi->api->success(bsi, &args);
}

static size_t bench_parallel(void)
{
    const size_t batch = 30000, total = 1000000;
    FutoInAsyncSteps** roots = malloc(batch * sizeof(*roots));
    size_t done = 0;
    while (done < total) {
        size_t k = total - done < batch ? total - done : batch;
        g_nwaiting = 0;
        for (size_t i = 0; i < k; ++i) {
            roots[i] = futoin_steps_new(g_tool);
            roots[i]->api->add(roots[i], NULL, wait_step, NULL);
            roots[i]->api->execute(roots[i], NULL, NULL);
        }
        futoin_tool_run(g_tool);
        for (size_t i = 0; i < g_nwaiting; ++i) {
            resume(g_waiting[i]);
        }
        futoin_tool_run(g_tool);
        for (size_t i = 0; i < k; ++i) {
            roots[i]->api->free(roots[i]);
        }
        done += k;
    }
    free(roots);
    return total;
}

/* ---- ParallelWaitLoop: 3e4 flows loop on a wait step, one feeder ---- */

static FutoInAsyncSteps** g_ring;
static size_t g_ring_cap, g_ring_head, g_ring_tail;
static size_t g_resumes, g_resume_target;

static void loop_wait_body(FutoInAsyncSteps* bsi, void* d)
{
    (void)d;
    bsi->api->waitExternal(bsi);
    g_ring[g_ring_tail++ % g_ring_cap] = bsi;
}

static void feeder_body(FutoInAsyncSteps* bsi, void* d)
{
    (void)d;
    while (g_ring_head != g_ring_tail) {
        resume(g_ring[g_ring_head++ % g_ring_cap]);
        if (++g_resumes == g_resume_target) {
            bsi->api->breakLoop(bsi, NULL);
            return;
        }
    }
}

static size_t bench_parallel_wait_loop(void)
{
    const size_t flows = 30000;
    g_resume_target = 10000000;
    g_resumes = 0;
    g_ring_cap = flows + 1;
    g_ring_head = g_ring_tail = 0;
    g_ring = malloc(g_ring_cap * sizeof(*g_ring));
    FutoInAsyncSteps** roots = malloc(flows * sizeof(*roots));
    for (size_t i = 0; i < flows; ++i) {
        roots[i] = futoin_steps_new(g_tool);
        roots[i]->api->loop(roots[i], NULL, loop_wait_body, NULL);
        roots[i]->api->execute(roots[i], NULL, NULL);
    }
    FutoInAsyncSteps* feeder = futoin_steps_new(g_tool);
    feeder->api->loop(feeder, NULL, feeder_body, NULL);
    feeder->api->execute(feeder, NULL, NULL);
    futoin_tool_run(g_tool);
    for (size_t i = 0; i < flows; ++i) {
        roots[i]->api->free(roots[i]);
    }
    feeder->api->free(feeder);
    free(roots);
    free(g_ring);
    return g_resumes;
}

/* ---- loops, sequential steps, errors, mutex ---- */

static void empty_iter(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)bsi;
    (void)d;
    (void)i;
}

static size_t bench_loop(void)
{
    const size_t n = 100000000;
    FutoInAsyncSteps* as = futoin_steps_new(g_tool);
    as->api->repeat(as, NULL, n, empty_iter, NULL);
    as->api->execute(as, NULL, NULL);
    futoin_tool_run(g_tool);
    as->api->free(as);
    return n;
}

static size_t bench_sequential(void)
{
    const size_t per_flow = 1000, flows = 10000;
    FutoInAsyncSteps* as = futoin_steps_new(g_tool);
    for (size_t f = 0; f < flows; ++f) {
        for (size_t i = 0; i < per_flow; ++i) {
            as->api->add(as, NULL, empty_step, NULL);
        }
        as->api->execute(as, NULL, NULL);
        futoin_tool_run(g_tool);
    }
    as->api->free(as);
    return per_flow * flows;
}

static void fail_step(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)d;
    (void)a;
    bsi->api->handle_error(bsi, "Recoverable", NULL);
}

static void recover(FutoInAsyncSteps* bsi, void* d, const char* code)
{
    (void)d;
    (void)code;
    bsi->api->success(bsi, NULL);
}

static void error_iter(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    (void)i;
    bsi->api->add(bsi, NULL, fail_step, recover);
}

static size_t bench_error(void)
{
    const size_t n = 5000000;
    FutoInAsyncSteps* as = futoin_steps_new(g_tool);
    as->api->repeat(as, NULL, n, error_iter, NULL);
    as->api->execute(as, NULL, NULL);
    futoin_tool_run(g_tool);
    as->api->free(as);
    return n;
}

static void critical(FutoInAsyncSteps* bsi, void* d, const FutoInArgs* a)
{
    (void)bsi;
    (void)a;
    ++*(size_t*)d;
}

static FutoInSync* g_mutex;
static size_t g_entered;

static void mutex_iter(FutoInAsyncSteps* bsi, void* d, size_t i)
{
    (void)d;
    (void)i;
    bsi->api->addSync(bsi, g_mutex, &g_entered, critical, NULL);
    bsi->api->add(bsi, NULL, empty_step, NULL);
}

static size_t bench_mutex(void)
{
    const size_t flows = 100, per_flow = 10000;
    g_mutex = futoin_mutex_new(g_tool, 1, FUTOIN_UNLIMITED);
    g_entered = 0;
    FutoInAsyncSteps* roots[100];
    for (size_t i = 0; i < flows; ++i) {
        roots[i] = futoin_steps_new(g_tool);
        roots[i]->api->repeat(roots[i], NULL, per_flow, mutex_iter, NULL);
        roots[i]->api->execute(roots[i], NULL, NULL);
    }
    futoin_tool_run(g_tool);
    for (size_t i = 0; i < flows; ++i) {
        roots[i]->api->free(roots[i]);
    }
    futoin_sync_free(g_mutex);
    return g_entered;
}

/* ---- driver ---- */

typedef struct workload
{
    const char* name;
    size_t (*fn)(void);
    const char* unit;
    double target_ns;  /* issue target (ns/op), 0 = none */
    double cpp_ref_ns; /* figure quoted for the C++ reference, 0 = none */
} workload;

static int cmp_double(const void* a, const void* b)
{
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char** argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    if (runs < 1) {
        runs = 1;
    }
    g_waiting = malloc(30000 * sizeof(*g_waiting));
    g_tool = futoin_tool_new();
    const workload w[] = {
            {"Simple", bench_simple, "flow", 50, 100},
            {"Parallel", bench_parallel, "flow", 500, 1000},
            {"ParallelWaitLoop", bench_parallel_wait_loop, "resume", 160, 330},
            {"LoopIterations", bench_loop, "iteration", 1e9 / 150e6, 1e9 / 142e6},
            {"SequentialSteps", bench_sequential, "step", 1e9 / 50e6, 0},
            {"ErrorRecovery", bench_error, "error", 0, 0},
            {"ContendedMutex", bench_mutex, "entry", 0, 0},
    };
    printf("futoin-polyglot core %s, median of %d runs\n", futoin_version(), runs);
    printf("%-18s %14s %10s %12s %10s %14s\n", "workload", "ops/s", "ns/op", "target ns", "vs target",
           "vs C++ ri");
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); ++i) {
        if (argc > 2 && strcmp(argv[2], w[i].name) != 0) {
            continue;
        }
        double* ns = malloc((size_t)runs * sizeof(double));
        for (int r = 0; r < runs; ++r) {
            double t0 = now_s();
            size_t ops = w[i].fn();
            double t1 = now_s();
            ns[r] = (t1 - t0) * 1e9 / (double)ops;
        }
        qsort(ns, (size_t)runs, sizeof(double), cmp_double);
        double med = ns[runs / 2];
        char target[32] = "-", vs_target[32] = "-", vs_cpp[32] = "-";
        if (w[i].target_ns > 0) {
            snprintf(target, sizeof(target), "%.1f", w[i].target_ns);
            snprintf(vs_target, sizeof(vs_target), "%.2fx", w[i].target_ns / med);
        }
        if (w[i].cpp_ref_ns > 0) {
            snprintf(vs_cpp, sizeof(vs_cpp), "%.2fx", w[i].cpp_ref_ns / med);
        }
        printf("%-18s %14.0f %10.1f %12s %10s %14s   (per %s)\n", w[i].name, 1e9 / med, med, target,
               vs_target, vs_cpp, w[i].unit);
        fflush(stdout);
        free(ns);
    }
    printf("ratios > 1.00x are faster than the target / the quoted C++ reference figure\n");
    futoin_tool_free(g_tool);
    free(g_waiting);
    return 0;
}
