# bench/realworld.mk: the tracer on real Debian programs (make bench), never run by make check.
BENCHES += bench/realworld

# The `floor` mode's preload: one unw_backtrace per allocation, nothing else.
$(B)/bench/libunwind_floor.so: bench/unwind_floor.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror \
	    $(call pc_cflags,libunwind) $< -o $@ $(call pc_libs,libunwind)

BENCH_PROGRAMS += $(B)/bench/libunwind_floor.so

# The `interpose` mode's preload: the malloc family forwarded, nothing else.
$(B)/bench/libinterpose_floor.so: bench/interpose_floor.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror $< -o $@

BENCH_PROGRAMS += $(B)/bench/libinterpose_floor.so

# threads4 (issue 24's sampling target): a program of our own with 4 threads.
$(B)/bench/sample_threads: bench/sample_threads.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror $< -o $@ -pthread

BENCH_PROGRAMS += $(B)/bench/sample_threads
