//! Shared by the dedup tests: the libbpf oracle program, built at test time.

pub mod libbpf_oracle;
