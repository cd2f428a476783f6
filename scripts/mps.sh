# Sourced by the GPU machine's scripts: NVIDIA MPS for PEs sharing a GPU (docs/mps.md).
#   mps_start    starts the control daemon (pipe and log folders under /tmp) unless one answers,
#                and stops it when the sourcing shell exits
#   mps_restart  quits it and starts it again: after a job ended mid-kernel the MPS server
#                can fail every later client (cuDevicePrimaryCtxRetain: LAUNCH_FAILED/UNKNOWN)
#   mps_stop     quits it, leaving no daemon behind
# rshmem's launcher notices the daemon and gives each of a GPU's PEs 100/n % of its threads
# (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), so that NVSHMEM runs its full multi-process mode.
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/mps-pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/mps-log}

mps_answers() { timeout 5 nvidia-cuda-mps-control <<<get_default_active_thread_percentage >/dev/null 2>&1; }

mps_start() {
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if ! mps_answers; then
        nvidia-cuda-mps-control -d || { echo "mps: the control daemon did not start" >&2; return 1; }
        for _ in 1 2 3 4 5 6 7 8 9 10; do mps_answers && break; sleep 0.2; done
    fi
    trap mps_stop EXIT
    echo "mps: control daemon up (pipes in $CUDA_MPS_PIPE_DIRECTORY)"
}

mps_stop() {
    mps_answers || return 0
    echo quit | timeout 10 nvidia-cuda-mps-control
    # The daemon and its server quit once the server's clients are gone; give them a moment,
    # then end what is left (a server kept by a client that hangs).
    for _ in 1 2 3 4 5 6 7 8 9 10; do pgrep -f 'nvidia-cuda-mps-(control|server)' >/dev/null || break; sleep 0.3; done
    pkill -9 -f 'nvidia-cuda-mps-(control|server)' 2>/dev/null
    return 0
}

mps_restart() {
    echo "mps: restarting the daemon"
    mps_stop
    mps_start
}
