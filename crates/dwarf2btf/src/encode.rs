//! The encoding pipeline: ELF + DWARF -> one deduplicated BTF.
//!
//! Invariant: the output depends only on the input and the options, never on
//! the number of threads. The units are cut into segments of consecutive
//! units, about [`SEGMENT_BYTES`] of DWARF each, at least `MIN_SEGMENTS`
//! of them if there are several (a cut that depends only on the input);
//! segments are encoded in parallel, in order (see `run_in_order`), each one
//! sequentially: its units' types (`convert.rs`), the function
//! policy's and the variables' types, appended in unit order, then
//! deduplicated on their own. The deduplicated segments are appended to the
//! output in segment order and deduplicated once more. Dedup merges only
//! types that are equal, so deduplicating a segment first changes little
//! but the size of the last dedup's input (3.4 M -> 0.24 M types on
//! vmlinux) and the peak memory; on Debian's vmlinux the result has the
//! same types per kind and layouts as one dedup. An input up to one
//! segment's size (modules, small programs) is cut too, for the cores to
//! convert it side by side, but its segments are only appended: it is
//! deduplicated once, exactly as libbpf would.
//!
//! Strings of the output, when there are several segments (and no base): appending a
//! segment interns the strings its types use, type by type, and the
//! policy, the DATASECs and the kfunc tags add each string right before
//! the type that uses it. So every string is there once, in the order of
//! its first use by the types in id order, which is what the final dedup's
//! string pass would make of them (libbpf's order): that pass is skipped.
//!
//! Ids that outlive a segment's dedup (the types a policy or a variable
//! refers to from outside the BTF) are carried through it by anchors: one
//! DECL_TAG per such id, component_idx = its anchor number, appended after
//! everything else and removed after the dedup, when its `type` field says
//! where that id went.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use btf::dedup::{Appending, BaseTable, DedupOptions};
use btf::{Btf, Type, TypeData, TypeId};
use object::{Object, ObjectSection};

use crate::convert::{self, ConvertOptions, ConvertedUnit};
use crate::error::{Error, Result};
use crate::load::{Dwarf, DwarfSections, ElfFile, ElfInfo, Reader};
use crate::strings::Strings;
use crate::{kfuncs, vars};

use crate::func_policy::exact::ExactFuncs;
use crate::func_policy::pahole::PaholeFuncs;
use crate::func_policy::{FuncPolicy, UnitContext, UnitRemap};
use crate::options::{EncodeOptions, FuncMode, VarsMode};

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

/// The result of an encode.
pub struct Encoded {
    /// The BTF, deduplicated (unless [`EncodeOptions::no_dedup`]) and
    /// validated against the kernel's rules; split over the base when one
    /// was given.
    pub btf: Btf,
    /// Non-fatal problems, each naming the unit or DIE.
    pub warnings: Vec<String>,
    /// Number of types before dedup.
    pub types_before_dedup: u32,
}

/// DWARF bytes per segment, at most: a segment's dedup removes most of the
/// duplication between its units (they share headers); segments must be
/// many enough to keep every core busy and small enough to bound memory.
/// Cutting by bytes, not by units, gives segments of similar cost (units
/// range from a few KiB to MiBs).
pub const SEGMENT_BYTES: usize = 6 << 20;

/// An input larger than one segment is cut into at least this many: a
/// large module (mlx5_core.ko, 17 MiB of DWARF) in three segments kept one
/// of two cores idle for a third of its encode. The cut still depends on
/// the input alone.
const MIN_SEGMENTS: usize = 8;

/// Inputs up to [`SEGMENT_BYTES`] (all but a few modules) are cut into
/// [`MIN_SEGMENTS`] too, in pieces of at least this much DWARF, but their
/// segments are not deduplicated: appended in order, they are the types
/// one segment would have made, and the final dedup is the only one, as
/// in libbpf. The cut only lets the cores convert units side by side
/// (drbd.ko, 12 units: one core converted for 40 ms while the other
/// waited).
const MIN_PIECE_BYTES: usize = 256 << 10;

/// How much .debug_info the unit header reader passes between releases
/// of the pages it faulted in.
const HEADERS_RELEASE_BYTES: usize = 8 << 20;

/// How much of a segment's .debug_info its units read between releases
/// of their pages.
const UNIT_RELEASE_BYTES: usize = 256 << 10;

