/* Typed values: JSON encoding <-> FutoInBinaryValue, canonical text form. */
#include "conf.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void free_cleanup(FutoInBinaryValue* v)
{
    free((void*)v->p);
}

#define T(name, flags) static const FutoInType name = {flags, NULL}
T(k_bool, FTN_TYPE_BOOL);
T(k_i8, FTN_TYPE_INT8);
T(k_i16, FTN_TYPE_INT16);
T(k_i32, FTN_TYPE_INT32);
T(k_i64, FTN_TYPE_INT64);
T(k_u8, FTN_TYPE_UINT8);
T(k_u16, FTN_TYPE_UINT16);
T(k_u32, FTN_TYPE_UINT32);
T(k_u64, FTN_TYPE_UINT64);
T(k_f32, FTN_TYPE_FLOAT);
T(k_f64, FTN_TYPE_DOUBLE);
#undef T
#define H(name, flags) static const FutoInType name = {flags, free_cleanup}
H(k_str, FTN_TYPE_STRING);
H(k_str16, FTN_TYPE_STRING16);
H(k_str32, FTN_TYPE_STRING32);
H(k_arr_bool, FTN_TYPE_ARRAY | FTN_TYPE_BOOL);
H(k_arr_i8, FTN_TYPE_ARRAY | FTN_TYPE_INT8);
H(k_arr_i16, FTN_TYPE_ARRAY | FTN_TYPE_INT16);
H(k_arr_i32, FTN_TYPE_ARRAY | FTN_TYPE_INT32);
H(k_arr_i64, FTN_TYPE_ARRAY | FTN_TYPE_INT64);
H(k_arr_u8, FTN_TYPE_ARRAY | FTN_TYPE_UINT8);
H(k_arr_u16, FTN_TYPE_ARRAY | FTN_TYPE_UINT16);
H(k_arr_u32, FTN_TYPE_ARRAY | FTN_TYPE_UINT32);
H(k_arr_u64, FTN_TYPE_ARRAY | FTN_TYPE_UINT64);
H(k_arr_f32, FTN_TYPE_ARRAY | FTN_TYPE_FLOAT);
H(k_arr_f64, FTN_TYPE_ARRAY | FTN_TYPE_DOUBLE);
#undef H

typedef struct scalar_kind
{
    const char* name;
    const FutoInType* type;
    const FutoInType* array;
    size_t size;
} scalar_kind;

static const scalar_kind k_kinds[] = {
        {"bool", &k_bool, &k_arr_bool, sizeof(bool)},
        {"i8", &k_i8, &k_arr_i8, 1},
        {"i16", &k_i16, &k_arr_i16, 2},
        {"i32", &k_i32, &k_arr_i32, 4},
        {"i64", &k_i64, &k_arr_i64, 8},
        {"u8", &k_u8, &k_arr_u8, 1},
        {"u16", &k_u16, &k_arr_u16, 2},
        {"u32", &k_u32, &k_arr_u32, 4},
        {"u64", &k_u64, &k_arr_u64, 8},
        {"f32", &k_f32, &k_arr_f32, 4},
        {"f64", &k_f64, &k_arr_f64, 8},
};

static const scalar_kind* kind_find(const char* name)
{
    for (size_t i = 0; i < sizeof(k_kinds) / sizeof(k_kinds[0]); ++i) {
        if (strcmp(k_kinds[i].name, name) == 0) {
            return &k_kinds[i];
        }
    }
    return NULL;
}

/* integers come as JSON numbers or decimal strings (beyond 2^53) */
static int read_int(const jval* j, int is_signed, int64_t* s, uint64_t* u)
{
    const char* text = j && (j->type == JNUM || j->type == JSTR) ? j->str : NULL;
    if (!text || strpbrk(text, ".eE")) {
        return -1;
    }
    char* end;
    errno = 0;
    if (is_signed) {
        *s = strtoll(text, &end, 10);
    } else {
        if (text[0] == '-') {
            return -1;
        }
        *u = strtoull(text, &end, 10);
    }
    return errno || *end ? -1 : 0;
}

