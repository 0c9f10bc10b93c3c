/*
 * ftnconf_node: the C host library (libftnconf) for the Node conformance
 * runner, as a small Node-API addon (Node has no ctypes). Test tooling only:
 * built by conformance/node/build.sh next to libftnconf.so, never shipped.
 *
 * Addresses (host, flows, FutoInAsyncSteps*) travel to JS as BigInts, as in
 * futoin-polyglot/native. The "js" language is registered with libftnconf:
 * when a C parent adds a "js" node, make_fragment() asks JS for the node's
 * fragment and the fragment's callbacks are trampolines calling one JS
 * dispatcher with the step's address; JS wraps it (native.wrap) and runs
 * the node's actions on it.
 *
 * Everything runs on the JS thread: libftnconf and the flows are driven by
 * the package's virtual-time tool, which JS iterates.
 */
#include "conf.h"

#include <node_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- libftnconf (conformance/c/host_api.c) ---- */

typedef uint64_t (*ftnconf_now_fn)(void* data);
typedef int (*ftnconf_make_fn)(void* host, conf_flow* flow, size_t node_index, conf_fragment* out);

void* ftnconf_run_new(const char* scenario_json, ftnconf_now_fn now, void* now_data);
void ftnconf_run_free(void* p);
size_t ftnconf_node_count(void* p);
void ftnconf_trace(void* p, const char* text);
size_t ftnconf_trace_count(void* p);
const char* ftnconf_trace_at(void* p, size_t i);
const char* ftnconf_error(void* p);
void ftnconf_sync_add(void* p, const char* name, FutoInSync* sync);
conf_flow* ftnconf_flow_new(void* p, const char* name, FutoInAsyncSteps* root);
size_t ftnconf_flow_count(void* p);
conf_flow* ftnconf_flow_at(void* p, size_t i);
const char* ftnconf_flow_name(conf_flow* f);
FutoInAsyncSteps* ftnconf_flow_root(conf_flow* f);
const char* ftnconf_flow_outcome(conf_flow* f);
void ftnconf_flow_set_outcome(conf_flow* f, const char* outcome);
void ftnconf_add_node(void* p, conf_flow* flow, FutoInAsyncSteps* bsi, size_t index);
long ftnconf_live_fragments(const char* tag);
void ftnconf_register_lang(const char* tag, ftnconf_make_fn make, void* host);
int ftnconf_state_set_json(FutoInAsyncSteps* bsi, const char* name, const char* value_json);
void ftnconf_state_format(FutoInAsyncSteps* bsi, const char* name, char* out, size_t len);

/* ---- module state (one JS thread) ---- */

static napi_env g_env;
static napi_ref g_now;      /* () -> virtual ms of the running scenario */
static napi_ref g_make;     /* (flow, index) -> id * 2 + hasOnerror, or -1 */
static napi_ref g_dispatch; /* (kind, id, bsi, extra) */
static void* g_host;        /* the run of the scenario in progress */
static long g_live_js;      /* js fragments made minus destroyed */
static char g_problem[512]; /* first failure of a call into JS */

#define NAPI_OK(call)                                                                              \
    do {                                                                                           \
        if ((call) != napi_ok) {                                                                   \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

static napi_value throw_type(napi_env env, const char* msg)
{
    napi_throw_type_error(env, NULL, msg);
    return NULL;
}

static int get_ptr(napi_env env, napi_value v, void** out)
{
    uint64_t u = 0;
    bool lossless = false;
    napi_valuetype t;
    *out = NULL;
    if (napi_typeof(env, v, &t) != napi_ok) {
        return -1;
    }
    if (t == napi_null || t == napi_undefined) {
        return 0;
    }
    if (t != napi_bigint || napi_get_value_bigint_uint64(env, v, &u, &lossless) != napi_ok || !lossless) {
        return -1;
    }
    *out = (void*)(uintptr_t)u;
    return 0;
}

static napi_value ptr_value(napi_env env, const void* p)
{
    napi_value r;
    NAPI_OK(napi_create_bigint_uint64(env, (uint64_t)(uintptr_t)p, &r));
    return r;
}

static napi_value str_value(napi_env env, const char* s)
{
    napi_value r;
    if (!s) {
        NAPI_OK(napi_get_null(env, &r));
        return r;
    }
    NAPI_OK(napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &r));
    return r;
}

static napi_value num_value(napi_env env, double d)
{
    napi_value r;
    NAPI_OK(napi_create_double(env, d, &r));
    return r;
}

static napi_value undefined_value(napi_env env)
{
    napi_value r;
    NAPI_OK(napi_get_undefined(env, &r));
    return r;
}

/* malloc'd UTF-8 of a JS string; NULL for null/undefined or a non-string */
static char* get_str(napi_env env, napi_value v)
{
    napi_valuetype t;
    size_t n;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_string
            || napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok) {
        return NULL;
    }
    char* s = malloc(n + 1);
    if (s && napi_get_value_string_utf8(env, v, s, n + 1, &n) != napi_ok) {
        free(s);
        return NULL;
    }
    return s;
}