thread_local! {
    /// The type list of this thread's last segment, emptied by the
    /// segment's dedup, for its next segment. With a new list for each
    /// segment, glibc kept the freed ones in its heaps beside the new: on
    /// vmlinux the peak was 6 MB higher (medians of 15 rounds, 111.3 and
    /// 104.9 MB), and 10% more pages faulted in.
    static SPARE_TYPES: std::cell::RefCell<Vec<Type>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The name of the anchor DECL_TAGs (never in an output).
const ANCHOR: &str = "btfkit.anchor";

/// Runs `f` on a pool of `opts.jobs` threads, with the dedup's part of
/// `base` (~100,000 candidates) made on one more thread meanwhile (the
/// dedup waits for it if it is not ready), and returns once every one of
/// those threads has exited. A dropped pool's threads exit after the encode
/// has returned, and even the threads of `std::thread::scope` run their
/// thread-local destructors after it returns: a library caller (a test, the
/// fuzzer's leak check) would see threads and memory of an encode that is
/// over.
fn with_worker_threads<R>(
    path: &std::path::Path,
    opts: &EncodeOptions,
    base: Option<Arc<Btf>>,
    f: impl FnOnce(&rayon::ThreadPool, Option<Arc<Btf>>, BaseTable) -> Result<R>,
) -> Result<R> {
    let mut threads = Vec::new();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs)
        .spawn_handler(|thread| {
            threads.push(std::thread::Builder::new().spawn(|| thread.run())?);
            Ok(())
        })
        .build()
        .map_err(|e| Error::Encode {
            path: path.to_owned(),
            msg: format!("cannot start worker threads: {e}"),
        })?;
    let table = BaseTable::default();
    if let Some(b) = base.as_ref().filter(|_| opts.jobs != 1 && !opts.no_dedup) {
        let (b, t) = (Arc::clone(b), table.clone());
        // Without a thread to spare, the first dedup prepares the base.
        if let Ok(t) = std::thread::Builder::new().spawn(move || t.prepare(&b)) {
            threads.push(t);
        }
    }
    let out = f(&pool, base, table);
    drop(pool);
    threads.into_iter().for_each(join);
    out
}

/// Joins `thread`, passing its panic on.
fn join(thread: std::thread::JoinHandle<()>) {
    if let Err(panic) = thread.join() {
        std::panic::resume_unwind(panic);
    }
}

/// Everything an encode found, before the final dedup.
struct Gathered {
    /// Every type, function and variable.
    btf: Btf,
    warnings: Vec<String>,
    /// Each string of `btf` once, in the order of first use (see the
    /// module comment).
    strings_in_order: bool,
    /// The final dedup, when it started on the units' types already.
    appending: Option<Appending>,
    /// The base's candidates, shared by every dedup of the encode.
    base_table: BaseTable,
}

/// The pipeline on `pool`, with the policy `make_policy` makes: it runs on
/// the pool while the unit headers and the ELF's symbols are read (a
/// policy reads the symbol table: tens of ms on vmlinux); the policy is
/// freed during the final dedup.
fn run_pipeline<P, R, F>(
    pool: &rayon::ThreadPool,
    elf: &ElfFile,
    (base, base_table): (Option<Arc<Btf>>, BaseTable),
    opts: &EncodeOptions,
    make_policy: F,
    progress: &dyn Progress,
) -> Result<Encoded>
where
    P: FuncPolicy,
    R: std::ops::Deref<Target = P> + Send,
    F: FnOnce() -> Result<R> + Send,
{
    let path = elf.path();
    progress.stage("reading ELF and DWARF", 0);
    let obj = elf.object()?;
    let sections = DwarfSections::load(elf, &obj)?;
    let mut dwarf = sections.dwarf();
    // dwz's alternate file: its DIEs and strings are the supplementary
    // file's that DW_FORM_GNU_ref_alt / _strp_alt refer to.
    let alt = crate::altfile::open(elf, &obj, opts.dwz_alt.as_deref())?;
    let alt_sections = match &alt {
        Some(a) => Some(DwarfSections::load(a, &a.object()?)?),
        None => None,
    };
    if let Some(s) = &alt_sections {
        dwarf.set_sup(s.dwarf());
    }
    let (info_range, passing_file_ranges) = file_ranges(&obj);
    let info_file_offset = info_range.map(|r| r.0);
    // The ELF's symbols and sections are read in the policy's shadow too.
    let (policy, (headers, info)) = pool.join(make_policy, || {
        // Reading the headers faults in pages all over .debug_info (the
        // kernel maps the neighbours of each faulting page too: ~108 MB of
        // vmlinux's 164, more than the encode's peak otherwise): they are
        // dropped as the reader passes them, until each segment reads its
        // own (here rather than after the policy, where the encode would
        // wait for it).
        let passed = |end: usize| {
            if let Some((start, _)) = info_range {
                elf.release(start, start + end);
            }
        };
        let headers = read_headers(&dwarf, path, passed);
        if let Some((start, end)) = info_range {
            elf.release(start, end);
        }
        (headers, ElfInfo::new(&obj))
    });
    let (owned_policy, headers) = (policy?, headers?);
    let policy = &*owned_policy;
    let vars_cx = vars::VarsContext::new(&info, opts.vars);
    let copts = ConvertOptions {
        collect_vars: opts.vars != VarsMode::None,
        keep_rust: opts.keep_rust,
        subprograms: P::SUBPROGRAMS,
        units: Default::default(),
    };

    let (segments, limit, dedup_segments) = cut_segments(&headers);
    let seg_cx = SegmentContext {
        path,
        dwarf: &dwarf,
        copts: &copts,
        opts,
        info: &info,
        vars_cx: &vars_cx,
        base: base.clone(),
        base_table,
        progress,
        elf,
        info_file_offset,
        passing_file_ranges,
        // A small input's single dedup is the final one. (Deduplicating
        // twice is not always a no-op for split BTF: the second pass can
        // map to the base what libbpf's one pass keeps.)
        dedup: !opts.no_dedup && dedup_segments,
    };
    let merged = convert_segments(pool, &seg_cx, &segments, limit, policy, base);
    let gathered = gather(pool, &seg_cx, merged, policy, &obj)?;
    // What was read to get here (the policy's symbol maps, the ELF's
    // symbols, the unit headers: tens of MB on vmlinux, ~15 ms to free) is
    // freed on one core while the final dedup starts on another.
    let leftovers = (owned_policy, info, headers);
    let (encoded, ()) = pool.join(
        || final_dedup(gathered, path, opts, progress),
        move || drop(leftovers),
    );
    encoded
}

