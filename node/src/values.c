/*
 * JS values <-> FTN12 binary values.
 *
 * Between JS steps every value arrives unchanged: objects, functions and
 * Buffers travel as references to the very same object; numbers, strings,
 * booleans, null, undefined, symbols and BigInts come back equal and of the
 * same JS type, because our own type descriptors say what they were.
 * C and Python steps read the plain fields: integral numbers as INT64, other
 * numbers as DOUBLE, strings as UTF-8 STRING, booleans as BOOL, BigInts as
 * INT64, Buffers and typed arrays as arrays of their element type (UINT8
 * for a Buffer; pointing into the JS memory, valid while the value lives),
 * everything else as CUSTOM_OBJECT.
 */
#include "addon.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void cleanup_free(FutoInBinaryValue* v)
{
    free(v->custom_data);
}

/* A JS value C code kept may be released on a thread of its own: the
 * reference goes on its instance's JS thread (V8 is not for other threads) */
typedef struct jrelease
{
    jsenv* e;
    napi_ref ref;
} jrelease;

static void release_posted(void* p)
{
    jrelease* r = p;
    if (!r->e->gone) {
        napi_delete_reference(r->e->env, r->ref);
    }
    free(r);
}

static void release_ref(jsenv* e, napi_ref ref)
{
    if (!ref) {
        return;
    }
    if (pthread_equal(pthread_self(), e->thread)) {
        if (!e->gone) {
            napi_delete_reference(e->env, ref);
        }
        return;
    }
    jrelease* r = malloc(sizeof(*r));
    if (r) {
        r->e = e;
        r->ref = ref;
        if (futoin_tool_post(e->tool, release_posted, r) != 0) {
            free(r); /* out of memory: the value stays, rather than V8 touched here */
        }
    }
}

static void cleanup_ref(FutoInBinaryValue* v)
{
    release_ref(((const jvtype*)v->type)->e, v->custom_data);
}

/* one of our types that hold a JS value: its JV_* kind, else -1 */
static int jv_kind(const FutoInType* t)
{
    return t && t->cleanup == cleanup_ref ? ((const jvtype*)t)->kind : -1;
}

void jv_init(jsenv* e)
{
    static const FutoInTypeFlags flags[JV_NTYPES] = {
            [JV_OBJ] = FTN_TYPE_CUSTOM_OBJECT,
            [JV_BOXED] = FTN_TYPE_CUSTOM_OBJECT, /* [value] */
            [JV_PACK] = FTN_TYPE_CUSTOM_OBJECT,  /* > 4 values */
            [JV_BYTES] = FTN_TYPE_UINT8 | FTN_TYPE_ARRAY, /* a Buffer, a Uint8Array */
            /* the other typed arrays, as the arrays C gives JS come as them */
            [JV_I8] = FTN_TYPE_INT8 | FTN_TYPE_ARRAY,
            [JV_U8C] = FTN_TYPE_UINT8 | FTN_TYPE_ARRAY,
            [JV_I16] = FTN_TYPE_INT16 | FTN_TYPE_ARRAY,
            [JV_U16] = FTN_TYPE_UINT16 | FTN_TYPE_ARRAY,
            [JV_I32] = FTN_TYPE_INT32 | FTN_TYPE_ARRAY,
            [JV_U32] = FTN_TYPE_UINT32 | FTN_TYPE_ARRAY,
            [JV_F32] = FTN_TYPE_FLOAT | FTN_TYPE_ARRAY,
            [JV_F64] = FTN_TYPE_DOUBLE | FTN_TYPE_ARRAY,
            [JV_I64] = FTN_TYPE_INT64 | FTN_TYPE_ARRAY,
            [JV_U64] = FTN_TYPE_UINT64 | FTN_TYPE_ARRAY,
    };
    for (int k = 0; k < JV_NTYPES; ++k) {
        const FutoInType t = {flags[k], cleanup_ref}; /* const members: copied in */
        memcpy(&e->vt[k].t, &t, sizeof(t));
        e->vt[k].e = e;
        e->vt[k].kind = k;
    }
    e->thread = pthread_self();
}

/* a string UTF-8 cannot carry exactly (lone surrogates): the UTF-8 copy for
 * other languages, and the JS string itself, boxed, for JS receivers */
