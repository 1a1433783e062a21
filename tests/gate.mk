# Tests of the leak gate: unit tests on groups built in the test; integration
# tests run alloctrace-check on the gate_* programs.
UNIT_TESTS += tests/unit/test_gate.c tests/unit/test_gate_baseline.c tests/unit/test_gate_export.c \
              tests/unit/test_gate_supp_foreign.c \
              tests/unit/test_gate_supp.c

# Test programs: -O0 -g so every allocation stays at its source line.
GP := $(B)/tests/programs
GATE_PROGS := $(GP)/gate_leaky $(GP)/gate_clean $(GP)/libgate_lib.so $(GP)/gate_uselib \
              $(GP)/gate_segv $(GP)/gate_empty $(GP)/gate_empty_cxx $(GP)/gate_spawn \
              $(GP)/gate_leaky_cxx $(GP)/gate_fork $(GP)/gate_pool $(GP)/libgate_dtorlib.so $(GP)/gate_usedtor \
              $(GP)/gate_static
GATE_PROG_CFLAGS := -std=gnu11 -O0 -g -Wall -Wextra -Werror -D_GNU_SOURCE

INTEGRATION_TESTS += tests/integration/test_gate.c tests/integration/test_gate_traces.c \
                     tests/integration/test_gate_recipes.c tests/integration/test_gate_foreign_supp.c
TEST_DEPS += preload/liballoctrace.so postproc/alloctrace-postproc $(GATE_PROGS)

$(GP)/gate_%: tests/programs/gate_%.c
	@mkdir -p $(@D)
	$(CC) $(GATE_PROG_CFLAGS) $< -o $@
$(GP)/libgate_lib.so: tests/programs/gate_lib.c
	@mkdir -p $(@D)
	$(CC) $(GATE_PROG_CFLAGS) -fPIC -shared $< -o $@
$(GP)/gate_uselib: tests/programs/gate_uselib.c $(GP)/libgate_lib.so
	$(CC) $(GATE_PROG_CFLAGS) $< -L$(GP) -lgate_lib -Wl,-rpath,'$$ORIGIN' -o $@
$(GP)/libgate_dtorlib.so: tests/programs/gate_dtorlib.cc
	@mkdir -p $(@D)
	$(CXX) -O0 -g -Wall -Wextra -Werror -fPIC -shared $< -o $@
$(GP)/gate_usedtor: tests/programs/gate_usedtor.c $(GP)/libgate_dtorlib.so
	$(CC) $(GATE_PROG_CFLAGS) $< -L$(GP) -lgate_dtorlib -Wl,-rpath,'$$ORIGIN' -o $@
$(GP)/gate_empty_cxx: tests/programs/gate_empty_cxx.cc
	@mkdir -p $(@D)
	$(CXX) -O0 -g -Wall -Wextra -Werror $< -o $@
$(GP)/gate_leaky_cxx: tests/programs/gate_leaky_cxx.cc
	@mkdir -p $(@D)
	$(CXX) -O0 -g -Wall -Wextra -Werror $< -o $@
$(GP)/gate_pool: tests/programs/gate_pool.c
	@mkdir -p $(@D)
	$(CC) $(GATE_PROG_CFLAGS) -pthread $< -o $@
# A static program: the tracer cannot be preloaded into it.
$(GP)/gate_static: tests/programs/gate_clean.c
	@mkdir -p $(@D)
	$(CC) $(GATE_PROG_CFLAGS) -static $< -o $@
FUZZ_TARGETS += tests/fuzz/fuzz_supp_foreign.c
