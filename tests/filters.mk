# Tests of the callstack filter language (postproc/filter*.c).
UNIT_TESTS += tests/unit/test_filter_match.c
UNIT_TESTS += tests/unit/test_filter_errors.c
UNIT_TESTS += tests/unit/test_filter_print.c
UNIT_TESTS += tests/unit/test_filter_stage.c
