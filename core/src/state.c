/* Per-root state (error_info, last_exception, named variables) and per-step
 * stack() allocations. */
#include "internal.h"

#include <stdalign.h>
#include <string.h>

const char* fflow_info(fflow* fl)
{
    const char* s = fl->info[fl->info_idx].s;
    return s ? s : "";
}

void fflow_set_info(fflow* fl, const char* info)
{
    uint8_t idx = fl->info_idx ^ 1;
    fbuf_set_or(&fl->info[idx], info, "out of memory");
    fl->info_idx = idx;
    ++fl->err_gen;
}

/* the type of a FutoIn error code in last_exception (its text is the flow's) */
const FutoInType futoin_error_code_type = {FTN_TYPE_STRING, NULL};

/* an error `code` starts: last_exception gets it unless a value was set for
 * this error (by a wrapper's mark, or put there since the last error) */
void fflow_note_error(fflow* fl, const char* code)
{
    FutoInBinaryValue* le = &fl->last_exception;
    const int set_for_it = fl->le_fresh || le->type != fl->le_seen_type || le->p != fl->le_seen_p;
    fl->le_fresh = 0;
    if (!le->type || !set_for_it) {
        futoin_reset_binval(le);
        if (fbuf_set(&fl->le_code, code) == 0) {
            le->type = &futoin_error_code_type;
            le->cstr = fl->le_code.s;
            le->length = (uint32_t)strlen(code);
        }
    }
    fl->le_seen_type = le->type;
    fl->le_seen_p = le->p;
    ++fl->err_gen;
}

void* fflow_state_var(
        fflow* fl, void* data, const char* name,
        void* (*allocate)(void*), void (*cleanup)(void*, void*))
{
    /* predefined (spec 1.7): never allocated, whatever is given */
    if (strcmp(name, "error_info") == 0) {
        return (void*)fflow_info(fl);
    }
    if (strcmp(name, "last_exception") == 0) {
        return &fl->last_exception;
    }
    for (fstate_var* v = fl->vars; v; v = v->next) {
        if (strcmp(v->name, name) == 0) {
            return v->value;
        }
    }
    if (!allocate) {
        return NULL;
    }
    fstate_var* v = ftn_calloc(sizeof(*v));
    char* copy = v ? ftn_strdup(name) : NULL;
    if (!copy) {
        ftn_free(v);
        return NULL;
    }
    v->name = copy;
    v->data = data;
    v->cleanup = cleanup;
    v->value = allocate(data);
    if (!v->value) {
        /* nothing was made: nothing to clean up, the next call tries again */
        ftn_free(copy);
        ftn_free(v);
        return NULL;
    }
    v->next = fl->vars;
    fl->vars = v;
    return v->value;
}

void fflow_vars_free(fflow* fl)
{
    /* cleanups may look up other variables: unlink one at a time */
    while (fl->vars) {
        fstate_var* v = fl->vars;
        fl->vars = v->next;
        if (v->cleanup) {
            v->cleanup(v->data, v->value);
        }
        ftn_free(v->name);
        ftn_free(v);
    }
}

#define FALLOC_HDR ((sizeof(falloc) + alignof(max_align_t) - 1) / alignof(max_align_t) * alignof(max_align_t))

size_t fstep_small_item_size(void)
{
    return FALLOC_HDR + FTN_SMALL_ALLOC;
}

void* fstep_stack(fstep* s, size_t size, void (*cleanup)(void*))
{
    if (size > SIZE_MAX - FALLOC_HDR) {
        return NULL;
    }
    falloc* a;
    FutoInAsyncTool* t = s->flow ? s->flow->tool : NULL;
    if (t && size <= FTN_SMALL_ALLOC) {
        a = fpool_get(&t->small_pool);
        if (!a) {
            return NULL;
        }
        /* a constant size is a few stores; a variable one is `rep stos` */
        if (size <= 32) {
            memset(a, 0, FALLOC_HDR + 32);
        } else if (size <= 64) {
            /* two halves: one 96-byte memset would be `rep stos` again */
            memset(a, 0, FALLOC_HDR + 32);
            memset((char*)a + FALLOC_HDR + 32, 0, 32);
        } else {
            memset(a, 0, FALLOC_HDR + size);
        }
        a->pool = t;
    } else {
        a = ftn_calloc(FALLOC_HDR + size);
        if (!a) {
            return NULL;
        }
        a->pool = NULL;
    }
    a->cleanup = cleanup;
    a->next = s->allocs;
    s->allocs = a;
    return (char*)a + FALLOC_HDR;
}

void fstep_free_allocs(fstep* s)
{
    /* newest first, as a stack */
    while (s->allocs) {
        falloc* a = s->allocs;
        s->allocs = a->next;
        if (a->cleanup) {
            a->cleanup((char*)a + FALLOC_HDR);
        }
        if (a->pool) {
            fpool_put(&a->pool->small_pool, a);
        } else {
            ftn_free(a);
        }
    }
}
