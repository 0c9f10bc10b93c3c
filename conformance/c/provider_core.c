/* futoin-polyglot's own core as a conformance provider: linked into the
 * runner as the default, and built as a module to test --provider. */
#include <futoin/core.h>

#include "conf.h"

static void* core_loop_new(void)
{
    FutoInAsyncTool* t = futoin_tool_new();
    if (t) {
        futoin_tool_use_virtual_time(t);
    }
    return t;
}

static void core_loop_free(void* loop)
{
    futoin_tool_free(loop);
}

static FutoInAsyncSteps* core_root_new(void* loop)
{
    return futoin_steps_new(loop);
}

static int core_run(void* loop)
{
    return futoin_tool_run(loop);
}

static uint64_t core_now(void* loop)
{
    return futoin_tool_now(loop);
}

static FutoInSync* core_mutex_new(void* loop, uint32_t max, uint32_t max_queue)
{
    return futoin_mutex_new(loop, max, max_queue);
}

static FutoInSync* core_throttle_new(void* loop, uint32_t max, uint32_t period_ms, uint32_t max_queue)
{
    return futoin_throttle_new(loop, max, period_ms, max_queue);
}

static FutoInSync* core_limiter_new(void* loop, uint32_t concurrent, uint32_t max_queue, uint32_t rate,
                                    uint32_t period_ms, uint32_t burst)
{
    FutoInLimiterOptions o = {concurrent, max_queue, rate, period_ms, burst};
    return futoin_limiter_new(loop, &o);
}

static const FutoInConformanceProvider k_core_provider = {
        "futoin-polyglot core",
        core_loop_new,
        core_loop_free,
        core_root_new,
        core_run,
        core_now,
        core_mutex_new,
        core_throttle_new,
        core_limiter_new,
        futoin_sync_free,
};

#ifdef CONF_PROVIDER_MODULE
__attribute__((visibility("default"))) const FutoInConformanceProvider* futoin_conformance_provider(void)
#else
const FutoInConformanceProvider* conf_core_provider(void)
#endif
{
    return &k_core_provider;
}
