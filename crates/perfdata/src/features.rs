//! Feature sections: after the data section, one `perf_file_section` per bit
//! set in the header's feature bitmap, in bit order, each pointing at that
//! feature's bytes (tools/perf/util/header.c, perf_header__process_sections).
//! In the pipe format the same bytes come in HEADER_FEATURE records.
//!
//! A bad feature section spoils only itself: it is recorded as a warning
//! and the other sections are still read.

use crate::bytes::{fixed_str, pos, slice, u32_at, u64_at};
use crate::error::{Error, Result};
use crate::header::{FileHeader, Section};

/// HEADER_* feature bits.
pub mod feature {
    /// HEADER_TRACING_DATA: tracepoint formats.
    pub const TRACING_DATA: u32 = 1;
    /// HEADER_BUILD_ID: build ids of the mapped files.
    pub const BUILD_ID: u32 = 2;
    /// HEADER_HOSTNAME: `uname -n` of the recording machine.
    pub const HOSTNAME: u32 = 3;
    /// HEADER_OSRELEASE: its kernel release (`uname -r`).
    pub const OSRELEASE: u32 = 4;
    /// HEADER_VERSION: the perf version that recorded.
    pub const VERSION: u32 = 5;
    /// HEADER_ARCH: `uname -m`.
    pub const ARCH: u32 = 6;
    /// HEADER_NRCPUS: CPUs available and online.
    pub const NRCPUS: u32 = 7;
    /// HEADER_CMDLINE: perf's command line.
    pub const CMDLINE: u32 = 11;
    /// HEADER_SAMPLE_TIME: times of the first and last sample.
    pub const SAMPLE_TIME: u32 = 21;
    /// HEADER_BPF_PROG_INFO: the BPF programs loaded while recording.
    pub const BPF_PROG_INFO: u32 = 25;
    /// HEADER_BPF_BTF: their BTF.
    pub const BPF_BTF: u32 = 26;
    /// HEADER_LAST_FEATURE is below this; the bitmap has 256 bits.
    pub const BITS: u32 = 256;

    /// The feature's name without the `HEADER_` prefix, "unknown" for a
    /// number perf does not define.
    pub fn name(id: u64) -> &'static str {
        match id {
            1 => "TRACING_DATA",
            2 => "BUILD_ID",
            3 => "HOSTNAME",
            4 => "OSRELEASE",
            5 => "VERSION",
            6 => "ARCH",
            7 => "NRCPUS",
            8 => "CPUDESC",
            9 => "CPUID",
            10 => "TOTAL_MEM",
            11 => "CMDLINE",
            12 => "EVENT_DESC",
            13 => "CPU_TOPOLOGY",
            14 => "NUMA_TOPOLOGY",
            15 => "BRANCH_STACK",
            16 => "PMU_MAPPINGS",
            17 => "GROUP_DESC",
            18 => "AUXTRACE",
            19 => "STAT",
            20 => "CACHE",
            21 => "SAMPLE_TIME",
            22 => "MEM_TOPOLOGY",
            23 => "CLOCKID",
            24 => "DIR_FORMAT",
            25 => "BPF_PROG_INFO",
            26 => "BPF_BTF",
            27 => "COMPRESSED",
            28 => "CPU_PMU_CAPS",
            29 => "CLOCK_DATA",
            30 => "HYBRID_TOPOLOGY",
            31 => "PMU_CAPS",
            _ => "unknown",
        }
    }
}

/// One feature section of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureSection {
    /// The feature bit ([`feature`] values).
    pub id: u32,
    /// Where its bytes are in the file.
    pub section: Section,
}

/// A BPF program as perf saw it (`struct perf_bpil`: bpf_prog_info plus the
/// arrays perf asked for), from HEADER_BPF_PROG_INFO.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BpfProgInfo {
    /// The program id.
    pub id: u32,
    /// `enum bpf_prog_type` (1 socket filter, 2 kprobe, 26 tracing...).
    pub prog_type: u32,
    /// The program tag (see [`tag_hex`](crate::records::tag_hex)).
    pub tag: [u8; 8],
    /// The program name (at most 15 bytes, as the kernel keeps it).
    pub name: String,
    /// Boot-time nanoseconds when the program was loaded.
    pub load_time: u64,
    /// The id of the program's BTF object ([`BpfBtf::id`]), 0 without BTF.
    pub btf_id: u32,
    /// The address of each function (main program, then subprograms).
    pub jited_ksyms: Vec<u64>,
    /// The length of each function, in the same order.
    pub jited_func_lens: Vec<u32>,
    /// `(insn_off, BTF type id of the FUNC)` for each function.
    pub func_info: Vec<(u32, u32)>,
    /// The tag of each function.
    pub prog_tags: Vec<[u8; 8]>,
    /// Where the entry starts in the file (or stream).
    pub offset: u64,
}

