/* tests/programs/filter_config.c: one leak site of filter_app (100 bytes). */
#include <stdlib.h>

__attribute__((noinline)) void *config_load(void)
{
    return malloc(100);
}
