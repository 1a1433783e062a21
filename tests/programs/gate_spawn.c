/* tests/programs/gate_spawn.c: runs its arguments as a child (fork + exec)
 * and leaks one 32-byte block itself: for --follow-children. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void *gate_spawn_keep;

int main(int argc, char **argv)
{
    gate_spawn_keep = malloc(32); /* line 11 */
    gate_spawn_keep = NULL;
    if (argc < 2)
        return 2;
    pid_t pid = fork();
    if (pid == 0) {
        execv(argv[1], argv + 1);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
