//! dwz's partial units: types that several compilation units share, moved
//! into DW_TAG_partial_unit units (of the same file, or of the alternate
//! file, altfile.rs) that each unit imports (DW_TAG_imported_unit) and
//! refers to with DW_FORM_ref_addr / DW_FORM_GNU_ref_alt.
//!
//! The converter reads a unit as it was before dwz: the partial units it
//! refers to are read into the same conversion, each DIE under a key past
//! the unit's own offsets (the unit's length, then each partial unit's
//! length in turn), so that a reference into them resolves like a
//! reference inside the unit. Partial units are not converted on their own.

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

/// A partial unit read into a conversion: its DIE at .debug_info offset
/// `start + o` (of the alternate file if `alt`) has key `base + o`.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub alt: bool,
    pub start: u64,
    pub end: u64,
    pub base: u64,
}

/// The partial units one conversion has met, in order.
pub struct Imports<'x, 'd> {
    dwarf: &'x Dwarf<'d>,
    tables: &'x UnitTables,
    /// The first key not given yet.
    next: u64,
    pub spans: Vec<Span>,
    /// The first reference that points into no unit at all: (into the
    /// alternate file, offset).
    pub bad: Option<(bool, u64)>,
}

impl<'x, 'd> Imports<'x, 'd> {
    /// For a unit of `unit_len` bytes (its own keys are its offsets).
    pub fn new(dwarf: &'x Dwarf<'d>, tables: &'x UnitTables, unit_len: u64) -> Self {
        Imports {
            dwarf,
            tables,
            next: unit_len,
            spans: Vec::new(),
            bad: None,
        }
    }

    /// The partial units read, for those who read the unit after.
    pub fn known(&self) -> Known {
        Known(self.spans.clone())
    }

    /// One past the largest key given.
    pub fn key_end(&self) -> u64 {
        self.next
    }

    /// The key of the DIE at .debug_info offset `g` (of the alternate file
    /// if `alt`), when it lies in a partial unit; its unit is added to
    /// those to read. `None` for a DIE of another compilation unit.
    pub fn key(&mut self, alt: bool, g: u64) -> Option<u32> {
        let known = self
            .spans
            .iter()
            .find(|s| s.alt == alt && s.start <= g && g < s.end);
        let span = match known {
            Some(s) => *s,
            None => {
                let table = self.tables.get(self.dwarf, alt);
                let i = table.partition_point(|u| u.1 <= g);
                match table.get(i) {
                    Some(&(start, end, partial)) if start <= g => {
                        if !partial {
                            return None;
                        }
                        let s = Span {
                            alt,
                            start,
                            end,
                            base: self.next,
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

/// The partial units a conversion read, once it is done: how the readers
/// that come after it (the function policy's type namer) follow keys.
#[derive(Clone, Debug, Default)]
pub struct Known(pub Vec<Span>);

impl Known {
    /// The span holding `key`, and the key's offset in its unit.
    pub fn find(&self, key: u32) -> Option<(usize, u32)> {
        let key = u64::from(key);
        self.0.iter().enumerate().find_map(|(i, s)| {
            let local = key.checked_sub(s.base)?;
            (local < s.end - s.start).then_some((i, local as u32))
        })
    }
}

impl Keys for Known {
    fn key(&self, alt: bool, g: u64) -> Option<u32> {
        let s = self
            .0
            .iter()
            .find(|s| s.alt == alt && s.start <= g && g < s.end)?;
        u32::try_from(s.base + (g - s.start)).ok()
    }

    fn bad(&self, _alt: bool, _g: u64) {}
}
