# shellcheck shell=bash
# The Debian mirror this machine's apt already uses, for the scripts that
# fetch from Debian's archive themselves (sid-chroot.sh's debootstrap,
# fetch-debian-kernels-pinned.sh's private apt state): they take the host's
# choice of mirror instead of naming one in the repository.
#
#   . "$(dirname "$(readlink -f "$0")")/lib/debian-mirror.sh"
#   mirror=$(debian_mirror) || exit 1
#
# Sourced, not run; defines debian_mirror and nothing else.

# Prints the first Debian archive (not -security: its URI ends in
# /debian-security) of the host's apt sources: the URIs of deb822 files
# (/etc/apt/sources.list.d/*.sources), then the one-line `deb` entries of
# /etc/apt/sources.list and sources.list.d/*.list. Prints nothing and fails
# when there is none.
debian_mirror() {
  local uris
  # The pipeline's status is not the answer: sed fails on a file that is
  # absent (most hosts have no sources.list), and a reader that stopped
  # early (grep -m1, head) would kill the writers with SIGPIPE; under the
  # callers' pipefail either would make a found mirror look like a failure.
  # So: every candidate, then the first one, then whether there was one.
  uris=$({
    sed -n 's/^[[:space:]]*URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | tr ' ' '\n'
    sed -n 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' \
      /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
  } | grep -E '^https?://[^ ]*/debian/?$' || true)
  [ -n "$uris" ] || return 1
  printf '%s\n' "${uris%%$'\n'*}"
}
