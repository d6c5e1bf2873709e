//! What an encode is asked for: the options of `btfkit encode` as the
//! library takes them. Every other module of the pipeline reads these; this
//! one reads none of them.

/// Which functions get a FUNC, and how (`--funcs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FuncMode {
    /// Every function instance with its true signature (func_policy::exact).
    #[default]
    Exact,
    /// pahole 1.24's choice of names, each with the prototype of the
    /// instance the kernel attaches the name to (func_policy::pahole).
    Pahole,
}

/// Which variables get a VAR (`--vars`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum VarsMode {
    /// Per-CPU variables in DATASEC `.data..percpu`, as pahole.
    #[default]
    Percpu,
    /// Every variable with a fixed address and an ELF symbol, one DATASEC
    /// per ELF section.
    All,
    /// No VAR and no DATASEC.
    None,
}

/// Which FUNCs carry DECL_TAG "addr=0x..." (`--addr-tags`,
/// func_policy::exact).
///
/// Only [`FuncMode::Exact`] writes them; pahole's mode writes none. An
/// address that the kernel's final link moves (`ksyms::final_link`) is
/// never a tag's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AddrTags {
    /// Where the name alone does not say which code the FUNC is: every FUNC
    /// that is not the instance the kernel attaches its name to (those are
    /// named `<symbol>..<address>`), and every FUNC whose name has several
    /// function symbols or that describes several instances.
    #[default]
    Ambiguous,
    /// Every FUNC, one tag per address it describes.
    All,
    /// No FUNC (the ones named `<symbol>..<address>` still say their
    /// address in their name).
    None,
}

/// The options of one encode. `Default` is `btfkit encode` without
/// options: every core, exact FUNCs, per-CPU VARs, ambiguous addr tags,
/// no Rust units, dedup on.
#[derive(Clone, Debug, Default)]
pub struct EncodeOptions {
    /// Worker threads; 0 means all cores.
    pub jobs: usize,
    /// Which functions get a FUNC, and with which prototype.
    pub funcs: FuncMode,
    /// Which variables get a VAR.
    pub vars: VarsMode,
    /// Which FUNCs carry `addr=` tags.
    pub addr_tags: AddrTags,
    /// Encode Rust compilation units too (pahole leaves them out).
    pub keep_rust: bool,
    /// Skip the final dedup (for tests and debugging). Split BTF then
    /// keeps its own copies of the strings its base has: it is the
    /// dedup's string pass that maps them to the base's.
    pub no_dedup: bool,
    /// Write a layout section (bpf-next's 32-byte header), as pahole's
    /// `--btf_features=layout`; split BTF gets none, as from pahole, since
    /// readers use the base's.
    pub layout: bool,
    /// Type attributes `address_space(1)` on the bpf_arena pointers of
    /// kfuncs whose `.BTF_ids` flags say so, as pahole's
    /// `--btf_features=attributes` (kfuncs.rs).
    pub attributes: bool,
    /// dwz's alternate debug file, instead of the one the object's
    /// `.gnu_debugaltlink` or `.debug_sup` names (altfile.rs).
    pub dwz_alt: Option<std::path::PathBuf>,
}
