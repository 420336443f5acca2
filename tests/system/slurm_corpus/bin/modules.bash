# modules.bash - a site's module system as an exported shell function, as Lmod and
# Environment Modules define it in the login shell (`module` is a function, exported
# with `export -f`, so that batch jobs inherit it through the environment). Sourced by
# the test before it submits; `module load NAME/VER` records NAME/VER in LOADEDMODULES.
module() {
    local cmd=$1
    shift
    case $cmd in
    load | add) for m in "$@"; do LOADEDMODULES=${LOADEDMODULES:+$LOADEDMODULES:}$m; done
        export LOADEDMODULES ;;
    purge) unset LOADEDMODULES ;;
    list) echo "Currently Loaded Modules: ${LOADEDMODULES//:/ }" ;;
    *) echo "module: unknown command $cmd" >&2; return 1 ;;
    esac
}
export -f module
