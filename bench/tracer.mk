# bench/tracer.mk: the tracer's benchmark (make bench), never run by make check.
BENCHES += bench/tracer

$(B)/bench/tracer_work: bench/tracer_work.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror $< -o $@ -pthread

BENCH_PROGRAMS += $(B)/bench/tracer_work
