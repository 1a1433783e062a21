# The post-processor benchmark: -l, -c, -lc on a large synthetic trace,
# and -lc against heaptrack_print on one traced program (make bench).
BENCHES += bench/postproc
