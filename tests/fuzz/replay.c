/*
 * tests/fuzz/replay.c: runs a fuzz target over every file of its corpus
 * (AT_CORPUS_DIR), so `make check` replays what fuzzing found without
 * needing clang or libFuzzer. Built with ASan+UBSan: a crash fails the test.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(void)
{
    DIR *d = opendir(AT_CORPUS_DIR);
    if (!d) {
        fprintf(stderr, "replay: no corpus at %s\n", AT_CORPUS_DIR);
        return 1;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", AT_CORPUS_DIR, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
        size_t got = fread(buf, 1, (size_t)(len > 0 ? len : 0), f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, got);
        free(buf);
        n++;
    }
    closedir(d);
    printf("replayed %d corpus file(s) from %s\n", n, AT_CORPUS_DIR);
    return n > 0 ? 0 : 1;
}
