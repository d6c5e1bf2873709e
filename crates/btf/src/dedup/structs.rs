//! Passes 3 and 4: structs and unions (and libbpf 1.8's typedefs), then
//! FWDs to the struct or union of their name.

use super::*;

impl Dedup<'_> {
    /// After an equivalence, record what the hypothetical map learnt.
    ///
    /// Only pairs with a struct, union or FWD on a side can change `map`,
    /// and only those are visited (`hypot_merge`): `resolve` leads from any
    /// other kind to the same kind (INT to INT, enum to enum; reference
    /// types are not mapped yet), so for the other pairs none of the
    /// conditions below holds.
    ///
    /// A walk rooted at a base type that needed the base's rules (module
    /// comment) also maps its own types to the base's (`map_to_base`), and
    /// its base FWDs do not stop the merge.
    fn merge_hypot_map(&mut self, root: TypeId) {
        let base_rule = self.hypot_base_rule && root < self.start_id;
        for i in 0..self.hypot_merge.len() {
            let canon_id = self.hypot_merge[i];
            let targ_id = self.hypot_map[canon_id as usize];
            let t_id = self.resolve(targ_id);
            let c_id = self.resolve(canon_id);
            let t_kind = kind_of(self.ty(t_id));
            let c_kind = kind_of(self.ty(c_id));
            // A FWD, even one in the base, points at the struct it met, so
            // that the split part's FWDs that resolve to it follow.
            if t_kind != BTF_KIND_FWD && c_kind == BTF_KIND_FWD {
                self.map[c_id as usize] = t_id;
            }
            if self.hypot_adjust_canon && !base_rule {
                continue;
            }
            if t_kind == BTF_KIND_FWD && c_kind != BTF_KIND_FWD {
                self.map[t_id as usize] = c_id;
            }
            if matches!(t_kind, BTF_KIND_STRUCT | BTF_KIND_UNION)
                && c_kind != BTF_KIND_FWD
                && is_mapped(self.map[c_id as usize])
                && !is_mapped(self.map[t_id as usize])
            {
                self.map[t_id as usize] = c_id;
            }
        }
        if base_rule {
            self.map_to_base();
        }
    }

    /// After a walk to a base type that needed the base's rules: every own
    /// type it paired with a base type of its kind takes that base type
    /// (pass 5 would look for an equal one and, where the representations
    /// differ, find none). A split type paired with a base FWD keeps its
    /// definition.
    fn map_to_base(&mut self) {
        for i in 0..self.hypot_list.len() {
            let canon_id = self.hypot_list[i];
            let cand_id = self.hypot_map[canon_id as usize];
            if canon_id >= self.start_id
                || cand_id < self.start_id
                || is_mapped(self.map[cand_id as usize])
            {
                continue;
            }
            let kind = kind_of(self.ty(canon_id));
            if kind != BTF_KIND_FWD && kind == kind_of(self.ty(cand_id)) {
                self.map[cand_id as usize] = canon_id;
            }
        }
        for i in 0..self.hypot_extra.len() {
            let (cand_id, canon_id) = self.hypot_extra[i];
            if !is_mapped(self.map[cand_id as usize]) {
                self.map[cand_id as usize] = canon_id;
            }
        }
    }

    /// Pass 3.
    pub(super) fn struct_types(&mut self) -> Result<()> {
        // Out of `self` while its candidates are walked; a failed dedup
        // drops it anyway.
        let mut table = std::mem::take(&mut self.table);
        let mut stack = Vec::new();
        for i in 0..self.types.len() {
            let id = self.start_id + i as u32;
            if is_mapped(self.map[id as usize]) {
                continue;
            }
            let t = &self.types[i];
            let kind = t.kind();
            if !self.in_struct_pass(kind) {
                continue;
            }
            let is_typedef = kind == BTF_KIND_TYPEDEF;
            let h = if is_typedef {
                hash_typedef(t)
            } else {
                hash_struct(t)
            };
            let mut new_id = id;
            for c in table.get(h) {
                // A FWD under the same hash would look equivalent and
                // create a FWD <-> struct loop: only structs qualify (and
                // for a typedef, typedefs).
                let same = match self.ty(c) {
                    Some(ct) if is_typedef => equal_typedef(&self.types[i], ct),
                    Some(ct) => shallow_equal_struct(&self.types[i], ct),
                    None => false,
                };
                if !same {
                    continue;
                }
                self.hypot_clear();
                if !self.is_equiv(id, c, &mut stack)? {
                    continue;
                }
                self.merge_hypot_map(c);
                if self.hypot_adjust_canon && c >= self.start_id {
                    continue;
                }
                if self.hypot_exact {
                    self.prove_hypot();
                }
                new_id = c;
                break;
            }
            self.map[id as usize] = new_id;
            if new_id == id {
                table.add(h, id);
                if !is_typedef {
                    self.canon_structs.push(id);
                }
            }
        }
        self.table = table;
        Ok(())
    }

    /// Pass 4: FWDs to the only canonical struct or union of their name.
    pub(super) fn resolve_fwds(&mut self) {
        let fwds = std::mem::take(&mut self.canon_fwds);
        let structs = std::mem::take(&mut self.canon_structs);
        // Only the names of FWDs left count: a module usually has none, and
        // then its base's structs are not walked.
        // name -> the canonical struct or union of that name, 0 if several,
        // UNPROCESSED if none.
        let mut names: FxHashMap<u32, TypeId> = fwds
            .iter()
            .filter(|&&id| self.map[id as usize] == id)
            .filter_map(|&id| Some((self.ty(id)?.name_off, UNPROCESSED)))
            .collect();
        if names.is_empty() {
            return;
        }
        for id in (1..self.start_id).chain(structs) {
            let Some(t) = self.ty(id) else { continue };
            if matches!(t.kind(), BTF_KIND_STRUCT | BTF_KIND_UNION) && self.map[id as usize] == id {
                if let Some(v) = names.get_mut(&t.name_off) {
                    *v = if *v == UNPROCESSED { id } else { 0 };
                }
            }
        }
        for id in fwds {
            let Some(t) = self.ty(id) else { continue };
            if self.map[id as usize] != id {
                continue;
            }
            let Some(&cand) = names.get(&t.name_off) else {
                continue;
            };
            if cand != 0 && cand != UNPROCESSED && kind_of(self.ty(cand)) == fwd_kind(t) {
                self.map[id as usize] = cand;
            }
        }
    }
}
