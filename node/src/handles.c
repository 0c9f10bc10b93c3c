/*
 * The handle table: JS names a FutoInAsyncSteps* by a Number carrying a slot
 * and its generation (slot | gen << 21: a small integer, which V8 passes
 * without allocating), so a handle kept after its step ended is recognised
 * and refused instead of dereferenced. Freed slots are reused oldest first,
 * so a generation comes back only after 1024 reuses of every free slot.
 */
#include "addon.h"

#include <stdlib.h>
#include <sys/mman.h>

#define SLOT_BITS JH_SLOT_BITS
#define SLOT_MASK (JH_SLOTS - 1)
#define GEN_MASK ((1u << (31 - JH_SLOT_BITS)) - 1) /* slot | gen << 21 stays a positive int32 */

uint32_t jh_alloc(jsenv* e, FutoInAsyncSteps* bsi, jroot* root, uint8_t kind)
{
    uint32_t s = e->free_slot;
    if (s && e->nslots >= 64) {
        --e->nfree;
        e->free_slot = e->slots[s].next_free;
        if (!e->free_slot) {
            e->free_tail = 0;
        }
    } else {
        uint32_t max = e->maxslots ? e->maxslots : JH_SLOTS;
        if (e->nslots >= max) {
            return 0; /* every slot in use */
        }
        if (!e->slots) {
            /* the whole table at once, as address space: pages are backed as
             * slots reach them, and it never moves, so a slot pointer held
             * across a call that runs JS (a cancel handler takes handles)
             * stays valid */
            void* n = mmap(NULL, (size_t)JH_SLOTS * sizeof(hslot), PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (n == MAP_FAILED) {
                return 0;
            }
            e->slots = n; /* zero-filled: every slot HK_FREE */
            e->nslots = 1; /* slot 0 is never handed out */
        }
        s = e->nslots++;
        e->slots[s].gen = 1;
    }
    hslot* h = &e->slots[s];
    h->bsi = bsi;
    h->root = root;
    if (root) {
        root->seen = 0; /* its flow moves */
    }
    h->kind = kind;
    h->frag = NULL;
    h->next_free = 0;
    if (e->live) {
        e->live[s] = (int32_t)(h->gen << SLOT_BITS | s);
        ++e->gens[s]; /* the handle's 10 generation bits come back after 1024 reuses */
    }
    return s;
}

uint32_t jh_alloc_step(jsenv* e, FutoInAsyncSteps* bsi, jroot* root, uint8_t kind)
{
    uint32_t max = e->maxslots ? e->maxslots : JH_SLOTS;
    if (max - e->nslots + e->nfree <= JH_RESERVE) {
        return 0;
    }
    return jh_alloc(e, bsi, root, kind);
}

void jh_free(jsenv* e, uint32_t s)
{
    hslot* h = &e->slots[s];
    h->kind = HK_FREE;
    if (e->live) {
        e->live[s] = 0;
    }
    h->bsi = NULL;
    h->root = NULL;
    h->gen = (h->gen + 1) & GEN_MASK;
    if (!h->gen) {
        h->gen = 1;
    }
    h->next_free = 0;
    if (e->free_tail) {
        e->slots[e->free_tail].next_free = s;
    } else {
        e->free_slot = s;
    }
    e->free_tail = s;
    ++e->nfree;
}

double jh_id(jsenv* e, uint32_t s)
{
    return (double)(e->slots[s].gen << SLOT_BITS | s);
}

napi_status jh_new_id(jsenv* e, uint32_t s, napi_value* out)
{
    return napi_create_int32(e->env, (int32_t)(e->slots[s].gen << SLOT_BITS | s), out);
}

/* NULL (nothing thrown) when the handle is not a live one of `kinds` */
hslot* jh_get(jsenv* e, napi_value v, int kinds)
{
    int32_t i;
    if (napi_get_value_int32(e->env, v, &i) != napi_ok || i <= 0) {
        return NULL;
    }
    uint32_t u = (uint32_t)i;
    uint32_t s = (uint32_t)(u & SLOT_MASK);
    uint32_t g = (uint32_t)(u >> SLOT_BITS);
    if (!s || s >= e->nslots) {
        return NULL;
    }
    hslot* h = &e->slots[s];
    if (h->gen != g || h->kind == HK_FREE || !(kinds & (1 << h->kind))) {
        return NULL;
    }
    jr_touch(e, h->root);
    return h;
}
