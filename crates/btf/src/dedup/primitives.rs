//! Pass 2: INT, FLOAT, FWD, ENUM and ENUM64, which refer to nothing.

use super::*;

/// Pass 2's shortcut for full enums. Enums are hashed by name alone, so all
/// anonymous enums share one candidate list, which every new one would scan
/// (thousands of comparisons each in a kernel). A full enum can only take a
/// candidate equal to it or hand a forward enum over; without forward enums
/// under its hash, only the equal candidate counts, and there is at most one:
/// an enum equal to a candidate never becomes a candidate itself. This index
/// finds that one by content. Not used with a base, which may hold equal
/// enums twice.
#[derive(Default)]
pub(super) struct EnumIndex {
    usable: bool,
    /// Content hash of a canonical full enum -> its id, or `AMBIGUOUS` if
    /// two canonical enums share the hash.
    full: FxHashMap<u64, TypeId>,
    /// Candidate table keys under which a forward enum was entered.
    fwd_keys: FxHashSet<i64>,
}

const AMBIGUOUS: TypeId = u32::MAX;

impl EnumIndex {
    /// An empty index; one that is not `usable` always sends to the scan.
    pub(super) fn new(usable: bool) -> EnumIndex {
        EnumIndex {
            usable,
            ..EnumIndex::default()
        }
    }

    fn content_hash(t: &Type) -> u64 {
        rustc_hash::FxBuildHasher.hash_one(t)
    }

    /// What the index knows of enum `t` under candidate key `h`: `None` if
    /// the candidates must be scanned, `Some(None)` if none is equal,
    /// `Some(Some(c))` if only `c` can be (the caller checks that it is).
    fn lookup(&self, h: i64, t: &Type) -> Option<Option<TypeId>> {
        if !self.usable || is_enum_fwd(t) || self.fwd_keys.contains(&h) {
            return None;
        }
        match self.full.get(&Self::content_hash(t)) {
            None => Some(None),
            Some(&AMBIGUOUS) => None,
            Some(&c) => Some(Some(c)),
        }
    }

    /// Enum `t` was entered in the candidate table under `h`.
    fn add(&mut self, h: i64, t: &Type, id: TypeId) {
        if !self.usable {
            return;
        }
        if is_enum_fwd(t) {
            self.fwd_keys.insert(h);
            return;
        }
        self.full
            .entry(Self::content_hash(t))
            .and_modify(|c| *c = AMBIGUOUS)
            .or_insert(id);
    }
}

impl Dedup<'_> {
    /// Pass 2, on the own types from index `from` on.
    pub(super) fn prim_types(&mut self, from: usize) {
        let mut table = std::mem::take(&mut self.table);
        for i in from..self.types.len() {
            let id = self.start_id + i as u32;
            let t = &self.types[i];
            let mut new_id = id;
            let h = match t.kind() {
                BTF_KIND_INT => {
                    let h = hash_int_tag(t);
                    if let Some(c) = table
                        .get(h)
                        .find(|&c| self.ty(c).is_some_and(|ct| equal_int_tag(t, ct)))
                    {
                        new_id = c;
                    }
                    h
                }
                BTF_KIND_ENUM | BTF_KIND_ENUM64 => {
                    let h = hash_enum(t);
                    match self.enums.lookup(h, t) {
                        // No candidate is equal, none needs handing over.
                        Some(None) => {}
                        Some(Some(c)) if self.ty(c).is_some_and(|ct| equal_enum(t, ct)) => {
                            new_id = c;
                        }
                        _ => {
                            for c in table.get(h) {
                                let t = &self.types[i];
                                let Some(ct) = self.ty(c) else { continue };
                                if equal_enum(t, ct) {
                                    new_id = c;
                                    break;
                                }
                                if compat_enum(t, ct) {
                                    if is_enum_fwd(t) {
                                        new_id = c;
                                        break;
                                    }
                                    // A canonical forward enum gives way to
                                    // us.
                                    self.map[c as usize] = id;
                                }
                            }
                        }
                    }
                    h
                }
                BTF_KIND_FWD | BTF_KIND_FLOAT => {
                    let h = hash_common(t);
                    if let Some(c) = table
                        .get(h)
                        .find(|&c| self.ty(c).is_some_and(|ct| equal_common(t, ct)))
                    {
                        new_id = c;
                    } else if t.kind() == BTF_KIND_FWD {
                        self.canon_fwds.push(id);
                    }
                    h
                }
                k if never_merged(k) => {
                    self.map[id as usize] = id;
                    continue;
                }
                _ => continue,
            };
            self.map[id as usize] = new_id;
            if new_id == id {
                table.add(h, id);
                if is_any_enum(&self.types[i]) {
                    self.enums.add(h, &self.types[i], id);
                }
            }
        }
        self.table = table;
    }
}
