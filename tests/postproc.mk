# Tests of the post-processor's core (reader, writer, leaks, compress,
# selection) and its fuzz target.
UNIT_TESTS += tests/unit/test_reader.c
UNIT_TESTS += tests/unit/test_writer.c
UNIT_TESTS += tests/unit/test_leaks.c
UNIT_TESTS += tests/unit/test_compress.c
UNIT_TESTS += tests/unit/test_select.c
