# capi.bash - one API call to the controller the test started, printed as it came:
#   capi METHOD PATH [curl args...]
# with $TOKEN on 127.0.0.1:$PORT (set by lib/cluster.bash's cluster_start, or by a file's
# own start). Sourced by common.bash and cluster.bash.
capi() {
    local m=$1 p=$2
    shift 2
    curl -sS -X "$m" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
        "http://127.0.0.1:$PORT$p" "$@"
}
