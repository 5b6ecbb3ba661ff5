# The --quick variant of idle.sh: 10 s windows.
BENCH_IDLE_S=10
source "$REPO/scripts/bench/vm/idle.sh"
