# wait.bash - the one wait of the system tests, sourced by common.bash and cluster.bash.
#
# wait_for SECONDS CMD...: retry CMD every 50 ms until it succeeds; fails after SECONDS.
# A deadline is no assertion about speed: make it generous (60 s), it only costs time
# when something is wrong, and a loaded machine must not miss it.
wait_for() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.05
    done
}
