# bench/realworld.mk: the tracer on real Debian programs (make bench), never run by make check.
BENCHES += bench/realworld
