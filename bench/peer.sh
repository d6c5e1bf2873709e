# The pahole that bench/encode.sh and bench/modules.sh measure btfkit
# against, and its command line. Sourced (from the repository's root); PEER
# picks the peer:
#   1.32 (default): Debian sid's pahole in the sid chroot
#        (scripts/sid-chroot.sh), with the flags Linux 7.2's
#        scripts/Makefile.btf gives it (FLAGS_7_2 of
#        crates/btfkit/tests/pahole_cli.rs);
#   1.24: the host's pahole (Debian 12's dwarves), with the flags 6.1's
#        scripts/pahole-flags.sh gives it.
# btfkit runs as pahole with the same flags. For 1.32 the calling script
# runs again inside the chroot (peer_enter) and both tools run there under
# the chroot's GNU time and taskset: the wall times and peak RSS are the
# tools' own, not counting the chroot's setup, and both see the same libc
# and /proc.

peer=${PEER:-1.32}
case $peer in
  1.32) peer_flags=(-J -j --btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs,attributes,layout --lang_exclude=rust) ;;
  1.24) peer_flags=(-J --btf_gen_floats -j --lang_exclude=rust) ;;
  *) echo "PEER=$peer: 1.32 or 1.24" >&2; exit 2 ;;
esac

# peer_enter SCRIPT PATH... -- ARG...: with PEER=1.32 and outside the
# chroot, runs `bash SCRIPT ARG...` inside it, with the repository and each
# PATH bound at the same path, and does not return. The chroot's
# environment is empty: what the scripts read from theirs goes along
# (RUNS, KEEP, and BTFKIT, the binary built outside, since the chroot has
# no cargo; BENCH_REV, since it has no git).
peer_enter() {
  local script=$1 binds=() vars=()
  shift
  while [[ $1 != -- ]]; do binds+=(--bind "$1"); shift; done
  shift
  [[ $peer == 1.32 && -z ${BENCH_IN_SID:-} ]] || return 0
  if [[ -n ${KEEP:-} ]]; then
    : >"$KEEP"
    KEEP=$(realpath "$KEEP")
    binds+=(--bind "$KEEP")
  fi
  local v
  for v in RUNS BTFKIT KEEP; do
    if [[ -n ${!v:-} ]]; then vars+=("$v=${!v}"); fi
  done
  exec bash scripts/sid-chroot.sh run --bind "$PWD" "${binds[@]}" -- \
    env BENCH_IN_SID=1 PEER="$peer" BENCH_REV="$(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
    "${vars[@]}" bash "$script" "$@"
}
