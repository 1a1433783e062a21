# preload/preload.mk: liballoctrace.so.
#
# preload/ groups its files by concern (hook/, unwind/, write/, leaks/,
# process/; docs/layout.md); every file includes tracer.h by its bare
# name, from preload/ on the include path.
#
# -fvisibility=hidden plus a version script: only the interposed functions
# and the at_* API are exported. libunwind is not linked (unwind.c loads it
# with dlopen RTLD_LOCAL so it never enters the global symbol scope); only
# its headers come from pkg-config. libzstd is linked (zframe.c: it never
# allocates through the hooks). The allocation builtins are off so the
# compiler cannot turn our own code into calls of the hooks.
PRODUCTS += preload/liballoctrace.so

PRELOAD_SRCS := $(sort $(wildcard preload/*.c preload/*/*.c))
PRELOAD_OBJS := $(PRELOAD_SRCS:%.c=$(B)/%.o)
PRELOAD_CFLAGS = $(BASE_CFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -ftls-model=initial-exec \
                 -fno-builtin-malloc -fno-builtin-calloc -fno-builtin-realloc -fno-builtin-free \
                 -Ipreload $(call pc_cflags,libunwind)

$(B)/preload/%.o: preload/%.c preload/tracer.h include/alloctrace/format.h
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_CFLAGS) -MMD -MP -c $< -o $@

preload/liballoctrace.so: $(PRELOAD_OBJS) preload/exports.map
	$(CC) -shared $(CFLAGS) -Wl,--version-script=preload/exports.map -Wl,-z,now \
	    $(PRELOAD_OBJS) -lzstd -lm -ldl -lpthread -o $@

# liballoctrace-attach.so: the same sources for a debugger to dlopen into a
# running process (alloctrace -p, preload/process/attach.c). A dlopen'd
# object's TLS cannot come from the static TLS block when it is larger than
# glibc's surplus (512 bytes; ours is ~8 KiB), so this build uses TLS
# descriptors (gnu2: a call only on a thread's first access) and never
# starts by itself (AT_ATTACH_BUILD).
PRODUCTS += preload/liballoctrace-attach.so
PRELOAD_ATTACH_OBJS := $(PRELOAD_SRCS:preload/%.c=$(B)/preload-attach/%.o)
PRELOAD_ATTACH_CFLAGS = $(filter-out -ftls-model=initial-exec,$(PRELOAD_CFLAGS)) \
                        -ftls-model=global-dynamic -mtls-dialect=gnu2 -DAT_ATTACH_BUILD

$(B)/preload-attach/%.o: preload/%.c preload/tracer.h include/alloctrace/format.h
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_ATTACH_CFLAGS) -MMD -MP -c $< -o $@

preload/liballoctrace-attach.so: $(PRELOAD_ATTACH_OBJS) preload/exports.map
	$(CC) -shared $(CFLAGS) -Wl,--version-script=preload/exports.map -Wl,-z,now \
	    $(PRELOAD_ATTACH_OBJS) -lzstd -lm -ldl -lpthread -o $@
