# Tests of the exports (postproc/exports.mk).
UNIT_TESTS += tests/unit/test_export.c
