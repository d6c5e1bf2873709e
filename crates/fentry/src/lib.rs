//! What an unmodified kernel does when a tracing program (fentry, fexit,
//! fmod_ret) names a BTF FUNC, predicted from the kernel's own rules, and
//! whether the BTF an encoder wrote tells the truth about the code.
//!
//! - [`audit`]: `btfkit check --attach`: for every FUNC, where the kernel
//!   attaches by its name and whether the FUNC's prototype is proven to be
//!   that code's;
//! - [`verify`]: `btfkit funcs --verify`: every FUNC and `addr=` tag
//!   against the function model read from DWARF;
//! - [`kernel_rules`]: what the kernel image says about the verifier's
//!   rules beyond its BTF (its version, the functions it refuses to trace).
//!
//! The rules that the encoder shares with this audit (how the kernel looks
//! a name up, which code the final link moves, the image's symbols) live
//! in `ksyms` ([`ksyms::kernel_lookup`], [`ksyms::final_link`],
//! [`ksyms::image_symbols`]); the function model in `dwarf2btf::funcs`.

#![warn(missing_docs)]

pub mod audit;
pub mod kernel_rules;
pub mod verify;
