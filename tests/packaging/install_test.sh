#!/usr/bin/env bash
# Installs the build into a scratch root (cmake --install, DESTDIR) and checks what a user of the
# installed QuantScope gets, from there only:
#   install_test.sh installed BUILD_DIR SOURCE_DIR VERSION WITH_GUI
#     the files in place (programs, resources, icons at each size, desktop entry, metainfo, man
#     pages), no run path into the build folder, --version of both programs, inspect of the installed
#     demo, the GUI's offscreen screenshot of it, desktop-file-validate and appstreamcli validate.
#   install_test.sh bundled BUILD_DIR SOURCE_DIR VERSION WITH_GUI
#     the installed CLI finds its bundled calibration and evaluation text in <prefix>/share/quantscope
#     while the source tree's resources/ (the fallback compiled into the programs) is hidden by a
#     mount namespace; and, hiding the installed copy as well, that it then finds none, which shows
#     that nothing else could have supplied them. Exits 77 (skipped) where namespaces are not allowed.
set -euo pipefail
mode="$1" build="$2" source="$3" version="$4" with_gui="$5"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
root="$scratch/root"
share="$root/usr/share"
unset QS_RESOURCES_DIR   # searched before the installed copy; the test is about the installed copy

DESTDIR="$root" cmake --install "$build" --prefix /usr > "$scratch/install.log" || {
    cat "$scratch/install.log" >&2
    fail "cmake --install"
}
cli="$root/usr/bin/quantscope-cli"
gui="$root/usr/bin/quantscope"

png_size() {   # width x height from the IHDR chunk
    local b
    read -r -a b < <(od -An -tu1 -j16 -N8 "$1")
    echo "$(((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]))x$(((b[4] << 24) | (b[5] << 16) | (b[6] << 8) | b[7]))"
}

check_installed() {
    local f
    for f in usr/bin/quantscope-cli \
        usr/share/quantscope/demo/model.safetensors usr/share/quantscope/demo/config.json \
        usr/share/quantscope/demo/tokenizer.json usr/share/quantscope/demo/calibration.txt \
        usr/share/quantscope/demo/eval.txt \
        usr/share/quantscope/models/stories260K/model.safetensors \
        usr/share/quantscope/models/stories260K/LICENSE \
        usr/share/quantscope/text/the-verdict.txt \
        usr/share/doc/quantscope/copyright usr/share/doc/quantscope/LICENSE \
        usr/share/man/man1/quantscope-cli.1.gz; do
        [ -s "$root/$f" ] || fail "not installed: /$f"
    done
    cmp -s "$source/resources/demo/model.safetensors" "$share/quantscope/demo/model.safetensors" ||
        fail "the installed demo checkpoint differs from resources/demo"

    # Installed programs must not look for libraries in the build folder.
    if readelf -d "$cli" | grep -E 'R(UN)?PATH' | grep -qF "$build"; then
        fail "quantscope-cli keeps a run path into $build"
    fi
    # They load OpenBLAS's OpenMP flavour whichever one the alternatives select (cmake/QsBlas.cmake).
    if grep -q '^QS_OPENBLAS_OPENMP_LIBRARY:FILEPATH=/' "$build/CMakeCache.txt"; then
        ldd "$cli" | grep 'libopenblas' | grep -q 'openblas-openmp/' ||
            fail "quantscope-cli does not load OpenBLAS's OpenMP flavour: $(ldd "$cli" | grep libopenblas)"
    fi

    local out
    out="$("$cli" --version)"
    [ "$out" = "quantscope-cli $version" ] || fail "quantscope-cli --version printed '$out', expected 'quantscope-cli $version'"

    out="$("$cli" inspect "$share/quantscope/demo")" || fail "quantscope-cli inspect of the installed demo exited with $?"
    grep -q '^Architecture *Qwen3ForCausalLM' <<<"$out" || fail "inspect did not name the demo's architecture: $out"
    grep -q '^Parameters .*(1,656,320)' <<<"$out" || fail "inspect did not count the demo's 1,656,320 parameters: $out"
    out="$("$cli" inspect "$share/quantscope/models/stories260K")" || fail "inspect of the installed stories260K"
    grep -q '^Layers *5$' <<<"$out" || fail "inspect did not find stories260K's 5 layers: $out"

    out="$(zcat "$share/man/man1/quantscope-cli.1.gz")"
    grep -q '^\.TH QUANTSCOPE-CLI "1" .*"quantscope-cli '"$version"'"' <<<"$out" || fail "man page header: $(head -3 <<<"$out")"
    grep -q '^\.SS inspect$' <<<"$out" || fail "the man page has no section for inspect"
    grep -q '^\.SS compare$' <<<"$out" || fail "the man page has no section for compare"

    if [ "$with_gui" = 1 ]; then check_gui; fi
}