/* floats: JSON numbers, or "NaN", "Infinity", "-Infinity" */
static int read_float(const jval* j, double* d)
{
    if (j && j->type == JNUM) {
        *d = j->num;
        return 0;
    }
    const char* s = json_str(j, NULL);
    if (!s) {
        return -1;
    }
    if (!strcmp(s, "NaN")) {
        *d = NAN;
    } else if (!strcmp(s, "Infinity")) {
        *d = INFINITY;
    } else if (!strcmp(s, "-Infinity")) {
        *d = -INFINITY;
    } else {
        return -1;
    }
    return 0;
}

static int store_scalar(const scalar_kind* k, const jval* j, void* dst)
{
    int64_t s = 0;
    uint64_t u = 0;
    double d = 0;
    const char* n = k->name;
    if (n[0] == 'b') {
        if (!j || j->type != JBOOL) {
            return -1;
        }
        *(bool*)dst = j->b != 0;
        return 0;
    }
    if (n[0] == 'f') {
        if (read_float(j, &d) != 0) {
            return -1;
        }
        if (k->size == 4) {
            *(float*)dst = (float)d;
        } else {
            *(double*)dst = d;
        }
        return 0;
    }
    int is_signed = n[0] == 'i';
    if (read_int(j, is_signed, &s, &u) != 0) {
        return -1;
    }
    switch (k->size) {
    case 1:
        if (is_signed ? (s < INT8_MIN || s > INT8_MAX) : u > UINT8_MAX) {
            return -1;
        }
        *(uint8_t*)dst = is_signed ? (uint8_t)(int8_t)s : (uint8_t)u;
        break;
    case 2:
        if (is_signed ? (s < INT16_MIN || s > INT16_MAX) : u > UINT16_MAX) {
            return -1;
        }
        *(uint16_t*)dst = is_signed ? (uint16_t)(int16_t)s : (uint16_t)u;
        break;
    case 4:
        if (is_signed ? (s < INT32_MIN || s > INT32_MAX) : u > UINT32_MAX) {
            return -1;
        }
        *(uint32_t*)dst = is_signed ? (uint32_t)(int32_t)s : (uint32_t)u;
        break;
    default:
        *(uint64_t*)dst = is_signed ? (uint64_t)s : u;
        break;
    }
    return 0;
}

static size_t utf8_decode(const unsigned char* s, uint32_t* cp)
{
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if ((s[0] & 0xE0) == 0xC0) {
        *cp = ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
        return 2;
    }
    if ((s[0] & 0xF0) == 0xE0) {
        *cp = ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        return 3;
    }
    *cp = ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12)
          | ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    return 4;
}

static void make_string(const char* s, int width, FutoInBinaryValue* out)
{
    size_t n = strlen(s);
    if (width == 8) {
        char* p = malloc(n + 1);
        memcpy(p, s, n + 1);
        out->type = &k_str;
        out->cstr = p;
        out->length = (uint32_t)n;
        return;
    }
    size_t units = 0;
    if (width == 16) {
        char16_t* p = malloc((2 * n + 1) * sizeof(char16_t));
        for (size_t i = 0; i < n;) {
            uint32_t cp;
            i += utf8_decode((const unsigned char*)s + i, &cp);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                p[units++] = (char16_t)(0xD800 + (cp >> 10));
                p[units++] = (char16_t)(0xDC00 + (cp & 0x3FF));
            } else {
                p[units++] = (char16_t)cp;
            }
        }
        p[units] = 0;
        out->type = &k_str16;
        out->cstr16 = p;
    } else {
        char32_t* p = malloc((n + 1) * sizeof(char32_t));
        for (size_t i = 0; i < n;) {
            uint32_t cp;
            i += utf8_decode((const unsigned char*)s + i, &cp);
            p[units++] = cp;
        }
        p[units] = 0;
        out->type = &k_str32;
        out->cstr32 = p;
    }
    out->length = (uint32_t)units;
}

