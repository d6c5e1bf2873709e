//! The encoding pipeline: ELF + DWARF -> one deduplicated BTF.
//!
//! Invariant: the output depends only on the input and the options, never on
//! the number of threads. Units are converted in parallel (rayon) in batches;
//! each batch's results are collected in unit order and appended to the
//! output in that order, so ids and string offsets are those a single thread
//! would produce. Policies that decide across units (which FUNC to keep)
//! decide in `finish`, again in unit order. Dedup runs once at the end.
//!
//! Per unit, in parallel: types (`convert.rs`), then the function policy
//! (`--funcs`), then variables (`vars.rs`), all into the unit's own builder
//! with local ids. Sequentially: strings re-interned globally, ids shifted.

use std::sync::Arc;

use btf::{Btf, Type, TypeData, TypeId};
use rayon::prelude::*;

use crate::convert::{self, ConvertOptions, ConvertedUnit, UnitBuilder, UnitTypes};
use crate::error::{Error, Result};
use crate::load::{Dwarf, DwarfSections, ElfFile, ElfInfo, Reader};
use crate::{kfuncs, vars};

/// Which functions get a FUNC, and how (`--funcs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FuncMode {
    /// Every function instance with its true signature (funcs.rs).
    #[default]
    Exact,
    /// pahole 1.24's choice: the first definition of each ELF function name.
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
    None,
}

/// Which FUNCs carry DECL_TAG "addr=0x..." (`--addr-tags`, funcs.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AddrTags {
    #[default]
    Ambiguous,
    All,
    None,
}

#[derive(Clone, Debug)]
pub struct EncodeOptions {
    /// Worker threads; 0 means all cores.
    pub jobs: usize,
    pub funcs: FuncMode,
    pub vars: VarsMode,
    pub addr_tags: AddrTags,
    /// Encode Rust compilation units too (pahole leaves them out).
    pub keep_rust: bool,
    /// Skip the final dedup (for tests and debugging).
    pub no_dedup: bool,
}

impl Default for EncodeOptions {
    fn default() -> Self {
        EncodeOptions {
            jobs: 0,
            funcs: FuncMode::default(),
            vars: VarsMode::default(),
            addr_tags: AddrTags::default(),
            keep_rust: false,
            no_dedup: false,
        }
    }
}

/// Progress reports from the library; the command line draws them.
pub trait Progress: Sync {
    /// A stage begins; `total` units of work follow (0: unknown).
    fn stage(&self, _name: &str, _total: u64) {}
    /// `n` more units of work of the current stage are done.
    fn advance(&self, _n: u64) {}
}

/// Reports nothing.
pub struct NoProgress;
impl Progress for NoProgress {}

/// What a function policy sees of one compilation unit.
pub struct UnitContext<'a, 'd> {
    pub path: &'a std::path::Path,
    pub dwarf: &'a Dwarf<'d>,
    pub unit: &'a gimli::Unit<Reader<'d>>,
    /// Local type id of every type DIE of the unit (ids of `out`).
    pub types: &'a UnitTypes,
    pub elf: &'a ElfInfo<'d>,
    pub opts: &'a EncodeOptions,
}

/// How a unit's local type ids map to ids of the merged BTF.
#[derive(Clone, Copy, Debug)]
pub struct UnitRemap {
    /// Global id of local id 1, minus 1.
    base: TypeId,
}

impl UnitRemap {
    /// The global id of a local id of that unit (0 stays void).
    pub fn type_id(&self, local: TypeId) -> TypeId {
        if local == 0 {
            0
        } else {
            self.base + local
        }
    }
}

/// A function-emitting policy (`--funcs`). `unit` runs per compilation unit
/// in parallel, after the unit's types are converted: it may add types to
/// the unit's builder (local ids) and returns what it needs to decide across
/// units. `finish` runs once, with the units' results in unit order, after
/// all units are merged into `btf` and before dedup.
pub trait FuncPolicy: Sync {
    type Unit: Send;
    fn unit(&self, cx: &UnitContext<'_, '_>, out: &mut UnitBuilder) -> Result<Self::Unit>;
    fn finish(&self, units: Vec<(UnitRemap, Self::Unit)>, btf: &mut Btf) -> Result<()>;
}