/// The merged units' types with the functions, DATASECs and kfunc tags
/// added, the final dedup's first passes already run over the units' part.
fn gather<P: FuncPolicy>(
    pool: &rayon::ThreadPool,
    cx: &SegmentContext<'_, '_>,
    merged: Merged<P::Unit>,
    policy: &P,
    obj: &object::File<'_>,
) -> Result<Gathered> {
    let Merged {
        sink,
        warnings,
        policy_units,
        secinfos,
        error,
    } = merged;
    if let Some(e) = error {
        return Err(e);
    }
    let mut btf = sink.into_btf();
    // Split BTF's own section starts without the empty string that
    // `Strings` puts first: the string pass drops it.
    let strings_in_order = cx.dedup && btf.base().is_none();
    // The final dedup's first passes run over the units' types on one core
    // while the functions, DATASECs and kfunc tags are added on the other
    // (`btf::dedup::Appending`: FUNCs come from the policy's finish alone,
    // so the kfunc tags find every one among the types added here).
    let mut appending = if cx.opts.no_dedup {
        None
    } else {
        Appending::take(&mut btf, &dedup_options(strings_in_order, &cx.base_table))
            .map_err(|e| dedup_error(cx.path, e))?
    };
    cx.progress.stage("functions and variables", 0);
    let mut kfunc_warnings = Vec::new();
    let (added, ahead) = pool.join(
        || -> Result<()> {
            policy.finish(policy_units, &mut btf)?;
            vars::add_datasecs(&mut btf, cx.info, secinfos);
            kfuncs::tag_kfuncs(
                &mut btf,
                obj,
                cx.info,
                cx.opts.attributes,
                &mut kfunc_warnings,
            );
            Ok(())
        },
        || appending.as_mut().map_or(Ok(()), Appending::run_ahead),
    );
    added?;
    ahead.map_err(|e| dedup_error(cx.path, e))?;
    // The final dedup, where memory peaks, reads nothing of the ELF.
    cx.elf.release_all();
    Ok(Gathered {
        btf,
        warnings: [warnings, kfunc_warnings].concat(),
        strings_in_order,
        appending,
        base_table: cx.base_table.clone(),
    })
}

