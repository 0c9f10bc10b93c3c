// The ABI and core headers compile as C++ (-pedantic) with the same layout.
#include <futoin/core.h>

static_assert(sizeof(FutoInBinaryValue) == 32, "FutoInBinaryValue");
static_assert(sizeof(FutoInArgs) == 128, "FutoInArgs");
static_assert(sizeof(FutoInHandle) == 24, "FutoInHandle");
static_assert(sizeof(FutoInAsyncStepsAPI) == 200, "FutoInAsyncStepsAPI");

int main()
{
    FutoInAsyncTool* tool = futoin_tool_new();
    FutoInAsyncSteps* as = futoin_steps_new(tool);
    FutoInBinaryValue v{};
    futoin_reset_binval(&v);
    int ok = as->api->isValid(as);
    as->api->free(as);
    futoin_tool_free(tool);
    return ok == 1 ? 0 : 1;
}
