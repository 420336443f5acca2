#!/bin/sh
# install-config.sh DIR FILE... - `meson install`'s last step (contrib/meson.build): copy
# each FILE (relative to the source tree) into DIR (relative to the prefix unless
# absolute), under DESTDIR, mode 0644, unless a file of that name is there already: the
# operator's configuration survives a reinstall; the new defaults are next to it as
# NAME.dist. The yaml files are the examples of docs/operations.md.
set -eu
dir=$1
shift
case $dir in
/*) ;;
*) dir=$MESON_INSTALL_PREFIX/$dir ;;
esac
dest=${DESTDIR:-}$dir
mkdir -p "$dest"
for f in "$@"; do
    name=$(basename "$f")
    if [ -e "$dest/$name" ]; then
        install -m 0644 "$MESON_SOURCE_ROOT/$f" "$dest/$name.dist"
        echo "Kept $dest/$name (the new one is $name.dist)"
    else
        install -m 0644 "$MESON_SOURCE_ROOT/$f" "$dest/$name"
        echo "Installing $f to $dest"
    fi
done
