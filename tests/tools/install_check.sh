#!/bin/sh
# install_check.sh SRC BUILD - an installed librq works with no extra
# environment, wherever it is installed:
#   1. `cmake --install BUILD --prefix P` (this build's layout, lib/);
#   2. a tree configured for /usr (Debian's multiarch libdir) installed
#      under DESTDIR, and its Debian packages unpacked with dpkg -x;
# in each: an installed tool runs without LD_LIBRARY_PATH, rq.pc and
# rqdsm.pc and rqtag.pc give paths that exist, a pkg-config build of examples/hello_am.c
# and a find_package(rq) build of examples/ (rq::rq, rq::rq_static,
# rq::rqdsm, rq::rqtag) run under the installed rqrun, and the man pages render.
set -u
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/rq-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH
fail() { echo "install_check: FAIL: $*"; exit 1; }
ok() { echo "install_check: $*: ok"; }

# check_tree ROOT PREFIX LIBDIR: the installed files under ROOT (PREFIX is
# where they were meant to go, LIBDIR relative to it).
check_tree() {
    root=$1 prefix=$2 libdir=$3 name=$4
    p=$root$prefix
    [ -x "$p/bin/rqinfo" ] || fail "$name: no bin/rqinfo"
    "$p/bin/rqinfo" >"$work/rqinfo.out" 2>&1 || { cat "$work/rqinfo.out"; fail "$name: installed rqinfo does not run"; }
    [ -x "$p/libexec/librq/apps/transpose" ] && "$p/libexec/librq/apps/transpose" 2>&1 | grep -q "Usage\|ERROR" ||
        fail "$name: an installed application does not start"
    pcdir=$p/$libdir/pkgconfig
    for pc in rq rqdsm rqtag; do
        [ -f "$pcdir/$pc.pc" ] || fail "$name: no $pc.pc in $pcdir"
        for v in libdir includedir; do
            d=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=$v $pc)
            [ -d "$d" ] || fail "$name: $pc.pc $v=$d does not exist"
        done
    done
    [ -f "$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=includedir rq)/rq.h" ] || fail "$name: rq.h not where rq.pc says"
    # pkg-config build, run by the installed rqrun.
    # shellcheck disable=SC2046
    cc -o "$work/hello_pc" "$src/examples/hello_am.c" $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs rq) \
        -Wl,-rpath,"$p/$libdir" || fail "$name: pkg-config build"
    "$p/bin/rqrun" -n 2 "$work/hello_pc" >"$work/run.out" 2>&1 || { cat "$work/run.out"; fail "$name: pkg-config build does not run"; }
    # find_package(rq) build of examples/.
    rm -rf "$work/ex"
    cmake -S "$src/examples" -B "$work/ex" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_BUILD_RPATH="$p/$libdir" \
        >"$work/ex.log" 2>&1 && cmake --build "$work/ex" >>"$work/ex.log" 2>&1 ||
        { tail -30 "$work/ex.log"; fail "$name: find_package(rq) build of examples/"; }
    for ex in hello_am hello_am_static tag_ring dsm_counter; do
        "$p/bin/rqrun" -n 2 "$work/ex/$ex" >"$work/run.out" 2>&1 || { cat "$work/run.out"; fail "$name: examples/$ex does not run"; }
        case $ex in tag_ring) grep -q "tag_ring: 2 ranks, .*: ok" "$work/run.out" || fail "$name: tag_ring's answer";; esac
    done
    grep -q "dsm_counter: 2 ranks, .*: ok" "$work/run.out" || fail "$name: dsm_counter's answer"
    for m in man1/rqrun.1 man3/rq_request.3 man3/rq_reply.3 man7/librq-environment.7; do
        [ -f "$p/share/man/$m" ] || fail "$name: no share/man/$m"
    done
    if command -v man >/dev/null; then
        for q in rqrun rq_request librq-environment; do
            man -M "$p/share/man" "$q" 2>&1 | grep -q . || fail "$name: man $q shows nothing"
        done
    fi
    ok "$name: tools, apps, pkg-config, find_package(rq: rq, rq_static, rqdsm, rqtag), man pages"
}

# 1. This build, installed under a prefix.
cmake --install "$build" --prefix "$work/local" >"$work/inst.log" 2>&1 || { tail "$work/inst.log"; fail "cmake --install"; }
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
check_tree "" "$work/local" "${libdir:-lib}" "prefix $work/local"

# 2. Configured for /usr (multiarch libdir), installed under DESTDIR, and
# packaged.  The libraries, tools and apps only: no tests.
cmake -S "$src" -B "$work/usr-build" -G Ninja -DCMAKE_INSTALL_PREFIX=/usr -DRQ_BUILD_TESTS=OFF \
    >"$work/usr.log" 2>&1 && cmake --build "$work/usr-build" >>"$work/usr.log" 2>&1 ||
    { tail -30 "$work/usr.log"; fail "configure and build for /usr"; }
ulib=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$work/usr-build/CMakeCache.txt")
DESTDIR=$work/usr-root cmake --install "$work/usr-build" >"$work/inst.log" 2>&1 || fail "DESTDIR install for /usr"
check_tree "$work/usr-root" /usr "$ulib" "prefix /usr ($ulib) under DESTDIR"
if command -v cpack >/dev/null && command -v dpkg >/dev/null; then
    (cd "$work/usr-build" && cpack -G DEB >"$work/cpack.log" 2>&1) || { tail -20 "$work/cpack.log"; fail "cpack -G DEB"; }
    n=0
    for deb in "$work"/usr-build/librq*.deb; do
        dpkg -x "$deb" "$work/deb-root" || fail "dpkg -x $deb"
        n=$((n + 1))
    done
    [ $n -eq 4 ] || fail "cpack made $n packages, want 4 (librq0, librq-dev, librq-tools, librq-apps)"
    for deb in "$work"/usr-build/librq*.deb; do
        dpkg-deb -f "$deb" Package Depends | tr '\n' ' '; echo
    done
    check_tree "$work/deb-root" /usr "$ulib" "the .deb packages unpacked"
fi
echo "install_check: ok"