int conf_value_from_json(const jval* j, FutoInBinaryValue* out, char* err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    switch (j->type) {
    case JSTR:
        make_string(j->str, 8, out);
        return 0;
    case JBOOL:
        out->type = &k_bool;
        out->b = j->b != 0;
        return 0;
    case JNUM:
        if (!strpbrk(j->str, ".eE") && j->num >= INT32_MIN && j->num <= INT32_MAX) {
            out->type = &k_i32;
            out->i32 = (int32_t)j->num;
        } else if (!strpbrk(j->str, ".eE")) {
            out->type = &k_i64;
            out->i64 = strtoll(j->str, NULL, 10);
        } else {
            out->type = &k_f64;
            out->d = j->num;
        }
        return 0;
    case JOBJ:
        break;
    default:
        snprintf(err, errlen, "unsupported value");
        return -1;
    }
    if (j->len < 1) {
        snprintf(err, errlen, "empty typed value");
        return -1;
    }
    const char* key = j->keys[0];
    const jval* v = &j->items[0];
    if (!strcmp(key, "str") || !strcmp(key, "str16") || !strcmp(key, "str32")) {
        if (v->type != JSTR) {
            snprintf(err, errlen, "%s needs a string", key);
            return -1;
        }
        make_string(v->str, key[3] ? (key[3] == '1' ? 16 : 32) : 8, out);
        return 0;
    }
    if (!strcmp(key, "array")) {
        const scalar_kind* k = kind_find(json_str(v, ""));
        const jval* items = json_get(j, "items");
        if (!k || !items || items->type != JARR) {
            snprintf(err, errlen, "array needs a scalar type and items");
            return -1;
        }
        char* mem = malloc(items->len * k->size + 1);
        for (size_t i = 0; i < items->len; ++i) {
            if (store_scalar(k, &items->items[i], mem + i * k->size) != 0) {
                free(mem);
                snprintf(err, errlen, "bad %s array item %zu", k->name, i);
                return -1;
            }
        }
        out->type = k->array;
        out->p = mem;
        out->length = (uint32_t)items->len;
        return 0;
    }
    const scalar_kind* k = kind_find(key);
    if (!k || store_scalar(k, v, &out->u64) != 0) {
        snprintf(err, errlen, "bad typed value '%s'", key);
        return -1;
    }
    out->type = k->type;
    return 0;
}

int conf_args_from_json(const jval* list, FutoInArgs* out, char* err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!list || list->type == JNULL) {
        return 0;
    }
    if (list->type != JARR || list->len > 4) {
        snprintf(err, errlen, "success values must be a list of at most 4");
        return -1;
    }
    for (size_t i = 0; i < list->len; ++i) {
        if (conf_value_from_json(&list->items[i], &out->args[i], err, errlen) != 0) {
            for (size_t k = 0; k < i; ++k) {
                futoin_reset_binval(&out->args[k]);
            }
            return -1;
        }
    }
    return 0;
}

/* shortest text that reads back to the same value (like JS and Python) */
static void format_float(double d, int is_float, char* buf, size_t len)
{
    if (isnan(d)) {
        snprintf(buf, len, "NaN");
        return;
    }
    if (isinf(d)) {
        snprintf(buf, len, d > 0 ? "Infinity" : "-Infinity");
        return;
    }
    for (int prec = 1; prec <= 17; ++prec) {
        snprintf(buf, len, "%.*g", prec, d);
        double back = strtod(buf, NULL);
        if (is_float ? (float)back == (float)d : back == d) {
            return;
        }
    }
}

