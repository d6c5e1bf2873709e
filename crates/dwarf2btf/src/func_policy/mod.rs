//! The function policies (`--funcs`), side by side: [`exact`] (btfkit's:
//! every instance with its true signature, named so that fentry cannot
//! attach with a wrong prototype) and [`pahole`] (pahole 1.32's choices),
//! and the interface between the encoding pipeline (encode.rs) and them:
//! what a policy sees of a unit, what it returns, and how its unit-local
//! ids reach the merged BTF. The pipeline drives a policy through this
//! module; policies never see the pipeline.

pub mod exact;
pub mod pahole;

use btf::{Btf, Type, TypeData, TypeId};

use crate::convert::{UnitBuilder, UnitTypes};
use crate::error::Result;
use crate::load::{Dwarf, ElfInfo, Reader};
use crate::options::EncodeOptions;
use crate::subprograms::Subprograms;

/// What a function policy sees of one compilation unit.
pub struct UnitContext<'a, 'd> {
    /// The file being encoded, for errors.
    pub path: &'a std::path::Path,
    /// The file's DWARF (with the dwz alternate file's, when it has one).
    pub dwarf: &'a Dwarf<'d>,
    /// The compilation unit, parsed.
    pub unit: &'a gimli::Unit<Reader<'d>>,
    /// Local type id of every type DIE of the unit (ids of `out`).
    pub types: &'a UnitTypes,
    /// The unit's subprograms, recorded by the converter's pass when the
    /// policy asks ([`FuncPolicy::SUBPROGRAMS`]), else empty.
    pub subprograms: &'a Subprograms<'d>,
    /// The file's sections and symbols.
    pub elf: &'a ElfInfo<'d>,
    /// The options of the encode.
    pub opts: &'a EncodeOptions,
}

/// How a unit's local type ids map to ids of the merged BTF (before the
/// final dedup). It knows the types the policy added in `unit` and those it
/// listed in [`FuncPolicy::referenced`]; any other id maps to 0.
#[derive(Clone, Debug, Default)]
pub struct UnitRemap {
    /// (local id, global id), sorted by local id.
    ids: Vec<(TypeId, TypeId)>,
}

impl UnitRemap {
    /// Adds a local id (callers push in increasing local order).
    pub(crate) fn push(&mut self, local: TypeId, global: TypeId) {
        self.ids.push((local, global));
    }

    /// Rewrites every global id (when the BTF they point into is appended
    /// elsewhere or deduplicated).
    pub(crate) fn map_globals(&mut self, f: impl Fn(TypeId) -> TypeId) {
        for e in &mut self.ids {
            e.1 = f(e.1);
        }
    }

    /// The global id of a local id of that unit (0 stays void).
    pub fn type_id(&self, local: TypeId) -> TypeId {
        match self.ids.binary_search_by_key(&local, |e| e.0) {
            Ok(i) => self.ids.get(i).map_or(0, |e| e.1),
            Err(_) => 0,
        }
    }
}

/// A function-emitting policy (`--funcs`). `unit` runs per compilation unit
/// in parallel, after the unit's types are converted: it may add types to
/// the unit's builder (local ids) and returns what it needs to decide across
/// units. `finish` runs once, with the units' results in unit order, after
/// all units are merged into `btf` and before dedup.
pub trait FuncPolicy: Sync {
    /// What `unit` returns for one compilation unit and `finish` gets back,
    /// with the unit's [`UnitRemap`].
    type Unit: Send;
    /// Whether `unit` reads [`UnitContext::subprograms`] (recording them
    /// costs the converter's pass a little).
    const SUBPROGRAMS: bool = false;
    /// Reads one compilation unit (on a worker thread): may add types to
    /// `out`, which refer to each other and to the unit's types by local
    /// id, and returns what `finish` needs of the unit.
    fn unit(&self, cx: &UnitContext<'_, '_>, out: &mut UnitBuilder) -> Result<Self::Unit>;
    /// Local ids of types the policy did not add itself (the converter's)
    /// that `finish` will look up through [`UnitRemap`].
    fn referenced(&self, _unit: &Self::Unit, _ids: &mut Vec<TypeId>) {}
    /// Decides across units, once, in unit order: adds the FUNCs (and
    /// whatever else the policy emits) to the merged `btf`, mapping each
    /// unit's local ids through its [`UnitRemap`].
    fn finish(&self, units: Vec<(UnitRemap, Self::Unit)>, btf: &mut Btf) -> Result<()>;
}

/// A FUNC of `name` over `proto` with static linkage, as pahole writes
/// every function.
pub fn func_type(name_off: u32, proto: TypeId) -> Type {
    Type::new(name_off, TypeData::Func { proto, linkage: 0 })
}
