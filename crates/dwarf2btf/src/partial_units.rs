//! Units that a unit refers to: dwz's partial units, and the other
//! compilation units of link-time optimized code.
//!
//! dwz moves types that several compilation units share into
//! DW_TAG_partial_unit units (of the same file, or of the alternate file,
//! altfile.rs) that each unit imports (DW_TAG_imported_unit) and refers to
//! with DW_FORM_ref_addr / DW_FORM_GNU_ref_alt. Link-time optimization
//! refers across compilation units the same way: GCC's -flto writes the
//! code in LTRANS units whose subprograms point (DW_AT_abstract_origin,
//! DW_FORM_ref_addr) at the early-debug unit of each source file, and
//! clang's ThinLTO points a function imported from another module at that
//! module's unit.
//!
//! The converter reads a unit as if it held all it refers to: the units it
//! refers to are read into the same conversion, each DIE under a key past
//! the unit's own offsets (the unit's length, then each read unit's
//! length in turn), so that a reference into them resolves like a
//! reference inside the unit; a reference back into the unit (units that
//! refer to each other) is one inside it. Partial units are not converted
//! on their own. A compilation unit read this way is converted on its own
//! too: what it gives to another unit's conversion are its types and the
//! declarations referred to, never its functions or variables (its
//! [`Span::compile`]). pahole 1.30+ gets the same types and prototypes by
//! merging such units into one conversion.

use std::cell::RefCell;
use std::sync::OnceLock;

use gimli::{constants as dw, UnitType};

use crate::load::{Dwarf, Reader};

/// One unit of a .debug_info: its start and end offsets, and whether it
/// is a partial unit.
type UnitSpan = (u64, u64, bool);

/// The units of the input's and of the alternate file's .debug_info, read
/// on the first reference that leaves a unit (never for inputs without
/// one), shared by the threads.
#[derive(Clone, Debug, Default)]
pub struct UnitTables {
    main: OnceLock<Vec<UnitSpan>>,
    alt: OnceLock<Vec<UnitSpan>>,
}

impl UnitTables {
    fn get<'s>(&'s self, dwarf: &Dwarf<'_>, alt: bool) -> &'s [UnitSpan] {
        if alt {
            self.alt
                .get_or_init(|| dwarf.sup().map(read_units).unwrap_or_default())
        } else {
            self.main.get_or_init(|| read_units(dwarf))
        }
    }
}

fn read_units(dwarf: &Dwarf<'_>) -> Vec<UnitSpan> {
    let mut v = Vec::new();
    let mut units = dwarf.units();
    while let Ok(Some(h)) = units.next() {
        let Some(start) = h.offset().as_debug_info_offset() else {
            continue;
        };
        let start = start.0 as u64;
        let partial =
            h.type_() == UnitType::Partial || root_tag(dwarf, &h) == Some(dw::DW_TAG_partial_unit);
        v.push((start, start + h.length_including_self() as u64, partial));
    }
    v
}

/// The tag of a unit's first DIE.
pub fn root_tag(dwarf: &Dwarf<'_>, h: &gimli::UnitHeader<Reader<'_>>) -> Option<dw::DwTag> {
    let abbrevs = dwarf.abbreviations(h).ok()?;
    let mut entries = h.entries(&abbrevs);
    let (_, die) = entries.next_dfs().ok()??;
    Some(die.tag())
}

/// A unit read into a conversion: its DIE at .debug_info offset
/// `start + o` (of the alternate file if `alt`) has key `base + o`.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    /// The unit is in the dwz alternate file's .debug_info, not the input's.
    pub alt: bool,
    /// The .debug_info offset of the unit's header.
    pub start: u64,
    /// The .debug_info offset just past the unit (`start` plus its length
    /// with the header).
    pub end: u64,
    /// The key of the unit's first byte in the conversion: DIE keys
    /// `base..base + (end - start)` are this unit's.
    pub base: u64,
    /// A compilation unit (converted on its own too), not a partial unit.
    pub compile: bool,
}

impl Span {
    /// The unit's header, read again.
    pub fn open<'d>(&self, dwarf: &Dwarf<'d>) -> gimli::Result<gimli::Unit<Reader<'d>>> {
        let d = if self.alt {
            dwarf.sup().ok_or(gimli::Error::NoEntryAtGivenOffset)?
        } else {
            dwarf
        };
        let h = d
            .debug_info
            .header_from_offset(gimli::DebugInfoOffset(self.start as usize))?;
        gimli::Unit::new(d, h)
    }

    fn holds(&self, alt: bool, g: u64) -> bool {
        self.alt == alt && self.start <= g && g < self.end
    }
}

