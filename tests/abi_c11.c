/* The ABI headers alone compile as strict C11 (-pedantic -Werror). */
#include <futoin/binarysteps.h>
#include <futoin/binaryval.h>

int main(void)
{
    FutoInArgs args = {0};
    futoin_reset_binval(&args.arg0);
    return args.args[0].type != 0;
}
