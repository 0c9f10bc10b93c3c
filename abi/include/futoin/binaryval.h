/*
 * FTN12 v1.14, section 2.7.1: binary data values passed between technologies.
 *
 * Written from the specification text. The layout is fixed by the spec and must
 * not change: x86-64 FutoInBinaryValue is 32 bytes.
 *
 * C11-clean (anonymous unions are standard C11) and usable from C++.
 */
#ifndef FUTOIN_BINARYVAL_H
#define FUTOIN_BINARYVAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
/* char16_t/char32_t/bool are keywords in C++ */
#    if defined(__GNUC__)
/* anonymous structs are a common extension in C++: keep -pedantic quiet */
#        define FUTOIN_ANON __extension__
#    else
#        define FUTOIN_ANON
#    endif
extern "C" {
#else
#    include <stdbool.h>
#    include <uchar.h>
#    define FUTOIN_ANON
#endif

typedef struct FutoInBinaryValue_ FutoInBinaryValue;
typedef struct FutoInType_ FutoInType;
typedef uint8_t FutoInTypeFlags;

enum
{
    FTN_TYPE_CUSTOM_OBJECT = 0x01,
    FTN_TYPE_STRING = 0x02,
    FTN_TYPE_STRING16 = 0x03,
    FTN_TYPE_STRING32 = 0x04,
    FTN_TYPE_BOOL = 0x05,
    FTN_TYPE_INT8 = 0x06,
    FTN_TYPE_INT16 = 0x07,
    FTN_TYPE_INT32 = 0x08,
    FTN_TYPE_INT64 = 0x09,
    FTN_TYPE_UINT8 = 0x0A,
    FTN_TYPE_UINT16 = 0x0B,
    FTN_TYPE_UINT32 = 0x0C,
    FTN_TYPE_UINT64 = 0x0D,
    FTN_TYPE_FLOAT = 0x0E,
    FTN_TYPE_DOUBLE = 0x0F,
    FTN_BASE_TYPE_MASK = 0x0F,
    /* -- */
    FTN_TYPE_ARRAY = 0x10,
    FTN_COMPLEX_TYPE_MASK = 0xF0
};

/*
 * A type descriptor. `cleanup` (may be NULL) releases whatever the value owns
 * (a heap string, an array, a script object). Implementations may extend the
 * structure; code must not assume its size.
 */
struct FutoInType_
{
    const FutoInTypeFlags flags;
    void (*const cleanup)(FutoInBinaryValue* v);
    /* NOTE: extendable by implementation */
};

/*
 * A value holder. `type` NULL means "no value".
 * Strings: NUL-terminated, `length` counts code units without the terminator.
 * Arrays (flags | FTN_TYPE_ARRAY): `p` points to the elements, `length` counts
 * elements.
 */
struct FutoInBinaryValue_
{
    const FutoInType* type;
    union
    {
        const void* p;
        const char* cstr;
        const char16_t* cstr16;
        const char32_t* cstr32;
        bool b;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        float f;
        double d;
    };
    void* custom_data;
    uint32_t length;
};

/* Release what the value owns (through its type's cleanup) and empty it. */
static inline void futoin_reset_binval(FutoInBinaryValue* v)
{
    const FutoInType* tp = v->type;
    if (tp) {
        void (*f)(FutoInBinaryValue*) = tp->cleanup;
        if (f) {
            f(v);
        }
    }

    v->type = 0;
    v->u64 = 0;
    v->custom_data = 0;
    v->length = 0;
}

#ifdef __cplusplus
} /* extern "C" */
#    define FUTOIN_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#    define FUTOIN_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
FUTOIN_STATIC_ASSERT(sizeof(FutoInBinaryValue) == 32, "FutoInBinaryValue layout");
FUTOIN_STATIC_ASSERT(offsetof(FutoInBinaryValue, u64) == 8, "FutoInBinaryValue value offset");
FUTOIN_STATIC_ASSERT(offsetof(FutoInBinaryValue, custom_data) == 16, "FutoInBinaryValue custom_data offset");
FUTOIN_STATIC_ASSERT(offsetof(FutoInBinaryValue, length) == 24, "FutoInBinaryValue length offset");
FUTOIN_STATIC_ASSERT(sizeof(FutoInType) == 16, "FutoInType layout");
#endif

#endif /* FUTOIN_BINARYVAL_H */
