# The exports against the -lcr run (make bench).
BENCHES += bench/export
