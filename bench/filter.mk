# The callstack filters' benchmark (make bench): bench/filter runs
# build/bench/filter_bench, which links the post-processor's objects (named
# in the recipe, expanded when it runs, after every fragment was read).
BENCHES += bench/filter
BENCH_PROGRAMS += $(B)/bench/filter_bench
$(B)/bench/filter_bench: bench/filter_bench.c postproc/alloctrace-postproc
	@mkdir -p $(@D)
	$(CC) $(PP_CFLAGS) $< $(PP_OBJS) $(PP_LIBS) -o $@