/// A BPF program's BTF, from HEADER_BPF_BTF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BpfBtf {
    /// The BTF object's id.
    pub id: u32,
    /// The raw BTF bytes, header included, as the kernel gave them to perf.
    pub data: Vec<u8>,
}

/// What the feature sections say, decoded for the features this crate uses.
#[derive(Debug, Default)]
pub struct Features {
    /// Where each feature section is (file format only).
    pub sections: Vec<FeatureSection>,
    /// HOSTNAME.
    pub hostname: Option<String>,
    /// OSRELEASE: the recording kernel's release.
    pub osrelease: Option<String>,
    /// VERSION: perf's version.
    pub version: Option<String>,
    /// ARCH (`x86_64`).
    pub arch: Option<String>,
    /// CPUs available and online when recorded.
    pub nr_cpus: Option<(u32, u32)>,
    /// CMDLINE, one argument per string.
    pub cmdline: Vec<String>,
    /// Times of the first and last sample, in nanoseconds of the perf clock.
    pub sample_time: Option<(u64, u64)>,
    /// BPF_PROG_INFO, one per program.
    pub bpf_progs: Vec<BpfProgInfo>,
    /// BPF_BTF, one per BTF object.
    pub bpf_btfs: Vec<BpfBtf>,
    /// Feature sections that could not be read.
    pub warnings: Vec<Error>,
}

/// PERF_BPIL_* bits of `arrays`: which arrays perf saved after the info.
const BPIL_JITED_KSYMS: u64 = 1 << 3;
const BPIL_JITED_FUNC_LENS: u64 = 1 << 4;
const BPIL_FUNC_INFO: u64 = 1 << 5;
const BPIL_PROG_TAGS: u64 = 1 << 8;

impl Features {
    /// Reads the feature sections of a file.
    pub fn read_file(header: &FileHeader, file: &[u8]) -> Features {
        let mut f = Features::default();
        let mut at = header.data.offset.saturating_add(header.data.size);
        for id in 0..feature::BITS {
            if !header.has_feature(id) {
                continue;
            }
            let desc_at = usize::try_from(at).unwrap_or(usize::MAX);
            at = at.saturating_add(16);
            match Section::read(
                file,
                desc_at,
                format!("feature {}", feature::name(id.into())),
            ) {
                Ok(section) => {
                    f.sections.push(FeatureSection { id, section });
                    f.add(u64::from(id), section.bytes(file), section.offset);
                }
                Err(e) => f.warnings.push(e),
            }
        }
        f
    }

    /// Decodes one feature's bytes, which start at `offset`. Features this
    /// crate does not decode are ignored.
    pub fn add(&mut self, id: u64, b: &[u8], offset: u64) {
        if let Err(e) = self.decode(id, b, offset) {
            self.warnings.push(e);
        }
    }

