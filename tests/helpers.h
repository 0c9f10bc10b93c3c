/* Shared test helpers: a trace buffer, a virtual-time tool, small step
 * fragments and value constructors. Header-only so every test program is one
 * file plus this. */
#ifndef FUTOIN_TEST_HELPERS_H
#define FUTOIN_TEST_HELPERS_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* dup(), dup2(), fileno(): stderr capture */
#endif

#include <futoin/core.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char g_trace[8192];

static void trace_reset(void)
{
    g_trace[0] = 0;
}

static void trace(const char* fmt, ...)
{
    size_t len = strlen(g_trace);
    if (len && len < sizeof(g_trace) - 1) {
        g_trace[len++] = '|';
        g_trace[len] = 0;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_trace + len, sizeof(g_trace) - len, fmt, ap);
    va_end(ap);
}

#define assert_trace(expected) assert_string_equal(g_trace, expected)

typedef struct fixture
{
    FutoInAsyncTool* tool;
    FutoInAsyncSteps* root;
} fixture;

static fixture g_fx;

static int fx_setup(void** state)
{
    (void)state;
    trace_reset();
    g_fx.tool = futoin_tool_new();
    futoin_tool_use_virtual_time(g_fx.tool);
    g_fx.root = futoin_steps_new(g_fx.tool);
    return g_fx.tool && g_fx.root ? 0 : -1;
}

static int fx_teardown(void** state)
{
    (void)state;
    if (g_fx.root) {
        g_fx.root->api->free(g_fx.root);
        g_fx.root = NULL;
    }
    futoin_tool_free(g_fx.tool);
    g_fx.tool = NULL;
    return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

#define API(bsi) ((bsi)->api)

static const char* error_info(FutoInAsyncSteps* bsi)
{
    return (const char*)bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
}

/* stateVariable() cleanup of a value its allocator got from malloc() */
static void state_free(void* data, void* value)
{
    (void)data;
    free(value);
}

/* unhandled-error callback that records the code and info */
static void on_unhandled(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    trace("unhandled:%s:%s", code, error_info(bsi));
}

static void run_root(void)
{
    g_fx.root->api->execute(g_fx.root, NULL, on_unhandled);
    assert_int_equal(futoin_tool_run(g_fx.tool), 0);
}

/* ---- common fragments ---- */

static void f_noop(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)data;
    (void)args;
}

/* traces its data as a string */
static void f_trace(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    trace("%s", (const char*)data);
}

/* raises its data as error code */
static void f_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->handle_error(bsi, (const char*)data, "info");
}

static void eh_trace(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    trace("%s:%s", data ? (const char*)data : "eh", code);
}

static void eh_recover(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    trace("%s:%s", data ? (const char*)data : "recover", code);
    bsi->api->success(bsi, NULL);
}

static void f_wait(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    trace("%s", data ? (const char*)data : "wait");
    bsi->api->waitExternal(bsi);
}

/* ---- values ---- */

static const FutoInType t_i32 = {FTN_TYPE_INT32, NULL};
static const FutoInType t_u64 = {FTN_TYPE_UINT64, NULL};
static const FutoInType t_bool = {FTN_TYPE_BOOL, NULL};
static const FutoInType t_double = {FTN_TYPE_DOUBLE, NULL};
static const FutoInType t_float = {FTN_TYPE_FLOAT, NULL};
static const FutoInType t_i8 = {FTN_TYPE_INT8, NULL};
static const FutoInType t_i16 = {FTN_TYPE_INT16, NULL};
static const FutoInType t_i64 = {FTN_TYPE_INT64, NULL};
static const FutoInType t_u8 = {FTN_TYPE_UINT8, NULL};
static const FutoInType t_u16 = {FTN_TYPE_UINT16, NULL};
static const FutoInType t_u32 = {FTN_TYPE_UINT32, NULL};
static const FutoInType t_cstr = {FTN_TYPE_STRING, NULL};

static int g_heap_cleanups;
static void heap_cleanup(FutoInBinaryValue* v)
{
    ++g_heap_cleanups;
    free((void*)v->p);
}
static const FutoInType t_heap_str = {FTN_TYPE_STRING, heap_cleanup};
static const FutoInType t_heap_i32_array = {FTN_TYPE_INT32 | FTN_TYPE_ARRAY, heap_cleanup};
static const FutoInType t_heap_str16 = {FTN_TYPE_STRING16, heap_cleanup};
static const FutoInType t_heap_str32 = {FTN_TYPE_STRING32, heap_cleanup};

static FutoInBinaryValue val_i32(int32_t v)
{
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    r.type = &t_i32;
    r.i32 = v;
    return r;
}

static FutoInBinaryValue val_heap_str(const char* s)
{
    FutoInBinaryValue r;
    memset(&r, 0, sizeof(r));
    size_t n = strlen(s);
    char* copy = malloc(n + 1);
    memcpy(copy, s, n + 1);
    r.type = &t_heap_str;
    r.cstr = copy;
    r.length = (uint32_t)n;
    return r;
}

static FutoInArgs args0(void)
{
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    return a;
}

/* ---- what the library writes to stderr meanwhile ---- */

static FILE* g_err_file;
static int g_err_saved = -1;

static void stderr_capture(void)
{
    fflush(stderr);
    g_err_file = tmpfile();
    assert_non_null(g_err_file);
    g_err_saved = dup(2);
    dup2(fileno(g_err_file), 2);
}

/* what was written meanwhile (static buffer) */
static const char* stderr_captured(void)
{
    static char buf[1024];
    fflush(stderr);
    dup2(g_err_saved, 2);
    close(g_err_saved);
    rewind(g_err_file);
    size_t n = fread(buf, 1, sizeof(buf) - 1, g_err_file);
    buf[n] = 0;
    fclose(g_err_file);
    return buf;
}

#endif