/// The units one conversion has met, in order.
pub struct Imports<'x, 'd> {
    dwarf: &'x Dwarf<'d>,
    tables: &'x UnitTables,
    /// The unit converted (keys from 0).
    home: Span,
    /// The first key not given yet.
    next: u64,
    /// The units read besides the converted one, in the order they were
    /// met (so with increasing [`Span::base`]).
    pub spans: Vec<Span>,
    /// The first reference that points into no unit at all: (into the
    /// alternate file, offset).
    pub bad: Option<(bool, u64)>,
}

impl<'x, 'd> Imports<'x, 'd> {
    /// For the unit at `unit_offset` of `unit_len` bytes (its own keys are
    /// its offsets).
    pub fn new(
        dwarf: &'x Dwarf<'d>,
        tables: &'x UnitTables,
        unit_offset: u64,
        unit_len: u64,
    ) -> Self {
        Imports {
            dwarf,
            tables,
            home: Span {
                alt: false,
                start: unit_offset,
                end: unit_offset + unit_len,
                base: 0,
                compile: true,
            },
            next: unit_len,
            spans: Vec::new(),
            bad: None,
        }
    }

    /// The units read, for those who read the unit after.
    pub fn known(&self) -> Known {
        Known(self.spans.clone(), Some(self.home))
    }

    /// One past the largest key given.
    pub fn key_end(&self) -> u64 {
        self.next
    }

    /// The key of the DIE at .debug_info offset `g` (of the alternate file
    /// if `alt`); its unit is added to those to read. `None` for an offset
    /// in no unit.
    pub fn key(&mut self, alt: bool, g: u64) -> Option<u32> {
        let known = std::iter::once(&self.home)
            .chain(&self.spans)
            .find(|s| s.holds(alt, g));
        let span = match known {
            Some(s) => *s,
            None => {
                let table = self.tables.get(self.dwarf, alt);
                let i = table.partition_point(|u| u.1 <= g);
                match table.get(i) {
                    Some(&(start, end, partial)) if start <= g => {
                        let s = Span {
                            alt,
                            start,
                            end,
                            base: self.next,
                            compile: !partial,
                        };
                        self.next += end - start;
                        self.spans.push(s);
                        s
                    }
                    _ => {
                        self.bad.get_or_insert((alt, g));
                        return None;
                    }
                }
            }
        };
        u32::try_from(span.base + (g - span.start)).ok()
    }
}

/// How the DIE reader asks for keys (a trait object: the reader's unit
/// borrow and the conversion's [`Imports`] live for different times).
pub trait Keys {
    /// [`Imports::key`].
    fn key(&self, alt: bool, g: u64) -> Option<u32>;
    /// Records a reference that cannot be followed.
    fn bad(&self, alt: bool, g: u64);
}

impl Keys for RefCell<Imports<'_, '_>> {
    fn key(&self, alt: bool, g: u64) -> Option<u32> {
        self.borrow_mut().key(alt, g)
    }

    fn bad(&self, alt: bool, g: u64) {
        self.borrow_mut().bad.get_or_insert((alt, g));
    }
}

/// The units a conversion read, once it is done: how the readers that
/// come after it (the function model, the function policy's type namer)
/// follow keys. The second field: the unit converted, when known.
#[derive(Clone, Debug, Default)]
pub struct Known(pub Vec<Span>, Option<Span>);

impl Known {
    /// The span holding `key`, and the key's offset in its unit.
    pub fn find(&self, key: u32) -> Option<(usize, u32)> {
        let key = u64::from(key);
        self.0.iter().enumerate().find_map(|(i, s)| {
            let local = key.checked_sub(s.base)?;
            (local < s.end - s.start).then_some((i, local as u32))
        })
    }

    /// The .debug_info offset of the DIE keyed `key` in a conversion of
    /// the unit at `unit_offset`, for messages (the alternate file's
    /// offsets are told apart by `alt`): (alt, offset).
    pub fn offset_of(&self, unit_offset: u64, key: u32) -> (bool, u64) {
        match self
            .find(key)
            .and_then(|(i, local)| Some((self.0.get(i)?, local)))
        {
            Some((s, local)) => (s.alt, s.start + u64::from(local)),
            None => (false, unit_offset + u64::from(key)),
        }
    }
}

impl Keys for Known {
    fn key(&self, alt: bool, g: u64) -> Option<u32> {
        let s = self.1.iter().chain(&self.0).find(|s| s.holds(alt, g))?;
        u32::try_from(s.base + (g - s.start)).ok()
    }

    fn bad(&self, _alt: bool, _g: u64) {}
}
