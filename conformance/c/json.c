/* Recursive-descent JSON reader; nesting is bounded by JSON_MAX_DEPTH. */
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 256

typedef struct jparser
{
    const char* p;
    char* err;
    size_t errlen;
    int depth;
} jparser;

static int fail(jparser* ps, const char* msg)
{
    if (ps->err && !ps->err[0]) {
        snprintf(ps->err, ps->errlen, "%s near '%.20s'", msg, ps->p);
    }
    return -1;
}

static void skip_ws(jparser* ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') {
        ++ps->p;
    }
}

static int parse_value(jparser* ps, jval* out);

static void put_utf8(char** w, unsigned cp)
{
    char* o = *w;
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    *w = o;
}

static int hex4(const char* s, unsigned* out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') {
            v |= (unsigned)(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            v |= (unsigned)(c - 'a' + 10);
        } else if (c >= 'A' && c <= 'F') {
            v |= (unsigned)(c - 'A' + 10);
        } else {
            return -1;
        }
    }
    *out = v;
    return 0;
}

static int parse_string(jparser* ps, char** out)
{
    const char* s = ++ps->p;
    size_t cap = 0;
    while (s[cap] && s[cap] != '"') {
        cap += s[cap] == '\\' ? 2 : 1;
    }
    char* buf = malloc(cap * 2 + 8);
    char* w = buf;
    for (;;) {
        char c = *ps->p;
        if (!c) {
            free(buf);
            return fail(ps, "unterminated string");
        }
        ++ps->p;
        if (c == '"') {
            break;
        }
        if (c != '\\') {
            *w++ = c;
            continue;
        }
        c = *ps->p++;
        switch (c) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '/': *w++ = '/'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (hex4(ps->p, &cp) != 0) {
                free(buf);
                return fail(ps, "bad \\u escape");
            }
            ps->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && ps->p[0] == '\\' && ps->p[1] == 'u') {
                unsigned lo;
                if (hex4(ps->p + 2, &lo) == 0 && lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    ps->p += 6;
                }
            }
            put_utf8(&w, cp);
            break;
        }
        default:
            free(buf);
            return fail(ps, "bad escape");
        }
    }
    *w = 0;
    *out = buf;
    return 0;
}

static int parse_container(jparser* ps, jval* out, char close)
{
    if (++ps->depth > JSON_MAX_DEPTH) {
        return fail(ps, "nesting too deep");
    }
    ++ps->p;
    size_t cap = 4;
    out->items = calloc(cap, sizeof(jval));
    if (close == '}') {
        out->keys = calloc(cap, sizeof(char*));
    }
    skip_ws(ps);
    if (*ps->p == close) {
        ++ps->p;
        --ps->depth;
        return 0;
    }
    for (;;) {
        if (out->len == cap) {
            cap *= 2;
            out->items = realloc(out->items, cap * sizeof(jval));
            if (close == '}') {
                out->keys = realloc(out->keys, cap * sizeof(char*));
            }
        }
        skip_ws(ps);
        if (close == '}') {
            if (*ps->p != '"') {
                return fail(ps, "expected a key");
            }
            if (parse_string(ps, &out->keys[out->len]) != 0) {
                return -1;
            }
            skip_ws(ps);
            if (*ps->p++ != ':') {
                return fail(ps, "expected ':'");
            }
        }
        memset(&out->items[out->len], 0, sizeof(jval));
        ++out->len;
        if (parse_value(ps, &out->items[out->len - 1]) != 0) {
            return -1;
        }
        skip_ws(ps);
        if (*ps->p == ',') {
            ++ps->p;
            continue;
        }
        if (*ps->p == close) {
            ++ps->p;
            --ps->depth;
            return 0;
        }
        return fail(ps, "expected ',' or a closing bracket");
    }
}

static int parse_value(jparser* ps, jval* out)
{
    skip_ws(ps);
    char c = *ps->p;
    if (c == '{') {
        out->type = JOBJ;
        return parse_container(ps, out, '}');
    }
    if (c == '[') {
        out->type = JARR;
        return parse_container(ps, out, ']');
    }
    if (c == '"') {
        out->type = JSTR;
        if (parse_string(ps, &out->str) != 0) {
            return -1;
        }
        out->len = strlen(out->str);
        return 0;
    }
    if (!strncmp(ps->p, "true", 4) || !strncmp(ps->p, "false", 5)) {
        out->type = JBOOL;
        out->b = c == 't';
        ps->p += out->b ? 4 : 5;
        return 0;
    }
    if (!strncmp(ps->p, "null", 4)) {
        out->type = JNULL;
        ps->p += 4;
        return 0;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char* end;
        out->type = JNUM;
        out->num = strtod(ps->p, &end);
        size_t n = (size_t)(end - ps->p);
        out->str = malloc(n + 1);
        memcpy(out->str, ps->p, n);
        out->str[n] = 0;
        ps->p = end;
        return 0;
    }
    return fail(ps, "unexpected character");
}

jval* json_parse(const char* text, char* err, size_t errlen)
{
    jparser ps = {text, err, errlen, 0};
    if (err && errlen) {
        err[0] = 0;
    }
    jval* v = calloc(1, sizeof(jval));
    if (parse_value(&ps, v) != 0) {
        json_free(v);
        return NULL;
    }
    skip_ws(&ps);
    if (*ps.p) {
        fail(&ps, "trailing characters");
        json_free(v);
        return NULL;
    }
    return v;
}

jval* json_load_file(const char* path, char* err, size_t errlen)
{
    FILE* f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char* text = malloc((size_t)n + 1);
    size_t got = fread(text, 1, (size_t)n, f);
    fclose(f);
    text[got] = 0;
    jval* v = json_parse(text, err, errlen);
    free(text);
    return v;
}

static void json_free_inner(jval* v)
{
    free(v->str);
    for (size_t i = 0; i < v->len && v->items; ++i) {
        json_free_inner(&v->items[i]);
        if (v->keys) {
            free(v->keys[i]);
        }
    }
    free(v->items);
    free(v->keys);
}

void json_free(jval* v)
{
    if (v) {
        json_free_inner(v);
        free(v);
    }
}

const jval* json_get(const jval* obj, const char* key)
{
    if (!obj || obj->type != JOBJ) {
        return NULL;
    }
    for (size_t i = 0; i < obj->len; ++i) {
        if (strcmp(obj->keys[i], key) == 0) {
            return &obj->items[i];
        }
    }
    return NULL;
}

const char* json_str(const jval* v, const char* dflt)
{
    return v && v->type == JSTR ? v->str : dflt;
}

double json_num(const jval* v, double dflt)
{
    return v && v->type == JNUM ? v->num : dflt;
}
