/*
 * preload/process/attach.c: tracing a process that was started without
 * the tracer (`alloctrace -p PID`), and leaving it (`--detach`, Ctrl-C).
 *
 * The launcher has gdb load liballoctrace-attach.so into the process
 * (dlopen) and call at_attach(SETTINGS), later at_detach(); each answers
 * one line, "ok ..." or "error REASON", which gdb prints and the launcher
 * reads. Decisions:
 *
 * - No LD_PRELOAD interposition exists in a running process, so every
 *   loaded object's slots (GOT) for the malloc family are pointed at the
 *   hooks of hooks.c (hook/got.c rewrites them), and those for dlopen at
 *   a wrapper that does the same for the objects a dlopen brings, and for
 *   dlclose at maps.c's (which forgets an unloaded object's ranges).
 *   heaptrack's attach works the same way. The tracer's own object and
 *   the loader are left alone.
 * - The real functions are what the program's calls reached: the symbol
 *   of the global scope (an allocator linked into the executable
 *   included), or the C library's when that is an executable's PLT entry
 *   (a program that takes malloc's address).
 * - Detach comes through the control path (control.c's detach verb, sent
 *   by `alloctrace --detach` or Ctrl-C on `alloctrace -p` with
 *   launcher/alloctrace-ctl: no gdb), or gdb calling at_detach where the
 *   control thread is off.
 * - Every rewritten slot is remembered with what it held. Detach puts the
 *   old value back only where the slot still holds our hook and its object
 *   is still loaded (one dlclosed meanwhile is not written to), then writes
 *   everything, ends the writer thread and closes the trace
 *   (at_stop_late). A thread already inside a hook then finishes its call
 *   into the real allocator; its record is not written (the writer is
 *   sealed). The library stays loaded: code of it may still be on a
 *   thread's stack, and the next attach reuses it.
 * - A failed attach puts every slot back, removes the trace it created and
 *   leaves the process as it was: the answer says why (at_warn's lines
 *   are captured for it, never written on the program's stderr).
 * - Full mode only, from the moment of attach: a release of a block
 *   allocated before has no allocation in the trace. A persistent comment
 *   says so; the post-processor pairs nothing with such a release and the
 *   report counts them (docs/TEXT_FORMAT.md).
 * - Known limits (docs/tracer.md): a dlopen by an object with its own
 *   RUNPATH searches the tracer's paths (the wrapper is the caller); an
 *   object loaded without dlopen's symbol (glibc's own NSS or iconv
 *   modules) is redirected at the next dlopen or attach only.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tracer.h"

static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;
static char answer[PATH_MAX + 512];
static char settings_copy[16384];
static int attached;
static char trace_path[PATH_MAX];   /* the attach's trace, for detach's answer */

/* ---- the functions redirected ------------------------------------------- */

static void *attach_dlopen(const char *file, int flags);
static void *(*real_dlopen)(const char *, int);

static struct redirect {
    const char *name;
    void *hook;     /* ours: the hook of hooks.c, found in our own object */
} redirects[] = {
    { "malloc", NULL }, { "calloc", NULL }, { "realloc", NULL }, { "reallocarray", NULL },
    { "free", NULL }, { "posix_memalign", NULL }, { "aligned_alloc", NULL },
    { "memalign", NULL }, { "valloc", NULL }, { "pvalloc", NULL }, { "dlclose", NULL },
    { "dlopen", (void *)attach_dlopen },
};
#define NREDIRECTS (sizeof redirects / sizeof *redirects)

static uintptr_t self_base;

static void *hook_for(const char *name)
{
    for (size_t i = 0; i < NREDIRECTS; i++)
        if (strcmp(name, redirects[i].name) == 0)
            return redirects[i].hook;
    return NULL;
}

/* What the program's own call of `name` reaches (see the top comment). */
static void *program_symbol(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    Dl_info di;
    if (p && dladdr(p, &di) && di.dli_saddr == p)
        return p;
    void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    void *q = libc ? dlsym(libc, name) : NULL;
    return q ? q : p;
}

