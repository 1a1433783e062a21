# tests/tracer.mk: the tracer's test programs and integration tests.
#
# Test programs are built -O0 -g so call sites stay where the source puts
# them (frame 0 of each record is checked against the calling function).
TRACER_PROG_DIR := $(B)/tests/programs
TRACER_PROGS := $(addprefix $(TRACER_PROG_DIR)/, tracer_calls tracer_threads tracer_leaks \
                  tracer_cxx tracer_ctx tracer_dlopen tracer_dlib.so tracer_process \
                  tracer_calls_nopie tracer_ownalloc libtracer_bumpalloc.so tracer_host tracer_unwind tracer_unwind_sigprof \
                  libtracer_ctorlib.so tracer_early tracer_faults tracer_clock tracer_sites tracer_keeper \
                  tracer_snapshot tracer_service tracer_leak_order tracer_seccomp_exit)
TRACER_PROG_CFLAGS := -std=gnu11 -O0 -g -fno-builtin -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude

INTEGRATION_TESTS += $(sort $(wildcard tests/integration/test_tracer*.c))
TEST_DEPS += preload/liballoctrace.so $(TRACER_PROGS)

$(TRACER_PROG_DIR)/tracer_%: tests/programs/tracer_%.c include/alloctrace.h
	@mkdir -p $(@D)
	$(CC) $(TRACER_PROG_CFLAGS) $< -o $@ -pthread -ldl

# Links libunwind itself, as a sampling profiler does: the tracer then
# shares the program's copy.
$(TRACER_PROG_DIR)/tracer_unwind_sigprof: tests/programs/tracer_unwind_sigprof.c
	@mkdir -p $(@D)
	$(CC) $(TRACER_PROG_CFLAGS) $(call pc_cflags,libunwind) $< -o $@ -pthread -lunwind

$(TRACER_PROG_DIR)/tracer_dlib.so: tests/programs/tracer_dlib.c
	@mkdir -p $(@D)
	$(CC) $(TRACER_PROG_CFLAGS) -shared -fPIC $< -o $@

# A program whose allocator is a library of its own, as with jemalloc.
$(TRACER_PROG_DIR)/libtracer_bumpalloc.so: tests/programs/tracer_bumpalloc.c
	@mkdir -p $(@D)
	$(CC) $(TRACER_PROG_CFLAGS) -shared -fPIC $< -o $@

$(TRACER_PROG_DIR)/tracer_ownalloc: tests/programs/tracer_ownalloc.c $(TRACER_PROG_DIR)/libtracer_bumpalloc.so
	@mkdir -p $(@D)
	$(CC) $(TRACER_PROG_CFLAGS) $< -o $@ -L$(TRACER_PROG_DIR) -ltracer_bumpalloc -Wl,-rpath,'$$ORIGIN'

# Allocations before the tracer's constructor: a library constructor's and
# the program's preinit function's.
$(TRACER_PROG_DIR)/libtracer_ctorlib.so: tests/programs/tracer_ctorlib.c
	@mkdir -p $(@D)
	$(CC) $(TRACER_PROG_CFLAGS) -shared -fPIC $< -o $@

$(TRACER_PROG_DIR)/tracer_early: tests/programs/tracer_early.c $(TRACER_PROG_DIR)/libtracer_ctorlib.so
	@mkdir -p $(@D)
	$(CC) $(TRACER_PROG_CFLAGS) $< -o $@ -L$(TRACER_PROG_DIR) -ltracer_ctorlib -Wl,-rpath,'$$ORIGIN'

# The same calls in a non-PIE executable: its map line starts at its lowest
# PT_LOAD and its addresses are absolute.
$(TRACER_PROG_DIR)/tracer_calls_nopie: tests/programs/tracer_calls.c
	@mkdir -p $(@D)
	$(CC) $(TRACER_PROG_CFLAGS) -fno-pie -no-pie $< -o $@

$(TRACER_PROG_DIR)/tracer_cxx: tests/programs/tracer_cxx.cpp
	@mkdir -p $(@D)
	$(CXX) -O0 -g -fno-builtin -Wall -Wextra -Werror $< -o $@

# The tracer tests share a header the generic rule does not know about.
$(patsubst tests/integration/%.c,$(B)/tests/integration/%,$(wildcard tests/integration/test_tracer*.c)): \
    tests/integration/test_tracer_trace.h

# The tracer's text (preload/write/format.c) tested alone, under ASan and UBSan.
TESTS += $(B)/tests/unit/test_tracer_format
$(B)/tests/unit/test_tracer_format: tests/unit/test_tracer_format.c preload/write/format.c \
                                    preload/tracer.h include/alloctrace/format.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(SAN_FLAGS) $(CMOCKA_CFLAGS) -Ipreload \
	    tests/unit/test_tracer_format.c preload/write/format.c $(CMOCKA_LIBS) -o $@

# A buffer's records into the compressed form (preload/write/chunk.c) alone.
TESTS += $(B)/tests/unit/test_tracer_chunk
$(B)/tests/unit/test_tracer_chunk: tests/unit/test_tracer_chunk.c preload/write/chunk.c preload/write/format.c \
                                   preload/tracer.h include/alloctrace/format.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(SAN_FLAGS) $(CMOCKA_CFLAGS) -Ipreload \
	    tests/unit/test_tracer_chunk.c preload/write/chunk.c preload/write/format.c $(CMOCKA_LIBS) -o $@

# Leaks mode's records through the rings and the keeper's rules
# (preload/hook/handoff.c) alone, over a live set of the test's own.
TESTS += $(B)/tests/unit/test_tracer_handoff
$(B)/tests/unit/test_tracer_handoff: tests/unit/test_tracer_handoff.c preload/hook/handoff.c \
                                     preload/process/thread.c preload/tracer.h include/alloctrace/format.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(SAN_FLAGS) $(CMOCKA_CFLAGS) -Ipreload \
	    tests/unit/test_tracer_handoff.c preload/hook/handoff.c preload/process/thread.c $(CMOCKA_LIBS) \
	    -pthread -o $@

# The tracer's reading of the time zone (preload/write/tzoffset.c) against glibc.
TESTS += $(B)/tests/unit/test_tracer_tzoffset
$(B)/tests/unit/test_tracer_tzoffset: tests/unit/test_tracer_tzoffset.c preload/write/tzoffset.c \
                                      preload/tracer.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(SAN_FLAGS) $(CMOCKA_CFLAGS) -Ipreload \
	    tests/unit/test_tracer_tzoffset.c preload/write/tzoffset.c $(CMOCKA_LIBS) -o $@
