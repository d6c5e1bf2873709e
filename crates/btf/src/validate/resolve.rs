//! `btf_check_all_types`: the kernel's depth-first resolve walk over every
//! type that refers to another.

use super::*;

impl<'a> Validator<'a> {
    /// `btf_check_all_types`: resolve every type that refers to another, in
    /// id order, and check every FUNC_PROTO.
    pub(super) fn check_all_types(&mut self) {
        // A type that broke a per-type rule is not resolved: the kernel would
        // have stopped before, and its dependents are skipped.
        for id in 0..self.n as usize {
            if self.bad[id] {
                self.visit[id] = Visit::Resolved;
            }
        }
        for id in self.report_from..self.n {
            let k = self.kinds[id as usize];
            if needs_resolve(k) && !self.is_resolved(id) {
                self.resolve(id);
            }
            if k == BTF_KIND_FUNC_PROTO && !self.is_bad(id) {
                if let Err(f) = self.func_proto_check(id) {
                    match f {
                        Fail::Problem(rule, detail) => self.report(id, rule, detail),
                        _ => self.bad[id as usize] = true,
                    }
                }
            }
        }
    }

    /// `btf_resolve`: the depth-first walk from `id`. False if it failed (and
    /// was reported, or depends on something that was).
    pub(super) fn resolve(&mut self, id: TypeId) -> bool {
        self.mode = Mode::Tbd;
        self.stack.clear();
        let mut result = self.push(id);
        while result.is_ok() {
            let Some(&v) = self.stack.last() else { break };
            result = self.resolve_step(v);
        }
        if let Err(f) = result {
            self.fail(id, f);
            return false;
        }
        if !self.resolve_valid(id) {
            self.report(id, Rule::TypeId, "resolves to an invalid state".into());
            return false;
        }
        true
    }

    /// Reports a failed walk and marks everything on the stack bad, so that
    /// it is not walked again and its dependents are skipped.
    fn fail(&mut self, top: TypeId, f: Fail) {
        let cur = self.stack.last().map_or(top, |v| v.id);
        match f {
            Fail::Problem(rule, detail) => self.report(cur, rule, detail),
            Fail::Depth => {
                let chain = self.chain(0);
                self.report(
                    top,
                    Rule::Depth,
                    format!(
                        "resolving it needs more than {MAX_RESOLVE_DEPTH} nested types: {chain}"
                    ),
                );
            }
            Fail::Loop(again) => {
                let from = self.stack.iter().position(|v| v.id == again).unwrap_or(0);
                let chain = self.chain(from);
                self.report(
                    top,
                    Rule::Loop,
                    format!("reference loop without a pointer: {chain} -> [{again}]"),
                );
            }
            Fail::Silent => {}
        }
        for i in 0..self.stack.len() {
            let id = self.stack[i].id as usize;
            self.bad[id] = true;
            self.visit[id] = Visit::Resolved;
        }
        self.stack.clear();
    }

    fn chain(&self, from: usize) -> String {
        let ids: Vec<String> = self.stack[from..]
            .iter()
            .map(|v| format!("[{}]", v.id))
            .collect();
        ids.join(" -> ")
    }

    fn push(&mut self, id: TypeId) -> Step {
        if self.needs_base_walk(id) {
            // The kernel takes a base's types as resolved (they were when
            // the base was loaded): a split type's walk does not go through
            // them, nor count them against its depth. One is resolved here
            // on first use, by a walk of its own; if that fails (silently:
            // the base's problems are not reported), the split type's walk
            // finds it bad when it steps again, and stops silently.
            let (stack, mode) = (std::mem::take(&mut self.stack), self.mode);
            self.resolve(id);
            (self.stack, self.mode) = (stack, mode);
            return Ok(());
        }
        if self.stack.len() == MAX_RESOLVE_DEPTH {
            return Err(Fail::Depth);
        }
        match self.visit.get(id as usize) {
            Some(Visit::NotVisited) => {}
            Some(_) => return Err(Fail::Loop(id)),
            None => return Err(Fail::Problem(Rule::TypeId, self.describe(id))),
        }
        self.visit[id as usize] = Visit::Visited;
        self.stack.push(Vertex { id, next_member: 0 });
        if self.mode == Mode::Tbd {
            let k = self.kinds[id as usize];
            if k == BTF_KIND_PTR {
                self.mode = Mode::Ptr;
            } else if k.is_struct_or_union() || k == BTF_KIND_ARRAY {
                self.mode = Mode::StructOrArray;
            }
        }
        Ok(())
    }

