#!/usr/bin/env bash
# Install the Debian packages gfcr's envs and tests need; elsewhere, say what to install.
#   bubblewrap  - the local code sandbox      chromium    - browser envs (driven by Playwright)
#   libseccomp2 - the local sandbox's seccomp filter (pyseccomp loads it; apt itself depends on it)
#   postgresql  - SQL env tests on a real server
#   python3-pytest, patch - gfcr/SWE-v0: the sandbox's interpreter runs the projects' tests and applies diffs
set -euo pipefail
packages=(bubblewrap libseccomp2 chromium postgresql python3-pytest patch)

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "gfcr needs these system packages, which are missing: ${missing[*]}" >&2
    echo "  Debian/Ubuntu: sudo apt-get install -y ${missing[*]}" >&2
    echo "  (math envs work without them; code, SQL and browser envs and their tests do not)" >&2
fi
