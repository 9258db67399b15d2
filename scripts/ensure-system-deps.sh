#!/usr/bin/env bash
# Installs the system (Debian) packages the test suite needs, and nothing else.
#
# Idempotent and fast when everything is already there: each ensure_* function checks for
# the binary first and only then touches apt. CI machines may be fresh, so `make test` (via
# .ci/run) must be able to install these itself; a developer who is not root gets one line
# naming the package instead.
#
# To add a dependency: write one ensure_<name> function below (check → install_debian_packages)
# and call it from main().
set -euo pipefail

# apt-get update is slow; run it at most once per invocation, and only if something is missing.
APT_UPDATED=0

install_debian_packages() {
    # $1 = the binary that proves the install worked, the rest = Debian package names.
    local probe=$1
    shift
    if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
        echo "ensure-system-deps: ${probe} is missing; install the Debian package(s): $* (as root: apt-get install $*)" >&2
        exit 1
    fi
    if [[ $APT_UPDATED -eq 0 ]]; then
        apt-get update -qq
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
    if [[ ! -x $probe ]] && ! command -v "$probe" >/dev/null 2>&1; then
        echo "ensure-system-deps: installed $* but ${probe} is still missing" >&2
        exit 1
    fi
}

# The browser fetcher (sitesync[browser]) drives the system Chromium: Playwright's own browser
# download cannot work on machines without general internet access.
ensure_chromium() {
    local chromium=${SITESYNC_CHROMIUM:-/usr/bin/chromium}
    [[ -x $chromium ]] && return 0
    install_debian_packages "$chromium" chromium
}

# The PostgreSQL test suite starts a throwaway server from Debian's binaries when
# SITESYNC_TEST_POSTGRES_DSN names no running one (tests/_postgres.py).
ensure_postgresql() {
    if compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || command -v pg_ctl >/dev/null 2>&1; then
        return 0
    fi
    install_debian_packages /usr/bin/psql postgresql
}

# The clock-skew tests run a worker under libfaketime, a machine whose clock is minutes off.
ensure_faketime() {
    command -v faketime >/dev/null 2>&1 && return 0
    install_debian_packages faketime faketime
}

# `make bench` (benchmarks/run.py) serves its site with nginx, started from a temporary
# configuration (no system service is used). Not needed by the test suite: only with "bench".
ensure_nginx() {
    command -v nginx >/dev/null 2>&1 && return 0
    install_debian_packages nginx nginx
}

# --- add further dependencies here, one function each ------------------------------------------

main() {
    if [[ ${1:-} == bench ]]; then
        ensure_nginx
        return 0
    fi
    ensure_chromium
    ensure_postgresql
    ensure_faketime
}

main "$@"
