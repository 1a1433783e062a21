/* tests/programs/gate_fork.c: a forked child (no exec) leaks 40 bytes from
 * child_work and exits; the parent frees everything, waits and exits with
 * the child's status: the gate judges forked children by default, as
 * memcheck does. Tests check the line number: keep it where it is. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *child_keep;

static void child_work(void)
{
    child_keep = malloc(40); /* line 14 */
    memset(child_keep, 1, 40);
    child_keep = NULL;
}

int main(void)
{
    free(malloc(64));
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        child_work();
        exit(0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return 2;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}
