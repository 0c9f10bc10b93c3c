/*
 * A tiny C library of FTN12 steps for the futoin_polyglot Python examples.
 *
 * Only the FTN12 binary interface header is needed: the library never links
 * against the engine, it reaches every flow through bsi->api. Build it with
 * ./build.sh (next to this file).
 *
 *   c_double       an execute callback: arg0 (INT64 or INT32) -> 2 * arg0 as INT64
 *   lib_add_steps  given a flow pointer, adds c_double and then a step handed
 *                  over by the caller (execute callback + data, such as a
 *                  futoin_polyglot.StepHandle's execute_callback and data)
 */
#include <futoin/binarysteps.h>

#include <stdint.h>

#if defined(_WIN32)
#    define STEPS_API __declspec(dllexport)
#else
#    define STEPS_API __attribute__((visibility("default")))
#endif

/* INT64 values we produce own nothing: no cleanup */
static const FutoInType k_int64 = {FTN_TYPE_INT64, NULL};

STEPS_API void c_double(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    const FutoInBinaryValue* in = &args->arg0;
    int64_t x;
    if (in->type && in->type->flags == FTN_TYPE_INT64) {
        x = in->i64;
    } else if (in->type && in->type->flags == FTN_TYPE_INT32) {
        x = in->i32;
    } else {
        /* FTN12: report the error and return right away */
        bsi->api->handle_error(bsi, "InvalidRequest", "c_double needs an INT64 or INT32 argument");
        return;
    }
    FutoInArgs out = {0};
    out.arg0.type = &k_int64;
    out.arg0.i64 = 2 * x;
    bsi->api->success(bsi, &out);
}

STEPS_API void lib_add_steps(FutoInAsyncSteps* bsi, FutoInAsyncSteps_execute_callback py_step, void* py_data)
{
    bsi->api->add(bsi, NULL, c_double, NULL);
    bsi->api->add(bsi, py_data, py_step, NULL);
}