check_gui() {
    local f size
    for f in usr/bin/quantscope usr/share/icons/hicolor/scalable/apps/quantscope.svg \
        usr/share/applications/io.github.quantscope.QuantScope.desktop \
        usr/share/metainfo/io.github.quantscope.QuantScope.metainfo.xml \
        usr/share/man/man1/quantscope.1.gz; do
        [ -s "$root/$f" ] || fail "not installed: /$f"
    done
    # Each PNG is drawn at the size of its folder (or, without a renderer, the one PNG at its own).
    local pngs=("$share"/icons/hicolor/*/apps/quantscope.png)
    [ -e "${pngs[0]}" ] || fail "no PNG icon in $share/icons/hicolor"
    for f in "${pngs[@]}"; do
        size="$(png_size "$f")"
        [ "$(basename "$(dirname "$(dirname "$f")")")" = "$size" ] || fail "$f is $size"
    done

    local out
    out="$(QT_QPA_PLATFORM=offscreen "$gui" --version 2>/dev/null)"
    [ "$out" = "QuantScope $version" ] || fail "quantscope --version printed '$out', expected 'QuantScope $version'"

    # The GUI exits 2 when it cannot open the checkpoint it is given, 0 once the picture is written.
    QT_QPA_PLATFORM=offscreen "$gui" --screenshot "$scratch/shot.png" "$share/quantscope/demo" 2> "$scratch/gui.log" || {
        cat "$scratch/gui.log" >&2
        fail "quantscope --screenshot of the installed demo exited with $?"
    }
    size="$(png_size "$scratch/shot.png")"
    [ "$size" = 1400x900 ] || fail "the screenshot is $size, not 1400x900"

    desktop-file-validate "$share/applications/io.github.quantscope.QuantScope.desktop" ||
        fail "desktop-file-validate"
    grep -q '^Exec=quantscope ' "$share/applications/io.github.quantscope.QuantScope.desktop" || fail "Exec= is not quantscope"
    [ -x "$root/usr/bin/$(sed -n 's/^Exec=\([^ ]*\).*/\1/p' "$share/applications/io.github.quantscope.QuantScope.desktop")" ] ||
        fail "the desktop entry runs a program that is not installed"
    appstreamcli validate --no-net "$share/metainfo/io.github.quantscope.QuantScope.metainfo.xml" ||
        fail "appstreamcli validate"
    # The newest release named in the metainfo is the version being installed.
    local newest
    newest="$(grep -o '<release version="[^"]*"' "$share/metainfo/io.github.quantscope.QuantScope.metainfo.xml" | head -1 | cut -d'"' -f2)"
    [ "$newest" = "$version" ] || fail "the metainfo's newest release is '$newest'; the project is $version (add a <release>)"
    out="$(zcat "$share/man/man1/quantscope.1.gz")"
    grep -q '^\.TH QUANTSCOPE "1" .*"quantscope '"$version"'"' <<<"$out" || fail "GUI man page header: $(head -3 <<<"$out")"
    grep -q 'screenshot' <<<"$out" || fail "the GUI man page does not list --screenshot"
}

check_bundled() {
    if ! unshare --user --map-root-user --mount true 2>/dev/null; then
        echo "SKIP: this machine does not allow user and mount namespaces (unshare -rm)"
        exit 77
    fi
    # A checkpoint without calibration.txt / eval.txt: compare falls back to the bundled demo text.
    local bare="$scratch/bare" empty="$scratch/empty"
    mkdir -p "$bare" "$empty"
    cp "$share/quantscope/demo/"{config.json,model.safetensors,tokenizer.json,tokenizer_config.json} "$bare/"
    local compare=("$cli" compare "$bare" --methods rtn4 --samples 2 --eval-samples 2 --seq-len 64)
    local out
    out="$(unshare --user --map-root-user --mount bash -c \
        'mount --bind "$1" "$2" && shift 2 && exec "$@" 2>&1' \
        _ "$empty" "$source/resources" "${compare[@]}")" ||
        fail "compare with the source tree's resources hidden: $out"
    grep -q '^RTN int4, g128 ' <<<"$out" || fail "compare printed no RTN int4 row: $out"
    grep -q 'calibration 128 tokens' <<<"$out" || fail "compare did not calibrate on 2 x 64 tokens: $out"

    # Control: hide the installed copy too; now no bundled text may be found from anywhere.
    if out="$(unshare --user --map-root-user --mount bash -c \
        'mount --bind "$1" "$2" && mount --bind "$1" "$3" && shift 3 && exec "$@" 2>&1' \
        _ "$empty" "$source/resources" "$share/quantscope" "${compare[@]}")"; then
        fail "compare found bundled text with both the source tree and the installed copy hidden: $out"
    fi
    grep -q 'no calibration.txt beside the checkpoint and none bundled' <<<"$out" ||
        fail "compare failed otherwise than for want of bundled text: $out"
}

case "$mode" in
    installed) check_installed ;;
    bundled) check_bundled ;;
    *) fail "unknown mode '$mode' (installed, bundled)" ;;
esac
echo "PASS: $mode"
