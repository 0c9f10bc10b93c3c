/*
 * FTN12 steps in C for the futoin-polyglot examples.
 *
 * Built against the FTN12 binary interface headers only (abi/include): the
 * library never links the core; every call goes through bsi->api, so the
 * same steps run in any FTN12 provider (JS, Python or C hosts).
 *
 *   cc -std=c11 -shared -fPIC -I<repo>/abi/include steps.c -o libsteps.so
 */
#include <futoin/binarysteps.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- values ---- */

static void free_cstr(FutoInBinaryValue* v)
{
    free(v->custom_data);
}

static const FutoInType k_int64 = {FTN_TYPE_INT64, NULL};
static const FutoInType k_string = {FTN_TYPE_STRING, free_cstr}; /* malloc'd, freed by the engine */

static int is_int64(const FutoInBinaryValue* v)
{
    return v->type && (v->type->flags & (FTN_BASE_TYPE_MASK | FTN_TYPE_ARRAY)) == FTN_TYPE_INT64;
}

static int is_string(const FutoInBinaryValue* v)
{
    return v->type && (v->type->flags & (FTN_BASE_TYPE_MASK | FTN_TYPE_ARRAY)) == FTN_TYPE_STRING;
}

static void set_int64(FutoInBinaryValue* v, int64_t x)
{
    v->type = &k_int64;
    v->i64 = x;
}

static void set_string(FutoInBinaryValue* v, const char* s)
{
    size_t n = strlen(s);
    char* copy = malloc(n + 1);
    if (!copy) {
        return; /* no value */
    }
    memcpy(copy, s, n + 1);
    v->type = &k_string;
    v->cstr = copy;
    v->custom_data = copy;
    v->length = (uint32_t)n;
}

static void say(const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout); /* keep the order with the JS console.log() lines */
}

/* ---- example (a): C steps mixed with JS steps ---- */

/* (name) -> ("hello, <name> from C") */
EXPORT void c_greet(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    if (!is_string(&args->arg0)) {
        bsi->api->handle_error(bsi, "InvalidRequest", "c_greet expects a string");
        return;
    }
    char buf[256];
    snprintf(buf, sizeof(buf), "hello, %s from C", args->arg0.cstr);
    FutoInArgs out = {0};
    set_string(&out.arg0, buf);
    bsi->api->success(bsi, &out);
}

/* (n) -> (n * 2); a negative n fails with "NegativeValue" */
EXPORT void c_double(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    if (!is_int64(&args->arg0)) {
        bsi->api->handle_error(bsi, "InvalidRequest", "c_double expects an integer");
        return;
    }
    int64_t n = args->arg0.i64;
    if (n < 0) {
        char info[64];
        snprintf(info, sizeof(info), "C refuses %lld", (long long)n);
        bsi->api->handle_error(bsi, "NegativeValue", info);
        return; /* return right after handle_error() */
    }
    FutoInArgs out = {0};
    set_int64(&out.arg0, n * 2);
    bsi->api->success(bsi, &out);
}

/* (value) -> ("<C type>: <value>"): what a value looks like from C */
EXPORT void c_describe(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    const FutoInBinaryValue* v = &args->arg0;
    char buf[128];
    if (!v->type) {
        snprintf(buf, sizeof(buf), "no value");
    } else if (v->type->flags == (FTN_TYPE_UINT8 | FTN_TYPE_ARRAY)) {
        snprintf(buf, sizeof(buf), "UINT8[%u]: %.*s", (unsigned)v->length, (int)v->length, (const char*)v->p);
    } else {
        switch (v->type->flags) {
        case FTN_TYPE_INT64: snprintf(buf, sizeof(buf), "INT64: %lld", (long long)v->i64); break;
        case FTN_TYPE_DOUBLE: snprintf(buf, sizeof(buf), "DOUBLE: %g", v->d); break;
        case FTN_TYPE_STRING: snprintf(buf, sizeof(buf), "STRING: %s", v->cstr); break;
        case FTN_TYPE_BOOL: snprintf(buf, sizeof(buf), "BOOL: %s", v->b ? "true" : "false"); break;
        case FTN_TYPE_CUSTOM_OBJECT: snprintf(buf, sizeof(buf), "CUSTOM_OBJECT (opaque)"); break;
        default: snprintf(buf, sizeof(buf), "type 0x%02x", (unsigned)v->type->flags); break;
        }
    }
    FutoInArgs out = {0};
    set_string(&out.arg0, buf);
    bsi->api->success(bsi, &out);
}

