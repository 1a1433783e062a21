# bench/realworld.mk: the tracer on real Debian programs (make bench), never run by make check.
BENCHES += bench/realworld

# The `floor` mode's preload: one unw_backtrace per allocation, nothing else.
$(B)/bench/libunwind_floor.so: bench/unwind_floor.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror \
	    $(call pc_cflags,libunwind) $< -o $@ $(call pc_libs,libunwind)

BENCH_PROGRAMS += $(B)/bench/libunwind_floor.so
