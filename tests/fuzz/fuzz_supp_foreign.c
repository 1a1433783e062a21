/*
 * tests/fuzz/fuzz_supp_foreign.c: the valgrind and LeakSanitizer
 * suppression readers on arbitrary bytes. Beyond "no crash, no leak", it
 * checks the translation's promise: whatever a reader accepts becomes
 * filters that the filter parser accepts (a user's file must never turn
 * into a broken filter), and the printed translation parses back as a
 * filter file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "gate_supp_foreign.h"

static void check_list(const at_supp_list *l)
{
    at_filter_set *set = at_filter_set_new();
    for (size_t i = 0; i < l->n; i++)
        for (size_t j = 0; j < l->v[i].nfilters; j++) {
            at_filter_error err = { 0 };
            if (at_filter_set_add_expr(set, l->v[i].filters[j], "t", &err) != 0) {
                fprintf(stderr, "translation does not parse: %s\n  %s: %s\n", l->v[i].filters[j],
                        err.location, err.message);
                abort();
            }
        }
    at_filter_set_free(set);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        abort();
    at_supp_list_print(out, l);
    fclose(out);
    set = at_filter_set_new();
    at_filter_error err = { 0 };
    if (at_filter_set_add_text(set, text, len, "printed", &err) != 0) {
        fprintf(stderr, "printed translation does not parse: %s: %s\n%s", err.location, err.message,
                text);
        abort();
    }
    at_filter_set_free(set);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    at_supp_list l;
    char *err = NULL;
    (void)at_supp_detect(text, size);
    if (at_supp_read_valgrind("f.supp", text, size, &l, &err) == 0) {
        check_list(&l);
        at_supp_list_free(&l);
    }
    free(err);
    err = NULL;
    if (at_supp_read_lsan("f.supp", text, size, &l, &err) == 0) {
        check_list(&l);
        at_supp_list_free(&l);
    }
    free(err);
    return 0;
}
