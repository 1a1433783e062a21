# tests/sample.mk: sampling (--sample) and --format pprof, end to end
# (tests/integration/test_sample.c), and the weights (tests/unit/test_sampling.c).
INTEGRATION_TESTS += tests/integration/test_sample.c
UNIT_TESTS += tests/unit/test_sampling.c
TEST_DEPS += preload/liballoctrace.so postproc/alloctrace-postproc scripts/alloctrace \
             $(B)/tests/programs/sample_sites $(B)/tests/programs/sample_layouts

$(B)/tests/programs/sample_sites: tests/programs/sample_sites.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O0 -g -fno-builtin -Wall -Wextra -Werror -D_GNU_SOURCE $< -o $@ -pthread

$(B)/tests/programs/sample_layouts: tests/programs/sample_layouts.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O0 -g -fno-builtin -Wall -Wextra -Werror -D_GNU_SOURCE $< -o $@