/* Our own hooks' addresses: a reference by name from this object would
 * bind to the program's functions (we are not in the global scope). */
static int find_self(void)
{
    Dl_info di;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)find_self, &di, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return -1;
    self_base = lm->l_addr;
    void *self = dlopen(lm->l_name, RTLD_NOLOAD | RTLD_LAZY);
    if (!self)
        return -1;
    for (size_t i = 0; i < NREDIRECTS; i++)
        if (!redirects[i].hook && !(redirects[i].hook = dlsym(self, redirects[i].name)))
            return -1;
    real_dlopen = (void *(*)(const char *, int))program_symbol("dlopen");
    return real_dlopen ? 0 : -1;
}

/* ---- the slots rewritten ------------------------------------------------ */

struct slot {
    void **slot;
    void *orig;     /* what it held */
    void *hook;
};
static struct slot *slots;   /* mmap'd: the tracer allocates nothing of the program's */
static size_t nslots, slots_cap;
static char failed_object[PATH_MAX];
static int failed_errno;

static int remember(void **slot, void *orig, void *hook)
{
    for (size_t i = 0; i < nslots; i++)
        if (slots[i].slot == slot) {   /* an object loaded again at the same place */
            slots[i].orig = orig;
            slots[i].hook = hook;
            return 0;
        }
    if (nslots == slots_cap) {
        size_t cap = slots_cap ? slots_cap * 2 : 512;
        void *m = mmap(NULL, cap * sizeof *slots, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        if (slots) {
            memcpy(m, slots, nslots * sizeof *slots);
            munmap(slots, slots_cap * sizeof *slots);
        }
        slots = m;
        slots_cap = cap;
    }
    slots[nslots++] = (struct slot){ slot, orig, hook };
    return 0;
}

static int patch_slot(const struct at_got *g, void **slot, const char *name, void *arg)
{
    (void)arg;
    void *hook = hook_for(name);
    if (!hook)
        return 0;
    void *cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (cur == hook)
        return 0;
    if (remember(slot, cur, hook) != 0 || at_got_store(g, slot, hook) != 0) {
        failed_errno = errno;
        return -1;
    }
    return 0;
}

/* The objects never redirected: the tracer itself, the loader. */
static int left_alone(const struct dl_phdr_info *info)
{
    const char *n = info->dlpi_name;
    return info->dlpi_addr == self_base || (n && strstr(n, "/ld-linux"));
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    struct at_got g;
    if (left_alone(info) || at_got_open(&g, info) != 0)
        return 0;
    if (at_got_each(&g, patch_slot, NULL) != 0) {
        snprintf(failed_object, sizeof failed_object, "%s",
                 info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "the executable");
        return 1;
    }
    return 0;
}

/* -1 when a slot could not be rewritten (failed_object says where). */
static int patch_all(void)
{
    return dl_iterate_phdr(patch_object, NULL) ? -1 : 0;
}

static int covers(const struct dl_phdr_info *info, uintptr_t a)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz)
            return 1;
    }
    return 0;
}

/* Puts back the slots of one loaded object that still hold our hooks. */
static int restore_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    struct at_got g;
    if (left_alone(info) || at_got_open(&g, info) != 0)
        return 0;
    for (size_t i = 0; i < nslots; i++) {
        struct slot *s = &slots[i];
        if (s->slot && covers(info, (uintptr_t)s->slot)) {
            if (__atomic_load_n(s->slot, __ATOMIC_ACQUIRE) == s->hook)
                at_got_store(&g, s->slot, s->orig);
            s->slot = NULL;
        }
    }
    return 0;
}

/* Slots of objects unloaded meanwhile are forgotten, not written to. */
static void restore_all(void)
{
    dl_iterate_phdr(restore_object, NULL);
    nslots = 0;
}

/* Objects a dlopen brought (with their dependencies) are redirected before
 * it returns, so their constructors' later calls are traced. */
