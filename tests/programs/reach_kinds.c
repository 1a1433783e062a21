/* tests/programs/reach_kinds.c: one block or structure of each of
 * memcheck's leak kinds, for the reachability tests (compared per kind
 * with valgrind). Arguments pick what to leave at exit:
 *   reachable  100 bytes still pointed to by a global
 *   definite   40 bytes no pointer reaches
 *   indirect   a lost 16-byte node whose only pointer to 200 bytes makes
 *              those indirectly lost
 *   possible   64 bytes a global points into (offset 10) only
 *   cycle      two lost 48-byte blocks pointing at each other
 *   chain=N    a lost list of N 32-byte nodes (1 definite, N-1 indirect)
 *   thread     a block pointed to only from a thread still blocked at exit
 *   joined     88 bytes a thread dropped, its pointer left in the dead
 *              frames of the stack glibc keeps for reuse: lost
 *   libc       glibc's caches: stdout's buffer (a line printed), setlocale's
 *              locales, a stream left open (its FILE is still reachable,
 *              its buffer glibc's), the time zone
 *   exitthread 56 bytes held in a local of main, which waits for a thread
 *              that calls exit: main's live frame is a root, the 40 bytes
 *              the thread lost are not (sized=N, self, dense=N, trees=N: make_*)
 * Every allocation happens in its own function and the stack is scrubbed
 * before main returns, so no stale copy of a pointer stays behind. */
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *keep;       /* reachable */
static char *inside;     /* possible: points into its block */

struct node {
    struct node *next;
    char *child;
};

static __attribute__((noinline)) void make_reachable(void)
{
    keep = malloc(100);
    memset(keep, 'r', 100);
}

static __attribute__((noinline)) void make_definite(void)
{
    char *p = malloc(40);
    memset(p, 'd', 40);
}

static __attribute__((noinline)) void make_indirect(void)
{
    struct node *n = malloc(sizeof *n);
    n->next = NULL;
    n->child = malloc(200);
    memset(n->child, 'i', 200);
}

static __attribute__((noinline)) void make_possible(void)
{
    char *p = malloc(64);
    memset(p, 'p', 64);
    inside = p + 10;
}

static __attribute__((noinline)) void make_cycle(void)
{
    void **a = calloc(6, sizeof *a), **b = calloc(6, sizeof *b);
    a[0] = b;
    b[0] = a;
}

