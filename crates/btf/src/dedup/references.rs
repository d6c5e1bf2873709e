//! Pass 5: reference types (pointers, modifiers, typedefs, arrays,
//! prototypes, FUNCs, DECL_TAGs), once what they refer to is canonical.

use super::*;

/// Whether some TYPEDEF of `types` (own types of `btf`) reaches itself
/// through reference types alone, which libbpf 1.1 refuses: a cheap
/// depth-first walk that follows what pass 5 follows and stops at structs,
/// unions and base types.
pub(super) fn has_ref_cycle(start: TypeId, types: &[Type]) -> bool {
    // 0 unvisited, 1 on the path, 2 done.
    let mut state = vec![0u8; types.len()];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in 0..types.len() {
        if state[root] != 0 || types[root].kind() != BTF_KIND_TYPEDEF {
            continue;
        }
        state[root] = 1;
        stack.push((root, 0));
        while let Some(&(i, next)) = stack.last() {
            let t = &types[i];
            let follows = !matches!(
                t.kind(),
                BTF_KIND_STRUCT | BTF_KIND_UNION | BTF_KIND_VAR | BTF_KIND_DATASEC
            );
            if follows && next < ref_count(t) {
                if let Some(top) = stack.last_mut() {
                    top.1 += 1;
                }
                let r = ref_at(t, next);
                let Some(j) = r.checked_sub(start).map(|j| j as usize) else {
                    continue;
                };
                match state.get(j) {
                    Some(0) => {
                        state[j] = 1;
                        stack.push((j, 0));
                    }
                    Some(1) => return true,
                    _ => {}
                }
                continue;
            }
            state[i] = 2;
            stack.pop();
        }
    }
    false
}

/// The number of types a reference type refers to, as resolved in pass 5.
fn ref_count(t: &Type) -> usize {
    match &t.data {
        TypeData::Array(_) => 2,
        TypeData::FuncProto { params, .. } => 1 + params.len(),
        _ => 1,
    }
}

/// The `i`th type a reference type refers to, in libbpf's order (an
/// array's element before its index type, a prototype's return type first).
fn ref_at(t: &Type, i: usize) -> TypeId {
    match &t.data {
        TypeData::Array(a) => {
            if i == 0 {
                a.elem
            } else {
                a.index
            }
        }
        TypeData::FuncProto { ret, params } => match i.checked_sub(1) {
            None => *ret,
            Some(p) => params.get(p).map_or(0, |p| p.ty),
        },
        _ => t.ref_type().unwrap_or(0),
    }
}

fn set_ref_at(t: &mut Type, i: usize, id: TypeId) {
    match &mut t.data {
        TypeData::Array(a) => {
            if i == 0 {
                a.elem = id
            } else {
                a.index = id
            }
        }
        TypeData::FuncProto { ret, params } => match i.checked_sub(1) {
            None => *ret = id,
            Some(p) => {
                if let Some(p) = params.get_mut(p) {
                    p.ty = id
                }
            }
        },
        _ => {
            if let Some(ty) = t.ref_type_mut() {
                *ty = id
            }
        }
    }
}

impl Dedup<'_> {
    /// Pass 5, for one type: resolves the types it refers to, depth first,
    /// then finds its canonical type.
    fn ref_type(
        &mut self,
        table: &mut CandTable,
        stack: &mut Vec<(usize, usize)>,
        root: TypeId,
    ) -> Result<()> {
        match self.map[root as usize] {
            IN_PROGRESS => return Err(self.loop_error(root)),
            m if is_mapped(m) => return Ok(()),
            _ => {}
        }
        self.map[root as usize] = IN_PROGRESS;
        // (own index of the type, index of the next reference to resolve)
        stack.clear();
        stack.push((self.own_index(root)?, 0));
        while let Some(&(i, next)) = stack.last() {
            let t = &self.types[i];
            if next < ref_count(t) {
                let r = ref_at(t, next);
                match self.map[r as usize] {
                    IN_PROGRESS => return Err(self.loop_error(r)),
                    m if is_mapped(m) => {
                        let resolved = self.resolve(r);
                        set_ref_at(&mut self.types[i], next, resolved);
                        if let Some(top) = stack.last_mut() {
                            top.1 += 1;
                        }
                    }
                    _ => {
                        self.map[r as usize] = IN_PROGRESS;
                        stack.push((self.own_index(r)?, 0));
                    }
                }
                continue;
            }
            let new_id = self.ref_canon(table, i)?;
            stack.pop();
            if let Some(top) = stack.last_mut() {
                set_ref_at(&mut self.types[top.0], top.1, new_id);
                top.1 += 1;
            }
        }
        Ok(())
    }

    fn own_index(&self, id: TypeId) -> Result<usize> {
        id.checked_sub(self.start_id)
            .map(|i| i as usize)
            .filter(|&i| i < self.types.len())
            .ok_or_else(|| Error::Dedup {
                id,
                reason: "is a base type left without a canonical type".into(),
            })
    }

    fn loop_error(&self, id: TypeId) -> Error {
        Error::DedupCycle { id }
    }

    /// The canonical type of own type `i`, whose references are final.
    fn ref_canon(&mut self, table: &mut CandTable, i: usize) -> Result<TypeId> {
        let id = self.start_id + i as u32;
        let t = &self.types[i];
        let kind = t.kind();
        let (h, equal): (i64, fn(&Type, &Type) -> bool) = match kind {
            k if k.is_reference() => (hash_common(t), equal_common),
            BTF_KIND_FUNC => (self.hash_func(id, t), equal_common),
            BTF_KIND_DECL_TAG => (hash_int_tag(t), equal_int_tag),
            BTF_KIND_ARRAY => (hash_array(t), equal_array),
            BTF_KIND_FUNC_PROTO => (hash_fnproto(t), equal_fnproto),
            _ => {
                return Err(Error::Dedup {
                    id,
                    reason: format!("is a {} left without a canonical type", t.kind_name()),
                })
            }
        };
        let tags = if kind == BTF_KIND_FUNC {
            self.func_tag_set(id)
        } else {
            0
        };
        let t = &self.types[i];
        let new_id = table
            .get(h)
            .find(|&c| {
                self.ty(c).is_some_and(|ct| equal(t, ct))
                    && (kind != BTF_KIND_FUNC || self.func_tag_set(c) == tags)
            })
            .unwrap_or(id);
        self.map[id as usize] = new_id;
        if new_id == id {
            table.add(h, id);
        }
        Ok(new_id)
    }

    /// Pass 5.
    pub(super) fn ref_types(&mut self) -> Result<()> {
        let mut table = std::mem::take(&mut self.table);
        let mut stack = Vec::new();
        for i in 0..self.types.len() {
            self.ref_type(&mut table, &mut stack, self.start_id + i as u32)?;
        }
        Ok(())
    }
}