/// The result of an encode.
pub struct Encoded {
    pub btf: Btf,
    /// Non-fatal problems, each naming the unit or DIE.
    pub warnings: Vec<String>,
    /// Number of types before dedup.
    pub types_before_dedup: u32,
}

/// Units converted in parallel between two sequential merges: large enough
/// to keep every core busy, small enough to bound memory.
const BATCH: usize = 64;

/// Encodes `elf` with a function policy. `base`: the vmlinux BTF that a
/// module's BTF is split over.
pub fn encode_with<P: FuncPolicy>(
    elf: &ElfFile,
    base: Option<Arc<Btf>>,
    opts: &EncodeOptions,
    policy: &P,
    progress: &dyn Progress,
) -> Result<Encoded> {
    let path = elf.path();
    let obj = elf.object()?;
    let info = ElfInfo::new(&obj);
    let sections = DwarfSections::load(elf, &obj)?;
    let dwarf = sections.dwarf();
    let dwarf_err = |e: gimli::Error, offset: u64| Error::Dwarf {
        path: path.to_owned(),
        offset,
        source: e,
    };
    let mut headers = Vec::new();
    let mut iter = dwarf.units();
    loop {
        let at = headers
            .last()
            .and_then(|h: &gimli::UnitHeader<Reader<'_>>| {
                let off = h.offset().as_debug_info_offset()?.0;
                Some((off + h.length_including_self()) as u64)
            })
            .unwrap_or(0);
        match iter.next() {
            Ok(Some(h)) => headers.push(h),
            Ok(None) => break,
            Err(e) => return Err(dwarf_err(e, at)),
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs)
        .build()
        .map_err(|e| Error::Encode {
            path: path.to_owned(),
            msg: format!("cannot start worker threads: {e}"),
        })?;
    let vars_cx = vars::VarsContext::new(&info, opts.vars);
    let copts = ConvertOptions {
        collect_vars: opts.vars != VarsMode::None,
        keep_rust: opts.keep_rust,
    };

    let mut btf = match base {
        Some(b) => Btf::new_split(b),
        None => Btf::new(),
    };
    let mut warnings = Vec::new();
    let mut policy_units = Vec::new();
    let mut secinfos = Vec::new();
    progress.stage("converting compilation units", headers.len() as u64);
    for batch in headers.chunks(BATCH) {
        let results: Vec<Result<Option<UnitOut<P::Unit>>>> = pool.install(|| {
            batch
                .par_iter()
                .map(|h| {
                    let r = encode_unit(path, &dwarf, *h, &copts, opts, &info, &vars_cx, policy);
                    progress.advance(1);
                    r
                })
                .collect()
        });
        for r in results {
            let Some(u) = r? else { continue };
            warnings.extend(u.converted_warnings);
            let remap = append_unit(&mut btf, u.builder);
            secinfos.extend(u.vars.into_iter().map(|mut v| {
                v.var = remap.type_id(v.var);
                v
            }));
            policy_units.push((remap, u.policy));
        }
    }
    progress.stage("functions and variables", 0);
    policy.finish(policy_units, &mut btf)?;
    vars::add_datasecs(&mut btf, &info, secinfos);
    kfuncs::tag_kfuncs(&mut btf, &obj, &info);
    let types_before_dedup = btf.type_count();
    if !opts.no_dedup {
        progress.stage("deduplicating", 0);
        btf::dedup::dedup(&mut btf, &btf::dedup::DedupOptions::default()).map_err(|e| {
            Error::Encode {
                path: path.to_owned(),
                msg: format!("dedup: {e}"),
            }
        })?;
    }
    Ok(Encoded {
        btf,
        warnings,
        types_before_dedup,
    })
}

struct UnitOut<U> {
    builder: UnitBuilder,
    vars: Vec<vars::SecEntry>,
    policy: U,
    converted_warnings: Vec<String>,
}

