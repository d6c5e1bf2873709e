//! Placeholder: the kernel verifier's rules are being written here.