    fn decode(&mut self, id: u64, b: &[u8], offset: u64) -> Result<()> {
        let name = feature::name(id);
        let bad = |at: usize, reason: String| Error::BadFeature {
            offset: offset + pos(at),
            feature: name,
            reason,
        };
        match u32::try_from(id).unwrap_or(0) {
            feature::HOSTNAME => {
                self.hostname = Some(
                    perf_string(b, 0)
                        .ok_or_else(|| bad(0, "bad string".into()))?
                        .0,
                )
            }
            feature::OSRELEASE => {
                self.osrelease = Some(
                    perf_string(b, 0)
                        .ok_or_else(|| bad(0, "bad string".into()))?
                        .0,
                )
            }
            feature::VERSION => {
                self.version = Some(
                    perf_string(b, 0)
                        .ok_or_else(|| bad(0, "bad string".into()))?
                        .0,
                )
            }
            feature::ARCH => {
                self.arch = Some(
                    perf_string(b, 0)
                        .ok_or_else(|| bad(0, "bad string".into()))?
                        .0,
                )
            }
            feature::NRCPUS => {
                let avail = u32_at(b, 0).ok_or_else(|| bad(0, "needs 8 bytes".into()))?;
                let online = u32_at(b, 4).ok_or_else(|| bad(4, "needs 8 bytes".into()))?;
                self.nr_cpus = Some((avail, online));
            }
            feature::CMDLINE => {
                let nr = u32_at(b, 0).ok_or_else(|| bad(0, "needs a count".into()))?;
                let mut at = 4;
                self.cmdline.clear();
                for i in 0..nr {
                    let (s, next) = perf_string(b, at)
                        .ok_or_else(|| bad(at, format!("argument {i} of {nr} is cut off")))?;
                    self.cmdline.push(s);
                    at = next;
                }
            }
            feature::SAMPLE_TIME => {
                let first = u64_at(b, 0).ok_or_else(|| bad(0, "needs 16 bytes".into()))?;
                let last = u64_at(b, 8).ok_or_else(|| bad(8, "needs 16 bytes".into()))?;
                self.sample_time = Some((first, last));
            }
            feature::BPF_PROG_INFO => self.decode_bpf_prog_info(b, offset, &bad)?,
            feature::BPF_BTF => {
                let nr = u32_at(b, 0).ok_or_else(|| bad(0, "needs a count".into()))?;
                let mut at = 4usize;
                for i in 0..nr {
                    let (Some(btf_id), Some(size)) = (u32_at(b, at), u32_at(b, at + 4)) else {
                        return Err(bad(at, format!("BTF {i} of {nr}: header cut off")));
                    };
                    let data = slice(b, at + 8, size as usize).ok_or_else(|| {
                        bad(
                            at,
                            format!(
                                "BTF {i} of {nr} (id {btf_id}): {size} bytes run past the section"
                            ),
                        )
                    })?;
                    self.bpf_btfs.push(BpfBtf {
                        id: btf_id,
                        data: data.to_vec(),
                    });
                    at = at + 8 + size as usize;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// u32 count, then per program: u32 info_len, u32 data_len, u64 arrays,
    /// `info_len` bytes of bpf_prog_info whose array pointers perf turned
    /// into offsets into the `data_len` bytes that follow
    /// (tools/perf/util/header.c, process_bpf_prog_info).
    fn decode_bpf_prog_info(
        &mut self,
        b: &[u8],
        offset: u64,
        bad: &dyn Fn(usize, String) -> Error,
    ) -> Result<()> {
        let nr = u32_at(b, 0).ok_or_else(|| bad(0, "needs a count".into()))?;
        let mut at = 4usize;
        for i in 0..nr {
            let (Some(info_len), Some(data_len), Some(arrays)) =
                (u32_at(b, at), u32_at(b, at + 4), u64_at(b, at + 8))
            else {
                return Err(bad(at, format!("program {i} of {nr}: header cut off")));
            };
            let info_at = at + 16;
            let info = slice(b, info_at, info_len as usize).ok_or_else(|| {
                bad(
                    at,
                    format!("program {i} of {nr}: info of {info_len} bytes cut off"),
                )
            })?;
            let data_at = info_at + info_len as usize;
            let data = slice(b, data_at, data_len as usize).ok_or_else(|| {
                bad(
                    at,
                    format!("program {i} of {nr}: data of {data_len} bytes cut off"),
                )
            })?;
            let field32 = |off: usize| u32_at(info, off).unwrap_or(0);
            let field64 = |off: usize| u64_at(info, off).unwrap_or(0);
            // An array: its count and offset fields in the info, its element
            // size; empty unless perf saved it.
            let array = |bit: u64,
                         count_off: usize,
                         ptr_off: usize,
                         elem: usize|
             -> Result<&[u8]> {
                if arrays & bit == 0 {
                    return Ok(&[]);
                }
                let n = field32(count_off) as usize;
                let start = usize::try_from(field64(ptr_off)).unwrap_or(usize::MAX);
                slice(data, start, n.saturating_mul(elem)).ok_or_else(|| {
                    bad(
                        data_at,
                        format!("program {i} of {nr}: array of {n} x {elem} bytes at data offset {start} runs past its {data_len} bytes"),
                    )
                })
            };
            let func_rec = (field32(132) as usize).max(8);
            let prog = BpfProgInfo {
                prog_type: field32(0),
                id: field32(4),
                tag: crate::bytes::array(info, 8).unwrap_or_default(),
                load_time: field64(40),
                name: fixed_str(slice(info, 64, 16).unwrap_or_default()),
                btf_id: field32(128),
                jited_ksyms: array(BPIL_JITED_KSYMS, 104, 112, 8)?
                    .chunks_exact(8)
                    .filter_map(|c| u64_at(c, 0))
                    .collect(),
                jited_func_lens: array(BPIL_JITED_FUNC_LENS, 108, 120, 4)?
                    .chunks_exact(4)
                    .filter_map(|c| u32_at(c, 0))
                    .collect(),
                func_info: array(BPIL_FUNC_INFO, 144, 136, func_rec)?
                    .chunks_exact(func_rec)
                    .filter_map(|c| Some((u32_at(c, 0)?, u32_at(c, 4)?)))
                    .collect(),
                prog_tags: array(BPIL_PROG_TAGS, 180, 184, 8)?
                    .chunks_exact(8)
                    .filter_map(|c| crate::bytes::array(c, 0))
                    .collect(),
                offset: offset + pos(at),
            };
            self.bpf_progs.push(prog);
            at = data_at + data_len as usize;
        }
        Ok(())
    }
}

/// perf's string: u32 length (padded), then that many bytes, NUL-padded.
/// Returns the text and the offset after it.
fn perf_string(b: &[u8], at: usize) -> Option<(String, usize)> {
    let len = u32_at(b, at)? as usize;
    let bytes = slice(b, at + 4, len)?;
    Some((fixed_str(bytes), at + 4 + len))
}