/// The units' types, functions' and variables' parts, segment by segment on
/// `pool` and merged in segment order (the module comment's invariant).
fn convert_segments<'d, P: FuncPolicy>(
    pool: &rayon::ThreadPool,
    seg_cx: &SegmentContext<'_, 'd>,
    segments: &[&[gimli::UnitHeader<Reader<'d>>]],
    limit: usize,
    policy: &P,
    base: Option<Arc<Btf>>,
) -> Merged<P::Unit> {
    let units = segments.iter().map(|s| s.len() as u64).sum();
    seg_cx.progress.stage("converting compilation units", units);
    let mut merged = Merged {
        sink: Sink::new(base),
        warnings: Vec::new(),
        policy_units: Vec::new(),
        secinfos: Vec::new(),
        error: None,
    };
    run_in_order(
        pool,
        segments,
        limit,
        |units| encode_segment(seg_cx, units, policy),
        |seg| merged.add(seg),
    );
    // The converters' scratch would otherwise stay with the pool's threads
    // through the final dedup, where memory peaks.
    pool.broadcast(|_| {
        convert::release_scratch();
        SPARE_TYPES.take();
    });
    // Nothing reads the DWARF any more; the symbols, read again below, come
    // back from the page cache.
    seg_cx.elf.release_all();
    merged
}

/// Bytes `start..end` of the mapped file.
type FileRange = (usize, usize);

/// Where `.debug_info` and the sections the units read in passing lie in
/// the mapped file, when they are read in place (not compressed, not
/// relocated): segments release their pages.
fn file_ranges(obj: &object::File<'_>) -> (Option<FileRange>, Vec<FileRange>) {
    let in_place = |name: &str| {
        (obj.kind() != object::ObjectKind::Relocatable)
            .then(|| obj.section_by_name(name))
            .flatten()
            .and_then(|s| match s.compressed_file_range() {
                Ok(r) if r.format == object::CompressionFormat::None => Some((
                    usize::try_from(r.offset).ok()?,
                    usize::try_from(r.offset.checked_add(r.compressed_size)?).ok()?,
                )),
                _ => None,
            })
    };
    // What the units read in passing: the location and range lists the
    // function policy reads, and the code whose entry it reads (one page
    // of .text per function, and the kernel maps 64 KiB around each: all
    // of vmlinux's 10 MB of code by the last segment, had it stayed). Each
    // segment reads its own units' lists, so these pages are released
    // with the segment's DIEs (another segment's that are dropped come
    // back from the page cache).
    let passing = [
        ".debug_line",
        ".debug_abbrev",
        ".debug_loclists",
        ".debug_loc",
        ".debug_rnglists",
        ".debug_ranges",
    ]
    .into_iter()
    .filter_map(in_place)
    .chain(
        obj.sections()
            .filter(|s| s.kind() == object::SectionKind::Text)
            .filter_map(|s| s.name().ok().and_then(in_place)),
    )
    .collect();
    (in_place(".debug_info"), passing)
}

/// The last step of an encode: the final dedup. It is where memory peaks.
fn final_dedup(
    gathered: Gathered,
    path: &std::path::Path,
    opts: &EncodeOptions,
    progress: &dyn Progress,
) -> Result<Encoded> {
    let Gathered {
        mut btf,
        warnings,
        strings_in_order,
        appending,
        base_table,
    } = gathered;
    let types_before_dedup = btf.type_count();
    if !opts.no_dedup {
        progress.stage("deduplicating", 0);
        match appending {
            Some(a) => a.finish(&mut btf).map_err(|e| dedup_error(path, e))?,
            None => btf = dedup(btf, path, strings_in_order, &base_table)?,
        }
    }
    let target = if opts.layout && btf.base().is_none() {
        btf.set_layout(true);
        btf::validate::Target::BpfNext
    } else {
        btf::validate::Target::Linux6_18
    };
    // What btfkit writes, its own `check` (and the kernel) must accept:
    // corrupt DWARF (a `.debug_str` cut to nothing, a bit field wider than
    // its type, a member past the end of its union) would otherwise become
    // BTF that fails only where it is loaded.
    progress.stage("validating", 0);
    let problems = btf::validate::validate_for(&btf, target);
    if let Some(first) = problems.first() {
        return Err(Error::Encode {
            path: path.to_owned(),
            msg: format!(
                "the DWARF gives BTF that the kernel would refuse ({} problems; the first: {first} [{}])",
                problems.len(),
                first.rule
            ),
        });
    }
    Ok(Encoded {
        btf,
        warnings,
        types_before_dedup,
    })
}

/// Every unit header of .debug_info, in order. `passed` is told, every
/// [`HEADERS_RELEASE_BYTES`] or so, the .debug_info offset up to which the
/// headers are read.
fn read_headers<'d>(
    dwarf: &Dwarf<'d>,
    path: &std::path::Path,
    passed: impl Fn(usize),
) -> Result<Vec<gimli::UnitHeader<Reader<'d>>>> {
    let mut headers: Vec<gimli::UnitHeader<Reader<'d>>> = Vec::new();
    let mut iter = dwarf.units();
    let mut told = 0;
    loop {
        match iter.next() {
            Ok(Some(h)) => {
                if let Some(off) = h.offset().as_debug_info_offset() {
                    if off.0 >= told + HEADERS_RELEASE_BYTES {
                        passed(off.0);
                        told = off.0;
                    }
                }
                headers.push(h);
            }
            Ok(None) => return Ok(headers),
            Err(source) => {
                // Where the failing header starts: after the last good one.
                let offset = headers
                    .last()
                    .and_then(|h| {
                        let off = h.offset().as_debug_info_offset()?.0;
                        Some((off + h.length_including_self()) as u64)
                    })
                    .unwrap_or(0);
                return Err(Error::Dwarf {
                    path: path.to_owned(),
                    offset,
                    error: source,
                });
            }
        }
    }
}

