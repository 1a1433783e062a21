/*
 * tests/fuzz/fuzz_resolve_disk.c: libFuzzer target for the resolver's
 * cache files (postproc/resolve/resolve_disk.c). The input is a cache file's text
 * for a fixed key: it must be rejected whole or accepted, never crash; an
 * accepted file written back must read back to the same text (what is
 * trusted is exactly what a writer would have written).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolve_disk.h"

#define KEY "fuzz\tmodule=/lib/libx.so"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* No directory is read or written: "/nonexistent" holds no file. */
    at_rdisk *d = at_rdisk_open("/nonexistent/alloctrace-fuzz", "libx.so", KEY, 1000);
    if (at_rdisk_parse(d, (const char *)data, size) == 0) {
        char *text = at_rdisk_format(d);
        at_rdisk *again = at_rdisk_open("/nonexistent/alloctrace-fuzz", "libx.so", KEY, 1000);
        if (at_rdisk_parse(again, text, strlen(text)) != 0 || at_rdisk_count(again) != at_rdisk_count(d))
            abort();
        char *text2 = at_rdisk_format(again);
        if (strcmp(text, text2) != 0)
            abort();
        free(text2);
        free(text);
        at_rdisk_free(again);
    }
    at_rdisk_free(d);
    return 0;
}
