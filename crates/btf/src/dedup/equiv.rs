//! Pass 3's walk: whether two type graphs are equivalent, with the
//! hypothetical map it records and the union-find of proven pairs.

use super::*;

impl Dedup<'_> {
    pub(super) fn hypot_clear(&mut self) {
        for &id in &self.hypot_list {
            let cand = std::mem::replace(&mut self.hypot_map[id as usize], UNPROCESSED);
            self.hypot_cand[cand as usize] = 0;
        }
        self.hypot_list.clear();
        self.hypot_merge.clear();
        self.hypot_adjust_canon = false;
        self.hypot_base_rule = false;
        self.hypot_extra.clear();
        self.hypot_exact = true;
    }

    /// The root of `id`'s class in `proven` (halving the path on the way).
    fn proven_class(&mut self, mut id: TypeId) -> TypeId {
        loop {
            let parent = self.proven[id as usize];
            if parent == 0 {
                return id;
            }
            let grand = self.proven[parent as usize];
            if grand != 0 {
                self.proven[id as usize] = grand;
            }
            id = parent;
        }
    }

    /// After an exact walk succeeded: each pair it recorded is equivalent.
    pub(super) fn prove_hypot(&mut self) {
        for i in 0..self.hypot_list.len() {
            let canon_id = self.hypot_list[i];
            let cand_id = self.hypot_map[canon_id as usize];
            if canon_id == 0 || cand_id == 0 {
                continue;
            }
            let (a, b) = (self.proven_class(canon_id), self.proven_class(cand_id));
            if a != b {
                // The lower id as root: classes do not depend on the order
                // of the unions' arguments.
                self.proven[a.max(b) as usize] = a.min(b);
            }
        }
    }

    fn identical_arrays(&self, a: TypeId, b: TypeId) -> bool {
        match (self.ty(a), self.ty(b)) {
            (Some(x), Some(y)) => {
                array_of(x).is_some() && array_of(y).is_some() && equal_array(x, y)
            }
            _ => false,
        }
    }

    /// Two structs equal down to the ids their members refer to, or whose
    /// differing members are themselves identical arrays or structs.
    fn identical_structs(&self, a: TypeId, b: TypeId) -> bool {
        let mut steps = MAX_IDENTICAL_STEPS;
        self.identical_structs_in(a, b, 0, &mut steps)
    }

    fn identical_structs_in(&self, a: TypeId, b: TypeId, depth: u32, steps: &mut u32) -> bool {
        let (Some(x), Some(y)) = (self.ty(a), self.ty(b)) else {
            return false;
        };
        if !matches!(x.kind(), BTF_KIND_STRUCT | BTF_KIND_UNION)
            || x.kind() != y.kind()
            || !shallow_equal_struct(x, y)
            || depth > MAX_EMBED_DEPTH
            || *steps == 0
        {
            return false;
        }
        *steps -= 1;
        x.members().iter().zip(y.members()).all(|(m1, m2)| {
            m1.ty == m2.ty
                || self.identical_arrays(m1.ty, m2.ty)
                || self.identical_structs_in(m1.ty, m2.ty, depth + 1, steps)
        })
    }

    /// Whether the type graphs at `cand` and `canon` are equivalent
    /// (libbpf's `btf_dedup_is_equiv`): the depth-first walk of the module
    /// comment, with an explicit stack that visits pairs in the same order
    /// as libbpf's recursion. Any contradiction ends the whole walk.
    pub(super) fn is_equiv(
        &mut self,
        cand: TypeId,
        canon: TypeId,
        stack: &mut Vec<(TypeId, TypeId)>,
    ) -> Result<bool> {
        stack.clear();
        stack.push((cand, canon));
        while let Some((cand_id, canon_id)) = stack.pop() {
            // A pair already recorded, met again through another path (a
            // shared pointer type, a cycle closing): checked first because
            // it is the most common pair and needs no type read. Exactly
            // what the checks below would conclude: an id set in the
            // hypothetical map is never a FWD that `resolve_fwd` would
            // replace (only what it returns is set, and `map` does not
            // change during the walk).
            let hypot = self.hypot_map[canon_id as usize];
            if hypot == cand_id || self.known_equiv(cand_id, canon_id) {
                continue;
            }
            let (canon_id, hypot) = match self.resolve_fwd(canon_id) {
                same if same == canon_id => (same, hypot),
                resolved => (resolved, self.hypot_map[resolved as usize]),
            };
            if is_mapped(hypot) {
                if hypot == cand_id
                    || self.identical_arrays(hypot, cand_id)
                    || self.identical_structs(hypot, cand_id)
                {
                    continue;
                }
                // A base array paired already with another own array: by
                // the base's rule, any own nest of the same flat shape.
                if canon_id < self.start_id {
                    if let Some((ce, ne)) = self.flat_equal_arrays(cand_id, canon_id) {
                        self.hypot_base_rule = true;
                        self.hypot_exact = false;
                        self.hypot_extra.push((cand_id, canon_id));
                        stack.push((ce, ne));
                        continue;
                    }
                }
                return Ok(false);
            }
            self.hypot_map[canon_id as usize] = cand_id;
            self.hypot_list.push(canon_id);
            self.hypot_cand[cand_id as usize] = canon_id;
            if !self.equiv_pair(cand_id, canon_id, stack)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A pair known equivalent without reading the types: the same
    /// canonical type, or a candidate paired already in this walk with an
    /// equivalent of `canon_id`.
    fn known_equiv(&mut self, cand_id: TypeId, canon_id: TypeId) -> bool {
        if self.resolve(cand_id) == self.resolve(canon_id) {
            return true;
        }
        let paired = self.hypot_cand[cand_id as usize];
        paired != 0 && self.proven_class(paired) == self.proven_class(canon_id)
    }

    /// A pair just recorded in the hypothetical map: compares the two types
    /// and pushes the pairs they refer to. False on a contradiction.
    fn equiv_pair(
        &mut self,
        cand_id: TypeId,
        canon_id: TypeId,
        stack: &mut Vec<(TypeId, TypeId)>,
    ) -> Result<bool> {
        let cand_t = self.ty(cand_id);
        let canon_t = self.ty(canon_id);
        let (cand_kind, canon_kind) = (kind_of(cand_t), kind_of(canon_t));
        // Pushed where the pair is done with (the types borrow `self`
        // until then): still in recording order, as no other pair is
        // recorded in between.
        let merge = cand_kind.is_struct_or_fwd() || canon_kind.is_struct_or_fwd();
        if name_of(cand_t) != name_of(canon_t) {
            return Ok(false);
        }
        if (cand_kind == BTF_KIND_FWD || canon_kind == BTF_KIND_FWD) && cand_kind != canon_kind {
            if !fwd_matches(cand_kind, canon_kind, cand_t, canon_t) {
                return Ok(false);
            }
            // Equivalent only by resolving a base FWD, which must not
            // change.
            if canon_kind == BTF_KIND_FWD && canon_id < self.start_id {
                self.hypot_adjust_canon = true;
                self.hypot_base_rule = true;
            }
            self.hypot_exact = false;
            // A side is a FWD: `merge` holds.
            self.hypot_merge.push(canon_id);
            return Ok(true);
        }
        if cand_kind != canon_kind {
            return Ok(false);
        }
        let (Some(ct), Some(nt)) = (cand_t, canon_t) else {
            return Ok(false);
        };
        match self.equiv_fields(cand_id, canon_id, ct, nt, stack)? {
            Fields::Differ => return Ok(false),
            Fields::Inexact => self.hypot_exact = false,
            Fields::BaseRule => {
                self.hypot_base_rule = true;
                self.hypot_exact = false;
            }
            Fields::Equal => {}
        }
        if merge {
            self.hypot_merge.push(canon_id);
        }
        Ok(true)
    }

    /// Compares two types of the same kind on their own fields and pushes
    /// the pairs of the types they refer to, in libbpf's order.
    fn equiv_fields(
        &self,
        cand_id: TypeId,
        canon_id: TypeId,
        ct: &Type,
        nt: &Type,
        stack: &mut Vec<(TypeId, TypeId)>,
    ) -> Result<Fields> {
        let equal_if = |equal: bool| if equal { Fields::Equal } else { Fields::Differ };
        let kind = ct.kind();
        Ok(match kind {
            BTF_KIND_INT => equal_if(equal_int_tag(ct, nt)),
            BTF_KIND_ENUM | BTF_KIND_ENUM64 => {
                if !compat_enum(ct, nt) {
                    Fields::Differ
                } else if is_enum_fwd(ct) || is_enum_fwd(nt) {
                    Fields::Inexact
                } else {
                    Fields::Equal
                }
            }
            BTF_KIND_FWD | BTF_KIND_FLOAT => equal_if(equal_common(ct, nt)),
            k if k.is_reference() || k == BTF_KIND_FUNC => {
                if ct.info() != nt.info()
                    || (kind == BTF_KIND_FUNC
                        && self.func_tag_set(cand_id) != self.func_tag_set(canon_id))
                {
                    return Ok(Fields::Differ);
                }
                stack.push((ct.size_or_type(), nt.size_or_type()));
                Fields::Equal
            }
            BTF_KIND_ARRAY => {
                let (Some(ca), Some(na)) = (array_of(ct), array_of(nt)) else {
                    return Ok(Fields::Differ);
                };
                if canon_id < self.start_id && self.nested_otherwise(ca, na) {
                    // The base's nest (or flat array) for ours: equal if
                    // the same number of the same elements.
                    let Some((ce, ne)) = self.flat_equal_arrays(cand_id, canon_id) else {
                        return Ok(Fields::Differ);
                    };
                    stack.push((ce, ne));
                    return Ok(Fields::BaseRule);
                }
                if !compat_array(ct, nt) {
                    return Ok(Fields::Differ);
                }
                stack.push((ca.elem, na.elem));
                stack.push((ca.index, na.index));
                Fields::Equal
            }
            BTF_KIND_STRUCT | BTF_KIND_UNION => equal_if(self.push_members(ct, nt, stack)),
            BTF_KIND_FUNC_PROTO => {
                if !compat_fnproto(ct, nt) {
                    return Ok(Fields::Differ);
                }
                for (cp, np) in params_of(ct).iter().zip(params_of(nt)).rev() {
                    stack.push((cp.ty, np.ty));
                }
                stack.push((ct.size_or_type(), nt.size_or_type()));
                Fields::Equal
            }
            _ => {
                return Err(Error::Dedup {
                    id: cand_id,
                    reason: format!(
                        "is a {} where a struct's member or a prototype's parameter refers to it",
                        ct.kind_name()
                    ),
                })
            }
        })
    }

    /// `shallow_equal_struct` and the pushes in one pass over the members;
    /// pairs pushed before a difference is found are dropped with the walk.
    fn push_members(&self, ct: &Type, nt: &Type, stack: &mut Vec<(TypeId, TypeId)>) -> bool {
        let (cms, nms) = (ct.members(), nt.members());
        if !equal_common(ct, nt) || cms.len() != nms.len() {
            return false;
        }
        for (cm, nm) in cms.iter().zip(nms).rev() {
            if cm.name_off != nm.name_off || cm.offset != nm.offset {
                return false;
            }
            // A pair already recorded would be skipped when popped
            // (entries are never undone during a walk).
            if self.hypot_map[nm.ty as usize] != cm.ty {
                self.prefetch_pair(cm.ty, nm.ty);
                stack.push((cm.ty, nm.ty));
            }
        }
        true
    }

    /// Starts loading what popping the pair reads first: both types and
    /// their entries in the maps. The walk's time goes mostly to cache
    /// misses on types spread over the whole list (3% of an encode's CPU
    /// saved).
    #[inline]
    fn prefetch_pair(&self, cand: TypeId, canon: TypeId) {
        let own = |id: TypeId| {
            id.checked_sub(self.start_id)
                .and_then(|i| self.types.get(i as usize))
        };
        prefetch(own(cand));
        prefetch(own(canon));
        prefetch(self.map.get(cand as usize));
        prefetch(self.map.get(canon as usize));
        prefetch(self.hypot_map.get(canon as usize));
        prefetch(self.hypot_cand.get(cand as usize));
    }

    /// Own array `cand` and base array `canon` as flat arrays of the same
    /// count: their innermost element types, to be compared next.
    fn flat_equal_arrays(&self, cand: TypeId, canon: TypeId) -> Option<(TypeId, TypeId)> {
        let ca = *self.ty(cand).and_then(array_of)?;
        let na = *self.ty(canon).and_then(array_of)?;
        let ((cn, ce), (nn, ne)) = (self.flat_array(ca), self.flat_array(na));
        (cn == nn).then_some((ce, ne))
    }

    /// Whether arrays `a` (own) and `b` (the base's) describe their elements
    /// with different nests: one's element is an array and the other's is
    /// not, or their counts differ.
    fn nested_otherwise(&self, a: &Array, b: &Array) -> bool {
        let is_array = |id| kind_of(self.ty(id)) == BTF_KIND_ARRAY;
        a.nelems != b.nelems || is_array(a.elem) != is_array(b.elem)
    }

    /// An array nest as one flat array: its element count (saturating)
    /// and its innermost element type. Bounded by the number of types (a
    /// cycle of arrays in corrupt input ends).
    fn flat_array(&self, a: Array) -> (u64, TypeId) {
        let (mut n, mut elem) = (u64::from(a.nelems), a.elem);
        for _ in 0..self.map.len() {
            match self.ty(elem).and_then(array_of) {
                Some(inner) => {
                    n = n.saturating_mul(u64::from(inner.nelems));
                    elem = inner.elem;
                }
                None => break,
            }
        }
        (n, elem)
    }
}

/// Asks the CPU to start loading `r`'s cache line: a hint, which reads
/// nothing and cannot fault.
#[inline(always)]
fn prefetch<T>(r: Option<&T>) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if let Some(r) = r {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE, which the instruction needs, is part of x86_64; a
        // prefetch of any address is safe.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast()) }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = r;
}

/// What [`Dedup::equiv_fields`] found of a pair.
enum Fields {
    /// A difference: the graphs are not equivalent.
    Differ,
    /// Equal fields.
    Equal,
    /// Compatible only through a forward enum: the walk is not exact.
    Inexact,
    /// An own array and a base array nested otherwise, equal by the base's
    /// representation (module comment): not exact, and not libbpf's rule.
    BaseRule,
}

/// A FWD paired with another kind: equivalent only to the struct or union
/// it stands for.
fn fwd_matches(
    cand_kind: Kind,
    canon_kind: Kind,
    cand_t: Option<&Type>,
    canon_t: Option<&Type>,
) -> bool {
    let (real_kind, fwd) = match (cand_t, canon_t) {
        (Some(c), _) if cand_kind == BTF_KIND_FWD => (canon_kind, fwd_kind(c)),
        (_, Some(n)) => (cand_kind, fwd_kind(n)),
        _ => return false,
    };
    fwd == real_kind
}
