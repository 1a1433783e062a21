/* tests/programs/gate_fork.c: a forked child (no exec) leaks 40 bytes from
 * child_work and exits; the parent frees everything, waits and exits with
 * the child's status: the gate judges forked children by default, as
 * memcheck does. Tests check the line number: keep it where it is.
 * "term": the child waits instead, and the parent stops it with SIGTERM (a
 * pool terminating its worker); "segv": the child crashes. The parent
 * exits 0 either way. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *child_keep;

static void child_work(void)
{
    child_keep = malloc(40); /* line 18 */
    memset(child_keep, 1, 40);
    child_keep = NULL;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "";
    free(malloc(64));
    int ready[2];
    if (pipe(ready) != 0)
        return 2;
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        child_work();
        if (strcmp(how, "segv") == 0)
            raise(SIGSEGV);
        if (strcmp(how, "term") == 0) {
            char c = 1;
            if (write(ready[1], &c, 1) != 1)
                _exit(2);
            for (;;)
                pause();
        }
        exit(0);
    }
    if (strcmp(how, "term") == 0) {
        char c;
        if (read(ready[0], &c, 1) != 1)
            return 2;
        kill(pid, SIGTERM);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return 2;
    if (how[0])
        return 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}