typedef struct jstr_box
{
    jsenv* e;
    napi_ref box;
    char s[];
} jstr_box;

static void cleanup_str_box(FutoInBinaryValue* v)
{
    jstr_box* b = v->custom_data;
    if (b) {
        release_ref(b->e, b->box);
    }
    free(b);
}

static const FutoInType k_str_box = {FTN_TYPE_STRING, cleanup_str_box};

static int has_replacement_char(const char* s, size_t n)
{
    for (size_t i = 0; i + 2 < n; ++i) {
        if ((unsigned char)s[i] == 0xEF && (unsigned char)s[i + 1] == 0xBF && (unsigned char)s[i + 2] == 0xBD) {
            return 1;
        }
    }
    return 0;
}
static const FutoInType k_num_int = {FTN_TYPE_INT64, NULL};  /* a JS Number */
static const FutoInType k_num_dbl = {FTN_TYPE_DOUBLE, NULL}; /* a JS Number */
static const FutoInType k_bigint = {FTN_TYPE_INT64, NULL};   /* a JS BigInt */
static const FutoInType k_biguint = {FTN_TYPE_UINT64, NULL};  /* a JS BigInt >= 2^63 */
static const FutoInType k_boolean = {FTN_TYPE_BOOL, NULL};
static const FutoInType k_str = {FTN_TYPE_STRING, cleanup_free};
static const FutoInType k_null = {FTN_TYPE_CUSTOM_OBJECT, NULL};
static const FutoInType k_undef = {FTN_TYPE_CUSTOM_OBJECT, NULL};
/* the JV_* kind of a typed array, -1 for a newer kind (an object) */
static int typed_kind(napi_typedarray_type tt)
{
    switch (tt) {
    case napi_int8_array: return JV_I8;
    case napi_uint8_array: return JV_BYTES;
    case napi_uint8_clamped_array: return JV_U8C;
    case napi_int16_array: return JV_I16;
    case napi_uint16_array: return JV_U16;
    case napi_int32_array: return JV_I32;
    case napi_uint32_array: return JV_U32;
    case napi_float32_array: return JV_F32;
    case napi_float64_array: return JV_F64;
    case napi_bigint64_array: return JV_I64;
    case napi_biguint64_array: return JV_U64;
    default: return -1;
    }
}

static int set_ref(napi_env env, napi_value v, int kind, FutoInBinaryValue* out)
{
    napi_ref ref;
    if (napi_create_reference(env, v, 1, &ref) != napi_ok) {
        return -1;
    }
    out->type = &tl_env->vt[kind].t;
    out->custom_data = ref;
    return 0;
}

static int box(napi_env env, napi_value v, FutoInBinaryValue* out)
{
    napi_value arr;
    if (napi_create_array_with_length(env, 1, &arr) != napi_ok || napi_set_element(env, arr, 0, v) != napi_ok) {
        return -1;
    }
    return set_ref(env, arr, JV_BOXED, out);
}

