# The leak gate's benchmark (make bench): alloctrace --check against valgrind and heaptrack.
BENCHES += bench/gate