#[allow(clippy::too_many_arguments)]
fn encode_unit<'d, P: FuncPolicy>(
    path: &std::path::Path,
    dwarf: &Dwarf<'d>,
    header: gimli::UnitHeader<Reader<'d>>,
    copts: &ConvertOptions,
    opts: &EncodeOptions,
    info: &ElfInfo<'d>,
    vars_cx: &vars::VarsContext,
    policy: &P,
) -> Result<Option<UnitOut<P::Unit>>> {
    let offset = header
        .offset()
        .as_debug_info_offset()
        .map_or(0, |o| o.0 as u64);
    let unit = dwarf.unit(header).map_err(|e| Error::Dwarf {
        path: path.to_owned(),
        offset,
        source: e,
    })?;
    let converted = convert::convert_unit(dwarf, &unit, copts, path)?;
    let Some(ConvertedUnit {
        mut builder,
        types,
        vars: unit_vars,
        warnings,
    }) = converted
    else {
        return Ok(None);
    };
    let cx = UnitContext {
        path,
        dwarf,
        unit: &unit,
        types: &types,
        elf: info,
        opts,
    };
    let policy_out = policy.unit(&cx, &mut builder)?;
    let vars = vars_cx.unit_vars(&mut builder, &unit_vars);
    Ok(Some(UnitOut {
        builder,
        vars,
        policy: policy_out,
        converted_warnings: warnings,
    }))
}

/// Appends a unit's types to `btf`: strings re-interned, local ids shifted.
fn append_unit(btf: &mut Btf, builder: UnitBuilder) -> UnitRemap {
    let remap = UnitRemap {
        base: btf.type_count() - 1,
    };
    let (types, strings) = builder.into_parts();
    // Local string offset -> global offset, filled for each string start.
    let mut str_map = vec![0u32; strings.len()];
    let mut off = 0usize;
    while off < strings.len() {
        let end = strings[off..]
            .iter()
            .position(|&b| b == 0)
            .map_or(strings.len(), |e| off + e);
        let s = &strings[off..end];
        let global = match std::str::from_utf8(s) {
            Ok(s) => btf.add_str(s),
            Err(_) => btf.add_str(&String::from_utf8_lossy(s)),
        };
        if let Some(slot) = str_map.get_mut(off) {
            *slot = global;
        }
        off = end + 1;
    }
    for mut t in types {
        t.for_each_str_mut(|s| *s = str_map.get(*s as usize).copied().unwrap_or(0));
        t.for_each_ref_mut(|r| *r = remap.type_id(*r));
        btf.add_type(t);
    }
    remap
}

/// `--funcs none`-like policy: emits no functions (tests, and types-only use).
pub struct NoFuncs;

impl FuncPolicy for NoFuncs {
    type Unit = ();
    fn unit(&self, _: &UnitContext<'_, '_>, _: &mut UnitBuilder) -> Result<()> {
        Ok(())
    }
    fn finish(&self, _: Vec<(UnitRemap, ())>, _: &mut Btf) -> Result<()> {
        Ok(())
    }
}

/// Encodes with the policy `opts.funcs` names.
pub fn encode(
    elf: &ElfFile,
    base: Option<Arc<Btf>>,
    opts: &EncodeOptions,
    progress: &dyn Progress,
) -> Result<Encoded> {
    match opts.funcs {
        // Until the function model lands (funcs.rs), `exact` falls back to
        // pahole's choice so that every encode still has functions.
        FuncMode::Exact | FuncMode::Pahole => {
            encode_with(elf, base, opts, &crate::pahole::PaholeFuncs, progress)
        }
    }
}

/// Counts of types per kind name, for reports and tests.
pub fn kind_counts(btf: &Btf) -> std::collections::BTreeMap<&'static str, usize> {
    let mut m = std::collections::BTreeMap::new();
    for (_, t) in btf.iter() {
        *m.entry(t.kind_name()).or_insert(0) += 1;
    }
    m
}

/// A FUNC of `name` over `proto` with static linkage, as pahole writes
/// every function.
pub fn func_type(name_off: u32, proto: TypeId) -> Type {
    Type::new(name_off, TypeData::Func { proto, linkage: 0 })
}