int jv_to_value(napi_env env, napi_value v, FutoInBinaryValue* out)
{
    memset(out, 0, sizeof(*out));
    napi_valuetype t;
    if (napi_typeof(env, v, &t) != napi_ok) {
        return -1;
    }
    switch (t) {
    case napi_undefined:
        out->type = &k_undef;
        return 0;
    case napi_null:
        out->type = &k_null;
        return 0;
    case napi_boolean:
        out->type = &k_boolean;
        return napi_get_value_bool(env, v, &out->b) == napi_ok ? 0 : -1;
    case napi_number: {
        double d;
        if (napi_get_value_double(env, v, &d) != napi_ok) {
            return -1;
        }
        jv_number(d, out);
        return 0;
    }
    case napi_string: {
        size_t n;
        if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok || n > UINT32_MAX - 1) {
            return -1;
        }
        char* s = malloc(n + 1);
        if (!s || napi_get_value_string_utf8(env, v, s, n + 1, &n) != napi_ok) {
            free(s);
            return -1;
        }
        if (has_replacement_char(s, n)) {
            /* U+FFFD: maybe a lone surrogate replaced; keep the original */
            jstr_box* b = malloc(sizeof(jstr_box) + n + 1);
            napi_value arr;
            if (b && napi_create_array_with_length(env, 1, &arr) == napi_ok && napi_set_element(env, arr, 0, v) == napi_ok
                    && napi_create_reference(env, arr, 1, &b->box) == napi_ok) {
                memcpy(b->s, s, n + 1);
                free(s);
                b->e = tl_env;
                out->type = &k_str_box;
                out->cstr = b->s;
                out->custom_data = b;
                out->length = (uint32_t)n;
                return 0;
            }
            free(b);
        }
        out->type = &k_str;
        out->cstr = s;
        out->custom_data = s;
        out->length = (uint32_t)n;
        return 0;
    }
    case napi_bigint: {
        int64_t x;
        bool lossless;
        if (napi_get_value_bigint_int64(env, v, &x, &lossless) == napi_ok && lossless) {
            out->type = &k_bigint;
            out->i64 = x;
            return 0;
        }
        uint64_t u;
        if (napi_get_value_bigint_uint64(env, v, &u, &lossless) == napi_ok && lossless) {
            out->type = &k_biguint;
            out->u64 = u;
            return 0;
        }
        return box(env, v, out);
    }
    case napi_object: {
        /* a typed array (a Buffer too) is the array of its elements for C;
         * a DataView, whose layout is the reader's, an object */
        bool is_ta = false;
        napi_is_typedarray(env, v, &is_ta);
        if (is_ta) {
            napi_typedarray_type tt;
            size_t len;
            void* data;
            int k = -1;
            if (napi_get_typedarray_info(env, v, &tt, &len, &data, NULL, NULL) == napi_ok && len <= UINT32_MAX) {
                k = typed_kind(tt);
            }
            if (k >= 0) {
                if (set_ref(env, v, k, out) != 0) {
                    return -1;
                }
                out->p = data;
                out->length = (uint32_t)len;
                return 0;
            }
        }
        return set_ref(env, v, JV_OBJ, out);
    }
    case napi_function:
    case napi_external:
        return set_ref(env, v, JV_OBJ, out);
    default: /* symbols */
        return box(env, v, out);
    }
}

static napi_value ref_value(napi_env env, const FutoInBinaryValue* v)
{
    napi_value r = NULL;
    napi_get_reference_value(env, (napi_ref)v->custom_data, &r);
    return r;
}

/* a typed array's elements for C as they are now: shrunk or detached since it
 * was passed, C would have read memory that is gone */
static void typed_refresh(napi_env env, FutoInBinaryValue* v)
{
    napi_value ta = ref_value(env, v);
    napi_typedarray_type tt;
    size_t len = 0;
    void* data = NULL;
    if (!ta || napi_get_typedarray_info(env, ta, &tt, &len, &data, NULL, NULL) != napi_ok || !data
            || len > UINT32_MAX) {
        len = 0;
        data = NULL;
    }
    v->p = data;
    v->length = (uint32_t)len;
}

/* the engine is about to call a C step with these values (loop thread) */
void jv_args_hook(void* ctx, FutoInArgs* args)
{
    jsenv* e = ctx;
    FutoInBinaryValue* vs[4] = {&args->arg0, &args->arg1, &args->arg2, &args->arg3};
    napi_handle_scope hs = NULL;
    for (int i = 0; i < 4; ++i) {
        if (jv_kind(vs[i]->type) < JV_BYTES || ((const jvtype*)vs[i]->type)->e != e || e->gone) {
            continue; /* not a typed array of this instance */
        }
        if (!hs && napi_open_handle_scope(e->env, &hs) != napi_ok) {
            return;
        }
        typed_refresh(e->env, vs[i]);
    }
    if (hs) {
        napi_close_handle_scope(e->env, hs);
    }
}

static napi_value typed_copy(napi_env env, napi_typedarray_type tt, size_t esize, const FutoInBinaryValue* v)
{
    void* data;
    napi_value ab, r = NULL;
    size_t n = v->length;
    if (napi_create_arraybuffer(env, n * esize, &data, &ab) != napi_ok) {
        return NULL;
    }
    if (n && v->p) {
        memcpy(data, v->p, n * esize);
    }
    napi_create_typedarray(env, tt, n, ab, 0, &r);
    return r;
}

