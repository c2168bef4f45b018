#!/usr/bin/env bash
# deps.sh: install the Debian packages the build and the tests need, only when missing.
# Used by demo.sh, test.sh and CI; safe to run again.  luajit (about 1.5 MB) is only for
# bench/vm's LuaJIT columns, which say '-' without it.
set -euo pipefail
pkgs=(make gcc libc6-dev libffi-dev libibverbs-dev librdmacm-dev pkg-config clang libclang-rt-14-dev
	libfuse3-dev fuse3 libsystemd-dev scdoc systemd bash-completion python3 libssl-dev openssl libzstd-dev
	libelf-dev luajit)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