/// Cuts the units into runs of about [`SEGMENT_BYTES`], or of a
/// [`MIN_SEGMENTS`]th of the input if that is less (but at least
/// [`MIN_PIECE_BYTES`] for an input of one segment's size); returns them,
/// the size a segment reaches before it is cut, and whether the input is
/// larger than one segment, whose segments are then deduplicated each.
fn cut_segments<'h, 'd>(
    headers: &'h [gimli::UnitHeader<Reader<'d>>],
) -> (Vec<&'h [gimli::UnitHeader<Reader<'d>>]>, usize, bool) {
    let total: usize = headers.iter().map(|h| h.length_including_self()).sum();
    let large = total > SEGMENT_BYTES;
    let limit = if large {
        total.div_ceil(MIN_SEGMENTS).min(SEGMENT_BYTES)
    } else {
        total.div_ceil(MIN_SEGMENTS).max(MIN_PIECE_BYTES)
    };
    let mut segments = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, h) in headers.iter().enumerate() {
        bytes += h.length_including_self();
        if bytes >= limit {
            segments.extend(headers.get(start..=i));
            (start, bytes) = (i + 1, 0);
        }
    }
    if start < headers.len() || segments.is_empty() {
        segments.extend(headers.get(start..));
    }
    (segments, limit, large)
}

/// Runs `f` on every segment on the pool's threads and hands the results
/// to `merge` in segment order.
///
/// Segments start in segment order, except those of at least twice
/// `limit` (a unit larger than a segment), which start first: the longest
/// jobs must not be the last ones. All others hold between `limit` and
/// twice that (the last one less), so the order costs no balance, and it
/// lets the merge keep up: after each segment, a worker merges the results
/// that are ready, in order, unless the other is merging, so that no merge
/// but the last segment's is left for the end (on vmlinux, 26 merges of
/// ~1 ms each had waited for the last segment, ~20 ms on one core). A
/// result stored while the other worker merges may be missed by both:
/// whatever is left is merged after the workers are done.
fn run_in_order<'h, 'd, R: Send, M: FnMut(R) + Send>(
    pool: &rayon::ThreadPool,
    segments: &[&'h [gimli::UnitHeader<Reader<'d>>]],
    limit: usize,
    f: impl Fn(&'h [gimli::UnitHeader<Reader<'d>>]) -> R + Sync,
    merge: M,
) {
    let size = |units: &[gimli::UnitHeader<Reader<'d>>]| -> usize {
        units.iter().map(|h| h.length_including_self()).sum()
    };
    let mut order: Vec<usize> = (0..segments.len()).collect();
    order.sort_by_key(|&i| {
        let oversized = segments.get(i).is_some_and(|s| size(s) >= 2 * limit);
        (!oversized, i)
    });
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = segments.iter().map(|_| Mutex::new(None)).collect();
    // The next segment to merge, and the merge.
    let merger = Mutex::new((0, merge));
    let drain = |m: &mut (usize, M)| {
        while let Some(slot) = slots.get(m.0) {
            let Some(r) = slot.lock().unwrap_or_else(|e| e.into_inner()).take() else {
                break;
            };
            (m.1)(r);
            m.0 += 1;
        }
    };
    pool.scope(|scope| {
        for _ in 0..pool.current_num_threads() {
            scope.spawn(|_| {
                while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if let (Some(units), Some(slot)) = (segments.get(i), slots.get(i)) {
                        let r = f(units);
                        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                    }
                    if let Ok(mut m) = merger.try_lock() {
                        drain(&mut m);
                    }
                }
            });
        }
    });
    drain(&mut merger.into_inner().unwrap_or_else(|e| e.into_inner()));
}

/// The segments appended so far, in segment order.
struct Merged<U> {
    sink: Sink,
    warnings: Vec<String>,
    /// Each unit's policy output, its ids global.
    policy_units: Vec<(UnitRemap, U)>,
    secinfos: Vec<vars::SecEntry>,
    /// The first segment that failed; later ones are dropped.
    error: Option<Error>,
}

impl<U> Merged<U> {
    fn add(&mut self, seg: Result<Segment<U>>) {
        if self.error.is_some() {
            return;
        }
        let seg = match seg {
            Ok(seg) => seg,
            Err(e) => {
                self.error = Some(e);
                return;
            }
        };
        self.warnings.extend(seg.warnings);
        let shift = append_btf(&mut self.sink, seg.btf);
        let global = |id: TypeId| shift.map(id);
        for (mut remap, u) in seg.units {
            remap.map_globals(global);
            self.policy_units.push((remap, u));
        }
        self.secinfos.extend(seg.vars.into_iter().map(|mut v| {
            v.var = global(v.var);
            v
        }));
    }
}

struct UnitOut<U> {
    /// The unit's types (strings in the segment's table), local ids.
    types: Vec<Type>,
    /// The first local id the policy and the variables added.
    added_from: TypeId,
    vars: Vec<vars::SecEntry>,
    policy: U,
    converted_warnings: Vec<String>,
}