static __attribute__((noinline)) void make_chain(int n)
{
    struct node *head = NULL;
    for (int i = 0; i < n; i++) {
        struct node *x = malloc(sizeof *x * 2);
        x->next = head;
        x->child = NULL;
        head = x;
    }
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *hold(void *arg)
{
    volatile char *mine = malloc(72);
    mine[0] = 1;
    pthread_mutex_lock(&lock);   /* main keeps it locked: blocked at exit */
    (void)arg;
    return (void *)mine;
}

static __attribute__((noinline)) void make_thread(void)
{
    pthread_t t;
    pthread_mutex_lock(&lock);
    pthread_create(&t, NULL, hold, NULL);
    usleep(100000);
}

static void *drop(void *arg)
{
    char *volatile mine = malloc(88);
    mine[0] = 1;
    return arg;
}

static __attribute__((noinline)) void make_joined(void)
{
    pthread_t t;
    pthread_create(&t, NULL, drop, NULL);
    pthread_join(t, NULL);
}

static __attribute__((noinline)) void use_libc(void)
{
    printf("a line\n");
    setlocale(LC_ALL, "C.UTF-8");
    FILE *f = fopen("/proc/self/stat", "r");
    char line[64];
    if (f && fgets(line, sizeof line, f))
        line[0] = 0;
    time_t t = 0;
    struct tm tm;
    localtime_r(&t, &tm);
}

static void *exit_now(void *arg)
{
    (void)arg;
    make_definite();
    exit(0);
}

static __attribute__((noinline)) void make_exitthread(void)
{
    char *volatile held = malloc(56);
    held[0] = 1;
    pthread_t t;
    pthread_create(&t, NULL, exit_now, NULL);
    pthread_join(t, NULL);
}

/* sized=N: N blocks (N <= 1000) of 1, 2, ..., N bytes from one call site,
 * the even-sized ones kept by a global array (reachable), the odd-sized
 * ones lost (definite). (Added last: the tests name the lines above.) */
static char *sized[1000];

static __attribute__((noinline)) char *make_one_sized(size_t n)
{
    char *p = malloc(n);
    memset(p, 's', n);
    return p;
}

static __attribute__((noinline)) void make_sized(int n)
{
    for (int i = 1; i <= n && i <= 1000; i++) {
        char *p = make_one_sized((size_t)i);
        if (i % 2 == 0)
            sized[i - 1] = p;
    }
}

/* far (added last, like sized): pointers that land megabytes away from a block's start, in
 * another 64 KiB region than the start's (reach.c's filter of regions):
 * a global points 3 MiB into one block (possibly lost); another global
 * points at a second block's start, and that block, 3 MiB into it, holds
 * the only pointer to a third (both still reachable). */
static char *far_inside, **far_keep;

static __attribute__((noinline)) void make_far(void)
{
    size_t big = 4u << 20;
    char *a = malloc(big), *c = malloc(big);
    char **b = malloc(big);
    memset(a, 'f', big);
    memset(b, 0, big);
    memset(c, 'f', big);
    far_inside = a + (3u << 20);
    b[(3u << 20) / sizeof *b + 1] = c;
    far_keep = b;
}

/* leaves=N (added last): N blocks of 5 MiB (N <= 200), each mmap'd by
 * glibc in a 4 MiB region of its own, so each takes a leaf of the
 * tracer's shadow store and an excluded range of the scan; the odd ones
 * kept by a global array (reachable), the even ones lost (definite; the
 * last one kept, so that no register holds a lost one's address). */
static char *leaves[200];

static __attribute__((noinline)) void make_leaves(int n)
{
    for (int i = 0; i < n && i < 200; i++) {
        char *p = malloc(5u << 20);
        p[0] = 'l';
        if (i % 2 == 1)
            leaves[i] = p;
    }
}

/* self (added last): pointers into the block that holds them, which the
 * scan need not look up (reach.c's scan_block). 96 bytes kept by a global
 * point at their own start and 40 bytes in (still reachable); 80 bytes a
 * global points 8 bytes into, which point at their own start (possibly
 * lost: a block possibly lost makes nothing reachable, itself neither);
 * a lost 72 bytes pointing at their own start and 16 bytes in, and at
 * 24 bytes nothing else points to (definite, and indirect). */
static void **self_keep;
static char *self_inside;

static __attribute__((noinline)) void make_self(void)
{
    self_keep = calloc(12, sizeof *self_keep);
    self_keep[0] = self_keep;
    self_keep[1] = (char *)self_keep + 40;
    void **possible = calloc(10, sizeof *possible);
    possible[3] = possible;
    self_inside = (char *)possible + 8;
    void **lost = calloc(9, sizeof *lost);
    lost[0] = lost;
    lost[4] = (char *)lost + 16;
    lost[8] = calloc(3, sizeof *lost);
}

/* dense=N (added last; N <= 40000, a multiple of 4): small blocks side by
 * side, so that the scan's grains are its smallest (reach.c's
 * grain_shift), in fours: 16 bytes a global array points at (still
 * reachable, each pointing back at the one before), 32 bytes it points
 * 4 bytes into (possibly lost), and a lost pair of 48 and 64 bytes
 * pointing at each other (definite, indirect). */
static void *dense[40000];

static __attribute__((noinline)) void make_dense(int n)
{
    void **before = NULL;
    for (int i = 0; i + 3 < n && i + 3 < 40000; i += 4) {
        void **kept = calloc(2, 8);
        kept[0] = before;
        before = kept;
        dense[i] = kept;
        dense[i + 1] = (char *)calloc(4, 8) + 4;
        void **lost = calloc(6, 8), **pair = calloc(8, 8);
        lost[0] = pair;
        pair[0] = lost;
    }
}

/* trees=N (N <= 40000): three binary trees of N 32-byte nodes (left,
 * right, a number), each node's children allocated after it: one a
 * global points to (N still reachable), one a global points 8 bytes into
 * (its root possibly lost, and so each node found from it: N possibly
 * lost), one no pointer reaches (its root definitely lost, N - 1
 * indirectly). Most of the marking is then done after the roots, down
 * the trees: the work the exit's second marking thread shares. */
static void **tree_kept;
static char *tree_inner;
static void **tree_nodes[40000];

static __attribute__((noinline)) void **make_tree(int n)
{
    for (int i = 0; i < n; i++) {
        tree_nodes[i] = calloc(4, 8);
        tree_nodes[i][2] = (void *)(long)i;
        if (i > 0)
            tree_nodes[(i - 1) / 2][i % 2 == 0] = tree_nodes[i];
    }
    void **root = tree_nodes[0];
    memset(tree_nodes, 0, sizeof tree_nodes);
    return root;
}

static __attribute__((noinline)) void make_trees(int n)
{
    if (n < 1 || n > 40000)
        return;
    tree_kept = make_tree(n);
    tree_inner = (char *)make_tree(n) + 8;
    make_tree(n);
}

static __attribute__((noinline)) void scrub(void)
{
    volatile char pad[16384];
    for (size_t i = 0; i < sizeof pad; i++)
        pad[i] = 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "reachable") == 0)
            make_reachable();
        else if (strcmp(argv[i], "definite") == 0)
            make_definite();
        else if (strcmp(argv[i], "indirect") == 0)
            make_indirect();
        else if (strcmp(argv[i], "possible") == 0)
            make_possible();
        else if (strcmp(argv[i], "cycle") == 0)
            make_cycle();
        else if (strncmp(argv[i], "chain=", 6) == 0)
            make_chain(atoi(argv[i] + 6));
        else if (strncmp(argv[i], "sized=", 6) == 0)
            make_sized(atoi(argv[i] + 6));
        else if (strcmp(argv[i], "thread") == 0)
            make_thread();
        else if (strcmp(argv[i], "libc") == 0)
            use_libc();
        else if (strncmp(argv[i], "leaves=", 7) == 0)
            make_leaves(atoi(argv[i] + 7));
        else if (strcmp(argv[i], "far") == 0)
            make_far();
        else if (strncmp(argv[i], "dense=", 6) == 0)
            make_dense(atoi(argv[i] + 6));
        else if (strncmp(argv[i], "trees=", 6) == 0)
            make_trees(atoi(argv[i] + 6));
        else if (strcmp(argv[i], "self") == 0)
            make_self();
        else if (strcmp(argv[i], "joined") == 0)
            make_joined();
        else if (strcmp(argv[i], "exitthread") == 0) {
            scrub();
            make_exitthread();
        }
    }
    scrub();
    return 0;
}
