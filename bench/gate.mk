# The leak gate's benchmarks (make bench): alloctrace --check against valgrind and
# heaptrack; what judging forked children costs on a whole suite (gate_children).
BENCHES += bench/gate
BENCHES += bench/gate_children