static napi_value from_int64(napi_env env, int64_t x)
{
    napi_value r = NULL;
    if (x >= -9007199254740991LL && x <= 9007199254740991LL) {
        napi_create_int64(env, x, &r);
    } else {
        napi_create_bigint_int64(env, x, &r);
    }
    return r;
}

/* UTF-32 -> a JS (UTF-16) string; invalid code points become U+FFFD */
static napi_value from_utf32(napi_env env, const char32_t* s, uint32_t n)
{
    napi_value r = NULL;
    char16_t small[256] = {0};
    char16_t* buf = n <= 128 ? small : malloc((size_t)n * 2 * sizeof(char16_t));
    if (!buf) {
        return NULL;
    }
    size_t m = 0;
    for (uint32_t i = 0; i < n; ++i) {
        uint32_t c = (uint32_t)s[i];
        if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
            c = 0xFFFD;
        }
        if (c >= 0x10000) {
            c -= 0x10000;
            buf[m++] = (char16_t)(0xD800 + (c >> 10));
            buf[m++] = (char16_t)(0xDC00 + (c & 0x3FF));
        } else {
            buf[m++] = (char16_t)c;
        }
    }
    napi_create_string_utf16(env, buf, m, &r);
    if (buf != small) {
        free(buf);
    }
    return r;
}

void jv_number(double d, FutoInBinaryValue* out)
{
    if (d == trunc(d) && fabs(d) <= 9007199254740991.0 && !(d == 0 && signbit(d))) {
        out->type = &k_num_int;
        out->i64 = (int64_t)d;
    } else {
        out->type = &k_num_dbl;
        out->d = d;
    }
}

int jv_as_number(const FutoInBinaryValue* v, double* d)
{
    const FutoInType* t = v->type;
    if (t == &k_num_int) {
        *d = (double)v->i64; /* within 2^53 by construction */
        return 1;
    }
    if (t == &k_num_dbl) {
        *d = v->d;
        return 1;
    }
    return 0;
}

