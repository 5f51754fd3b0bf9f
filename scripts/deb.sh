#!/usr/bin/env bash
# Builds cauda's Debian package: the release binary, then its manual pages
# and shell completions made by that binary (into target/assets/), then
# cargo-deb (installed at the pinned version when missing), the binary
# stripped of its debug information as Debian packages are.
#
#   scripts/deb.sh          # -> target/debian/cauda_VERSION-1_ARCH.deb (its path on stdout)
#   sudo dpkg -i target/debian/cauda_*.deb
#
# What goes where is [package.metadata.deb] in Cargo.toml; the maintainer
# scripts in debian/ say which files of a cauda installed another way the
# package replaces, and which cauda on PATH shadows it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Progress on stderr; stdout is only the package's path, for scripts.
exec 3>&1 1>&2

CARGO_DEB_VERSION=3.8.0

if ! cargo deb --version 2>/dev/null | grep -qF "$CARGO_DEB_VERSION"; then
    echo "== cargo install cargo-deb $CARGO_DEB_VERSION"
    cargo install cargo-deb --locked --version "$CARGO_DEB_VERSION"
fi

echo "== cargo build --release"
cargo build --release --locked
target_dir=$(cargo metadata --format-version 1 --no-deps --locked \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
cauda="$target_dir/release/cauda"

echo "== manual pages and completions from $cauda"
assets=target/assets
rm -rf "$assets"
mkdir -p "$assets/completions"
"$cauda" man --dir "$assets/man"
"$cauda" completions bash >"$assets/completions/cauda.bash"
"$cauda" completions zsh >"$assets/completions/_cauda"
"$cauda" completions fish >"$assets/completions/cauda.fish"

echo "== cargo deb"
cargo deb --no-build --locked --strip >&3
