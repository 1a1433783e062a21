# The exports against the -lcr run (make bench). build/bench/export_time
# links the post-processor's objects (named in the recipe, expanded when it
# runs, after every fragment was read), so a new object they need is never
# missing here.
BENCHES += bench/export
BENCH_PROGRAMS += $(B)/bench/export_time
$(B)/bench/export_time: bench/export_time.c bench/export_shape.h bench/shape_intern.h \
                        postproc/alloctrace-postproc
	@mkdir -p $(@D)
	$(CC) $(PP_CFLAGS) $< $(PP_OBJS) $(PP_LIBS) -o $@
