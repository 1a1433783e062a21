# Tests of the exports (postproc/exports.mk).
UNIT_TESTS += tests/unit/test_export.c
INTEGRATION_TESTS += tests/integration/test_export.c