    /// Whether `id` is a base type not yet walked, needed by a split type's
    /// walk. (A base type's walk takes the base types it needs on its own
    /// stack: walks nest one deep at most.)
    fn needs_base_walk(&self, id: TypeId) -> bool {
        id < self.report_from
            && self.visit.get(id as usize) == Some(&Visit::NotVisited)
            && self.stack.first().is_some_and(|v| v.id >= self.report_from)
    }

    fn pop_resolved(&mut self, resolved_id: TypeId, resolved_size: u32) {
        if let Some(v) = self.stack.pop() {
            let i = v.id as usize;
            self.resolved_id[i] = resolved_id;
            self.resolved_size[i] = resolved_size;
            self.visit[i] = Visit::Resolved;
        }
    }

    fn set_next_member(&mut self, next: usize) {
        if let Some(v) = self.stack.last_mut() {
            v.next_member = next;
        }
    }

    /// `env_type_is_resolve_sink`: whether the walk stops at a type of kind `k`.
    fn is_sink(&self, k: Kind) -> bool {
        match self.mode {
            Mode::Tbd => !needs_resolve(k),
            Mode::Ptr => !k.is_modifier_or_typedef() && k != BTF_KIND_PTR,
            Mode::StructOrArray => {
                !k.is_modifier_or_typedef() && k != BTF_KIND_ARRAY && !k.is_struct_or_union()
            }
        }
    }

    /// Whether the walk must go down to `id` before going on.
    fn must_descend(&self, id: TypeId, k: Kind) -> bool {
        !self.is_sink(k) && !self.is_resolved(id)
    }

    /// `btf_type_id_size`: the type that gives `id` its size, and the size;
    /// `None` for types without one (void, FWD, FUNC, FUNC_PROTO).
    pub(super) fn type_id_size(&self, id: TypeId) -> Option<(TypeId, u32)> {
        let sized = |id: TypeId| -> Option<(TypeId, u32)> {
            let k = self.kind(id)?;
            if is_nosize(k) {
                None
            } else if has_size(k) {
                Some((id, self.ty(id).map_or(0, Type::size_or_type)))
            } else if k == BTF_KIND_ARRAY {
                Some((id, self.resolved_size[id as usize]))
            } else if k == BTF_KIND_PTR {
                Some((id, PTR_SIZE))
            } else {
                None
            }
        };
        let k = self.kind(id)?;
        if k.is_modifier_or_typedef() || k == BTF_KIND_VAR {
            sized(self.resolved_id[id as usize])
        } else {
            sized(id)
        }
    }

    fn resolve_step(&mut self, v: Vertex) -> Step {
        let Some(t) = self.ty(v.id) else {
            return Err(Fail::Problem(Rule::TypeId, self.describe(v.id)));
        };
        match &t.data {
            TypeData::Ptr { ty } => self.resolve_ref(*ty, RefKind::Ptr),
            TypeData::Var { ty, .. } => self.resolve_ref(*ty, RefKind::Var),
            TypeData::Array(a) => self.resolve_array(a),
            TypeData::Struct { members, .. } | TypeData::Union { members, .. } => {
                self.resolve_struct(v, t, members)
            }
            TypeData::Datasec { vars, .. } => self.resolve_datasec(v, vars),
            TypeData::Func { proto, .. } => self.resolve_func(*proto),
            TypeData::DeclTag { ty, component_idx } => self.resolve_decl_tag(*ty, *component_idx),
            _ => match t.ref_type_in(Kind::is_modifier_or_typedef) {
                Some(ty) => self.resolve_ref(ty, RefKind::Modifier),
                None => Err(Fail::Problem(
                    Rule::TypeId,
                    "this kind cannot be resolved".into(),
                )),
            },
        }
    }