static double get_num(napi_env env, napi_value v)
{
    double d = 0;
    napi_get_value_double(env, v, &d);
    return d;
}

#define ARGS(N)                                                                                    \
    size_t argc = (N);                                                                             \
    napi_value argv[N];                                                                            \
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) {                        \
        return NULL;                                                                               \
    }                                                                                              \
    for (size_t a_ = argc; a_ < (N); ++a_) {                                                       \
        napi_get_undefined(env, &argv[a_]);                                                        \
    }

#define PTR_ARG(type, name, i)                                                                     \
    type name;                                                                                     \
    do {                                                                                           \
        void* p_;                                                                                  \
        if (get_ptr(env, argv[i], &p_) != 0 || !p_) {                                              \
            return throw_type(env, "argument " #i " must be an address (BigInt)");                \
        }                                                                                          \
        name = p_;                                                                                 \
    } while (0)

/* ---- calls into JS from C callbacks ---- */

static void note_problem(const char* what)
{
    napi_value exc, msg;
    char buf[400] = "";
    if (napi_get_and_clear_last_exception(g_env, &exc) == napi_ok
            && napi_coerce_to_string(g_env, exc, &msg) == napi_ok) {
        size_t n;
        napi_get_value_string_utf8(g_env, msg, buf, sizeof(buf), &n);
    }
    if (!g_problem[0]) {
        snprintf(g_problem, sizeof(g_problem), "%s: %s", what, buf);
    }
}

/* call `ref` with argv; the result (or NULL after an exception) */
static napi_value call_js(napi_ref ref, size_t argc, napi_value* argv, const char* what)
{
    napi_value f, undef, ret = NULL;
    if (!ref || napi_get_reference_value(g_env, ref, &f) != napi_ok) {
        return NULL;
    }
    napi_get_undefined(g_env, &undef);
    if (napi_call_function(g_env, undef, f, argc, argv, &ret) != napi_ok) {
        note_problem(what);
        return NULL;
    }
    return ret;
}

static uint64_t now_cb(void* data)
{
    (void)data;
    napi_handle_scope hs;
    double d = 0;
    if (napi_open_handle_scope(g_env, &hs) != napi_ok) {
        return 0;
    }
    napi_value r = call_js(g_now, 0, NULL, "now()");
    if (r) {
        d = get_num(g_env, r);
    }
    napi_close_handle_scope(g_env, hs);
    return d > 0 ? (uint64_t)d : 0;
}

/* ---- binary values -> JS (the values a "js" fragment's step receives) ---- */

static napi_value int64_value(napi_env env, int64_t x)
{
    napi_value r = NULL;
    if (x >= -9007199254740991LL && x <= 9007199254740991LL) {
        napi_create_double(env, (double)x, &r);
    } else {
        napi_create_bigint_int64(env, x, &r);
    }
    return r;
}

static napi_value uint64_value(napi_env env, uint64_t x)
{
    napi_value r = NULL;
    if (x <= 9007199254740991ULL) {
        napi_create_double(env, (double)x, &r);
    } else {
        napi_create_bigint_uint64(env, x, &r);
    }
    return r;
}

static napi_value scalar_value(napi_env env, uint8_t base, const void* p)
{
    napi_value r = NULL;
    switch (base) {
    case FTN_TYPE_BOOL: napi_get_boolean(env, *(const bool*)p, &r); break;
    case FTN_TYPE_INT8: napi_create_int32(env, *(const int8_t*)p, &r); break;
    case FTN_TYPE_INT16: napi_create_int32(env, *(const int16_t*)p, &r); break;
    case FTN_TYPE_INT32: napi_create_int32(env, *(const int32_t*)p, &r); break;
    case FTN_TYPE_INT64: r = int64_value(env, *(const int64_t*)p); break;
    case FTN_TYPE_UINT8: napi_create_uint32(env, *(const uint8_t*)p, &r); break;
    case FTN_TYPE_UINT16: napi_create_uint32(env, *(const uint16_t*)p, &r); break;
    case FTN_TYPE_UINT32: napi_create_uint32(env, *(const uint32_t*)p, &r); break;
    case FTN_TYPE_UINT64: r = uint64_value(env, *(const uint64_t*)p); break;
    case FTN_TYPE_FLOAT: napi_create_double(env, *(const float*)p, &r); break;
    case FTN_TYPE_DOUBLE: napi_create_double(env, *(const double*)p, &r); break;
    default: break;
    }
    return r;
}

static napi_value typed_array(napi_env env, napi_typedarray_type tt, const FutoInBinaryValue* v, size_t esize)
{
    void* data;
    napi_value ab, r = NULL;
    if (napi_create_arraybuffer(env, v->length * esize, &data, &ab) != napi_ok) {
        return NULL;
    }
    if (v->length && v->p) {
        memcpy(data, v->p, v->length * esize);
    }
    napi_create_typedarray(env, tt, v->length, ab, 0, &r);
    return r;
}

/* UINT8 arrays become Buffers, other numeric arrays typed arrays, BOOL
 * arrays plain arrays, script objects an empty object (text "<custom>") */
static napi_value value_to_js(napi_env env, const FutoInBinaryValue* v)
{
    napi_value r = NULL;
    uint8_t flags = v->type->flags;
    uint8_t base = flags & FTN_BASE_TYPE_MASK;
    if (flags & FTN_TYPE_ARRAY) {
        switch (base) {
        case FTN_TYPE_UINT8: {
            void* data;
            napi_create_buffer_copy(env, v->length, v->p ? v->p : "", &data, &r);
            return r;
        }
        case FTN_TYPE_INT8: return typed_array(env, napi_int8_array, v, 1);
        case FTN_TYPE_INT16: return typed_array(env, napi_int16_array, v, 2);
        case FTN_TYPE_UINT16: return typed_array(env, napi_uint16_array, v, 2);
        case FTN_TYPE_INT32: return typed_array(env, napi_int32_array, v, 4);
        case FTN_TYPE_UINT32: return typed_array(env, napi_uint32_array, v, 4);
        case FTN_TYPE_INT64: return typed_array(env, napi_bigint64_array, v, 8);
        case FTN_TYPE_UINT64: return typed_array(env, napi_biguint64_array, v, 8);
        case FTN_TYPE_FLOAT: return typed_array(env, napi_float32_array, v, 4);
        case FTN_TYPE_DOUBLE: return typed_array(env, napi_float64_array, v, 8);
        case FTN_TYPE_BOOL:
            napi_create_array_with_length(env, v->length, &r);
            for (uint32_t i = 0; r && i < v->length; ++i) {
                napi_set_element(env, r, i, scalar_value(env, base, (const char*)v->p + i * conf_scalar_size(base)));
            }
            return r;
        default: break;
        }
        napi_create_object(env, &r);
        return r;
    }
    switch (base) {
    case FTN_TYPE_STRING:
        napi_create_string_utf8(env, v->cstr ? v->cstr : "", v->cstr ? v->length : 0, &r);
        return r;
    case FTN_TYPE_STRING16:
        napi_create_string_utf16(env, v->cstr16 ? (const char16_t*)v->cstr16 : u"", v->cstr16 ? v->length : 0, &r);
        return r;
    case FTN_TYPE_STRING32: {
        char16_t* buf = malloc(2 * (size_t)v->length + 2);
        size_t n = 0;
        for (uint32_t i = 0; buf && i < v->length; ++i) {
            uint32_t cp = v->cstr32[i];
            if (cp >= 0x10000) {
                cp -= 0x10000;
                buf[n++] = (char16_t)(0xD800 + (cp >> 10));
                buf[n++] = (char16_t)(0xDC00 + (cp & 0x3FF));
            } else {
                buf[n++] = (char16_t)cp;
            }
        }
        napi_create_string_utf16(env, buf ? buf : u"", n, &r);
        free(buf);
        return r;
    }
    case FTN_TYPE_CUSTOM_OBJECT:
        napi_create_object(env, &r);
        return r;
    default:
        return scalar_value(env, base, &v->u64);
    }
}

static napi_value args_to_js(napi_env env, const FutoInArgs* args)
{
    napi_value arr;
    uint32_t n = 0;
    if (napi_create_array(env, &arr) != napi_ok) {
        return NULL;
    }
    for (int i = 0; args && i < 4; ++i) {
        if (args->args[i].type) {
            napi_value v = value_to_js(env, &args->args[i]);
            if (!v) {
                napi_get_undefined(env, &v);
            }
            napi_set_element(env, arr, n++, v);
        }
    }
    return arr;
}

/* ---- "js" fragments for C parents ---- */

enum
{
    K_EXEC = 0,
    K_ERROR = 1,
    K_LOOP = 2,
    K_REPEAT = 3
};

typedef struct js_frag
{
    double id; /* the JS side's fragment record */
} js_frag;

static void dispatch(int kind, js_frag* f, FutoInAsyncSteps* bsi, const FutoInArgs* args, const char* code,
                     size_t i)
{
    napi_handle_scope hs;
    if (napi_open_handle_scope(g_env, &hs) != napi_ok) {
        bsi->api->handle_error(bsi, "InternalError", "ftnconf_node: no handle scope");
        return;
    }
    napi_value argv[4];
    napi_create_int32(g_env, kind, &argv[0]);
    napi_create_double(g_env, f->id, &argv[1]);
    argv[2] = ptr_value(g_env, bsi);
    switch (kind) {
    case K_EXEC: argv[3] = args_to_js(g_env, args); break;
    case K_ERROR: argv[3] = str_value(g_env, code ? code : ""); break;
    case K_REPEAT: argv[3] = num_value(g_env, (double)i); break;
    default: argv[3] = undefined_value(g_env); break;
    }
    if (!call_js(g_dispatch, 4, argv, "js fragment")) {
        /* never across the C frame: the step fails instead */
        bsi->api->handle_error(bsi, "InternalError", "exception in the JS fragment dispatcher");
    }
    napi_close_handle_scope(g_env, hs);
}

static void tr_exec(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    dispatch(K_EXEC, data, bsi, args, NULL, 0);
}

static void tr_error(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    dispatch(K_ERROR, data, bsi, NULL, code, 0);
}

static void tr_loop(FutoInAsyncSteps* bsi, void* data)
{
    dispatch(K_LOOP, data, bsi, NULL, NULL, 0);
}

static void tr_repeat(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    dispatch(K_REPEAT, data, bsi, NULL, NULL, i);
}

static void tr_destroy(void* data)
{
    /* no JS here: this may run while a root is collected */
    --g_live_js;
    free(data);
}

static int make_fragment(void* host, conf_flow* flow, size_t index, conf_fragment* out)
{
    (void)host;
    napi_handle_scope hs;
    if (napi_open_handle_scope(g_env, &hs) != napi_ok) {
        return -1;
    }
    napi_value argv[2];
    argv[0] = ptr_value(g_env, flow);
    napi_create_double(g_env, (double)index, &argv[1]);
    napi_value r = call_js(g_make, 2, argv, "js make_fragment");
    double code = r ? get_num(g_env, r) : -1;
    napi_close_handle_scope(g_env, hs);
    if (!(code >= 0)) {
        return -1;
    }
    js_frag* f = malloc(sizeof(*f));
    if (!f) {
        return -1;
    }
    uint64_t c = (uint64_t)code;
    f->id = (double)(c >> 1);
    ++g_live_js;
    out->exec = tr_exec;
    out->on_error = (c & 1) ? tr_error : NULL;
    out->loop = tr_loop;
    out->repeat = tr_repeat;
    out->data = f;
    out->destroy = tr_destroy;
    return 0;
}

/* registerLang(tag, make, dispatch) */
static napi_value n_register_lang(napi_env env, napi_callback_info info)
{
    ARGS(3);
    char* tag = get_str(env, argv[0]);
    if (!tag) {
        return throw_type(env, "registerLang(tag, make, dispatch)");
    }
    if (g_make) {
        napi_delete_reference(env, g_make);
    }
    if (g_dispatch) {
        napi_delete_reference(env, g_dispatch);
    }
    g_make = g_dispatch = NULL;
    if (napi_create_reference(env, argv[1], 1, &g_make) != napi_ok
            || napi_create_reference(env, argv[2], 1, &g_dispatch) != napi_ok) {
        free(tag);
        return NULL;
    }
    ftnconf_register_lang(tag, make_fragment, NULL);
    free(tag);
    return NULL;
}

/* ---- runs ---- */

/* runNew(json, now) -> host */
static napi_value n_run_new(napi_env env, napi_callback_info info)
{
    ARGS(2);
    char* text = get_str(env, argv[0]);
    if (!text) {
        return throw_type(env, "runNew(json, now)");
    }
    if (g_now) {
        napi_delete_reference(env, g_now);
        g_now = NULL;
    }
    NAPI_OK(napi_create_reference(env, argv[1], 1, &g_now));
    void* h = ftnconf_run_new(text, now_cb, NULL);
    free(text);
    if (!h) {
        return throw_type(env, "libftnconf cannot parse the scenario");
    }
    g_host = h;
    g_problem[0] = 0;
    return ptr_value(env, h);
}

static napi_value n_run_free(napi_env env, napi_callback_info info)
{
    ARGS(1);
    PTR_ARG(void*, h, 0);
    if (g_host == h) {
        g_host = NULL;
    }
    ftnconf_run_free(h);
    return NULL;
}

static napi_value n_node_count(napi_env env, napi_callback_info info)
{
    ARGS(1);
    PTR_ARG(void*, h, 0);
    return num_value(env, (double)ftnconf_node_count(h));
}

static napi_value n_trace(napi_env env, napi_callback_info info)
{
    ARGS(2);
    PTR_ARG(void*, h, 0);
    char* text = get_str(env, argv[1]);
    ftnconf_trace(h, text ? text : "");
    free(text);
    return NULL;
}

/* traces(host) -> [entries] */
static napi_value n_traces(napi_env env, napi_callback_info info)
{
    ARGS(1);
    PTR_ARG(void*, h, 0);
    napi_value arr;
    NAPI_OK(napi_create_array(env, &arr));
    size_t n = ftnconf_trace_count(h);
    for (size_t i = 0; i < n; ++i) {
        NAPI_OK(napi_set_element(env, arr, (uint32_t)i, str_value(env, ftnconf_trace_at(h, i))));
    }
    return arr;
}

/* error(host) -> the runner-level problem of libftnconf, or of a JS call
 * made from C ("" when none) */
static napi_value n_error(napi_env env, napi_callback_info info)
{
    ARGS(1);
    PTR_ARG(void*, h, 0);
    const char* e = ftnconf_error(h);
    return str_value(env, e && e[0] ? e : g_problem);
}

/* syncAdd(host, name, external FutoInSync*) */
static napi_value n_sync_add(napi_env env, napi_callback_info info)
{
    ARGS(3);
    PTR_ARG(void*, h, 0);
    char* name = get_str(env, argv[1]);
    void* s = NULL;
    if (!name || napi_get_value_external(env, argv[2], &s) != napi_ok || !s) {
        free(name);
        return throw_type(env, "syncAdd(host, name, external)");
    }
    ftnconf_sync_add(h, name, s);
    free(name);
    return NULL;
}

/* flowNew(host, name, root) -> flow */
static napi_value n_flow_new(napi_env env, napi_callback_info info)
{
    ARGS(3);
    PTR_ARG(void*, h, 0);
    PTR_ARG(FutoInAsyncSteps*, root, 2);
    char* name = get_str(env, argv[1]);
    conf_flow* f = ftnconf_flow_new(h, name ? name : "main", root);
    free(name);
    return f ? ptr_value(env, f) : NULL;
}

/* flows(host) -> [{flow, name, root, outcome}] in creation order */
static napi_value n_flows(napi_env env, napi_callback_info info)
{
    ARGS(1);
    PTR_ARG(void*, h, 0);
    napi_value arr;
    NAPI_OK(napi_create_array(env, &arr));
    size_t n = ftnconf_flow_count(h);
    for (size_t i = 0; i < n; ++i) {
        conf_flow* f = ftnconf_flow_at(h, i);
        napi_value o;
        NAPI_OK(napi_create_object(env, &o));
        napi_set_named_property(env, o, "flow", ptr_value(env, f));
        napi_set_named_property(env, o, "name", str_value(env, ftnconf_flow_name(f)));
        napi_set_named_property(env, o, "root", ptr_value(env, ftnconf_flow_root(f)));
        napi_set_named_property(env, o, "outcome", str_value(env, ftnconf_flow_outcome(f)));
        NAPI_OK(napi_set_element(env, arr, (uint32_t)i, o));
    }
    return arr;
}

static napi_value n_flow_set_outcome(napi_env env, napi_callback_info info)
{
    ARGS(2);
    PTR_ARG(conf_flow*, f, 0);
    char* text = get_str(env, argv[1]);
    ftnconf_flow_set_outcome(f, text ? text : "");
    free(text);
    return NULL;
}

/* addNode(host, flow, bsi, index): the structural call of a C parent */
static napi_value n_add_node(napi_env env, napi_callback_info info)
{
    ARGS(4);
    PTR_ARG(void*, h, 0);
    PTR_ARG(conf_flow*, f, 1);
    PTR_ARG(FutoInAsyncSteps*, bsi, 2);
    ftnconf_add_node(h, f, bsi, (size_t)get_num(env, argv[3]));
    return NULL;
}

/* liveFragments(tag) -> made minus destroyed */
static napi_value n_live_fragments(napi_env env, napi_callback_info info)
{
    ARGS(1);
    char* tag = get_str(env, argv[0]);
    long n = !tag ? 0 : strcmp(tag, "js") == 0 ? g_live_js : ftnconf_live_fragments(tag);
    free(tag);
    return num_value(env, (double)n);
}

/* ---- binary state and memory of any step, for JS steps ---- */

/* stateSet(bsi, name, valueJson) -> 0 or -1 */
static napi_value n_state_set(napi_env env, napi_callback_info info)
{
    ARGS(3);
    PTR_ARG(FutoInAsyncSteps*, bsi, 0);
    char* name = get_str(env, argv[1]);
    char* json = get_str(env, argv[2]);
    int r = name && json ? ftnconf_state_set_json(bsi, name, json) : -1;
    free(name);
    free(json);
    return num_value(env, r);
}

/* stateFormat(bsi, name) -> canonical text or "<unset>" */
static napi_value n_state_format(napi_env env, napi_callback_info info)
{
    ARGS(2);
    PTR_ARG(FutoInAsyncSteps*, bsi, 0);
    char* name = get_str(env, argv[1]);
    char buf[1024] = "<unset>";
    if (name) {
        ftnconf_state_format(bsi, name, buf, sizeof(buf));
    }
    free(name);
    return str_value(env, buf);
}

/* errorInfo(bsi) -> the flow's error_info ("" when unset) */
static napi_value n_error_info(napi_env env, napi_callback_info info)
{
    ARGS(1);
    PTR_ARG(FutoInAsyncSteps*, bsi, 0);
    const char* s = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    return str_value(env, s ? s : "");
}

typedef struct stack_note
{
    void* host;
    char* text;
} stack_note;

static void stack_freed(void* value)
{
    stack_note* s = value;
    if (s->text && s->host && s->host == g_host) {
        ftnconf_trace(s->host, s->text);
    }
    free(s->text);
}

/* stack(bsi, size, onFreeText|null): the step's stack() memory, tracing
 * `onFreeText` into the running scenario when it is freed */
static napi_value n_stack(napi_env env, napi_callback_info info)
{
    ARGS(3);
    PTR_ARG(FutoInAsyncSteps*, bsi, 0);
    double size = get_num(env, argv[1]);
    char* text = get_str(env, argv[2]);
    stack_note* s = bsi->api->stack(bsi, sizeof(stack_note) + (size > 0 ? (size_t)size : 0), stack_freed);
    if (!s) {
        free(text);
        napi_value r;
        napi_get_boolean(env, false, &r);
        return r;
    }
    s->host = g_host;
    s->text = text;
    napi_value r;
    napi_get_boolean(env, true, &r);
    return r;
}

/* rootFree(bsi): free a root made by C (newInstance in a C step) */
static napi_value n_root_free(napi_env env, napi_callback_info info)
{
    ARGS(1);
    PTR_ARG(FutoInAsyncSteps*, bsi, 0);
    bsi->api->free(bsi);
    return NULL;
}

static napi_value init(napi_env env, napi_value exports)
{
    static const struct
    {
        const char* name;
        napi_callback cb;
    } fns[] = {
            {"runNew", n_run_new},
            {"runFree", n_run_free},
            {"nodeCount", n_node_count},
            {"trace", n_trace},
            {"traces", n_traces},
            {"error", n_error},
            {"syncAdd", n_sync_add},
            {"flowNew", n_flow_new},
            {"flows", n_flows},
            {"flowSetOutcome", n_flow_set_outcome},
            {"addNode", n_add_node},
            {"liveFragments", n_live_fragments},
            {"registerLang", n_register_lang},
            {"stateSet", n_state_set},
            {"stateFormat", n_state_format},
            {"errorInfo", n_error_info},
            {"stack", n_stack},
            {"rootFree", n_root_free},
    };
    g_env = env;
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); ++i) {
        napi_value f;
        NAPI_OK(napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].cb, NULL, &f));
        NAPI_OK(napi_set_named_property(env, exports, fns[i].name, f));
    }
    return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
