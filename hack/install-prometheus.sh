#!/usr/bin/env bash
# Makes `prometheus` and `promtool` available for the e2e tests (test/e2e),
# from the distribution's package (Debian bookworm: prometheus 2.42), when
# they are not on PATH already. Prints where they are.
#
# The Debian package's postinst would start a system Prometheus on :9090
# (through invoke-rc.d or deb-systemd-invoke). The tests start their own, on a
# free port with a throw-away TSDB, so the install runs with a policy-rc.d
# that denies every service start; a system Prometheus that is running anyway
# afterwards (pid file of the package's init script) is stopped.
set -euo pipefail

if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
  echo "prometheus: $(command -v prometheus) ($(prometheus --version 2>&1 | head -n1))"
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  echo "install-prometheus: prometheus and promtool are not on PATH and there is no apt-get;" >&2
  echo "install-prometheus: install Prometheus 2.x (prometheus and promtool) and rerun." >&2
  exit 1
fi

sudo=()
if ((EUID != 0)); then
  sudo=(sudo)
fi

policy=/usr/sbin/policy-rc.d
backup=
if [[ -e ${policy} ]]; then
  backup=$(mktemp)
  "${sudo[@]}" cp -p "${policy}" "${backup}"
fi
restore_policy() {
  if [[ -n ${backup} ]]; then
    "${sudo[@]}" cp -p "${backup}" "${policy}"
    rm -f "${backup}"
  else
    "${sudo[@]}" rm -f "${policy}"
  fi
}
trap restore_policy EXIT
# 101: "action forbidden by policy" (invoke-rc.d(8)); deb-systemd-invoke
# honours it too.
printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "${policy}" >/dev/null
"${sudo[@]}" chmod 0755 "${policy}"

install=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus)
echo "install-prometheus: ${install[*]}"
if ! "${install[@]}"; then
  echo "install-prometheus: install failed; apt-get update and retrying"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
  "${install[@]}"
fi

# Belt and braces: never leave a system Prometheus behind on :9090.
pidfile=/run/prometheus/prometheus.pid
if [[ -f ${pidfile} ]]; then
  pid=$(cat "${pidfile}")
  if [[ ${pid} =~ ^[0-9]+$ ]] && [[ $(readlink "/proc/${pid}/exe" 2>/dev/null || true) == */prometheus ]]; then
    echo "install-prometheus: stopping the system prometheus the package started (pid ${pid})"
    "${sudo[@]}" kill "${pid}"
  fi
fi

command -v prometheus >/dev/null && command -v promtool >/dev/null
echo "prometheus: $(command -v prometheus) ($(prometheus --version 2>&1 | head -n1))"