    /// Modifiers, PTR and VAR: `btf_modifier_resolve`, `btf_ptr_resolve`,
    /// `btf_var_resolve`.
    fn resolve_ref(&mut self, next: TypeId, how: RefKind) -> Step {
        let Some(nk) = self.kind(next) else {
            return Err(Fail::Problem(
                Rule::TypeId,
                format!("refers to {}", self.describe(next)),
            ));
        };
        if is_source_only(nk) {
            return Err(Fail::Problem(
                Rule::TypeId,
                format!("refers to {}, which is not a type", self.describe(next)),
            ));
        }
        if self.is_bad(next) {
            return Err(Fail::Silent);
        }
        if self.must_descend(next, nk) {
            return self.push(next);
        }
        // A modifier resolved while walking a struct may have stopped at a
        // pointer; walk on from that pointer so that it cannot lead back here.
        if how != RefKind::Modifier && nk.is_modifier_or_typedef() {
            let rid = self.resolved_id[next as usize];
            if self.kind(rid) == Some(BTF_KIND_PTR)
                && !self.is_bad(rid)
                && self.must_descend(rid, BTF_KIND_PTR)
            {
                return self.push(rid);
            }
        }
        let resolved = match self.type_id_size(next) {
            Some((rid, _)) => rid,
            None if how == RefKind::Var => {
                return Err(Fail::Problem(
                    Rule::TypeId,
                    format!("type {} has no size", self.describe(next)),
                ))
            }
            None => {
                let (rid, rk) = if self.is_resolved(next) {
                    let rid = self.resolved_id[next as usize];
                    (rid, self.kind(rid))
                } else {
                    (next, Some(nk))
                };
                // "typedef void new_void", "const void", pointers to
                // functions and to incomplete structs.
                if !matches!(rk, Some(BTF_KIND_UNKN | BTF_KIND_FWD | BTF_KIND_FUNC_PROTO)) {
                    return Err(Fail::Problem(
                        Rule::TypeId,
                        format!("refers to {}, which is not a type", self.describe(next)),
                    ));
                }
                rid
            }
        };
        self.pop_resolved(resolved, 0);
        Ok(())
    }

    /// `btf_array_resolve`.
    fn resolve_array(&mut self, a: &Array) -> Step {
        let ik = self.kind(a.index);
        if ik.is_none_or(|k| is_nosize(k) || is_source_only(k)) {
            return Err(Fail::Problem(
                Rule::TypeId,
                format!("index type {} is not an integer", self.describe(a.index)),
            ));
        }
        if self.is_bad(a.index) {
            return Err(Fail::Silent);
        }
        if let Some(k) = ik {
            if self.must_descend(a.index, k) {
                return self.push(a.index);
            }
        }
        let regular_int = |id: TypeId| {
            self.ty(id)
                .is_some_and(|t| t.kind() == BTF_KIND_INT && int_is_regular(t))
        };
        if !self
            .type_id_size(a.index)
            .is_some_and(|(rid, _)| regular_int(rid))
        {
            return Err(Fail::Problem(
                Rule::TypeId,
                format!(
                    "index type {} is not a regular integer",
                    self.describe(a.index)
                ),
            ));
        }
        let ek = self.kind(a.elem);
        if ek.is_none_or(|k| is_nosize(k) || is_source_only(k)) {
            return Err(Fail::Problem(
                Rule::TypeId,
                format!("element type {} has no size", self.describe(a.elem)),
            ));
        }
        if self.is_bad(a.elem) {
            return Err(Fail::Silent);
        }
        if let Some(k) = ek {
            if self.must_descend(a.elem, k) {
                return self.push(a.elem);
            }
        }
        let Some((eid, esize)) = self.type_id_size(a.elem) else {
            return Err(Fail::Problem(
                Rule::TypeId,
                format!("element type {} has no size", self.describe(a.elem)),
            ));
        };
        if self.kind(eid) == Some(BTF_KIND_INT) && !regular_int(eid) {
            return Err(Fail::Problem(
                Rule::Int,
                format!("element type {} is a bitfield-like INT", self.describe(eid)),
            ));
        }
        if a.nelems != 0 && esize > u32::MAX / a.nelems {
            return Err(Fail::Problem(
                Rule::Size,
                format!("{} elements of {esize} bytes overflow 32 bits", a.nelems),
            ));
        }
        self.pop_resolved(eid, esize * a.nelems);
        Ok(())
    }