napi_value jv_from_value(napi_env env, const FutoInBinaryValue* v)
{
    const FutoInType* t = v->type;
    napi_value r = NULL;
    if (!t || t == &k_undef) {
        napi_get_undefined(env, &r);
        return r;
    }
    if (t == &k_null) {
        napi_get_null(env, &r);
        return r;
    }
    int kind = jv_kind(t);
    if (kind >= 0 && kind != JV_BOXED) {
        return ref_value(env, v);
    }
    if (t == &k_str_box) {
        napi_value arr = NULL;
        napi_get_reference_value(env, ((jstr_box*)v->custom_data)->box, &arr);
        if (arr) {
            napi_get_element(env, arr, 0, &r);
        }
        return r;
    }
    if (kind == JV_BOXED) {
        napi_value arr = ref_value(env, v);
        if (arr) {
            napi_get_element(env, arr, 0, &r);
        }
        return r;
    }
    if (t == &k_bigint) {
        napi_create_bigint_int64(env, v->i64, &r);
        return r;
    }
    if (t == &k_biguint) {
        napi_create_bigint_uint64(env, v->u64, &r);
        return r;
    }
    if (t == &k_num_int) {
        napi_create_double(env, (double)v->i64, &r);
        return r;
    }
    uint8_t base = t->flags & FTN_BASE_TYPE_MASK;
    if (t->flags & FTN_TYPE_ARRAY) {
        switch (base) {
        case FTN_TYPE_UINT8: {
            void* data;
            if (v->p) {
                napi_create_buffer_copy(env, v->length, v->p, &data, &r);
            } else if (napi_create_buffer(env, v->length, &data, &r) == napi_ok && v->length) {
                memset(data, 0, v->length); /* no memory given: zeros, as typed_copy() */
            }
            return r;
        }
        case FTN_TYPE_INT8: return typed_copy(env, napi_int8_array, 1, v);
        case FTN_TYPE_INT16: return typed_copy(env, napi_int16_array, 2, v);
        case FTN_TYPE_UINT16: return typed_copy(env, napi_uint16_array, 2, v);
        case FTN_TYPE_INT32: return typed_copy(env, napi_int32_array, 4, v);
        case FTN_TYPE_UINT32: return typed_copy(env, napi_uint32_array, 4, v);
        case FTN_TYPE_INT64: return typed_copy(env, napi_bigint64_array, 8, v);
        case FTN_TYPE_UINT64: return typed_copy(env, napi_biguint64_array, 8, v);
        case FTN_TYPE_FLOAT: return typed_copy(env, napi_float32_array, 4, v);
        case FTN_TYPE_DOUBLE: return typed_copy(env, napi_float64_array, 8, v);
        case FTN_TYPE_BOOL: {
            if (napi_create_array_with_length(env, v->length, &r) != napi_ok) {
                return NULL;
            }
            const unsigned char* b = v->p; /* any byte from C: not 0 is true; no memory: false */
            for (uint32_t j = 0; j < v->length; ++j) {
                napi_value x;
                napi_get_boolean(env, b && b[j] != 0, &x);
                napi_set_element(env, r, j, x);
            }
            return r;
        }
        case FTN_TYPE_STRING:
        case FTN_TYPE_STRING16:
        case FTN_TYPE_STRING32:
            break; /* arrays of strings: not a binary form JS has */
        default: break;
        }
        napi_get_null(env, &r);
        return r;
    }
    switch (base) {
    case FTN_TYPE_STRING:
        napi_create_string_utf8(env, v->cstr ? v->cstr : "", v->cstr ? v->length : 0, &r);
        return r;
    case FTN_TYPE_STRING16:
        napi_create_string_utf16(env, (const char16_t*)(v->cstr16 ? (const void*)v->cstr16 : u""),
                                 v->cstr16 ? v->length : 0, &r);
        return r;
    case FTN_TYPE_STRING32: return from_utf32(env, v->cstr32, v->cstr32 ? v->length : 0);
    case FTN_TYPE_BOOL: napi_get_boolean(env, v->b, &r); return r;
    case FTN_TYPE_INT8: napi_create_int32(env, v->i8, &r); return r;
    case FTN_TYPE_INT16: napi_create_int32(env, v->i16, &r); return r;
    case FTN_TYPE_INT32: napi_create_int32(env, v->i32, &r); return r;
    case FTN_TYPE_INT64: return from_int64(env, v->i64);
    case FTN_TYPE_UINT8: napi_create_uint32(env, v->u8, &r); return r;
    case FTN_TYPE_UINT16: napi_create_uint32(env, v->u16, &r); return r;
    case FTN_TYPE_UINT32: napi_create_uint32(env, v->u32, &r); return r;
    case FTN_TYPE_UINT64:
        if (v->u64 <= 9007199254740991ULL) {
            napi_create_double(env, (double)v->u64, &r);
        } else {
            napi_create_bigint_uint64(env, v->u64, &r);
        }
        return r;
    case FTN_TYPE_FLOAT: napi_create_double(env, v->f, &r); return r;
    case FTN_TYPE_DOUBLE: napi_create_double(env, v->d, &r); return r;
    default: /* a foreign custom object: its address, for native code */
        return js_addr(env, v->p);
    }
}

int jv_from_args(napi_env env, const FutoInArgs* args, napi_value* argv)
{
    if (!args) {
        return 0;
    }
    if (jv_kind(args->arg0.type) == JV_PACK) {
        argv[0] = ref_value(env, &args->arg0);
        uint32_t n = 0;
        napi_get_array_length(env, argv[0], &n);
        return -(int)n;
    }
    /* by position: an empty slot before a value is undefined */
    int n = 4;
    while (n > 0 && !args->args[n - 1].type) {
        --n;
    }
    for (int i = 0; i < n; ++i) {
        if (args->args[i].type) {
            argv[i] = jv_from_value(env, &args->args[i]);
        } else {
            napi_get_undefined(env, &argv[i]);
        }
    }
    return n;
}

/* argv[0] is an array when n > 4 */
int jv_args_from_js(napi_env env, size_t n, napi_value* argv, FutoInArgs* out)
{
    jv_zero_args(out);
    if (n > 4) {
        return set_ref(env, argv[0], JV_PACK, &out->arg0);
    }
    for (size_t i = 0; i < n; ++i) {
        if (jv_to_value(env, argv[i], &out->args[i]) != 0) {
            for (size_t j = 0; j < i; ++j) {
                futoin_reset_binval(&out->args[j]);
            }
            return -1;
        }
    }
    return 0;
}
