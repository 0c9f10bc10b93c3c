/* Layout of the FTN12 binary interface (spec 2.7) and futoin_reset_binval. */
#include "helpers.h"

static void layout_matches_spec(void** state)
{
    (void)state;
    assert_int_equal(sizeof(FutoInBinaryValue), 32);
    assert_int_equal(offsetof(FutoInBinaryValue, custom_data), 16);
    assert_int_equal(offsetof(FutoInBinaryValue, length), 24);
    assert_int_equal(sizeof(FutoInArgs), 128);
    assert_int_equal(offsetof(FutoInArgs, arg3), 96);
    assert_int_equal(sizeof(FutoInHandle), 24);
    assert_int_equal(sizeof(FutoInAsyncStepsAPI), 200);
    assert_int_equal(sizeof(FutoInSyncAPI), 16);
}

static void slots_in_spec_order(void** state)
{
    (void)state;
    const FutoInAsyncStepsAPI* api = g_fx.root->api;
    /* the named slots alias funcs[] at the spec's indices */
    assert_int_equal(offsetof(FutoInAsyncStepsAPI, add), 0 * sizeof(void*));
    assert_int_equal(offsetof(FutoInAsyncStepsAPI, success), 4 * sizeof(void*));
    assert_int_equal(offsetof(FutoInAsyncStepsAPI, execute), 13 * sizeof(void*));
    assert_int_equal(offsetof(FutoInAsyncStepsAPI, free), 19 * sizeof(void*));
    assert_int_equal(offsetof(FutoInAsyncStepsAPI, is_same_thread), 24 * sizeof(void*));
    assert_int_equal(offsetof(FutoInSyncAPI, unlock), sizeof(void*));
    for (int i = 0; i < 25; ++i) {
        assert_non_null(api->funcs[i]);
    }
}

static void type_flags_match_spec(void** state)
{
    (void)state;
    assert_int_equal(FTN_TYPE_CUSTOM_OBJECT, 0x01);
    assert_int_equal(FTN_TYPE_STRING32, 0x04);
    assert_int_equal(FTN_TYPE_UINT64, 0x0D);
    assert_int_equal(FTN_TYPE_DOUBLE, 0x0F);
    assert_int_equal(FTN_TYPE_ARRAY, 0x10);
    assert_int_equal(FTN_COMPLEX_TYPE_MASK, 0xF0);
}

static void reset_binval_calls_cleanup_and_zeroes(void** state)
{
    (void)state;
    g_heap_cleanups = 0;
    FutoInBinaryValue v = val_heap_str("x");
    v.custom_data = &v;
    futoin_reset_binval(&v);
    assert_int_equal(g_heap_cleanups, 1);
    assert_null(v.type);
    assert_int_equal(v.u64, 0);
    assert_null(v.custom_data);
    assert_int_equal(v.length, 0);
    futoin_reset_binval(&v); /* empty: no cleanup */
    assert_int_equal(g_heap_cleanups, 1);
}

static void version_queries(void** state)
{
    (void)state;
    assert_int_equal(futoin_abi_version(), FUTOIN_ABI_VERSION);
    assert_string_equal(futoin_version(), FUTOIN_VERSION_STRING);
    assert_true(futoin_steps_is_native(g_fx.root));
    assert_ptr_equal(futoin_steps_tool(g_fx.root), g_fx.tool);
    FutoInAsyncSteps foreign = {g_fx.root->api};
    (void)foreign;
    assert_false(futoin_steps_is_native(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            T(layout_matches_spec),
            T(slots_in_spec_order),
            T(type_flags_match_spec),
            T(reset_binval_calls_cleanup_and_zeroes),
            T(version_queries),
    };
    return cmocka_run_group_tests_name("abi", tests, NULL, NULL);
}
