# Tests of the post-processor's core (reader, writer, leaks, compress,
# selection) and its fuzz target.
UNIT_TESTS += tests/unit/test_reader.c tests/unit/test_reader_input.c tests/unit/test_reader_scan.c tests/unit/test_reorder.c
UNIT_TESTS += tests/unit/test_lex.c
UNIT_TESTS += tests/unit/test_writer.c
UNIT_TESTS += tests/unit/test_leaks.c
UNIT_TESTS += tests/unit/test_tree.c
UNIT_TESTS += tests/unit/test_compress.c
UNIT_TESTS += tests/unit/test_select.c
FUZZ_TARGETS += tests/fuzz/fuzz_reader.c tests/fuzz/fuzz_scan.c tests/fuzz/fuzz_lex.c

# The end-to-end tests trace programs of known allocation sites (-O0, no
# builtins, so each site keeps its own call and return address).
PP_PROGS := $(B)/tests/programs/postproc_sites
INTEGRATION_TESTS += tests/integration/test_postproc.c tests/integration/test_postproc_input.c \
                     tests/integration/test_postproc_outfile.c
TEST_DEPS += postproc/alloctrace-postproc preload/liballoctrace.so $(PP_PROGS)

$(B)/tests/programs/postproc_%: tests/programs/postproc_%.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O0 -g -fno-builtin -Wall -Wextra -Werror -D_GNU_SOURCE $< -o $@