/* () -> (INT64 2^60, DOUBLE 0.25, BOOL true, UINT8[] "C\0bytes"): C values seen by JS */
EXPORT void c_values(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    static const FutoInType k_double = {FTN_TYPE_DOUBLE, NULL};
    static const FutoInType k_bool = {FTN_TYPE_BOOL, NULL};
    static const FutoInType k_bytes = {FTN_TYPE_UINT8 | FTN_TYPE_ARRAY, NULL}; /* static data */
    static const uint8_t bytes[] = {'C', 0, 'b', 'y', 't', 'e', 's'};
    FutoInArgs out = {0};
    set_int64(&out.arg0, (int64_t)1 << 60);
    out.arg1.type = &k_double;
    out.arg1.d = 0.25;
    out.arg2.type = &k_bool;
    out.arg2.b = true;
    out.arg3.type = &k_bytes;
    out.arg3.p = bytes;
    out.arg3.length = sizeof(bytes);
    bsi->api->success(bsi, &out);
}

/* a C error handler: recovers from any error with the value -1 */
EXPORT void c_recover(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    say("C handler: caught %s (%s)\n", code, info);
    FutoInArgs out = {0};
    set_int64(&out.arg0, -1);
    bsi->api->success(bsi, &out);
}

/* ---- example (b): a flow built by C ---- */

typedef struct order
{
    int64_t total;
} order;

static const int64_t k_prices[] = {120, 250, 75};

static void* order_alloc(void* data)
{
    (void)data;
    return calloc(1, sizeof(order));
}

static void order_free(void* data, void* value)
{
    (void)data;
    free(value);
}

/* the per-root state variable "order" of the flow */
static order* order_of(FutoInAsyncSteps* bsi)
{
    return bsi->api->stateVariable(bsi, NULL, "order", order_alloc, order_free);
}

static void line_step(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    (void)data;
    order* o = order_of(bsi);
    o->total += k_prices[i];
    say("C line %zu: %lld\n", i, (long long)k_prices[i]);
}

static void discount_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    order* o = order_of(bsi);
    if (o->total > 400) {
        bsi->api->handle_error(bsi, "NotImplemented", "discounts over 400 are not implemented");
        return;
    }
}

static void discount_error(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    say("C discount handler: %s (%s), no discount\n", code, info);
    bsi->api->success(bsi, NULL);
}

static void total_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    FutoInArgs out = {0};
    set_int64(&out.arg0, order_of(bsi)->total);
    set_string(&out.arg1, "EUR");
    bsi->api->success(bsi, &out);
}

/*
 * A C step whose `data` is the FutoInAsyncSteps* of another, not yet
 * executed root (native.binary($as()) in JS): it builds that flow through
 * the vtable, then completes implicitly.
 */
EXPORT void build_order_flow(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    FutoInAsyncSteps* flow = data;
    if (!flow) {
        bsi->api->handle_error(bsi, "InvalidRequest", "build_order_flow needs the flow as data");
        return;
    }
    flow->api->repeat(flow, NULL, sizeof(k_prices) / sizeof(k_prices[0]), line_step, "lines");
    flow->api->add(flow, NULL, discount_step, discount_error);
    flow->api->add(flow, NULL, total_step, NULL);
}
