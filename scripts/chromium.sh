#!/usr/bin/env bash
# Headless Chromium for the graph page test (tests/viz/test_page_chromium.py).
#
#   scripts/chromium.sh ensure   install Debian's chromium and a CJK font if missing; print the binary
#   scripts/chromium.sh path     print the binary, or exit 1 if there is none
#
# Idempotent: when a chromium binary and a CJK font are already there it installs nothing.
# Installing needs root (or sudo) and Debian's package archive; apt waits for a held lock.
# RIPPLE_CHROMIUM names a binary to use instead of searching PATH.
set -euo pipefail

log() { echo "chromium: $*" >&2; }

find_binary() {
    local name
    if [[ -n "${RIPPLE_CHROMIUM:-}" ]]; then
        [[ -x "$RIPPLE_CHROMIUM" ]] && { echo "$RIPPLE_CHROMIUM"; return 0; }
        return 1
    fi
    for name in chromium chromium-browser google-chrome; do
        if command -v "$name" >/dev/null 2>&1; then
            command -v "$name"
            return 0
        fi
    done
    return 1
}

# Chinese labels need a font with CJK glyphs (the page's font stack names the common ones).
has_cjk_font() { command -v fc-list >/dev/null 2>&1 && [[ -n "$(fc-list :lang=zh 2>/dev/null | head -n1)" ]]; }

apt_install() {
    local -a sudo=()
    if [[ "$(id -u)" != "0" ]]; then
        command -v sudo >/dev/null 2>&1 || { log "not root and no sudo: install $* by hand"; return 1; }
        sudo=(sudo -n)
    fi
    command -v apt-get >/dev/null 2>&1 || { log "no apt-get: install $* by hand (or set RIPPLE_CHROMIUM)"; return 1; }
    log "installing $* (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "$@" >&2 && return 0
    # An old or missing package list: refresh it once and try again.
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -q >&2
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "$@" >&2
}

cmd_ensure() {
    local -a missing=()
    find_binary >/dev/null || missing+=(chromium)
    has_cjk_font || missing+=(fonts-wqy-microhei)
    if ((${#missing[@]})); then
        apt_install "${missing[@]}" || { log "could not install ${missing[*]}"; exit 1; }
    fi
    find_binary || { log "no chromium binary after installing"; exit 1; }
}

case "${1:-}" in
    ensure) cmd_ensure ;;
    path) find_binary ;;
    *)
        echo "usage: $0 ensure|path" >&2
        exit 2
        ;;
esac
