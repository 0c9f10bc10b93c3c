/* Allocation: one process-wide hook, pools that never return memory while a
 * tool lives (so steady-state steps allocate nothing) and reusable buffers. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static FutoInAllocator g_alloc = {malloc, realloc, free};

void futoin_set_allocator(const FutoInAllocator* alloc)
{
    if (alloc && alloc->malloc_fn && alloc->realloc_fn && alloc->free_fn) {
        g_alloc = *alloc;
    } else {
        g_alloc.malloc_fn = malloc;
        g_alloc.realloc_fn = realloc;
        g_alloc.free_fn = free;
    }
}

void* ftn_malloc(size_t size)
{
    return g_alloc.malloc_fn(size ? size : 1);
}

void* ftn_calloc(size_t size)
{
    void* p = ftn_malloc(size);
    if (p) {
        memset(p, 0, size);
    }
    return p;
}

void* ftn_realloc(void* p, size_t size)
{
    return g_alloc.realloc_fn(p, size ? size : 1);
}

void ftn_free(void* p)
{
    if (p) {
        g_alloc.free_fn(p);
    }
}

char* ftn_strdup(const char* s)
{
    size_t n = strlen(s) + 1;
    char* r = ftn_malloc(n);
    if (r) {
        memcpy(r, s, n);
    }
    return r;
}

int fbuf_set(fbuf* b, const char* s)
{
    if (!s) {
        s = "";
    }
    size_t n = strlen(s) + 1;
    if (n > b->cap) {
        size_t cap = n < 32 ? 32 : n;
        char* p = ftn_realloc(b->cap ? b->s : NULL, cap); /* cap 0: s is a literal or NULL */
        if (!p) {
            return -1;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s, s, n);
    return 0;
}

void fbuf_set_or(fbuf* b, const char* s, const char* fallback)
{
    if (fbuf_set(b, s) != 0 && fbuf_set(b, fallback) != 0) {
        /* no buffer at all (a fallback fits any): the literal, not owned */
        b->s = (char*)fallback;
    }
}

void fbuf_free(fbuf* b)
{
    if (b->cap) {
        ftn_free(b->s);
    }
    b->s = NULL;
    b->cap = 0;
}

void fpool_init(fpool* p, size_t item_size, size_t link_off, size_t per_chunk)
{
    memset(p, 0, sizeof(*p));
    p->item_size = item_size;
    p->link_off = link_off;
    p->per_chunk = per_chunk;
}

#define FPOOL_LINK(p, item) (*(void**)((char*)(item) + (p)->link_off))

static int fpool_grow(fpool* p)
{
    void** chunks = ftn_realloc(p->chunks, (p->nchunks + 1) * sizeof(void*));
    if (!chunks) {
        return -1;
    }
    p->chunks = chunks;
    char* mem = ftn_calloc(p->item_size * p->per_chunk);
    if (!mem) {
        return -1;
    }
    p->chunks[p->nchunks++] = mem;
    for (size_t i = p->per_chunk; i-- > 0;) {
        void* item = mem + i * p->item_size;
        FPOOL_LINK(p, item) = p->free_list;
        p->free_list = item;
    }
    return 0;
}

void* fpool_get(fpool* p)
{
    if (FTN_UNLIKELY(!p->free_list) && fpool_grow(p) != 0) {
        return NULL;
    }
    void* item = p->free_list;
    p->free_list = FPOOL_LINK(p, item);
    return item;
}

void fpool_put(fpool* p, void* item)
{
    FPOOL_LINK(p, item) = p->free_list;
    p->free_list = item;
}

void fpool_destroy(fpool* p)
{
    for (size_t i = 0; i < p->nchunks; ++i) {
        ftn_free(p->chunks[i]);
    }
    ftn_free(p->chunks);
    p->chunks = NULL;
    p->nchunks = 0;
    p->free_list = NULL;
}