/// What every segment shares.
struct SegmentContext<'a, 'd> {
    path: &'a std::path::Path,
    dwarf: &'a Dwarf<'d>,
    copts: &'a ConvertOptions,
    opts: &'a EncodeOptions,
    info: &'a ElfInfo<'d>,
    vars_cx: &'a vars::VarsContext,
    base: Option<Arc<Btf>>,
    /// The base's candidates, shared by the segments' dedups and the final.
    base_table: BaseTable,
    progress: &'a dyn Progress,
    elf: &'a ElfFile,
    /// File offset of .debug_info when it is read straight from the mapping.
    info_file_offset: Option<usize>,
    /// File ranges of the sections the units read in passing
    /// (`encode_on`), read in place.
    passing_file_ranges: Vec<(usize, usize)>,
    /// Deduplicate each segment before the final dedup.
    dedup: bool,
}

/// One deduplicated segment; `units` and `vars` hold ids of `btf`.
struct Segment<U> {
    btf: Btf,
    units: Vec<(UnitRemap, U)>,
    vars: Vec<vars::SecEntry>,
    warnings: Vec<String>,
}

fn encode_segment<P: FuncPolicy>(
    cx: &SegmentContext<'_, '_>,
    units: &[gimli::UnitHeader<Reader<'_>>],
    policy: &P,
) -> Result<Segment<P::Unit>> {
    let mut sink = Sink::new(cx.base.clone());
    // The list of this thread's last segment, and about one type per 50
    // bytes of DWARF, as in `convert_unit`: sized up front, the segment's
    // list grows without a dozen copies.
    let bytes: usize = units.iter().map(|h| h.length_including_self()).sum();
    sink.types = SPARE_TYPES.take();
    sink.types.reserve(bytes / 50);
    // Ids (in the segment before dedup) that must survive it, by anchor number.
    let mut anchors: Vec<TypeId> = Vec::new();
    let mut out_units = Vec::new();
    let mut vars = Vec::new();
    let mut warnings = Vec::new();
    let mut wanted = Vec::new();
    // Where the DIEs not released yet begin (file offset).
    let mut unreleased = None;
    for h in units {
        let r = encode_unit(
            cx.path,
            cx.dwarf,
            *h,
            cx.copts,
            cx.opts,
            cx.info,
            cx.vars_cx,
            policy,
            &mut sink.strings,
        );
        cx.progress.advance(1);
        // The unit's DIEs are read: their pages may leave memory (nobody
        // reads another unit's DIEs; a segment holds 6 MiB of them), a
        // few units at a time: each release interrupts the other cores to
        // flush their TLBs.
        if let (Some(file_off), Some(start)) =
            (cx.info_file_offset, h.offset().as_debug_info_offset())
        {
            let end = file_off + start.0 + h.length_including_self();
            let from = *unreleased.get_or_insert(file_off + start.0);
            if end.saturating_sub(from) >= UNIT_RELEASE_BYTES {
                cx.elf.release(from, end);
                unreleased = Some(end);
            }
        }
        let Some(u) = r? else { continue };
        warnings.extend(u.converted_warnings);
        let last = u.types.len() as TypeId;
        let shift = append_unit(&mut sink, u.types);
        // Local ids the outside refers to: the policy's own types and the
        // variables' (all added after the converter's), and what it lists.
        wanted.clear();
        wanted.extend(u.added_from..=last);
        policy.referenced(&u.policy, &mut wanted);
        wanted.sort_unstable();
        wanted.dedup();
        let mut remap = UnitRemap::default();
        for &local in wanted.iter().filter(|&&l| l != 0 && l <= last) {
            remap.push(local, anchors.len() as TypeId);
            anchors.push(shift.map(local));
        }
        for mut v in u.vars {
            v.var = remap.type_id(v.var);
            vars.push(v);
        }
        out_units.push((remap, u.policy));
    }
    release_segment(cx, units);
    let (btf, anchors) = if cx.dedup {
        dedup_segment(cx, sink, &anchors)?
    } else {
        (sink.into_btf(), anchors)
    };
    // Anchor numbers -> ids of the (deduplicated) segment.
    let resolve = |n: TypeId| anchors.get(n as usize).copied().unwrap_or(0);
    for (remap, _) in &mut out_units {
        remap.map_globals(resolve);
    }
    for v in &mut vars {
        v.var = resolve(v.var);
    }
    Ok(Segment {
        btf,
        units: out_units,
        vars,
        warnings,
    })
}

/// Releases the pages of a converted segment's DIEs (with the pages the
/// units' edges share) and of what its units read in passing.
fn release_segment(cx: &SegmentContext<'_, '_>, units: &[gimli::UnitHeader<Reader<'_>>]) {
    // The whole segment's DIEs, with the pages the units' edges share.
    if let (Some(file_off), Some(first), Some(last)) =
        (cx.info_file_offset, units.first(), units.last())
    {
        let start = first.offset().as_debug_info_offset().map(|o| o.0);
        let end = last
            .offset()
            .as_debug_info_offset()
            .map(|o| o.0 + last.length_including_self());
        if let (Some(start), Some(end)) = (start, end) {
            cx.elf.release(file_off + start, file_off + end);
        }
    }
    for &(start, end) in &cx.passing_file_ranges {
        cx.elf.release(start, end);
    }
}

/// A segment's own dedup, with its anchors carried through it: the ids
/// that `anchors` held, as ids of the deduplicated segment.
fn dedup_segment(
    cx: &SegmentContext<'_, '_>,
    mut sink: Sink,
    anchors: &[TypeId],
) -> Result<(Btf, Vec<TypeId>)> {
    let name = sink.strings.add(ANCHOR.as_bytes());
    for (n, &id) in anchors.iter().enumerate() {
        sink.add_type(Type::new(
            name,
            TypeData::DeclTag {
                ty: id,
                component_idx: n as i32,
            },
        ));
    }
    // A segment's strings are unique already (`Strings`): its dedup
    // keeps them as they are; the final dedup drops the unused ones.
    let (mut btf, spare) = btf::encoder_hooks::dedup_owned_with_spare(
        sink.into_btf(),
        &dedup_options(true, &cx.base_table),
    )
    .map_err(|e| dedup_error(cx.path, e))?;
    SPARE_TYPES.set(spare);
    let anchors = take_anchors(&mut btf, anchors.len()).ok_or_else(|| Error::Encode {
        path: cx.path.to_owned(),
        msg: "dedup lost track of a segment's anchors".into(),
    })?;
    Ok((btf, anchors))
}

/// Deduplicates a BTF the encoder made (and gives away). `keep_strings`:
/// its string section has each string once already.
fn dedup(btf: Btf, path: &std::path::Path, keep_strings: bool, table: &BaseTable) -> Result<Btf> {
    btf::dedup::dedup_owned(btf, &dedup_options(keep_strings, table))
        .map_err(|e| dedup_error(path, e))
}

fn dedup_options(keep_strings: bool, table: &BaseTable) -> DedupOptions {
    DedupOptions {
        keep_strings,
        base_table: table.clone(),
        ..Default::default()
    }
}

fn dedup_error(path: &std::path::Path, error: btf::Error) -> Error {
    Error::Dedup {
        path: path.to_owned(),
        error,
    }
}

/// Removes the `count` anchor DECL_TAGs that end `btf`'s own types and
/// returns where each anchored id went. Dedup keeps the anchors (their
/// component_idx differ) in their order, after every other type.
fn take_anchors(btf: &mut Btf, count: usize) -> Option<Vec<TypeId>> {
    let types = btf.own_types();
    let keep = types.len().checked_sub(count)?;
    let mut ids = vec![0; count];
    for t in types.get(keep..)? {
        let TypeData::DeclTag { ty, component_idx } = t.data else {
            return None;
        };
        if btf.name_of(t).ok()? != ANCHOR {
            return None;
        }
        *ids.get_mut(usize::try_from(component_idx).ok()?)? = ty;
    }
    let base = btf.base().cloned();
    let whole = std::mem::replace(btf, Btf::new());
    let (mut types, strings) = whole.into_contents();
    types.truncate(keep);
    *btf = match base {
        Some(b) => Btf::new_split(b),
        None => Btf::new(),
    };
    btf.set_contents(types, strings);
    Some(ids)
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
    strings: &mut Strings,
) -> Result<Option<UnitOut<P::Unit>>> {
    let offset = header
        .offset()
        .as_debug_info_offset()
        .map_or(0, |o| o.0 as u64);
    let unit = dwarf.unit(header).map_err(|e| Error::Dwarf {
        path: path.to_owned(),
        offset,
        error: e,
    })?;
    let converted = convert::convert_unit(dwarf, &unit, copts, path, strings)?;
    let Some(ConvertedUnit {
        mut builder,
        types,
        vars: unit_vars,
        subprograms,
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
        subprograms: &subprograms,
        elf: info,
        opts,
    };
    let added_from = builder.len() as TypeId + 1;
    let policy_out = policy.unit(&cx, &mut builder)?;
    let vars = vars_cx.unit_vars(&mut builder, &unit_vars);
    Ok(Some(UnitOut {
        types: builder.into_types(),
        added_from,
        vars,
        policy: policy_out,
        converted_warnings: warnings,
    }))
}

/// Types and strings being gathered into one BTF (a segment, or the
/// output).
struct Sink {
    start_id: TypeId,
    types: Vec<Type>,
    strings: Strings,
    /// The largest id the types refer to (so the dedup need not walk them
    /// to check their ids).
    max_ref: TypeId,
}

impl Sink {
    fn new(base: Option<Arc<Btf>>) -> Sink {
        Sink {
            start_id: base.as_ref().map_or(1, |b| b.type_count()),
            types: Vec::new(),
            strings: Strings::new(base),
            max_ref: 0,
        }
    }

    fn next_id(&self) -> TypeId {
        self.start_id + self.types.len() as TypeId
    }

    fn add_type(&mut self, t: Type) -> TypeId {
        t.for_each_ref(|r| self.max_ref = self.max_ref.max(r));
        self.push(t)
    }

    /// [`Sink::add_type`] of a type whose ids `shift` moves here.
    fn add_shifted(&mut self, mut t: Type, shift: Shift) -> TypeId {
        let mut max = self.max_ref;
        t.for_each_ref_mut(|r| {
            *r = shift.map(*r);
            max = max.max(*r);
        });
        self.max_ref = max;
        self.push(t)
    }

    /// Appends `t`, whose ids `max_ref` counts already.
    fn push(&mut self, t: Type) -> TypeId {
        let id = self.next_id();
        self.types.push(t);
        id
    }

    fn into_btf(self) -> Btf {
        let mut btf = match self.strings.base() {
            Some(b) => Btf::new_split(b.clone()),
            None => Btf::new(),
        };
        // The strings' index goes along: the policy's `finish` adds names.
        let (strings, index) = self.strings.into_indexed();
        btf::encoder_hooks::set_built_contents(&mut btf, self.types, strings, index, self.max_ref);
        btf
    }
}

/// How ids of an appended piece map into the BTF it was appended to: own
/// ids (`>= start`) move by `to - start`, base ids and void stay.
#[derive(Clone, Copy)]
struct Shift {
    start: TypeId,
    to: TypeId,
}

impl Shift {
    fn map(&self, id: TypeId) -> TypeId {
        if id >= self.start {
            id - self.start + self.to
        } else {
            id
        }
    }
}

/// Appends a unit's types to `sink` (whose strings they use already):
/// local ids shifted.
fn append_unit(sink: &mut Sink, types: Vec<Type>) -> Shift {
    let shift = Shift {
        start: 1,
        to: sink.next_id(),
    };
    sink.types.reserve(types.len());
    for t in types {
        sink.add_shifted(t, shift);
    }
    shift
}

/// Appends the own types of `piece` (base BTF, or split over the same base
/// as `sink`) to `sink`.
fn append_btf(sink: &mut Sink, piece: Btf) -> Shift {
    let shift = Shift {
        start: piece.start_id(),
        to: sink.next_id(),
    };
    let str_start = piece.start_str_off();
    let (types, strings) = piece.into_contents();
    // Only the strings the types use: a segment's section holds every name
    // its units had, most of them of types its dedup dropped. Section
    // offset -> `sink` offset, filled on first use (0: not yet; the empty
    // string, at 0, is 0 in every section).
    let mut str_map = vec![0u32; strings.len()];
    sink.types.reserve(types.len());
    for mut t in types {
        t.for_each_str_mut(|s| {
            if *s < str_start {
                return;
            }
            let local = (*s - str_start) as usize;
            *s = match str_map.get(local) {
                Some(&0) | None => {
                    let bytes = strings.get(local..).unwrap_or_default();
                    let end = memchr::memchr(0, bytes).unwrap_or(bytes.len());
                    let global = sink.strings.add(&bytes[..end]);
                    if let Some(slot) = str_map.get_mut(local) {
                        *slot = global;
                    }
                    global
                }
                Some(&global) => global,
            };
        });
        sink.add_shifted(t, shift);
    }
    shift
}

/// Encodes `elf` into one deduplicated BTF, with the function policy
/// `opts.funcs` names. `base`: the vmlinux BTF that a module's BTF is
/// split over.
pub fn encode(
    elf: &ElfFile,
    base: Option<Arc<Btf>>,
    opts: &EncodeOptions,
    progress: &dyn Progress,
) -> Result<Encoded> {
    // The policies are built on the pool while the DWARF is opened, and
    // freed (their symbol maps are tens of MB on vmlinux) during the final
    // dedup.
    with_worker_threads(elf.path(), opts, base, |pool, base, table| {
        let base = (base, table);
        match opts.funcs {
            FuncMode::Exact => {
                let tags = opts.addr_tags;
                let make = || ExactFuncs::from_elf(elf, tags).map(Box::new);
                run_pipeline(pool, elf, base, opts, make, progress)
            }
            FuncMode::Pahole => {
                let make = || PaholeFuncs::from_elf(elf).map(Box::new);
                run_pipeline(pool, elf, base, opts, make, progress)
            }
        }
    })
}

/// Counts of types per kind name, for reports and tests.
pub fn kind_counts(btf: &Btf) -> std::collections::BTreeMap<&'static str, usize> {
    let mut m = std::collections::BTreeMap::new();
    for (_, t) in btf.iter() {
        *m.entry(t.kind_name()).or_insert(0) += 1;
    }
    m
}