static void format_utf8(uint32_t cp, char** w, char* end)
{
    char tmp[4];
    size_t n;
    if (cp < 0x80) {
        tmp[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        tmp[0] = (char)(0xC0 | (cp >> 6));
        tmp[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        tmp[0] = (char)(0xE0 | (cp >> 12));
        tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        tmp[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        tmp[0] = (char)(0xF0 | (cp >> 18));
        tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        tmp[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    if (*w + n < end) {
        memcpy(*w, tmp, n);
        *w += n;
    }
}

static void format_scalar(uint8_t base, const void* p, char* buf, size_t len)
{
    switch (base) {
    case FTN_TYPE_BOOL: snprintf(buf, len, "%s", *(const bool*)p ? "true" : "false"); break;
    case FTN_TYPE_INT8: snprintf(buf, len, "%d", *(const int8_t*)p); break;
    case FTN_TYPE_INT16: snprintf(buf, len, "%d", *(const int16_t*)p); break;
    case FTN_TYPE_INT32: snprintf(buf, len, "%" PRId32, *(const int32_t*)p); break;
    case FTN_TYPE_INT64: snprintf(buf, len, "%" PRId64, *(const int64_t*)p); break;
    case FTN_TYPE_UINT8: snprintf(buf, len, "%u", *(const uint8_t*)p); break;
    case FTN_TYPE_UINT16: snprintf(buf, len, "%u", *(const uint16_t*)p); break;
    case FTN_TYPE_UINT32: snprintf(buf, len, "%" PRIu32, *(const uint32_t*)p); break;
    case FTN_TYPE_UINT64: snprintf(buf, len, "%" PRIu64, *(const uint64_t*)p); break;
    case FTN_TYPE_FLOAT: format_float(*(const float*)p, 1, buf, len); break;
    case FTN_TYPE_DOUBLE: format_float(*(const double*)p, 0, buf, len); break;
    default: snprintf(buf, len, "?"); break;
    }
}

void conf_value_format(const FutoInBinaryValue* v, char* buf, size_t len)
{
    buf[0] = 0;
    if (!v->type) {
        return;
    }
    uint8_t flags = v->type->flags;
    uint8_t base = flags & FTN_BASE_TYPE_MASK;
    if (flags & FTN_TYPE_ARRAY) {
        size_t n = 0;
        n += (size_t)snprintf(buf + n, len - n, "[");
        for (uint32_t i = 0; i < v->length && n + 2 < len; ++i) {
            char item[64];
            format_scalar(base, (const char*)v->p + i * conf_scalar_size(base), item, sizeof(item));
            n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "", item);
        }
        if (n + 1 < len) {
            snprintf(buf + n, len - n, "]");
        }
        return;
    }
    char* w = buf;
    char* end = buf + len - 1;
    switch (base) {
    case FTN_TYPE_CUSTOM_OBJECT:
        snprintf(buf, len, "<custom>");
        return;
    case FTN_TYPE_STRING:
        snprintf(buf, len, "%s", v->cstr ? v->cstr : "");
        return;
    case FTN_TYPE_STRING16:
        for (uint32_t i = 0; i < v->length; ++i) {
            uint32_t cp = v->cstr16[i];
            if (cp >= 0xD800 && cp < 0xDC00 && i + 1 < v->length) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (v->cstr16[++i] - 0xDC00u);
            }
            format_utf8(cp, &w, end);
        }
        *w = 0;
        return;
    case FTN_TYPE_STRING32:
        for (uint32_t i = 0; i < v->length; ++i) {
            format_utf8(v->cstr32[i], &w, end);
        }
        *w = 0;
        return;
    default:
        format_scalar(base, &v->u64, buf, len);
        return;
    }
}

void conf_args_format(const FutoInArgs* a, char* buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    int first = 1;
    for (int i = 0; i < 4; ++i) {
        if (!a->args[i].type) {
            continue;
        }
        char item[256];
        conf_value_format(&a->args[i], item, sizeof(item));
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", first ? "" : ",", item);
        first = 0;
        if (n >= len) {
            break;
        }
    }
}
