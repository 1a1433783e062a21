/*
 * tests/programs/tracer_dlopen.c: dlopen a library that allocates, free
 * the block, dlclose it; then the same with each further library given.
 * Usage: tracer_dlopen [--keep] LIBRARY... Prints the blocks' addresses as
 * "dlibN ADDRESS" (N from 1). With --keep the blocks are not freed.
 * tracer_dlopen --fork LIBRARY: loads the library and keeps a block from
 * it, forks; the child keeps another block from the same call, closes the
 * library and exits. Prints "child PID" and the child's block as "dlib2".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *open_lib(const char *path, void *(**fn)(void))
{
    void *h = dlopen(path, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        exit(1);
    }
    *fn = (void *(*)(void))dlsym(h, "dlib_alloc");
    return h;
}

/* Both blocks come from one call, so with the same frames. */
static int fork_child_closes(const char *path)
{
    void *(*fn)(void);
    void *h = open_lib(path, &fn);
    for (int round = 1;; round++) {
        void *p = fn();
        printf("dlib%d %p\n", round, p);
        if (round == 2) {   /* the child */
            dlclose(h);
            exit(0);
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid > 0) {
            int status;
            if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return 1;
            dlclose(h);
            return 0;
        }
        printf("child %d\n", (int)getpid());
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--fork") == 0)
        return fork_child_closes(argv[2]);
    int keep = argc > 1 && strcmp(argv[1], "--keep") == 0;
    if (argc < 2 + keep)
        return 2;
    for (int i = 1 + keep; i < argc; i++) {
        void *(*fn)(void);
        void *h = open_lib(argv[i], &fn);
        void *p = fn();
        printf("dlib%d %p\n", i - keep, p);
        if (!keep)
            free(p);
        dlclose(h);
    }
    return 0;
}