static void *attach_dlopen(const char *file, int flags)
{
    void *h = real_dlopen(file, flags);
    if (__atomic_load_n(&attached, __ATOMIC_ACQUIRE)) {
        int e = errno, saved = at_guard;
        at_guard = 1;
        pthread_mutex_lock(&attach_lock);
        if (attached && patch_all() != 0)
            at_warn(failed_object, ": cannot redirect its allocations (a dlopen'd object): ",
                    strerror(failed_errno));
        pthread_mutex_unlock(&attach_lock);
        at_guard = saved;
        errno = e;
    }
    return h;
}

/* ---- attach and detach -------------------------------------------------- */

static int detach(char *detail, size_t cap);

static const char *say(const char *word, const char *a, const char *b)
{
    snprintf(answer, sizeof answer, "%s%s%s", word, a, b);
    return answer;
}

static const char *attach_locked(const char *settings, const char *why)
{
    if (at_state == AT_STATE_ACTIVE)
        return say("error ", "already attached", "");
    if (!settings || strlen(settings) >= sizeof settings_copy)
        return say("error ", "settings missing or too long", "");
    strcpy(settings_copy, settings);
    at_config_source(settings_copy);
    if (!self_base && find_self() != 0)
        return say("error ", "cannot find the tracer's own functions: ", dlerror() ?: "");
    at_resolve_real_with(program_symbol);
    if (!at_real.free)
        return say("error ", "cannot find the program's malloc family", "");
    at_control_on_detach(detach);   /* the control path's detach verb (control.c) */
    if (at_start_late() != 0)
        return say("error ", why[0] ? why : "cannot start the tracer", "");
    static const char note[] =
        "## attached to a running process: releases of blocks allocated before the attach "
        "have no allocation in this trace\n";
    at_append_raw(note, sizeof note - 1);
    __atomic_store_n(&attached, 1, __ATOMIC_RELEASE);
    if (patch_all() != 0) {
        char path[PATH_MAX];
        __atomic_store_n(&attached, 0, __ATOMIC_RELEASE);
        restore_all();
        at_stop_late();
        at_config_output_path(path, sizeof path, getpid(), 0);
        unlink(path);
        snprintf(answer, sizeof answer, "error %s: cannot rewrite its allocation slots: %s",
                 failed_object, strerror(failed_errno));
        return answer;
    }
    at_config_output_path(trace_path, sizeof trace_path, getpid(), 0);
    return say("ok ", trace_path, "");
}

/* gdb calls these: one answer line each, in a buffer of ours. */
AT_EXPORT const char *at_attach(const char *settings)
{
    int saved = at_guard, e = errno;
    at_guard = 1;
    char why[512];
    pthread_mutex_lock(&attach_lock);
    at_warn_capture(why, sizeof why);
    const char *a = attach_locked(settings, why);
    at_warn_capture(NULL, 0);
    at_config_source(NULL);
    pthread_mutex_unlock(&attach_lock);
    at_guard = saved;
    errno = e;
    return a;
}

/* 0 and the trace's path in `detail`, or -1 and why. */
static int detach(char *detail, size_t cap)
{
    int saved = at_guard, e = errno, rc = 0;
    at_guard = 1;
    pthread_mutex_lock(&attach_lock);
    if (!attached) {
        snprintf(detail, cap, "not attached");
        rc = -1;
    } else {
        __atomic_store_n(&attached, 0, __ATOMIC_RELEASE);
        restore_all();
        at_stop_late();
        snprintf(detail, cap, "%s", trace_path);
    }
    pthread_mutex_unlock(&attach_lock);
    at_guard = saved;
    errno = e;
    return rc;
}

AT_EXPORT const char *at_detach(void)
{
    char detail[PATH_MAX + 64];
    int rc = detach(detail, sizeof detail);
    return say(rc == 0 ? "ok " : "error ", detail, "");
}

/* 1 while attached (the launcher asks before attaching again). */
AT_EXPORT int at_attached(void)
{
    return __atomic_load_n(&attached, __ATOMIC_ACQUIRE);
}
