/* The reference's binarysteps.h includes "./binaryval.h": code that puts the
 * futoin/ directory itself on its include path must build against ours too. */
#include "binarysteps.h"

int main(void)
{
    FutoInArgs args = {0};
    args.arg0.i32 = 7;
    return args.args[0].i32 == 7 && sizeof(FutoInAsyncStepsAPI) > 0 ? 0 : 1;
}
