# The post-processor's shared model: interned stacks, maps, frame reading.
POSTPROC_SRCS += postproc/xalloc.c postproc/stack.c postproc/maps.c postproc/frame.c
UNIT_TESTS += tests/unit/test_model.c
