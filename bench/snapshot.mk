# bench/snapshot.mk: snapshots of a running process (make bench), never run by make check.
BENCHES += bench/snapshot

$(B)/bench/snapshot_work: bench/snapshot_work.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror $< -o $@ -pthread

BENCH_PROGRAMS += $(B)/bench/snapshot_work