    /// `btf_struct_resolve`: members one by one, walking down to each
    /// member's type first when it is not resolved yet.
    fn resolve_struct(&mut self, v: Vertex, t: &'a Type, members: &'a [Member]) -> Step {
        if v.next_member > 0 {
            if let Some(m) = members.get(v.next_member - 1) {
                if self.is_bad(m.ty) {
                    return Err(Fail::Silent);
                }
                self.check_member(t, v.next_member - 1, m, m.ty)?;
            }
        }
        for (i, m) in members.iter().enumerate().skip(v.next_member) {
            let mk = self.kind(m.ty);
            if mk.is_none_or(|k| is_nosize(k) || is_source_only(k)) {
                return Err(Fail::Problem(
                    Rule::Member,
                    format!(
                        "{} has type {}, which has no size",
                        self.member_label(i, m),
                        self.describe(m.ty)
                    ),
                ));
            }
            if self.is_bad(m.ty) {
                return Err(Fail::Silent);
            }
            if let Some(k) = mk {
                if self.must_descend(m.ty, k) {
                    self.set_next_member(i + 1);
                    return self.push(m.ty);
                }
            }
            self.check_member(t, i, m, m.ty)?;
        }
        self.pop_resolved(0, 0);
        Ok(())
    }

    /// `btf_datasec_resolve`: every entry is a VAR whose type fits its size.
    fn resolve_datasec(&mut self, v: Vertex, vars: &'a [VarSecinfo]) -> Step {
        self.mode = Mode::Tbd;
        for (i, vsi) in vars.iter().enumerate().skip(v.next_member) {
            if self.kind(vsi.ty) != Some(BTF_KIND_VAR) {
                return Err(Fail::Problem(
                    Rule::Datasec,
                    format!("entry #{i} is {}, not a VAR", self.describe(vsi.ty)),
                ));
            }
            if self.is_bad(vsi.ty) {
                return Err(Fail::Silent);
            }
            if self.must_descend(vsi.ty, BTF_KIND_VAR) {
                self.set_next_member(i + 1);
                return self.push(vsi.ty);
            }
            let var_ty = self.ty(vsi.ty).map_or(0, Type::size_or_type);
            let Some((_, tsize)) = self.type_id_size(var_ty) else {
                return Err(Fail::Problem(
                    Rule::Datasec,
                    format!(
                        "entry #{i} {} has a type without size",
                        self.describe(vsi.ty)
                    ),
                ));
            };
            if vsi.size < tsize {
                return Err(Fail::Problem(
                    Rule::Datasec,
                    format!(
                        "entry #{i} {} has size {}, smaller than its type's {tsize}",
                        self.describe(vsi.ty),
                        vsi.size
                    ),
                ));
            }
        }
        self.pop_resolved(0, 0);
        Ok(())
    }

