# ports.bash - a block of loopback ports of a run's own, for what must listen on ports
# it is told (the agents' --service-ports, docketd's --lb-ports): below the kernel's
# ephemeral range, where no outgoing connection of another test holds one (a block there
# once met "Address already in use" under four test files at a time).

# port_block SPAN: the first of SPAN ports, chosen by this shell's pid among the blocks of
# SPAN between 10000 and the start of net.ipv4.ip_local_port_range.
port_block() {
    local span=$1 low=32768 high
    read -r low high </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    local blocks=$(((low - 10000) / span))
    ((blocks > 0)) || blocks=1
    echo $((10000 + ($$ % blocks) * span))
}
