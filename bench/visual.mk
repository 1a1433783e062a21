# The pictures against the analysis they draw (make bench): --format html
# against --format stats, --format flamegraph against --format folded, on
# a full trace from bench/visual_gen.c.
BENCHES += bench/visual bench/html_open
BENCH_PROGRAMS += $(B)/bench/visual_gen
$(B)/bench/visual_gen: bench/visual_gen.c bench/visual_shape.h bench/export_shape.h
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 $(WARN) -Ibench $< -o $@
BENCH_PROGRAMS += $(B)/bench/visual_time
# Linked with the post-processor's objects (expanded when the recipe runs).
$(B)/bench/visual_time: bench/visual_time.c bench/visual_shape.h bench/export_shape.h bench/shape_intern.h \
                        postproc/alloctrace-postproc
	@mkdir -p $(@D)
	$(CC) $(PP_CFLAGS) -Ibench $< $(PP_OBJS) $(PP_LIBS) -o $@