    /// `btf_func_check`: a FUNC's type is a FUNC_PROTO whose parameters all
    /// have names.
    fn resolve_func(&mut self, proto: TypeId) -> Step {
        let Some(TypeData::FuncProto { params, .. }) = self.ty(proto).map(|t| &t.data) else {
            return Err(Fail::Problem(
                Rule::Func,
                format!("type {} is not a FUNC_PROTO", self.describe(proto)),
            ));
        };
        if self.is_bad(proto) {
            return Err(Fail::Silent);
        }
        if let Some(i) = params.iter().position(|p| p.name_off == 0 && p.ty != 0) {
            return Err(Fail::Problem(
                Rule::Func,
                format!(
                    "parameter #{} of {} has no name",
                    i + 1,
                    self.describe(proto)
                ),
            ));
        }
        self.pop_resolved(proto, 0);
        Ok(())
    }

    /// `btf_decl_tag_resolve`.
    fn resolve_decl_tag(&mut self, target: TypeId, component_idx: i32) -> Step {
        let tk = self.kind(target);
        if !tk.is_some_and(|k| {
            matches!(k, BTF_KIND_FUNC | BTF_KIND_VAR | BTF_KIND_TYPEDEF) || k.is_struct_or_union()
        }) {
            return Err(Fail::Problem(
                Rule::DeclTag,
                format!(
                    "tags {}: only FUNC, STRUCT, UNION, VAR and TYPEDEF can be tagged",
                    self.describe(target)
                ),
            ));
        }
        if self.is_bad(target) {
            return Err(Fail::Silent);
        }
        if let Some(k) = tk {
            if self.must_descend(target, k) {
                return self.push(target);
            }
        }
        if component_idx != -1 {
            let vlen = match self.ty(target).map(|t| &t.data) {
                Some(TypeData::Struct { members, .. } | TypeData::Union { members, .. }) => {
                    Some(members.len())
                }
                Some(TypeData::Func { proto, .. }) => match self.ty(*proto).map(|t| &t.data) {
                    Some(TypeData::FuncProto { params, .. }) => Some(params.len()),
                    _ => Some(0),
                },
                _ => None,
            };
            match vlen {
                None => {
                    return Err(Fail::Problem(
                        Rule::DeclTag,
                        format!(
                            "component_idx {component_idx} on {}, which has no components",
                            self.describe(target)
                        ),
                    ))
                }
                Some(n) if component_idx as u32 as usize >= n => {
                    return Err(Fail::Problem(
                        Rule::DeclTag,
                        format!(
                            "component_idx {component_idx} is out of range: {} has {n}",
                            self.describe(target)
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        self.pop_resolved(target, 0);
        Ok(())
    }

    /// `btf_resolve_valid`: the final sanity check after a walk.
    fn resolve_valid(&self, id: TypeId) -> bool {
        if !self.is_resolved(id) {
            return false;
        }
        let i = id as usize;
        let (rid, rsize) = (self.resolved_id[i], self.resolved_size[i]);
        let k = self.kinds[i];
        if k.is_struct_or_union() || k == BTF_KIND_DATASEC {
            return rid == 0 && rsize == 0;
        }
        if matches!(k, BTF_KIND_DECL_TAG | BTF_KIND_FUNC) {
            return rid != 0 && rsize == 0;
        }
        if k.is_reference() || k == BTF_KIND_VAR {
            return self.kind(rid).is_some_and(|rk| {
                !rk.is_modifier_or_typedef() && rk != BTF_KIND_VAR && rk != BTF_KIND_DATASEC
            });
        }
        if let Some(TypeData::Array(a)) = self.ty(id).map(|t| &t.data) {
            return self.type_id_size(a.elem).is_some_and(|(eid, esize)| {
                self.kind(eid)
                    .is_some_and(|ek| !ek.is_modifier_or_typedef())
                    && a.nelems.wrapping_mul(esize) == rsize
            });
        }
        false
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RefKind {
    Modifier,
    Ptr,
    Var,
}
