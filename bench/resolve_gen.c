/*
 * bench/resolve_gen.c: the traces of bench/resolve. Reads "MODULE BASE"
 * lines (modules file) and "MODULE_INDEX FILE_ADDRESS" candidate call sites
 * (sites file), writes a trace of CALLS calls over STACKS random stacks of
 * DEPTH frames, and, with -a DIR, each module's distinct looked-up
 * addresses (ADDR - 1 - BASE) to DIR/addrs.N for eu-addr2line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: resolve_gen MODULES SITES CALLS STACKS DEPTH [ADDR_DIR]\n");
        return 2;
    }
    FILE *mf = fopen(argv[1], "r"), *sf = fopen(argv[2], "r");
    if (!mf || !sf) {
        perror("resolve_gen");
        return 1;
    }
    long calls = atol(argv[3]), nstacks = atol(argv[4]), depth = atol(argv[5]);
    char paths[64][4096];
    unsigned long long bases[64];
    int n = 0;
    while (n < 64 && fscanf(mf, "%4095s %llu", paths[n], &bases[n]) == 2)
        n++;
    size_t ns = 0, cap = 1024;
    int *sm = malloc(cap * sizeof *sm);
    unsigned long long *sa = malloc(cap * sizeof *sa);
    int m;
    unsigned long long a;
    while (fscanf(sf, "%d %llu", &m, &a) == 2) {
        if (ns == cap) {
            cap *= 2;
            sm = realloc(sm, cap * sizeof *sm);
            sa = realloc(sa, cap * sizeof *sa);
        }
        sm[ns] = m;
        sa[ns++] = a;
    }
    if (ns == 0)
        return 1;
    srand(42);
    size_t *picks = malloc((size_t)(nstacks * depth) * sizeof *picks);
    char *used = calloc(ns, 1);
    for (long i = 0; i < nstacks * depth; i++)
        picks[i] = (size_t)rand() % ns;
    printf("version=2.0, arch=x86_64, timestamp=2026.01.01 00:00:00, process=bench, pid=1, "
           "backtrace depth=32, origin=bench, \n<1> : memory (memory allocation in bytes)\n");
    for (int i = 0; i < n; i++)
        printf(": %s => 0x%llx-0x%llx\n", paths[i], bases[i], bases[i] + 0xf00000);
    for (long c = 0; c < calls; c++) {
        printf("%ld. malloc(%ld) = 0x%lx\n", c + 1, 16 + c % 100, 0x10000000L + 16 * c);
        const size_t *p = &picks[(c % nstacks) * depth];
        for (long d = 0; d < depth; d++)
            printf("\t0x%llx\n", bases[sm[p[d]]] + sa[p[d]]);
        printf("\n");
    }
    if (argc == 7) {
        for (long i = 0; i < nstacks * depth && i < calls * depth; i++)
            used[picks[i]] = 1;
        for (int i = 0; i < n; i++) {
            char name[4200];
            snprintf(name, sizeof name, "%s/addrs.%d", argv[6], i);
            FILE *f = fopen(name, "w");
            for (size_t k = 0; f && k < ns; k++)
                if (used[k] && sm[k] == i)
                    fprintf(f, "0x%llx\n", sa[k] - 1);
            if (f)
                fclose(f);
        }
    }
    return 0;
}
