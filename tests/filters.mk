# Tests of the callstack filter language (postproc/filter/).
UNIT_TESTS += tests/unit/test_filter_match.c
UNIT_TESTS += tests/unit/test_filter_errors.c
UNIT_TESTS += tests/unit/test_filter_print.c
UNIT_TESTS += tests/unit/test_filter_stage.c

# End to end: filter_app (sites in three files and a stripped library)
# traced by the real tracer and filtered by the real post-processor.
FILTER_PROG_DIR := $(B)/tests/programs
FILTER_PROGS := $(FILTER_PROG_DIR)/filter_app $(FILTER_PROG_DIR)/libfilter_lib.so
FILTER_PROG_CFLAGS := -std=gnu11 -O0 -fno-builtin -Wall -Wextra -Werror -D_GNU_SOURCE

$(FILTER_PROG_DIR)/libfilter_lib.so: tests/programs/filter_lib.c
	@mkdir -p $(@D)
	$(CC) $(FILTER_PROG_CFLAGS) -g0 -fPIC -shared $< -o $@
	strip --strip-all $@
$(FILTER_PROG_DIR)/filter_app: tests/programs/filter_app.c tests/programs/filter_config.c \
                               tests/programs/filter_cache.c $(FILTER_PROG_DIR)/libfilter_lib.so
	$(CC) $(FILTER_PROG_CFLAGS) -g $(filter %.c,$^) -L$(FILTER_PROG_DIR) -lfilter_lib \
	    -Wl,-rpath,'$$ORIGIN' -o $@

INTEGRATION_TESTS += tests/integration/test_filter.c
TEST_DEPS += preload/liballoctrace.so $(FILTER_PROGS)
FUZZ_TARGETS += tests/fuzz/fuzz_filter.c
