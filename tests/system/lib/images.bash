# images.bash - ext4 file systems on loop-mounted image files for the storage tests
# (storage.bats, lifecycle.bats, logarchive.bats): small, so a test can fill one.
# Images live in $T/NAME.img and mount at $T/mnt/NAME; images_unmount frees them all.

# images_need_loop WHY: the file's tests skip unless root (WHY: what root is needed for)
# with loop devices
images_need_loop() {
    [[ $(id -u) == 0 ]] || skip "needs root: $1"
    [[ -e /dev/loop-control ]] || skip "no loop devices here (/dev/loop-control is missing)"
}

# image NAME SIZE_MB [MKFS OPTS...]: an ext4 file system on $T/NAME.img at $T/mnt/NAME
image() {
    local name=$1 size=$2
    shift 2
    mkdir -p "$T/mnt/$name"
    truncate -s "${size}M" "$T/$name.img"
    mkfs.ext4 -q -F -m 0 "$@" "$T/$name.img" >/dev/null
}

# mount_image NAME [OPTS]: mounted, or 1 with the reason in $T/mount-NAME.err
mount_image() {
    mount -o "loop${2:+,$2}" "$T/$1.img" "$T/mnt/$1" 2>"$T/mount-$1.err"
}

# image_ready NAME SIZE_MB: made and mounted, or the file's tests skip with the reason
image_ready() {
    image "$1" "$2"
    mount_image "$1" || skip "loop devices unavailable: $(cat "$T/mount-$1.err")"
}

# images_unmount: every image of this file unmounted (lazily: a job may still hold one),
# its loop device freed
images_unmount() {
    [[ -n ${T:-} && -d $T/mnt ]] || return 0
    local m
    for m in "$T"/mnt/*; do
        mountpoint -q "$m" && umount -l "$m"
    done
    return 0
}
